import type { DataSource } from 'typeorm';
import type { CounterService } from '../../lib/index.js';
import { BENCH_ENTITIES, COUNTER_NAMES, type BenchEntity } from '../../test/fixtures/entities.js';
import type { BulkRow, BulkTarget } from './bulk-update.js';

/** The rows 1..rows of one entity, each with a known delta per counter (in `COUNTER_NAMES` order). */
export interface EntityWorkload {
  entity: BenchEntity;
  rows: BulkRow[];
}

/**
 * `total` rows split over the three bench entities, every row dirty on all three counters: like +1..+3,
 * view +1..+10, comment +1. The deltas differ from row to row so that a delta written to the wrong row
 * shows up in the totals.
 */
export function flushWorkload(total: number): EntityWorkload[] {
  return BENCH_ENTITIES.map((entity, index) => {
    const count = Math.floor(total / BENCH_ENTITIES.length) + (index < total % BENCH_ENTITIES.length ? 1 : 0);
    const rows = Array.from({ length: count }, (_, i) => {
      const id = i + 1;
      return { id, deltas: [1 + (id % 3), 1 + ((id * 7 + index) % 10), 1] };
    });
    return { entity, rows };
  });
}

/** The table and counter columns of a bench entity, for hand-written SQL. */
export function bulkTargetOf(dataSource: DataSource, entity: BenchEntity): BulkTarget {
  const metadata = dataSource.getMetadata(entity);
  return {
    tablePath: metadata.tablePath,
    idColumn: metadata.primaryColumns[0].databaseName,
    columns: [...COUNTER_NAMES],
  };
}

/** Sends every delta of the workload through `CounterService.increment`, `inFlight` calls at a time. */
export async function makeDirty(
  counters: CounterService,
  workloads: EntityWorkload[],
  inFlight: number,
): Promise<number> {
  const calls = workloads.flatMap(({ entity, rows }) =>
    rows.flatMap((row) =>
      COUNTER_NAMES.map((counter, index) => () => counters.increment(entity, row.id, counter, row.deltas[index])),
    ),
  );
  let next = 0;
  const worker = async () => {
    while (next < calls.length) await calls[next++]();
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return calls.length;
}

/** Throws unless every row of the workload holds exactly `times` × its deltas in the database. */
export async function verifyTotals(
  dataSource: DataSource,
  workloads: EntityWorkload[],
  times: number,
  after: string,
): Promise<void> {
  for (const { entity, rows } of workloads) {
    const target = bulkTargetOf(dataSource, entity);
    const quote = (name: string) => dataSource.driver.escape(name);
    const table = target.tablePath.split('.').map(quote).join('.');
    const found: Array<Record<string, unknown>> = await dataSource.query(
      `SELECT ${[target.idColumn, ...target.columns].map(quote).join(', ')} FROM ${table}`,
    );
    const byId = new Map(found.map((row) => [Number(row[target.idColumn]), row]));
    if (byId.size !== rows.length)
      throw new Error(`after ${after}: ${entity.name} has ${byId.size} rows, expected ${rows.length}`);
    for (const row of rows) {
      const values = byId.get(row.id);
      target.columns.forEach((column, index) => {
        const actual = Number(values?.[column]);
        const expected = times * row.deltas[index];
        if (actual !== expected) {
          throw new Error(
            `after ${after}: ${entity.name} ${row.id}.${column} is ${actual}, expected ${expected} (${times} × ${row.deltas[index]})`,
          );
        }
      });
    }
  }
}
