import {
  currentValue,
  driverErrorOf,
  rowParams,
  type BucketTable,
  type CounterDialect,
  type DeltaTarget,
  type Statement,
} from './counter-dialect.js';
import {
  bucketColumns,
  bucketParams,
  bucketPrimaryKey,
  bucketSumParams,
  bucketSumsSelect,
  bucketTuples,
  bucketsOf,
  sumColumns,
  sumParams,
} from './bucket-statements.js';
import type { DeltaRows } from '../model/delta-batch.js';

const DUPLICATE = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE']);
/** A value SQLite cannot take: of the wrong type for its column, or too big. */
const SQLITE_DATA_ERRORS = new Set(['SQLITE_MISMATCH', 'SQLITE_TOOBIG']);

/**
 * Rows of every UPDATE statement: a batch's last statement is padded to this many with rows that match
 * no id (all NULL), so that a table's statements share one text, which better-sqlite3 compiles once
 * (TypeORM's query runner keeps compiled statements by text): compiling a long VALUES list takes longer
 * than running it (see docs/PERFORMANCE.md, "Flush tunings").
 */
const STATEMENT_ROWS = 256;

/**
 * Rows per flush transaction by default. SQLite has one writer at a time, which locks the whole database
 * whatever a transaction's size, and every COMMIT syncs its log: fewer, larger transactions take less of
 * Node's thread, which runs SQLite's statements (see docs/PERFORMANCE.md, "SQLite transactions").
 */
const SQLITE_FLUSH_BATCH_SIZE = 8_000;

/** SQLite binds at most 32,766 parameters per statement; a row takes its id and one per column. */
const MAX_PARAMETERS = 32_766;

/**
 * SQLite (better-sqlite3): `UPDATE … FROM` a VALUES list (SQLite 3.33+), in the FROM clause, where SQLite
 * reads it row by row as the UPDATE goes (as a WITH table it would copy it first). The database lock
 * serialises writers, so row order is moot.
 */
