// Runs the crash-restart loop at size: --kills SIGKILLs under mixed REST and sync load; prints what was acknowledged and lost.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCrashLoop } from './lib/crash-loop.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '60' },
    'max-load-ms': { type: 'string', default: '600' },
    seed: { type: 'string', default: '10' },
    /** `dist` (default): build, then run the compiled server as npm start does; `tsx`: the sources (npm test). */
    server: { type: 'string', default: 'dist' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write('node --import=tsx bench/crash-loop.ts [--kills 60] [--max-load-ms 600] [--seed 10] [--server dist|tsx]\n');
  process.exit(0);
}
// The compiled build, as npm start runs it: a server under tsx takes seconds longer to start on a busy machine.
const dist = values.server !== 'tsx';
if (dist) execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
const dataDir = mkdtempSync(join(tmpdir(), 'plait-crash-'));
try {
  const result = await runCrashLoop({
    dataDir,
    kills: Number(values.kills),
    maxLoadMs: Number(values['max-load-ms']),
    seed: Number(values.seed),
    ...(dist ? { serverArgs: [new URL('../dist/bundle/main.js', import.meta.url).pathname] } : {}),
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(
    `${JSON.stringify({ ...result, lostRest: result.lostRest.length, lostComments: result.lostComments.length }, null, 2)}\n`,
  );
  if (result.lostRest.length + result.lostComments.length + result.lostSync > 0) process.exitCode = 1;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
// y-websocket providers of killed servers may still hold reconnect timers; the figures are out, so end here.
process.exit();
