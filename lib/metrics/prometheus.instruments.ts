import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { errorKindOf } from '../exceptions/counter-error-kind.js';
import type { ResolvedMetricsOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { CounterStatus } from '../interfaces/counter-status.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import { missingPeer } from '../optional-peer.js';
import { BacklogSources } from './backlog.sources.js';
import type { CounterInstruments, DumpFallbackReason } from './counter.instruments.js';

type PromClient = typeof import('prom-client');

/** The `entity` or `counter` label of a refusal whose name is not the registry's: one series for all of them. */
const UNKNOWN_LABEL = 'unknown';

/** Flush durations span a few milliseconds (nothing waits) to seconds (a large backlog), in seconds. */
const FLUSH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The module's Prometheus metrics (docs/OPERATING.md, "Metrics"). A metric its registry holds already (another module
 * or app of the process) is reused. The increment path counts through a label child made once per counter.
 */
export class PrometheusInstruments implements CounterInstruments {
  private readonly changes: Counter<'entity' | 'counter'>;
  private readonly refusals: Counter<'entity' | 'counter' | 'reason'>;
  private readonly flushedRows: Counter<'entity'>;
  private readonly flushedBatches: Counter<'entity'>;
  private readonly failedFlushes: Counter;
  private readonly flushDuration: Histogram;
  private readonly dataLosses: Counter;
  private readonly dumpFallbacks: Counter<'reason'>;
  private readonly drifted: Gauge<'entity' | 'counter'>;
  private readonly backlog: BacklogSources;
  private readonly changesOf = new WeakMap<CounterField, { inc(): void }>();

  private constructor(
    private readonly client: PromClient,
    private readonly registry: Registry,
    private readonly prefix: string,
  ) {
    const { Counter, Histogram } = client;
    this.changes = this.metric('changes_total', (name, registers) => {
      const help = 'Counter changes applied (increments and decrements).';
      return new Counter({ name, help, labelNames: ['entity', 'counter'], registers });
    });
    this.refusals = this.metric('refused_changes_total', (name, registers) => {
      const help = 'Counter changes refused, with nothing changed: bad input, out of range, no such row.';
      return new Counter({ name, help, labelNames: ['entity', 'counter', 'reason'], registers });
    });
    this.flushedRows = this.metric('flushed_rows_total', (name, registers) => {
      const help = 'Rows whose counter changes a flush wrote to the database.';
      return new Counter({ name, help, labelNames: ['entity'], registers });
    });
    this.flushedBatches = this.metric('flushed_batches_total', (name, registers) => {
      const help = 'Claimed batches a flush wrote to the database.';
      return new Counter({ name, help, labelNames: ['entity'], registers });
    });
    this.failedFlushes = this.metric('failed_flushes_total', (name, registers) => {
      const help = 'Flushes that failed, fully or for some shards (their batches stay in Redis).';
      return new Counter({ name, help, registers });
    });
    this.flushDuration = this.metric('flush_duration_seconds', (name, registers) => {
      const help = 'Wall time of a flush.';
      return new Histogram({ name, help, buckets: FLUSH_BUCKETS, registers });
    });
    this.dataLosses = this.metric('redis_data_losses_total', (name, registers) => {
      const help = 'Losses of counter data in Redis this instance detected (rows reload from the database).';
      return new Counter({ name, help, registers });
    });
    this.dumpFallbacks = this.metric('dump_fallbacks_total', (name, registers) => {
      const help = 'Claimed batches read with HGETALL because Redis refused DUMP or gave an unreadable one.';
      return new Counter({ name, help, labelNames: ['reason'], registers });
    });
    this.drifted = this.metric('drifted_rows', (name, registers) => {
      const help = 'Rows whose live value differed from the source in the last audit of their counter.';
      return new client.Gauge({ name, help, labelNames: ['entity', 'counter'], registers });
    });
    this.backlog = this.backlogGauges();
  }

  /** Loads prom-client and registers (or finds) the metrics. */
  static async create(options: ResolvedMetricsOptions): Promise<PrometheusInstruments> {
    const client: PromClient = await import('prom-client').catch(
      missingPeer('prom-client', 'CounterModule option "metrics"'),
    );
    const registry = (options.registry as Registry | undefined) ?? client.register;
    return new PrometheusInstruments(client, registry, options.prefix);
  }

  changed(entity: CountedEntity, counter: CounterField): void {
    let child = this.changesOf.get(counter);
    if (!child) this.changesOf.set(counter, (child = this.changes.labels(entity.name, counter.name)));
    child.inc();
  }

  changeFailed(entity: CountedEntity | undefined, counter: CounterField | undefined, error: unknown): void {
    const reason = errorKindOf(error).refusal;
    if (reason) this.refusals.labels(entity?.name ?? UNKNOWN_LABEL, counter?.name ?? UNKNOWN_LABEL, reason).inc();
  }

  batchWritten(entity: CountedEntity, rows: number): void {
    this.flushedBatches.labels(entity.name).inc();
    this.flushedRows.labels(entity.name).inc(rows);
  }

  flushed(report: FlushReport, lostShards: number): void {
    this.flushDuration.observe(report.durationMs / 1_000);
    if (report.error) this.failedFlushes.inc();
    if (lostShards > 0) this.dataLosses.inc();
  }

  redisDataLost(): void {
    this.dataLosses.inc();
  }

  audited(entity: CountedEntity, counter: CounterField, drifted: number): void {
    this.drifted.labels(entity.name, counter.name).set(drifted);
  }

  dumpFallback(reason: DumpFallbackReason): void {
    this.dumpFallbacks.labels(reason).inc();
  }

  observeBacklog(keyPrefix: string, status: () => Promise<CounterStatus>): () => void {
    return this.backlog.add(keyPrefix, status);
  }

  /** The registry's metric of that name, or a new one registered in it. */
  private metric<T>(suffix: string, make: (name: string, registers: Registry[]) => T): T {
    const name = this.prefix + suffix;
    return (this.registry.getSingleMetric(name) as T | undefined) ?? make(name, [this.registry]);
  }

  /** The two backlog gauges, read at scrape time from the modules that observe them. */
  private backlogGauges(): BacklogSources {
    const { Gauge } = this.client;
    const pending = this.metric<Gauge>('pending_rows', (name, registers) => {
      const help = 'Rows whose counter changes wait in Redis for the database (all instances); NaN: Redis down.';
      return new Gauge({
        name,
        help,
        registers,
        async collect() {
          this.set((await BacklogSources.of(this)?.read())?.pendingRows ?? Number.NaN);
        },
      });
    });
    const age = this.metric<Gauge>('oldest_pending_age_seconds', (name, registers) => {
      const help = 'Age of the oldest counter change not yet in the database; 0: none; NaN: Redis down.';
      return new Gauge({
        name,
        help,
        registers,
        async collect() {
          this.set((await BacklogSources.of(this)?.read())?.oldestPendingAgeSeconds ?? Number.NaN);
        },
      });
    });
    return BacklogSources.of(pending) ?? BacklogSources.attach(pending, age);
  }
}
