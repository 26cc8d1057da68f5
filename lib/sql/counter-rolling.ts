import type { DataSource, QueryRunner } from 'typeorm';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { rollingFrom, type RollingWindow } from '../model/rolling-window.js';
import {
  quotedTablePath,
  type BucketRows,
  type BucketTable,
  type CounterDialect,
  type RollingKey,
  type RollingSumRows,
  type RollingTables,
} from './counter-dialect.js';
import { CounterRollingSum } from './counter-rolling-sum.entity.js';
import { compareIds } from './merge-batches.js';
import { CounterRollingWindow } from './counter-rolling-window.entity.js';
import { onPrimary } from './on-primary.js';

/** Where each rolling window of an entity starts, by `${counter} ${window}`, as a transaction locked them. */
export type WindowStarts = Map<string, number>;

/** A row's sum over a window, its id as text. */
export interface RankedRow {
  rowId: string;
  value: number;
}

/**
 * The rolling windows' tables (CounterRollingWindow, CounterRollingSum). Their invariant, which every
 * statement here keeps: for every row of every window, the stored sum (0 when absent) equals the sum of
 * the row's buckets of the counter's finest granularity that start at or after the window's `from`.
 * The flush adds to the sums under a share lock on the window rows, in the transaction that writes the
 * buckets; `advance` moves `from` under an exclusive lock, taking out the buckets it leaves behind.
 * Lock order, the same in every transaction: ledger row, window rows, entity rows, buckets, sums.
 */
