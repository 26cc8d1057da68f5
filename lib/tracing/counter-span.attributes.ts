import type { CountedEntity } from '../model/counted-entity.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import type { DeltaBatch } from '../model/delta-batch.js';
import type { CounterSpanAttributes } from './counter.tracer.js';

/** The module's span names and attributes, in one place (docs/OPERATING.md, "Tracing"). */
export const SPAN = {
  flush: 'counter.flush',
  transaction: 'counter.flush.transaction',
  load: 'counter.load',
} as const;

/** A flush's outcome, set on its span when it ends. */
export function flushAttributes(report: FlushReport): CounterSpanAttributes {
  return {
    'counter.rows': report.rows,
    'counter.batches': report.batches,
    'counter.recovered_batches': report.recoveredBatches,
    'counter.dropped_rows': report.droppedRows,
    'counter.busy_shards': report.busyShards,
    'counter.failed_shards': report.failedShards,
  };
}

/** A batch transaction's entities (sorted), and one entry per batch in `counter.shard` and `counter.batch_id`. */
export function transactionAttributes(batches: DeltaBatch[]): CounterSpanAttributes {
  return {
    'counter.entity': [...new Set(batches.map((batch) => batch.entity.name))].sort(),
    'counter.shard': batches.map((batch) => batch.shard),
    'counter.batch_id': batches.map((batch) => batch.batchId),
    'counter.rows': batches.reduce((rows, batch) => rows + batch.rows.ids.length, 0),
  };
}

/** A load of rows of one entity from the database, to seed Redis or to answer with Redis down. */
export function loadAttributes(entity: CountedEntity, rows: number): CounterSpanAttributes {
  return { 'counter.entity': entity.name, 'counter.rows': rows };
}
