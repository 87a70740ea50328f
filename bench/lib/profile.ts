// Owns reading V8 .cpuprofile files (node --cpu-prof) into a short summary: top self-time frames and time per package.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  readonly file: string;
  /** Sampled milliseconds, idle excluded. */
  readonly busyMs: number;
  readonly topFrames: ReadonlyArray<{ frame: string; ms: number; share: number }>;
  readonly byPackage: ReadonlyArray<{ area: string; ms: number; share: number }>;
}

/** Which package or Plait module a frame belongs to. */
function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? url);
  }
  const src = url.indexOf('/src/');
  if (src !== -1 && !url.startsWith('node:')) return `plait ${url.slice(src + 1).split('/').slice(0, 2).join('/')}`;
  return url.startsWith('node:') ? 'node core' : url;
}

function short(frame: CallFrame): string {
  const file = frame.url.split('/').slice(-2).join('/');
  return `${frame.functionName === '' ? '(anonymous)' : frame.functionName} ${file}:${frame.lineNumber + 1}`;
}

export function summarizeProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const frames = new Map<string, number>();
  const areas = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of self) {
    const node = byId.get(id);
    if (node === undefined || node.callFrame.functionName === '(idle)') continue;
    busy += micros;
    const key = short(node.callFrame);
    frames.set(key, (frames.get(key) ?? 0) + micros);
    const area = areaOf(node.callFrame);
    areas.set(area, (areas.get(area) ?? 0) + micros);
  }
  const ranked = (map: Map<string, number>): Array<[string, number]> => [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  return {
    file,
    busyMs: busy / 1000,
    topFrames: ranked(frames).map(([frame, micros]) => ({ frame, ms: micros / 1000, share: micros / busy })),
    byPackage: ranked(areas).map(([area, micros]) => ({ area, ms: micros / 1000, share: micros / busy })),
  };
}

/** Summaries of every profile in a directory (one per server process that ran with --cpu-prof). */
export function summarizeProfiles(dir: string, top = 15): ProfileSummary[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => summarizeProfile(join(dir, name), top));
}

export function formatProfile(summary: ProfileSummary): string {
  const pct = (share: number): string => `${(share * 100).toFixed(1).padStart(5)}%`;
  return [
    `profile ${summary.file} (${summary.busyMs.toFixed(0)} ms busy)`,
    '  self time by package/module:',
    ...summary.byPackage.map((a) => `    ${pct(a.share)} ${a.ms.toFixed(0).padStart(7)} ms  ${a.area}`),
    '  top self-time frames:',
    ...summary.topFrames.map((f) => `    ${pct(f.share)} ${f.ms.toFixed(0).padStart(7)} ms  ${f.frame}`),
  ].join('\n');
}
