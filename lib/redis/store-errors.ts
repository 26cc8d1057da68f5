import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { MESSAGES } from '../counter.messages.js';

/**
 * Replies with which Redis refuses a command without running it, while a cluster moves slots or fails
 * over: an outage to wait out, not a bug.
 */
const TRANSIENT_REFUSAL = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN|READONLY)\b/;

/**
 * The reply of a Redis at its `maxmemory` that cannot evict (`noeviction`): it refuses a script at its
 * first write, so the refused call wrote nothing.
 */
const OUT_OF_MEMORY = /^OOM\b/;

/**
 * Errors with which ioredis refuses a command without writing it: its socket is no longer writable (it
 * just broke), or a cluster knows no node for it yet. Nothing reached Redis.
 */
const REFUSED_UNSENT = /^(Stream isn't writeable|Cluster isn't ready) and enableOfflineQueue options is false/;

/**
 * What a failed command means to the caller: an outage (CounterStoreUnavailableError, a Redis out of
 * memory among them) or, for a reply with which Redis refused to run a command, a bug to surface as it is.
 */
export function toStoreError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof CounterReplicationLagError) return error;
  if (error.name === 'ReplyError' && OUT_OF_MEMORY.test(error.message)) {
    return new CounterStoreUnavailableError(MESSAGES.storeOutOfMemory(error.message), { cause: error });
  }
  if (error.name === 'ReplyError' && TRANSIENT_REFUSAL.test(error.message)) {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, false), { cause: error });
  }
  if (error.name !== 'ReplyError') {
    const sent = !REFUSED_UNSENT.test(error.message);
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, sent), {
      cause: error,
      outcomeUnknown: sent,
    });
  }
  return error;
}
