// Owns starting every server under test as a child process (fork + IPC), asking it for CPU/memory, and stopping it.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { buildSync } from 'esbuild';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostMessage, HostRequest, ProcessStats } from './host.js';

export const SYNC_SERVERS = ['plait', 'hocuspocus', 'y-websocket', 'floor'] as const;
/** plait-base: Plait from the build in the bench's env BENCH_BASE_DIST (a copy of dist/ from before a change), for before/after in one run. */
export const SERVER_KINDS = ['plait', 'plait-base', 'plait-nopersist', 'hocuspocus', 'y-websocket', 'y-websocket-leveldb', 'uws-hello', 'rest-floor', 'floor', 'floor-2topics', 'floor-deferred', 'floor-2topics-deferred', 'floor-checked', 'floor-logged', 'floor-checked-logged'] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];

export function isServerKind(value: string): value is ServerKind {
  return (SERVER_KINDS as readonly string[]).includes(value);
}

/** Which wire protocol/client a server speaks. */
export function protocolOf(kind: ServerKind): 'plait' | 'hocuspocus' | 'y-websocket' | 'http' {
  if (kind === 'plait' || kind === 'plait-nopersist' || kind === 'plait-base') return 'plait';
  // The floor speaks y-websocket's wire format on `/<room>`, so the stock provider connects to it.
  if (kind === 'y-websocket' || kind === 'y-websocket-leveldb' || kind.startsWith('floor')) return 'y-websocket';
  return kind === 'hocuspocus' ? 'hocuspocus' : 'http';
}

export interface LaunchOptions {
  /** Reuse a data directory (e.g. to restart on the same data); a fresh temp dir otherwise. */
  readonly dataDir?: string;
  /** Keep the data directory after stop/kill (the caller removes it). */
  readonly keepData?: boolean;
  /** Extra environment (e.g. DOC_IDLE_UNLOAD_MS). */
  readonly env?: Readonly<Record<string, string>>;
  /** Write a V8 CPU profile of the server into this directory (written at graceful stop). */
  readonly cpuProfileDir?: string;
  /** Extra node flags for the server child (e.g. --heapsnapshot-signal=SIGUSR2 for an investigation). */
  readonly execArgv?: readonly string[];
}

export interface ServerHandle {
  readonly kind: ServerKind;
  readonly port: number;
  readonly pid: number;
  readonly dataDir: string;
  stats(): Promise<ProcessStats>;
  /** Full GC in the child, then stats (for memory figures). */
  gcStats(): Promise<ProcessStats>;
  /** Waits until every write the server accepted so far is on disk (its group commit, LevelDB's queue). */
  settle(): Promise<void>;
  /** Graceful stop (final snapshots, profile written); SIGKILL after a timeout. */
  stop(): Promise<void>;
  /** SIGKILL: no final snapshot, no flush beyond what was committed. */
  kill(): Promise<void>;
}

const HOST_DIR = fileURLToPath(new URL('../servers/', import.meta.url));
const READY_TIMEOUT_MS = 60_000;
const REPLY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

function hostEnv(kind: ServerKind, dataDir: string, extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_SERVER_KIND: kind };
  delete env['YPERSISTENCE'];
  delete env['PORT'];
  delete env['NODE_OPTIONS'];
  if (protocolOf(kind) === 'plait') {
    Object.assign(env, startScriptEnv(startWords().join(' '), process.env['BENCH_PLAIT_ENV']));
    Object.assign(env, { DATA_DIR: dataDir, LOG_LEVEL: 'warn', DEV_BOOTSTRAP: 'false', PERSISTENCE: kind === 'plait-nopersist' ? 'false' : 'true' });
    if (kind === 'plait-base') {
      const base = process.env['BENCH_BASE_DIST'];
      if (base === undefined) throw new Error('server kind plait-base needs BENCH_BASE_DIST (a copy of dist/ inside the checkout, so node_modules resolves)');
      // Absolute: the host makes a file URL of it, where a relative path would read as a host name.
      env['PLAIT_BENCH_DIST'] = resolvePath(base);
    }
  }
  if (kind === 'y-websocket-leveldb') env['YPERSISTENCE'] = dataDir;
  if (kind === 'rest-floor') env['DATA_DIR'] = dataDir;
  // The floor's variants (bench/servers/floor.ts) isolate costs of Plait's fan-out path.
  if (kind.startsWith('floor-')) {
    Object.assign(env, { FLOOR_TOPICS: kind.includes('2topics') ? '2' : '1', FLOOR_DEFER: kind.includes('deferred') ? '1' : '0' });
    Object.assign(env, { FLOOR_CHECK: kind.includes('checked') ? '1' : '0', FLOOR_LOG: kind.includes('logged') ? '1' : '0', DATA_DIR: dataDir });
  }
  return { ...env, ...extra };
}