export class CounterRolling {
  private rollingTables?: RollingTables;

  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
  ) {}

  /**
   * Whether the flush keeps rolling sums of `entity`: it has windowed counters, and the data source has
   * the rolling tables. Then it adds to every stored window of its counters, even one it does not declare
   * (another instance may: see `rollingSums`).
   */
  keepsSumsOf(entity: CountedEntity): boolean {
    return (
      entity.counters.some((counter) => counter.windows.length > 0) && this.dataSource.hasMetadata(CounterRollingWindow)
    );
  }

  /**
   * The flush's first step for an entity it keeps sums of, before it writes rows or buckets: share-
   * locks the windows' rows (those it does not declare too), creating the declared ones missing (from
   * where the window starts at `nowMs`) with their sums read from the buckets, in the transaction of
   * `runner`. A window created by another transaction not yet committed makes this one wait for it: its
   * sums then count every bucket written before, and this transaction adds its own after.
   */
  async lockWindows(
    runner: QueryRunner,
    dialect: CounterDialect,
    entity: CountedEntity,
    buckets: BucketTable,
    nowMs: number,
  ): Promise<WindowStarts> {
    let starts = await this.readStarts(runner, dialect, entity);
    let created = false;
    for (const field of entity.counters) {
      for (const window of field.rolling) {
        if (starts.has(`${field.name} ${window.name}`)) continue;
        await this.create(
          runner,
          dialect,
          buckets,
          { entity: entity.key, counter: field.name, window: window.name },
          field,
          window,
          nowMs,
        );
        created = true;
      }
    }
    if (created) starts = await this.readStarts(runner, dialect, entity);
    return starts;
  }

  /**
   * Adds the changes of `buckets` (one entity's, merged) to the sums of their counters' rolling windows,
   * each bucket of the finest granularity to the windows it starts in.
   */
  async add(
    runner: QueryRunner,
    dialect: CounterDialect,
    entity: CountedEntity,
    buckets: BucketRows,
    starts: WindowStarts,
  ): Promise<void> {
    const sums = rollingSums(entity, buckets, starts);
    const count = sums.deltas.length;
    for (let from = 0; from < count; from += dialect.maxSumsPerStatement) {
      const to = Math.min(count, from + dialect.maxSumsPerStatement);
      const statement = dialect.addRollingSums(this.tables(), sums, from, to);
      await runner.query(statement.sql, statement.params);
    }
  }

  /**
   * Moves the window's start to `want`, in the transaction of `runner`, if it is behind: locks its row,
   * takes the buckets it leaves behind out of the sums, deletes the sums that are then 0. Returns whether
   * it moved; false too for a window not created yet.
   */
  async advance(
    runner: QueryRunner,
    dialect: CounterDialect,
    buckets: BucketTable,
    key: RollingKey,
    field: CounterField,
    want: number,
  ): Promise<boolean> {
    const t = this.tables();
    const from = await this.lockedStart(runner, dialect, key);
    if (from === undefined || from >= want) return false;
    const subtract = dialect.addBucketSums(t, buckets, key, field.windows[0], { from, to: want }, -1);
    await runner.query(subtract.sql, subtract.params);
    await runner.query(`DELETE FROM ${t.sums} WHERE ${this.keyIs(dialect, 1)} AND ${t.value} = 0`, keyParams(key));
    await runner.query(
      `UPDATE ${t.windows} SET ${t.from} = ${dialect.placeholder(1)} WHERE ${this.keyIs(dialect, 2)}`,
      [want, ...keyParams(key)],
    );
    return true;
  }

  /** Where the window starts, its row locked in the transaction of `runner`; undefined for no row. */
  private async lockedStart(
    runner: QueryRunner,
    dialect: CounterDialect,
    key: RollingKey,
  ): Promise<number | undefined> {
    const t = this.tables();
    const rows: Array<{ start: string | number }> = await runner.query(
      `SELECT ${t.from} AS start FROM ${t.windows} WHERE ${this.keyIs(dialect, 1)}${dialect.forUpdate}`,
      keyParams(key),
    );
    return rows.length === 0 ? undefined : Number(rows[0].start);
  }

  /** Where the window starts as the primary has it; undefined for a window not created yet. */
  async start(key: RollingKey): Promise<number | undefined> {
    const t = this.tables();
    const rows: Array<{ start: string | number }> = await onPrimary(this.dataSource, (manager) =>
      manager.query(`SELECT ${t.from} AS start FROM ${t.windows} WHERE ${this.keyIs(this.dialect, 1)}`, keyParams(key)),
    );
    return rows.length === 0 ? undefined : Number(rows[0].start);
  }

  /** Every stored window, declared here or not, and where it starts, as the primary has them. */
  async stored(): Promise<Array<RollingKey & { start: number }>> {
    const t = this.tables();
    const rows: Array<{ e: string; c: string; w: string; start: string | number }> = await onPrimary(
      this.dataSource,
      (manager) =>
        manager.query(
          `SELECT ${t.entity} AS e, ${t.counter} AS c, ${t.window} AS w, ${t.from} AS start FROM ${t.windows}`,
        ),
    );
    return rows.map((row) => ({ entity: row.e, counter: row.c, window: row.w, start: Number(row.start) }));
  }

  /**
   * Deletes the window's sums and row, in the transaction of `runner`, if it still starts before `before`
   * once its row is locked (so a flush adding to it ends first, and none adds after). Returns whether it
   * did. A flush that declares the window creates it anew, its sums read from the buckets.
   */
  async drop(runner: QueryRunner, dialect: CounterDialect, key: RollingKey, before: number): Promise<boolean> {
    const t = this.tables();
    const from = await this.lockedStart(runner, dialect, key);
    if (from === undefined || from >= before) return false;
    await runner.query(`DELETE FROM ${t.sums} WHERE ${this.keyIs(dialect, 1)}`, keyParams(key));
    await runner.query(`DELETE FROM ${t.windows} WHERE ${this.keyIs(dialect, 1)}`, keyParams(key));
    return true;
  }

  /**
   * Inserts the window's row unless it exists, and when this statement inserted it, its sums: each row's
   * buckets from the window's start on (any sums left from a window of that name dropped before go first).
   */
  private async create(
    runner: QueryRunner,
    dialect: CounterDialect,
    buckets: BucketTable,
    key: RollingKey,
    field: CounterField,
    window: RollingWindow,
    nowMs: number,
  ): Promise<void> {
    const t = this.tables();
    const from = rollingFrom(window, field.windows[0], nowMs);
    const inserted = await runner.query(dialect.insertWindow(t), [...keyParams(key), from], true);
    if ((inserted.affected ?? 0) === 0) return;
    await runner.query(`DELETE FROM ${t.sums} WHERE ${this.keyIs(dialect, 1)}`, keyParams(key));
    const sums = dialect.addBucketSums(t, buckets, key, field.windows[0], { from, to: Number.MAX_SAFE_INTEGER }, 1);
    await runner.query(sums.sql, sums.params);
  }

  private async readStarts(runner: QueryRunner, dialect: CounterDialect, entity: CountedEntity): Promise<WindowStarts> {
    const t = this.tables();
    const rows: Array<{ c: string; w: string; start: string | number }> = await runner.query(
      `SELECT ${t.counter} AS c, ${t.window} AS w, ${t.from} AS start FROM ${t.windows} ` +
        `WHERE ${t.entity} = ${dialect.placeholder(1)} ORDER BY ${t.counter}, ${t.window}${dialect.forShare}`,
      [entity.key],
    );
    return new Map(rows.map((row) => [`${row.c} ${row.w}`, Number(row.start)]));
  }

  /** `entity = ? AND counter = ? AND window = ?`, its placeholders numbered from `first`. */
  private keyIs(dialect: CounterDialect, first: number): string {
    const t = this.tables();
    return (
      `${t.entity} = ${dialect.placeholder(first)} AND ${t.counter} = ${dialect.placeholder(first + 1)} ` +
      `AND ${t.window} = ${dialect.placeholder(first + 2)}`
    );
  }

  /** The tables' names and columns, quoted. */
  tables(): RollingTables {
    if (this.rollingTables) return this.rollingTables;
    const driver = this.dataSource.driver;
    const windows = this.dataSource.getMetadata(CounterRollingWindow);
    const sums = this.dataSource.getMetadata(CounterRollingSum);
    const column = (metadata: typeof sums, property: string) =>
      driver.escape(metadata.findColumnWithPropertyName(property)!.databaseName);
    this.rollingTables = {
      windows: quotedTablePath(driver, windows.tablePath),
      sums: quotedTablePath(driver, sums.tablePath),
      entity: column(sums, 'entity'),
      counter: column(sums, 'counter'),
      window: column(sums, 'window'),
      from: column(windows, 'from'),
      rowId: column(sums, 'rowId'),
      value: column(sums, 'value'),
    };
    return this.rollingTables;
  }
}

