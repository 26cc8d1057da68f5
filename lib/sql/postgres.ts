import { driverErrorOf, fixedIntegerRange, type CounterDialect, type DeltaRow, type DeltaTarget, type Statement } from './counter-dialect.js';

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';
const TRANSIENT = new Set([DEADLOCK_DETECTED, '40001', '55P03']);

/** PostgreSQL: `UPDATE … FROM (VALUES …)`, one typed tuple per row, the rows found by primary key. */
export const postgresDialect: CounterDialect = {
  parallelTransactions: 4,
  integerRange: fixedIntegerRange,
  placeholder: (position) => `$${position}`,

  addDeltas(target: DeltaTarget, rows: DeltaRow[]): Statement {
    const params: unknown[] = [];
    const tuples = rows.map((row) => {
      params.push(row.id);
      const cells = [`$${params.length}::${target.idType}`];
      for (const delta of row.deltas) {
        params.push(delta);
        cells.push(`$${params.length}::bigint`);
      }
      return `(${cells.join(', ')})`;
    });
    // The ids again, as one array: with it the planner reads just the batch's rows by primary key (in
    // id order); joined on VALUES alone it hashes them and scans the whole table (EXPLAIN ANALYZE,
    // 500 of 33,000 rows: 11-14 ms against 4.7 ms).
    params.push(rows.map((row) => row.id));
    const ids = `$${params.length}::${target.idType}[]`;
    const deltaNames = target.columns.map((_, index) => `d${index}`);
    const assignments = target.columns.map(
      (column, index) => `${column} = COALESCE(t.${column}, 0) + v.d${index}`,
    );
    return {
      sql:
        `UPDATE ${target.table} AS t SET ${assignments.join(', ')} ` +
        `FROM (VALUES ${tuples.join(', ')}) AS v(id, ${deltaNames.join(', ')}) ` +
        `WHERE t.${target.idColumn} = v.id AND t.${target.idColumn} = ANY(${ids})`,
      params,
    };
  },

  isDuplicateKey: (error) => driverErrorOf(error).code === UNIQUE_VIOLATION,
  isTransient: (error) => TRANSIENT.has(driverErrorOf(error).code ?? ''),
  isDeadlock: (error) => driverErrorOf(error).code === DEADLOCK_DETECTED,
};
