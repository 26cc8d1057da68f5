import { Injectable } from '@nestjs/common';
import { Registry } from 'prom-client';

/** Prefix of the counter module's metric names in this app's registry. */
export const COUNTER_METRICS_PREFIX = 'judge_counter_';

/**
 * The counter module's Prometheus metrics (its `metrics` option), in a registry of this app's own, so
 * that two apps in one process (the tests) never add to each other's counts. The page's chart reads
 * the changes applied from it.
 */
@Injectable()
export class CounterMetrics {
  readonly registry = new Registry();

  /** Counter changes applied since the app started, all entities and counters. */
  async changesApplied(): Promise<number> {
    const metric = this.registry.getSingleMetric(`${COUNTER_METRICS_PREFIX}changes_total`);
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.reduce((sum, { value }) => sum + value, 0);
  }
}