function keyParams(key: RollingKey): unknown[] {
  return [key.entity, key.counter, key.window];
}

/**
 * The changes `buckets` make to the sums of rolling windows, in primary key order (counter, window, row
 * id, so that transactions lock sums in one order): a bucket of its counter's finest granularity adds to
 * each stored window of its counter (`starts`, declared here or not: another instance of a deployment
 * being rolled out may declare one this one does not) that it starts in; sums whose changes add up to 0
 * are left out.
 */
export function rollingSums(entity: CountedEntity, buckets: BucketRows, starts: WindowStarts): RollingSumRows {
  const windowsOf = new Map<string, Array<{ window: string; from: number }>>();
  for (const [key, from] of starts) {
    const [counter, window] = key.split(' ');
    windowsOf.set(counter, [...(windowsOf.get(counter) ?? []), { window, from }]);
  }
  const totals = new Map<string, { counter: string; window: string; rowId: string; delta: number }>();
  for (let b = 0; b < buckets.deltas.length; b++) {
    const field = entity.counters.find((counter) => counter.name === buckets.counters[b]);
    const windows = windowsOf.get(buckets.counters[b]);
    if (!field || !windows || buckets.granularities[b] !== field.windows[0]) continue;
    for (const { window, from } of windows) {
      if (buckets.starts[b] < from) continue;
      const key = `${field.name}\u0000${window}\u0000${buckets.rowIds[b]}`;
      const sum = totals.get(key);
      if (sum) sum.delta += buckets.deltas[b];
      else totals.set(key, { counter: field.name, window, rowId: buckets.rowIds[b], delta: buckets.deltas[b] });
    }
  }
  const sorted = [...totals.values()]
    .filter((sum) => sum.delta !== 0)
    .sort((a, b) => compareIds(a.counter, b.counter) || compareIds(a.window, b.window) || compareIds(a.rowId, b.rowId));
  return {
    entity: entity.key,
    counters: sorted.map((sum) => sum.counter),
    windows: sorted.map((sum) => sum.window),
    rowIds: sorted.map((sum) => sum.rowId),
    deltas: sorted.map((sum) => sum.delta),
  };
}
