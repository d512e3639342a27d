/**
 * CPU profiling of a benchmark from inside the process (node:inspector), so `--profile` needs no
 * node flag: writes a .cpuprofile (open it in Chrome DevTools) and summarises the top frames by
 * self time.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Runs `fn` under the CPU profiler; returns its result and the profile. */
export async function profiled<T>(fn: () => Promise<T>): Promise<{ result: T; profile: CpuProfile }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 1000 });
  await session.post('Profiler.start');
  try {
    const result = await fn();
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

/** Saves a profile as a .cpuprofile file. */
export function saveProfile(path: string, profile: CpuProfile): Promise<void> {
  return writeFile(path, JSON.stringify(profile));
}

/** The frames with the most self time: `share` of all samples, function, and where it is. */
export function topFrames(profile: CpuProfile, count = 25): Array<{ share: number; ms: number; frame: string }> {
  const byNode = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const byFrame = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const cf = byNode.get(id)!.callFrame;
    // tsx-compiled sources report line 0, so only the file is shown for them.
    const file = cf.url.replace(/^file:\/\/.*?\/(node_modules|lib|bench)\//, '$1/');
    const where = cf.url === '' ? '' : cf.lineNumber > 0 ? `${file}:${cf.lineNumber + 1}` : file;
    const key = `${cf.functionName || '(anonymous)'} ${where}`.trim();
    byFrame.set(key, (byFrame.get(key) ?? 0) + ms);
  }
  const total = [...byFrame.values()].reduce((a, b) => a + b, 0);
  return [...byFrame.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, ms]) => ({ share: ms / total, ms, frame }));
}

/** Self time summed per source file (all of parquet-wasm's wasm as one entry), largest first. */
export function topFiles(profile: CpuProfile, count = 12): Array<{ share: number; ms: number; file: string }> {
  const byNode = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const byFile = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const cf = byNode.get(id)!.callFrame;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const file = cf.url.startsWith('wasm://')
      ? 'parquet-wasm (wasm)'
      : cf.url === ''
        ? cf.functionName || '(native)'
        : cf.url.replace(/^file:\/\/.*?\/(node_modules\/[^/]+|lib|bench)\//, '$1/');
    byFile.set(file, (byFile.get(file) ?? 0) + ms);
    total += ms;
  });
  return [...byFile.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([file, ms]) => ({ share: ms / total, ms, file }));
}
