// Test helper: a real nats-server with JetStream on a free loopback port and a temporary store, or a plain skip reason.
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';

/** Debian's package installs it here; PATH is tried too (NATS_SERVER_BIN overrides both). */
const CANDIDATES = [process.env['NATS_SERVER_BIN'], '/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];
const READY = /Listening for client connections on ([\d.]+):(\d+)/;
/** A server that has not printed its ready line by then is reported, not waited for. */
const START_TIMEOUT_MS = 20_000;

/**
 * nats-server runs under a shell that ends it when the test process goes, however it goes: tap ends a timed-out test
 * with SIGALRM, and then no teardown or exit handler runs, which left servers behind. The shell prints the server's
 * pid, waits for it, and a watchdog reads the shell's stdin, which only the test process holds: end of file (the test
 * process is gone) kills the server; the line `done` (the server has already exited) ends the watchdog quietly, so
 * it never signals a pid that may have been reused. (The shell gives a background job /dev/null for stdin unless told
 * otherwise: the watchdog reads the shell's own stdin through fd 3.)
 */
const WATCHDOG = 'exec 3<&0; "$0" "$@" & server=$!; echo "$server"; (read -r line <&3; [ "$line" = done ] || kill -9 "$server" 2>/dev/null) & wait "$server"';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** Ends the server (SIGKILL: nothing is flushed; SIGTERM: a clean stop) and resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** What the server has logged so far (its notices: slow consumers, disconnects). */
  output(): string;
}

/** The nats-server binary, or undefined when none is installed. */
export function natsServerBinary(): string | undefined {
  for (const candidate of CANDIDATES) if (candidate !== undefined && existsSync(candidate)) return candidate;
  return undefined;
}

/**
 * Skips `t` with a plain message when nats-server is missing (`.ci/run` installs it with apt); returns the binary
 * otherwise. Callers: `const bin = natsOrSkip(t); if (bin === undefined) return;`.
 */
export function natsOrSkip(t: Test): string | undefined {
  const bin = natsServerBinary();
  // plan(0, reason) is TAP's 'skip all' with the reason printed.
  if (bin === undefined) t.plan(0, 'nats-server is not installed (apt-get install nats-server; .ci/run does it): cluster tests skipped');
  return bin;
}

/**
 * Starts `nats-server -js` on 127.0.0.1 and a port the server picks, storing in a tap test directory. `config`: lines
 * of a server configuration file (limits such as `max_pending`), passed with `-c`.
 */
export async function startNats(t: Test, bin: string, storeDir = t.testdir(), port = -1, config?: string): Promise<NatsServer> {
  const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir];
  if (config !== undefined) {
    const file = join(storeDir, 'nats-server.conf');
    writeFileSync(file, `${config}\n`);
    args.push('-c', file);
  }
  const child = spawn('sh', ['-c', WATCHDOG, bin, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  // The shell's first line: the server's own pid, which stop() signals (the shell passes no signal on).
  const serverPid = new Promise<number>((resolve) => {
    let line = '';
    child.stdout.on('data', (chunk: Buffer) => {
      line += chunk.toString();
      if (line.includes('\n')) resolve(Number(line.split('\n')[0]));
    });
  });
  // A watchdog gone already (its shell was killed) makes the write fail: kept in the output, which tests can show.
  child.stdin.on('error', (error) => (output += `\n[watchdog stdin: ${error.message}]`));
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (running()) {
      try {
        process.kill(await serverPid, name);
      } catch (error) {
        // The server exited between the check and the signal: what was asked for has happened.
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    await exited;
    if (!child.stdin.writableEnded) child.stdin.end('done\n');
  };
  t.teardown(() => signal('SIGKILL'));
  const bound = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server did not start within ${START_TIMEOUT_MS} ms: ${output}`)), START_TIMEOUT_MS);
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = READY.exec(output);
      if (match?.[2] !== undefined) {
        clearTimeout(timer);
        resolve(Number(match[2]));
      }
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not run ${bin}: ${error.message}`));
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited before it was ready: ${output}`));
    });
  });
  return {
    url: `nats://127.0.0.1:${bound}`,
    port: bound,
    output: () => output,
    stop: (name = 'SIGTERM') => signal(name),
  };
}
