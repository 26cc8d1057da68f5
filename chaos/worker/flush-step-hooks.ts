// Stops a worker at one step of the flush protocol (see FLUSH_STEPS), so that the parent can kill or
// freeze it exactly there. Installed only when the parent first asks for a step: a worker that is never
// asked runs the library untouched.
//
// It wraps, on the instances the flusher holds, FlushStore.claim / ack / release and
// CounterDatabase.applyBatches, and the query runners of the DataSource (for the point between the UPDATE
// and COMMIT). Once a step is reached, every wrapped call, in any shard, waits before it starts: the
// process does nothing more of the protocol, as if it had died there, until the parent resumes it.
import type { INestApplicationContext } from '@nestjs/common';
import { DataSource, type QueryRunner } from 'typeorm';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import type { FlushStep, WorkerMessage } from './worker-protocol.js';

type Reached = Extract<WorkerMessage, { kind: 'reached' }>;

export class FlushStepHooks {
  private armed?: FlushStep;
  /** Pending while the worker is stopped at a step; undefined otherwise. */
  private stopped?: Promise<void>;
  private release?: () => void;

  private constructor(private readonly announce: (message: Reached) => void) {}

  static install(app: INestApplicationContext, announce: (message: Reached) => void): FlushStepHooks {
    const hooks = new FlushStepHooks(announce);
    hooks.wrapStore(app.get(FlushStore));
    hooks.wrapDatabase(app.get(CounterDatabase), app.get(CounterKeys));
    hooks.wrapTransactions(app.get(DataSource));
    return hooks;
  }

  /** One shot: the next time a flush reaches `step`, the worker stops there. */
  pauseAt(step: FlushStep): void {
    this.armed = step;
  }

  /** Lets the stopped protocol go on; returns whether it was stopped. */
  resume(): boolean {
    const release = this.release;
    this.stopped = this.release = undefined;
    release?.();
    return release !== undefined;
  }

  private async gate(): Promise<void> {
    while (this.stopped) await this.stopped;
  }

  private async reach(step: FlushStep, detail: { batchId?: string; shard?: string }): Promise<void> {
    if (this.armed !== step) return;
    this.armed = undefined;
    this.stopped = new Promise<void>((resolve) => (this.release = resolve));
    this.announce({ kind: 'reached', reached: step, ...detail });
    await this.gate();
  }

  private wrapStore(store: FlushStore): void {
    const claim = store.claim.bind(store);
    const ack = store.ack.bind(store);
    const release = store.release.bind(store);
    store.claim = async (shard, request) => {
      await this.gate();
      const outcome = await claim(shard, request);
      if (outcome.kind === 'batch' && outcome.rows.encodedIds.length > 0) {
        await this.reach('after-claim', { batchId: outcome.batchId, shard: shard.tag });
      }
      return outcome;
    };
    store.ack = async (shard, batchId, token, releaseLease, counters, missing) => {
      await this.gate();
      const acknowledged = await ack(shard, batchId, token, releaseLease, counters, missing);
      // The flusher releases the lease with the ack of a shard's last batch and keeps it otherwise.
      await this.reach(releaseLease ? 'after-ack' : 'holding-lease', { batchId, shard: shard.tag });
      return acknowledged;
    };
    store.release = async (shard, token) => {
      await this.gate();
      return release(shard, token);
    };
  }

  private wrapDatabase(database: CounterDatabase, keys: CounterKeys): void {
    const applyBatches = database.applyBatches.bind(database);
    database.applyBatches = async (batches, endedLate) => {
      await this.gate();
      const outcome = await applyBatches(batches, endedLate);
      if (outcome.applied) {
        // A transaction may hold batches of several shards; the step is reported for its first.
        const [{ batchId, entity, shard }] = batches;
        await this.reach('after-commit', { batchId, shard: keys.shard(entity.key, shard).tag });
      }
      return outcome;
    };
  }

  /**
   * The batch transaction is the only one that runs an UPDATE (CounterDatabase.applyInTransaction); its
   * COMMIT is held once the UPDATE has run. The ledger INSERT's first parameter is the batch id.
   */
  private wrapTransactions(dataSource: DataSource): void {
    const createQueryRunner = dataSource.createQueryRunner.bind(dataSource);
    dataSource.createQueryRunner = (mode) => {
      const runner = createQueryRunner(mode);
      const query = runner.query.bind(runner) as (
        sql: string,
        params?: unknown[],
        structured?: boolean,
      ) => Promise<unknown>;
      const commit = runner.commitTransaction.bind(runner);
      let batchId: string | undefined;
      let updated = false;
      runner.query = (async (sql: string, params?: unknown[], structured?: boolean) => {
        if (/^\s*INSERT INTO\s+\S*counter_ledger/i.test(sql)) batchId = String(params?.[0]);
        const result = await query(sql, params, structured);
        if (/^\s*UPDATE\b/i.test(sql)) updated = true;
        return result;
      }) as QueryRunner['query'];
      runner.commitTransaction = async () => {
        if (updated) {
          updated = false;
          await this.gate();
          await this.reach('in-transaction', { batchId });
        }
        return commit();
      };
      return runner;
    };
  }
}
