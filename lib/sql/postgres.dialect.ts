import { DEFAULT_FLUSH_BATCH_SIZE } from '../counter.constants.js';
import {
  currentValue,
  driverErrorOf,
  fixedIntegerRange,
  isDataException,
  type CounterDialect,
  type DeltaTarget,
  type Statement,
} from './counter-dialect.js';
import {
  bucketColumns,
  bucketPrimaryKey,
  bucketSumParams,
  bucketSumsSelect,
  bucketsOf,
  sumColumns,
} from './bucket-statements.js';
import type { DeltaRows } from '../model/delta-batch.js';

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';
const TRANSIENT = new Set([DEADLOCK_DETECTED, '40001', '55P03']);

/**
 * PostgreSQL: `UPDATE … FROM unnest(…)`, the ids and each column's deltas as one array parameter each,
 * the rows found by primary key.
 */
export const postgresDialect: CounterDialect = {
  // Each transaction on a pooled connection of its own: `flushConcurrency` sets how many.
  parallelTransactions: Number.POSITIVE_INFINITY,
  defaultFlushBatchSize: DEFAULT_FLUSH_BATCH_SIZE,
  integerRange: fixedIntegerRange,
  placeholder: (position) => `$${position}`,
  // A statement has one parameter per column, whatever the rows.
  maxRowsPerStatement: () => Number.POSITIVE_INFINITY,

  addDeltas(target: DeltaTarget, rows: DeltaRows, from: number, to: number): Statement {
    // Arrays instead of a VALUES tuple per row: PostgreSQL parses and plans a few parameters instead of
    // thousands.
    const width = target.columns.length;
    const columns = target.columns.map((_, c) => {
      const deltas: number[] = new Array(to - from);
      for (let r = from; r < to; r++) deltas[r - from] = rows.deltas[r * width + c];
      return deltas;
    });
    const params: unknown[] = [rows.ids.slice(from, to), ...columns];
    const ids = `$1::${target.idType}[]`;
    const arrays = [ids, ...target.columns.map((_, c) => `$${c + 2}::bigint[]`)];
    const deltaNames = target.columns.map((_, index) => `d${index}`);
    const assignments = target.columns.map(
      (column, index) => `${column} = ${currentValue(`t.${column}`, target.nullable[index])} + v.d${index}`,
    );
    // The ids again as `= ANY`: with it the planner reads just the batch's rows by primary key; joined
    // on the derived table alone it may hash them and scan the whole table.
    return {
      sql:
        `UPDATE ${target.table} AS t SET ${assignments.join(', ')} ` +
        `FROM unnest(${arrays.join(', ')}) AS v(id, ${deltaNames.join(', ')}) ` +
        `WHERE t.${target.idColumn} = v.id AND t.${target.idColumn} = ANY(${ids})`,
      params,
    };
  },

  maxBucketsPerStatement: Number.POSITIVE_INFINITY,

  addBuckets(table, buckets, from, to) {
    // Arrays again, as for addDeltas; `b` names the stored row in DO UPDATE whatever the table's path.
    const { value } = table;
    return {
      sql:
        `INSERT INTO ${table.table} AS b (${bucketColumns(table).join(', ')}) ` +
        `SELECT $1::text, c, r, g, s, v ` +
        `FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) AS u(c, r, g, s, v) ` +
        `ON CONFLICT (${bucketPrimaryKey(table)}) DO UPDATE SET ${value} = b.${value} + EXCLUDED.${value}`,
      params: [
        buckets.entity,
        buckets.counters.slice(from, to),
        buckets.rowIds.slice(from, to),
        buckets.granularities.slice(from, to),
        buckets.starts.slice(from, to),
        buckets.deltas.slice(from, to),
      ],
    };
  },

  pruneBuckets(table, counter, before, limit) {
    // DELETE takes no LIMIT: the rows go by primary key, from a SELECT that takes one.
    const key = bucketPrimaryKey(table);
    const of = bucketsOf(table, counter, (position) => `$${position}`);
    const next = of.params.length + 1;
    return {
      sql:
        `DELETE FROM ${table.table} WHERE (${key}) IN (SELECT ${key} FROM ${table.table} ` +
        `WHERE ${of.sql} AND ${table.start} < $${next} ORDER BY ${table.start} LIMIT $${next + 1})`,
      params: [...of.params, before, limit],
    };
  },

  forShare: ' FOR SHARE',
  forUpdate: ' FOR UPDATE',
  insertWindow: (tables) =>
    `INSERT INTO ${tables.windows} (${tables.entity}, ${tables.counter}, ${tables.window}, ${tables.from}) ` +
    `VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,

  maxSumsPerStatement: Number.POSITIVE_INFINITY,

  addRollingSums(tables, sums, from, to) {
    // Arrays, as for addBuckets; `s` names the stored row in DO UPDATE.
    const { value } = tables;
    const columns = sumColumns(tables);
    return {
      sql:
        `INSERT INTO ${tables.sums} AS s (${columns.join(', ')}) SELECT $1::text, c, w, r, v ` +
        `FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(c, w, r, v) ` +
        `ON CONFLICT (${columns.slice(0, 4).join(', ')}) DO UPDATE SET ${value} = s.${value} + EXCLUDED.${value}`,
      params: [
        sums.entity,
        sums.counters.slice(from, to),
        sums.windows.slice(from, to),
        sums.rowIds.slice(from, to),
        sums.deltas.slice(from, to),
      ],
    };
  },

  addBucketSums(tables, buckets, key, granularity, range, sign) {
    // The window's key is cast: PostgreSQL cannot tell the type of a parameter only a SELECT list names.
    const typed = (position: number) => (position <= 3 ? `$${position}::text` : `$${position}`);
    const columns = sumColumns(tables);
    const { value } = tables;
    return {
      sql:
        `INSERT INTO ${tables.sums} AS s (${columns.join(', ')}) ${bucketSumsSelect(buckets, sign, typed)} ` +
        `ON CONFLICT (${columns.slice(0, 4).join(', ')}) DO UPDATE SET ${value} = s.${value} + EXCLUDED.${value}`,
      params: bucketSumParams(key, granularity, range),
    };
  },

  integerOrder: (text) => `CAST(${text} AS numeric)`,
  binaryOrder: (text) => `${text} COLLATE "C"`,

  isDuplicateKey: (error) => driverErrorOf(error).code === UNIQUE_VIOLATION,
  isTransient: (error) => TRANSIENT.has(driverErrorOf(error).code ?? ''),
  isDeadlock: (error) => driverErrorOf(error).code === DEADLOCK_DETECTED,
  random: 'RANDOM()',
  isDataError: (error) => isDataException(driverErrorOf(error).code),
  typedValue: (value, type) => `SELECT CAST(${value} AS ${type}) AS probe`,
};
