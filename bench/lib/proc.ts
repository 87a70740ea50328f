// Owns reading another process's CPU time and RSS from /proc (Linux), and sampling its peak RSS over a window.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicks: number | undefined;

function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const raw = execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim();
    const parsed = Number(raw);
    clockTicks = Number.isInteger(parsed) && parsed > 0 ? parsed : 100;
  }
  return clockTicks;
}

export interface ProcSample {
  /** user + system CPU time in microseconds (resolution: one clock tick, usually 10 ms). */
  readonly cpuMicros: number;
  readonly rss: number;
}

/** Reads /proc/<pid>/stat and /proc/<pid>/status; undefined when the process is gone. */
export function readProc(pid: number): ProcSample | undefined {
  let stat: string;
  let status: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw error;
  }
  // fields after the parenthesised command name (which may contain spaces): state is field 3, utime 14, stime 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const rssKb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return { cpuMicros: ((utime + stime) * 1_000_000) / ticksPerSecond(), rss: rssKb * 1024 };
}

export interface RssSampler {
  /** Stops sampling; returns the peak and last RSS seen (bytes). */
  stop(): { peakRss: number; lastRss: number; samples: number };
}

/** Polls a process's RSS every `intervalMs` until stopped (the timer does not keep the event loop alive). */
export function sampleRss(pid: number, intervalMs = 250): RssSampler {
  let peakRss = 0;
  let lastRss = 0;
  let samples = 0;
  const tick = (): void => {
    const sample = readProc(pid);
    if (sample === undefined) return;
    samples++;
    lastRss = sample.rss;
    peakRss = Math.max(peakRss, sample.rss);
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      tick();
      return { peakRss, lastRss, samples };
    },
  };
}