function hostScript(kind: ServerKind): string {
  if (kind.startsWith('floor')) return join(HOST_DIR, 'floor.ts');
  if (kind === 'rest-floor') return join(HOST_DIR, 'rest-floor.ts');
  const protocol = protocolOf(kind);
  return join(HOST_DIR, `${protocol === 'http' ? 'uws-hello' : protocol}.ts`);
}

/**
 * Server hosts run as plain JavaScript, without tsx's loader: tsx runs its module hooks on a thread of their own (a
 * second V8 isolate, ~25–30 MB of anonymous memory in every server) and keeps, with source maps on, a copy of every
 * module it loads (with Plait's bundle, another ~30 MB). That was no part of any server, and it hid the servers'
 * own differences in every memory figure (bench/README.md, "Baseline memory"). Each host is bundled once per bench
 * process by esbuild (packages left external) into bench/.hosts/, a folder at the same depth as bench/servers/ so
 * the hosts' relative URLs (Plait's dist/) still resolve. BENCH_HOST_LOADER=tsx runs them under tsx as before.
 */
const HOSTS_OUT = fileURLToPath(new URL('../.hosts/', import.meta.url));
const USE_TSX = process.env['BENCH_HOST_LOADER'] === 'tsx';
const builtHosts = new Map<string, string>();

function hostEntry(kind: ServerKind): string {
  const source = hostScript(kind);
  if (USE_TSX) return source;
  let out = builtHosts.get(source);
  if (out === undefined) {
    out = join(HOSTS_OUT, source.slice(HOST_DIR.length).replace(/\.ts$/, '.mjs'));
    buildSync({ entryPoints: [source], outfile: out, bundle: true, packages: 'external', format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' });
    builtHosts.set(source, out);
  }
  return out;
}

const FORWARD_LINES = Number(process.env.BENCH_FORWARD_LINES ?? 10);
const FORWARD_CHARS = Number(process.env.BENCH_FORWARD_CHARS ?? 400);

/** Forwards a child's first output lines to our stderr with a prefix (truncated; the rest are counted, reported at exit). */
function forward(child: ChildProcess, prefix: string): void {
  let forwarded = 0;
  let suppressed = 0;
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        if (forwarded++ < FORWARD_LINES) process.stderr.write(`${prefix} ${line.length > FORWARD_CHARS ? `${line.slice(0, FORWARD_CHARS)}…` : line}\n`);
        else suppressed++;
      }
    });
  }
  child.once('exit', () => {
    if (suppressed > 0) process.stderr.write(`${prefix} (${suppressed} more output lines not shown)\n`);
  });
}

/**
 * What a child that has not reported ready is doing, for the error (Linux): its CPU so far, and each thread's state
 * and the kernel function it waits in. A host that hung at start once printed nothing (bench/README.md, "Tenth session").
 */
