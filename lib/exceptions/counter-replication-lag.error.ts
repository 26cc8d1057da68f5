import { CounterError } from './counter.error.js';

/**
 * A claimed batch did not reach the replicas of its node (on a Redis Cluster), or was not fsynced to the
 * AOFs (where the servers have `WAITAOF`), in time, so it was not written to the database yet (a failover
 * or a restart from the AOF could otherwise apply it twice). It stays claimed in Redis and a later flush
 * writes it. Seen in `FlushReport.error`, never thrown by `CounterService`.
 */
export class CounterReplicationLagError extends CounterError {}
