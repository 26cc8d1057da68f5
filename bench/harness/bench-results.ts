/** Throughput and latency of one side of a comparison; absent figures were not measured. */
export interface Figures {
  /** Operations (or rows, or likes: see the scenario's `unit`) per second. */
  perSecond?: number;
  p50Ms?: number;
  p99Ms?: number;
}

/** One line of a scenario's table: the library and, where there is one, its baseline. */
export interface BenchRow {
  label: string;
  library: Figures;
  baseline?: Figures;
  /** Further figures of this line (statements per 10k likes, round trips, bytes per row…). */
  extra?: Record<string, number>;
}

/** A target of the issue, checked against this run's figures. */
export interface TargetCheck {
  target: string;
  actual: string;
  met: boolean;
}

export interface ScenarioResult {
  id: number;
  title: string;
  /** What the library side does. */
  library: string;
  /** What it is compared with. */
  baseline: string;
  /** What `perSecond` counts: "increments", "likes", "rows"… */
  unit: string;
  rows: BenchRow[];
  checks: TargetCheck[];
  /** Anything a reader needs to interpret the figures. */
  notes: string[];
  durationMs: number;
}

export interface BenchRun {
  startedAt: string;
  quick: boolean;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGiB: number;
    node: string;
    redis: string;
    postgres: string;
    mariadb: string;
    sqlite: string;
  };
  scenarios: ScenarioResult[];
}

/** `actual / wanted` as "0.93×". */
export function ratio(library: number | undefined, baseline: number | undefined): number {
  if (library === undefined || baseline === undefined || baseline === 0) return Number.NaN;
  return library / baseline;
}

export function formatRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(value >= 10 ? 1 : 2)}×` : 'n/a';
}

/** A check "library / baseline ≥ minimum". */
export function atLeast(target: string, value: number, minimum: number): TargetCheck {
  return { target, actual: formatRatio(value), met: Number.isFinite(value) && value >= minimum };
}

/** A check "library / baseline ≤ maximum". */
export function atMost(target: string, value: number, maximum: number): TargetCheck {
  return { target, actual: formatRatio(value), met: Number.isFinite(value) && value <= maximum };
}