function processState(pid: number | undefined): string {
  if (pid === undefined) return 'not started';
  try {
    const fields = (path: string): string[] => {
      const stat = readFileSync(path, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    };
    const whole = fields(`/proc/${pid}/stat`);
    const threads = readdirSync(`/proc/${pid}/task`).map((tid) => {
      const wchan = readFileSync(`/proc/${pid}/task/${tid}/wchan`, 'utf8');
      return `${tid} ${fields(`/proc/${pid}/task/${tid}/stat`)[0] ?? '?'}${wchan === '' || wchan === '0' ? '' : ` in ${wchan}`}`;
    });
    return `state ${whole[0] ?? '?'}, ${(Number(whole[11]) + Number(whole[12])) * 10} ms of CPU, threads: ${threads.join(', ')}`;
  } catch (error) {
    return `no /proc view (${error instanceof Error ? error.message : String(error)})`;
  }
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let built = false;

/**
 * The Plait host runs the bundled build (`dist/bundle`), as `npm start` does, not the sources under tsx (tsx keeps
 * function names by wrapping every named closure, which costs memory and CPU Plait would not pay in production).
 * Built once per bench process, so the figures are always of the current sources.
 */
function buildPlait(): void {
  if (built) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  // npm start runs the bundle (src/bundle.ts), not dist/src
  execFileSync(process.execPath, [join(ROOT, 'dist', 'src', 'bundle.js')], { stdio: 'inherit' });
  built = true;
}

/** The words of `npm start`'s command (package.json's start script). */
function startWords(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  return (pkg.scripts?.['start'] ?? '').split(/\s+/).filter((word) => word !== '');
}

/** The node flags `npm start` runs Plait with (package.json's start script), so the bench runs it the same way. */
function plaitNodeFlags(): string[] {
  // An experiment knob (bench/README, "Fan-out CPU per delivery"): other flags than the start script's, space-separated.
  const override = process.env['BENCH_PLAIT_NODE_FLAGS'];
  if (override !== undefined) return override.split(/\s+/).filter((word) => word !== '');
  const words = startWords();
  return words.slice(words.indexOf('node') + 1).filter((word) => word.startsWith('--'));
}

/**
 * The environment `npm start` sets for node: the `NAME=value` words before `node` in the start script (glibc's
 * `MALLOC_ARENA_MAX=2`, bench/README.md "Twenty-third session: two malloc arenas"), so the bench runs Plait with it
 * too. `override` (`BENCH_PLAIT_ENV`: space-separated `NAME=value` words, empty for none) replaces it,
 * for a before/after of such a setting.
 */
export function startScriptEnv(start: string, override?: string): Record<string, string> {
  const words = (override ?? start).split(/\s+/).filter((word) => word !== '');
  const env: Record<string, string> = {};
  for (const word of override === undefined ? words.slice(0, Math.max(0, words.indexOf('node'))) : words) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(word);
    if (match === null) throw new Error(`not a NAME=value word ${override === undefined ? 'before node in the start script' : 'in BENCH_PLAIT_ENV'}: ${word}`);
    env[match[1] as string] = match[2] as string;
  }
  return env;
}

/**
 * Extra node flags for every server host, whatever its kind (`BENCH_HOST_NODE_FLAGS`, space-separated): instruments
 * such as `--perf-basic-prof --interpreted-frames-native-stack` for `perf record`, or `--trace-opt`, applied to the
 * floor and the peers alike (NODE_OPTIONS is not passed on to the hosts).
 */
function hostNodeFlags(): string[] {
  return (process.env['BENCH_HOST_NODE_FLAGS'] ?? '').split(/\s+/).filter((word) => word !== '');
}

/**
 * `BENCH_CPU_PROF_INTERVAL_US`: V8's sampling interval for --profile (1000 µs by default). At 1 ms a path that takes
 * tens of µs per call is seen in a few samples a run, too few to tell its share (bench/README.md, "Eleventh session").
 */
function profileInterval(): string[] {
  const interval = process.env['BENCH_CPU_PROF_INTERVAL_US'];
  return interval === undefined ? [] : [`--cpu-prof-interval=${interval}`];
}

export async function launchServer(kind: ServerKind, options: LaunchOptions = {}): Promise<ServerHandle> {
  if (protocolOf(kind) === 'plait') buildPlait();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), `plait-bench-${kind}-`));
  const execArgv = [...(USE_TSX ? ['--import=tsx'] : []), '--expose-gc', ...(protocolOf(kind) === 'plait' ? plaitNodeFlags() : []), ...hostNodeFlags()];
  if (options.cpuProfileDir !== undefined) execArgv.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`, ...profileInterval());
  execArgv.push(...(options.execArgv ?? []));
  const child = fork(hostEntry(kind), [], {
    execArgv,
    env: hostEnv(kind, dataDir, options.env ?? {}),
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  forward(child, `  [${kind}]`);
  const pending = new Map<number, (stats: ProcessStats) => void>();
  let nextId = 1;
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  exit.then(() => {
    exited = true;
  }, () => undefined);

  const ready = await new Promise<{ port: number; pid: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${kind} server not ready within ${READY_TIMEOUT_MS} ms (pid ${String(child.pid)}: ${processState(child.pid)})`)), READY_TIMEOUT_MS);
    child.on('message', (message: HostMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve({ port: message.port, pid: message.pid });
      } else if (message.type === 'failed') {
        clearTimeout(timer);
        reject(new Error(`${kind} server failed to start: ${message.error}`));
      } else {
        pending.get(message.id)?.(message.stats);
        pending.delete(message.id);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${kind} server exited with code ${String(code)} before ready`));
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    if (options.keepData !== true && options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });

  const request = (type: HostRequest['type']): Promise<ProcessStats> =>
    new Promise((resolve, reject) => {
      if (exited) {
        reject(new Error(`${kind} server has exited`));
        return;
      }
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${kind} server did not answer "${type}" within ${REPLY_TIMEOUT_MS} ms`));
      }, REPLY_TIMEOUT_MS);
      pending.set(id, (stats) => {
        clearTimeout(timer);
        resolve(stats);
      });
      child.send({ id, type } satisfies HostRequest);
    });
  const cleanup = (): void => {
    if (options.keepData !== true) rmSync(dataDir, { recursive: true, force: true });
  };
  const killNow = async (): Promise<void> => {
    if (!exited) child.kill('SIGKILL');
    await exit;
  };

  return {
    kind,
    port: ready.port,
    pid: ready.pid,
    dataDir,
    stats: () => request('stats'),
    gcStats: () => request('gc'),
    settle: async () => {
      await request('settle');
    },
    stop: async () => {
      if (!exited) {
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await request('stop').catch((error: unknown) => process.stderr.write(`  [${kind}] stop: ${String(error)}\n`));
        await exit;
        clearTimeout(timer);
      }
      cleanup();
    },
    kill: async () => {
      await killNow();
      cleanup();
    },
  };
}
