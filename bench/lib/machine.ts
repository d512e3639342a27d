/** What the report says about the machine a run happened on. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { MachineInfo } from './results.js';

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** The machine now: cores, memory, Node, load average, and the varve commit being measured. */
export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAvgStart: os.loadavg(),
    gitCommit: git(['rev-parse', '--short', 'HEAD']),
    gitDirty: status === undefined ? undefined : status.length > 0,
  };
}
