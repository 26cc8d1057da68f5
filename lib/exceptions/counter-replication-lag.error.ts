import { CounterError } from './counter.error.js';

/**
 * On a Redis Cluster, a claimed batch did not reach the replicas of its node in time, so it was not
 * written to the database yet (a failover could otherwise apply it twice). It stays claimed in Redis
 * and a later flush writes it. Seen in `FlushReport.error`, never thrown by `CounterService`.
 */
export class CounterReplicationLagError extends CounterError {}
