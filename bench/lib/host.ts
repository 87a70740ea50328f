// Owns the server side of the bench IPC: a server-under-test child reports readiness, CPU and memory, and stops on request.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { memoryUsage } from 'node:process';
import { startHeapSampling } from './heap-sample.js';

/** Parent → child. */
export type HostRequest = { readonly id: number; readonly type: 'stats' | 'gc' | 'settle' | 'stop' };

export interface ProcessStats {
  /** process.cpuUsage() user + system, microseconds since start. */
  readonly cpuMicros: number;
  /** The system (kernel) part of cpuMicros: syscalls, socket writes, fsync. */
  readonly systemMicros: number;
  /**
   * The main thread's user + system CPU (the event loop: JavaScript and uWS's socket writes), from
   * /proc/self/task/<pid>/stat in clock ticks (10 ms each), so coarse; the rest of cpuMicros is other threads
   * (lmdb-js's write thread, libuv's pool, V8's GC helpers). NaN off Linux.
   */
  readonly mainThreadMicros: number;
  readonly rss: number;
  readonly heapUsed: number;
  /** Memory outside the V8 heap held by JS objects (Buffers, ArrayBuffers, native addons that report it). */
  readonly external: number;
  /**
   * Resident anonymous memory (heap, stacks, malloc): what the process itself holds. RSS also counts file-backed
   * pages, and LMDB maps its data file, so a Plait RSS includes database pages the kernel may drop at will.
   * From /proc/self/status (Linux); equal to rss elsewhere.
   */
  readonly rssAnon: number;
  /** Resident file-backed and shared pages (RssFile + RssShmem): mapped files such as LMDB's data file. */
  readonly rssFile: number;
  /**
   * Bytes this process has caused to be written to storage since its start (`write_bytes` of /proc/self/io: pages it
   * dirtied in the page cache, LMDB's commits included); NaN off Linux.
   */
  readonly diskWriteBytes: number;
}

/** `write_bytes` of /proc/self/io; NaN where /proc is absent. */
function diskWriteBytes(): number {
  let io: string;
  try {
    io = readFileSync('/proc/self/io', 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Number.NaN;
    throw error;
  }
  return Number(/^write_bytes:\s+(\d+)/m.exec(io)?.[1] ?? Number.NaN);
}

/** RssAnon, RssFile and RssShmem of /proc/self/status in bytes; undefined off Linux. */
function residentParts(): { anon: number; file: number } | undefined {
  let status: string;
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') };
}

/** utime + stime of the main thread (tid = pid) in microseconds; NaN where /proc is absent. */
function mainThreadMicros(): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Number.NaN;
    throw error;
  }
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime is the
  // 14th field of the line, stime the 15th; USER_HZ is 100 on Linux.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Child → parent. */
export type HostMessage =
  | { readonly type: 'ready'; readonly port: number; readonly pid: number }
  | { readonly type: 'failed'; readonly error: string }
  | { readonly type: 'reply'; readonly id: number; readonly stats: ProcessStats };

export interface StartedServer {
  readonly port: number;
  stop(): Promise<void>;
  /** Resolves once every write the server has accepted so far is on disk (a bench kills -9 after it). */
  settle?(): Promise<void>;
}

export function processStats(): ProcessStats {
  const cpu = process.cpuUsage();
  const memory = memoryUsage();
  const parts = residentParts();
  return {
    cpuMicros: cpu.user + cpu.system,
    systemMicros: cpu.system,
    mainThreadMicros: mainThreadMicros(),
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    external: memory.external,
    rssAnon: parts?.anon ?? memory.rss,
    rssFile: parts?.file ?? 0,
    diskWriteBytes: diskWriteBytes(),
  };
}

function send(message: HostMessage): void {
  if (process.send === undefined) throw new Error('bench server hosts must be started with an IPC channel (child_process.fork)');
  process.send(message);
}

/** Full collection; several passes so weak references and finalizers settle. Needs --expose-gc. */
function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the server host needs --expose-gc for memory figures');
  for (let i = 0; i < 3; i++) gc();
}

let snapshots = 0;

/**
 * With `BENCH_HEAP_SNAPSHOT_DIR`, every memory reading (a `gc` request: after a burst, after loading documents) also
 * writes a heap snapshot of what the host holds then, `<kind>-<pid>-<n>.heapsnapshot`, after the figures are read.
 */
function writeSnapshot(): void {
  const dir = process.env['BENCH_HEAP_SNAPSHOT_DIR'];
  if (dir === undefined || dir === '') return;
  mkdirSync(dir, { recursive: true });
  writeHeapSnapshot(join(dir, `${process.env['BENCH_SERVER_KIND'] ?? 'server'}-${process.pid}-${++snapshots}.heapsnapshot`));
}

/** Runs a server host: starts it, reports `ready`, answers requests, exits when asked or when the parent goes away. */
export function serveHost(start: () => Promise<StartedServer>): void {
  let server: StartedServer | undefined;
  const sampling = startHeapSampling(process.env['BENCH_SERVER_KIND'] ?? 'server');
  const stopSampling = async (): Promise<void> => (await sampling)?.();
  const stop = async (code: number): Promise<never> => {
    if (server !== undefined) await server.stop();
    await stopSampling();
    process.exit(code);
  };
  process.on('disconnect', () => {
    stop(0).catch((error: unknown) => {
      process.stderr.write(`bench host: stop after disconnect failed: ${String(error)}\n`);
      process.exit(1);
    });
  });
  process.on('message', (raw: HostRequest) => {
    if (raw.type === 'stats') {
      send({ type: 'reply', id: raw.id, stats: processStats() });
    } else if (raw.type === 'settle') {
      const settled = server?.settle?.() ?? Promise.resolve();
      settled.then(
        () => send({ type: 'reply', id: raw.id, stats: processStats() }),
        (error: unknown) => {
          process.stderr.write(`bench host: settle failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    } else if (raw.type === 'gc') {
      collect();
      // let finalizers and native frees scheduled by the collection run before measuring
      setTimeout(() => {
        collect();
        const stats = processStats();
        writeSnapshot();
        send({ type: 'reply', id: raw.id, stats });
      }, 50);
    } else {
      const stats = processStats();
      const finish = (): void => send({ type: 'reply', id: raw.id, stats });
      if (server === undefined) {
        finish();
        process.exit(0);
      }
      server.stop().then(stopSampling).then(
        () => {
          finish();
          // give the reply a moment to leave before exit (profiles are written at exit)
          setTimeout(() => process.exit(0), 20);
        },
        (error: unknown) => {
          process.stderr.write(`bench host: stop failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    }
  });
  start().then(
    (started) => {
      server = started;
      send({ type: 'ready', port: started.port, pid: process.pid });
    },
    (error: unknown) => {
      send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      process.exit(1);
    },
  );
}
