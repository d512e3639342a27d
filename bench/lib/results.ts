/** The shape of bench/results.json: what every suite reports and what the report generator reads. */
import type { Stats } from './harness.js';

/** One measured quantity (a timing in ms unless `unit` says otherwise). */
export interface Measurement {
  id: string;
  label: string;
  unit: string;
  stats: Stats;
  /** Parameters of this case (table size, runs, writers, …), for tables and charts. */
  params?: Record<string, number | string>;
}

/** A ratio a benchmark is judged by: value = median(numerator) / median(denominator). */
export interface Ratio {
  id: string;
  label: string;
  value: number;
  /** Spread of the per-repetition ratios. */
  min: number;
  max: number;
  /** The aim, when there is one: the ratio should be at most this. */
  target?: number;
  /** Smaller is better (true for time ratios); false when larger is better. */
  lowerIsBetter?: boolean;
}

/** A line chart the report draws as an SVG file. */
export interface ChartSpec {
  file: string;
  title: string;
  xLabel: string;
  yLabel: string;
  xLog?: boolean;
  yLog?: boolean;
  /** Points with optional error bars (min/max). */
  series: Array<{ name: string; points: Array<{ x: number; y: number; lo?: number; hi?: number; label?: string }> }>;
}

/** A small free-form table for the report. */
export interface TableSpec {
  title: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

/** What one benchmark suite returns. */
export interface SuiteResult {
  id: string;
  title: string;
  /** What exactly is timed, and against what: one line each. */
  method: string[];
  /** What was verified on every repetition. */
  checks: string[];
  measurements: Measurement[];
  ratios: Ratio[];
  tables?: TableSpec[];
  charts?: ChartSpec[];
  durationS?: number;
}

/** The machine a run happened on. */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
  loadAvgStart: number[];
  loadAvgEnd?: number[];
  gitCommit?: string;
  gitDirty?: boolean;
}

/** bench/results.json. */
export interface RunResult {
  mode: 'full' | 'quick';
  startedAt: string;
  finishedAt?: string;
  durationS?: number;
  machine: MachineInfo;
  suites: SuiteResult[];
  /** Suites that were asked for but skipped, with why. */
  skipped: Array<{ id: string; reason: string }>;
}

/** What every suite gets from the runner. */
export interface SuiteContext {
  quick: boolean;
  /** A fresh temp folder for this suite; removed afterwards. */
  tmp: string;
  log: (line: string) => void;
}
