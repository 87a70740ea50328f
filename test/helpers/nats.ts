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
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
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
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