export const sqliteDialect: CounterDialect = {
  parallelTransactions: 1,
  defaultFlushBatchSize: SQLITE_FLUSH_BATCH_SIZE,
  // SQLite stores every integer in up to 8 bytes, whatever the declared type.
  integerRange: () => undefined,
  placeholder: () => '?',
  maxRowsPerStatement: (columns) => Math.min(STATEMENT_ROWS, Math.floor(MAX_PARAMETERS / (1 + columns))),

  addDeltas: joinedDeltas,

  maxBucketsPerStatement: STATEMENT_ROWS,

  addBuckets: (table, buckets, from, to) => {
    // Padded, as the UPDATE is, so that every statement has one text: rows of NULLs, which the WHERE
    // leaves out (it also tells SQLite that ON CONFLICT is the upsert's, not the SELECT's join's).
    const params = bucketParams(buckets, from, to);
    while (params.length < STATEMENT_ROWS * 6) params.push(null);
    return { sql: bucketStatementText(table), params };
  },

  // DELETE … LIMIT needs a compile-time option of SQLite: the rows go by rowid, from a SELECT that limits.
  pruneBuckets: (table, counter, before, limit) => {
    const of = bucketsOf(table, counter, () => '?');
    return {
      sql:
        `DELETE FROM ${table.table} WHERE rowid IN (SELECT rowid FROM ${table.table} ` +
        `WHERE ${of.sql} AND ${table.start} < ? ORDER BY ${table.start} LIMIT ?)`,
      params: [...of.params, before, limit],
    };
  },

  // One writer at a time: a transaction's reads see no other's writes until it ends.
  forShare: '',
  forUpdate: '',
  insertWindow: (tables) =>
    `INSERT INTO ${tables.windows} (${tables.entity}, ${tables.counter}, ${tables.window}, ${tables.from}) ` +
    `VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,

  // Five parameters a sum.
  maxSumsPerStatement: Math.floor(MAX_PARAMETERS / 5),

  addRollingSums: (tables, sums, from, to) => {
    const columns = sumColumns(tables);
    const tuples = Array.from({ length: to - from }, () => '(?, ?, ?, ?, ?)').join(', ');
    return {
      sql:
        `INSERT INTO ${tables.sums} (${columns.join(', ')}) VALUES ${tuples} ` +
        `ON CONFLICT (${columns.slice(0, 4).join(', ')}) DO UPDATE SET ${tables.value} = ${tables.value} + ` +
        `excluded.${tables.value}`,
      params: sumParams(sums, from, to),
    };
  },

  // The SELECT has a WHERE clause, which keeps SQLite from reading ON CONFLICT as a join's ON.
  addBucketSums: (tables, buckets, key, granularity, range, sign) => {
    const columns = sumColumns(tables);
    return {
      sql:
        `INSERT INTO ${tables.sums} (${columns.join(', ')}) ${bucketSumsSelect(buckets, sign, () => '?')} ` +
        `ON CONFLICT (${columns.slice(0, 4).join(', ')}) DO UPDATE SET ${tables.value} = ${tables.value} + ` +
        `excluded.${tables.value}`,
      params: bucketSumParams(key, granularity, range),
    };
  },

  integerOrder: (text) => `CAST(${text} AS INTEGER)`,
  // Text compares by its bytes unless a column declares another collation, which CounterBucket does not.
  binaryOrder: (text) => text,

  isDuplicateKey: (error) => DUPLICATE.has(String(driverErrorOf(error).code)),
  isTransient: (error) => String(driverErrorOf(error).code ?? '').startsWith('SQLITE_BUSY'),
  // One writer at a time: SQLite waits (busy) instead of deadlocking.
  isDeadlock: () => false,
  random: 'RANDOM()',
  isDataError: (error) => SQLITE_DATA_ERRORS.has(String(driverErrorOf(error).code)),
  // Every integer column has INTEGER affinity.
  typedValue: (value) => `SELECT CAST(${value} AS INTEGER) AS probe`,
};

/** The padded bucket upsert (see `addBuckets`), by table, made once. */
const bucketStatements = new Map<string, string>();

function bucketStatementText(table: BucketTable): string {
  let sql = bucketStatements.get(table.table);
  if (sql === undefined) {
    // In DO UPDATE a bare column is the stored row's; `excluded` is the row the INSERT brought.
    sql =
      `INSERT INTO ${table.table} (${bucketColumns(table).join(', ')}) ` +
      `SELECT * FROM (VALUES ${bucketTuples(STATEMENT_ROWS)}) WHERE column1 IS NOT NULL ` +
      `ON CONFLICT (${bucketPrimaryKey(table)}) ` +
      `DO UPDATE SET ${table.value} = ${table.value} + excluded.${table.value}`;
    bucketStatements.set(table.table, sql);
  }
  return sql;
}

/** Statement texts by table and columns, made once. */
const statementTexts = new Map<string, string>();

function joinedDeltas(target: DeltaTarget, rows: DeltaRows, from: number, to: number): Statement {
  const rowsPerStatement = sqliteDialect.maxRowsPerStatement(target.columns.length);
  // A NULL id equals nothing, so a padding row updates no row (and `changes` counts real rows only).
  const params = rowParams(rows, from, to, target.columns.length, rowsPerStatement * (1 + target.columns.length));
  return { sql: statementText(target, rowsPerStatement), params };
}

function statementText(target: DeltaTarget, rows: number): string {
  const key = `${target.table} ${target.idColumn} ${target.columns.join(' ')} ${target.nullable.join(' ')}`;
  let sql = statementTexts.get(key);
  if (sql === undefined) {
    const tuple = `(${['?', ...target.columns.map(() => '?')].join(', ')})`;
    // A VALUES table's columns are column1 (the id), column2 (the first delta) and so on.
    const assignments = target.columns.map(
      (column, index) =>
        `${column} = ${currentValue(`${target.table}.${column}`, target.nullable[index])} + v.column${index + 2}`,
    );
    sql =
      `UPDATE ${target.table} SET ${assignments.join(', ')} ` +
      `FROM (VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}) AS v ` +
      `WHERE ${target.table}.${target.idColumn} = v.column1`;
    statementTexts.set(key, sql);
  }
  return sql;
}
