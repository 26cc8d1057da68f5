import { CounterError } from './counter.error.js';

/**
 * A window (`count`, `series`, `top`) reaches back past the buckets the module keeps: the flush deletes
 * buckets older than `bucketRetentionMs` of their granularity, so the answer could not be exact. Nothing
 * was read.
 */
export class CounterWindowBeyondRetentionError extends CounterError {
  constructor(
    /** The option that decides how far back the buckets go: 'bucketRetentionMs.hour' or 'bucketRetentionMs.day'. */
    readonly option: string,
    /** The oldest start a bucket of that granularity may have in a window now. */
    readonly keptSince: Date,
    message: string,
  ) {
    super(message);
  }
}
