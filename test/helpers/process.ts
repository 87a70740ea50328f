// Test helper: runs the real server entry point (src/main.ts) as a child process and waits for its ready line.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const READY = /listening on http:\/\/[^:]+:(\d+)/;

export interface ServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly port: number;
  /** Everything the process printed on stdout so far. */
  stdout(): string;
  /** Everything the process printed on stderr so far (complete once `closed` has resolved). */
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
  /** Resolves once the process has ended and its output streams are drained. */
  readonly closed: Promise<void>;
}

export function spawnMain(env: Record<string, string>, args: string[] = []): { child: ChildProcessWithoutNullStreams; exited: Promise<number | string>; output: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ['--import=tsx', MAIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, output };
}

/** Starts src/main.ts with `env` (DATA_DIR required) and resolves once it prints its ready line. */
export async function startServerProcess(t: Test, env: Record<string, string>): Promise<ServerProcess> {
  const { child, exited, output } = spawnMain(env);
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (): void => {
      const match = READY.exec(output.stdout);
      if (match?.[1] !== undefined) {
        child.stdout.off('data', onData);
        resolve(Number(match[1]));
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited (${String(code)}) before it was ready: ${output.stderr}`)));
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, port, stdout: () => output.stdout, stderr: () => output.stderr, exited, closed };
}
