import type { CountedEntity, CounterField } from '../counter.registry.js';
import type { DeltaRows } from './counter-dialect.js';

/** A batch as the database sees it: its rows (in any order), one delta per column in `counters`. */
export interface DeltaBatch {
  batchId: string;
  entity: CountedEntity;
  shard: number;
  counters: CounterField[];
  rows: DeltaRows;
}
