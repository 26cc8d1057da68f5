// The messages a chaos worker (chaos/worker/main.ts, a child process) and its parent
// (chaos/harness/chaos-worker.ts) exchange over the IPC channel of `child_process.fork`. Everything in
// here is structured-clone data: the channel uses Node's 'advanced' serialization.
import type { Cluster, Redis } from 'ioredis';
import type { DataSourceOptions } from 'typeorm';
import type { CounterModuleOptions, CounterRedisConnection, FlushReport } from '../../lib/index.js';

/**
 * The entities a worker counts, by name (the classes of test/fixtures/entities.ts and sourced-entities.ts,
 * and Clip for a worker started with `windowed`).
 */
export type CountedEntityName = 'Article' | 'Remark' | 'Badge' | 'Topic' | 'Clip';

/**
 * Points of the flush protocol (lib/counter.flusher.ts) where a worker can be made to stop, so that the
 * parent can SIGKILL or SIGSTOP it there. For each shard the flusher does: claim (takes or renews the
 * lease, moves pending deltas into the batch hash) → applyBatches (one transaction, which may hold the
 * batches of several shards: ledger INSERT, one UPDATE per table, COMMIT) → ack (batch key deleted;
 * releases the lease only on the shard's last batch) → next claim while the dirty set was not empty.
 */
export const FLUSH_STEPS = {
  /** After an ack that kept the lease because the shard has more batches, before the next claim. */
  'holding-lease': 'the lease is held between two batches of one shard; no batch is in flight',
  /** After a claim that returned a batch (new or left behind), before the database is touched. */
  'after-claim': 'the batch is recorded in Redis and its deltas are in flight; nothing is in the database',
  /** In the batch's transaction, after the ledger INSERT and the UPDATE ran, before COMMIT. */
  'in-transaction': 'the UPDATE ran but is not committed; the transaction holds its row locks',
  /** After COMMIT (applyBatches resolved with the batches applied), before the ack scripts. */
  'after-commit': 'the batch is in the database and the ledger, and still in flight in Redis',
  /** After the ack of a shard's last batch, which released the lease. */
  'after-ack': 'the batch is acknowledged and the shard released',
} as const;

export type FlushStep = keyof typeof FLUSH_STEPS;

/** What the worker is started with: `CHAOS_WORKER_CONFIG` in its environment, as JSON. */
export interface WorkerConfig {
  /** A label for logs and reports, e.g. 'A'. */
  name: string;
  /** TypeORM connection options (entities and synchronize are set by the worker). */
  database: DataSourceOptions;
  /**
   * CounterModule options. `redis` is what the module connects with (a URL, ioredis options, or
   * `{ clusterNodes }`): a client object cannot cross processes.
   */
  counter: Omit<CounterModuleOptions, 'redis'> & { redis?: Exclude<CounterRedisConnection, Redis | Cluster> };
  /** Nest log levels the worker prints (to its stdout, which the parent captures). */
  logLevels?: Array<'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal'>;
  /**
   * Also counts Clip, whose counter keeps hourly and daily buckets (CounterBucket). Off by default: a
   * counted entity is flushed and checked for lost data by every instance, in every scenario.
   */
  windowed?: boolean;
}

export type WorkerRequest =
  | {
      op: 'increment';
      entity: CountedEntityName;
      rowId: string | number;
      counter: string;
      by: number;
      /** Sent as the change's `idempotencyKey` (G8): a retry of the change carries the same one. */
      idempotencyKey?: string;
    }
  | { op: 'get'; entity: CountedEntityName; rowId: string | number; counter: string }
  | { op: 'getMany'; entity: CountedEntityName; ids: Array<string | number>; counters?: string[] }
  /** `at`: epoch ms at which to start, so several workers can fire at one moment. */
  | { op: 'flush'; at?: number }
  /** `CounterService.status()` (Dates survive the channel). */
  | { op: 'status' }
  /** Arms a one-shot stop at `step`: the next flush that reaches it reports `reached` and waits. */
  | { op: 'pauseAt'; step: FlushStep }
  /** Lets a worker stopped at a step go on (after SIGCONT, for instance). */
  | { op: 'resume' }
  /** `app.close()` (final flush included if `flushOnShutdown`), then exit. */
  | { op: 'close' };

/** A failure as it crosses the channel. */
export interface WireError {
  name: string;
  message: string;
}

/** `CounterService.flush()`'s report, with its error flattened and the worker's timing. */
export interface WireFlushReport extends Omit<FlushReport, 'error'> {
  worker: string;
  error?: WireError;
  /** Epoch ms when the flush started and ended, in the worker. */
  startedAt: number;
  endedAt: number;
}

export type WorkerMessage =
  | { kind: 'ready'; pid: number }
  | { kind: 'boot-failed'; error: WireError }
  | { kind: 'reply'; id: number; ok: true; result: unknown }
  | { kind: 'reply'; id: number; ok: false; error: WireError }
  /**
   * The worker stopped at `reached`. `batchId`: the batch concerned; `shard`: its shard's key tag, e.g.
   * `ctr:{test_article:1}` (absent for 'in-transaction', where only the batch id is known).
   */
  | { kind: 'reached'; reached: FlushStep; batchId?: string; shard?: string };

export type ParentMessage = WorkerRequest & { id: number };

export function toWireError(error: unknown): WireError {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}
