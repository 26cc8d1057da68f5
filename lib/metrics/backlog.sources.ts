import type { CounterStatus } from '../interfaces/counter-status.interface.js';

/** The backlog as the gauges show it; NaN where Redis did not answer. */
export interface BacklogFigures {
  pendingRows: number;
  oldestPendingAgeSeconds: number;
}

interface Source {
  keyPrefix: string;
  status: () => Promise<CounterStatus>;
}

/** Which sources each pair of backlog gauges reads: a gauge reused by a second module reads its source too. */
const sourcesOfGauge = new WeakMap<object, BacklogSources>();

/**
 * The modules whose backlog a pair of gauges reports, read once per scrape. Modules that share a key prefix
 * (apps of one deployment in one process) count once; different prefixes add up.
 */
export class BacklogSources {
  private readonly sources = new Set<Source>();
  private reading?: Promise<BacklogFigures>;

  static of(gauge: object): BacklogSources | undefined {
    return sourcesOfGauge.get(gauge);
  }

  static attach(...gauges: object[]): BacklogSources {
    const sources = new BacklogSources();
    for (const gauge of gauges) sourcesOfGauge.set(gauge, sources);
    return sources;
  }

  /** Adds a module's backlog; returns how to remove it (at shutdown). */
  add(keyPrefix: string, status: () => Promise<CounterStatus>): () => void {
    const source = { keyPrefix, status };
    this.sources.add(source);
    return () => this.sources.delete(source);
  }

  /** The figures; both gauges of one scrape (collected at once) share one read. */
  read(): Promise<BacklogFigures> {
    this.reading ??= this.readNow().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readNow(): Promise<BacklogFigures> {
    const byPrefix = new Map<string, Source>();
    for (const source of this.sources) if (!byPrefix.has(source.keyPrefix)) byPrefix.set(source.keyPrefix, source);
    const unknown = { pendingRows: Number.NaN, oldestPendingAgeSeconds: Number.NaN };
    try {
      const statuses = await Promise.all([...byPrefix.values()].map((source) => source.status()));
      if (statuses.some((status) => !status.redisAvailable)) return unknown;
      return {
        pendingRows: statuses.reduce((sum, status) => sum + (status.pendingRows ?? 0), 0),
        oldestPendingAgeSeconds: Math.max(0, ...statuses.map((status) => status.oldestPendingAgeMs ?? 0)) / 1_000,
      };
    } catch {
      return unknown;
    }
  }
}
