import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import type { CounterStatus } from '../interfaces/counter-status.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';

/** Why a claimed batch was read with `HGETALL`: Redis refused the `DUMP`, or gave one the parser does not read. */
export type DumpFallbackReason = 'refused' | 'unreadable';

/**
 * What the module tells its metrics, one call per event. The default sink does nothing, so that a hook
 * costs one empty call when metrics are off.
 */
export interface CounterInstruments {
  /** A change was applied. On the increment path: must not allocate. */
  changed(entity: CountedEntity, counter: CounterField): void;
  /**
   * A change failed; the sink tells refusals (bad input, out of range, no such row) from other failures.
   * `entity` and `counter` are the registry's, undefined when the name given is not one of them.
   */
  changeFailed(entity: CountedEntity | undefined, counter: CounterField | undefined, error: unknown): void;
  /** A batch transaction wrote `rows` rows of `entity`'s table. */
  batchWritten(entity: CountedEntity, rows: number): void;
  /** A flush ended, having found `lostShards` shards whose data Redis lost. */
  flushed(report: FlushReport, lostShards: number): void;
  /** A loss of Redis data was detected outside a flush (at bootstrap: a loss while no instance ran). */
  redisDataLost(): void;
  /** An audit of a counter found `drifted` rows whose live value differs from the source. */
  audited(entity: CountedEntity, counter: CounterField, drifted: number): void;
  /** A claimed batch was read with `HGETALL` instead of its `DUMP`. */
  dumpFallback(reason: DumpFallbackReason): void;
  /**
   * Reads the backlog of the deployment with key prefix `keyPrefix` at each scrape, until the returned
   * function is called.
   */
  observeBacklog(keyPrefix: string, status: () => Promise<CounterStatus>): () => void;
}

const nothing = (): void => undefined;

/** The sink when metrics are off. */
export const NO_OP_INSTRUMENTS: CounterInstruments = {
  changed: nothing,
  changeFailed: nothing,
  batchWritten: nothing,
  flushed: nothing,
  redisDataLost: nothing,
  audited: nothing,
  dumpFallback: nothing,
  observeBacklog: () => nothing,
};
