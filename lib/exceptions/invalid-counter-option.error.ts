import { CounterError } from './counter.error.js';

/**
 * An option of `recount` or `audit` is invalid: a `batchSize`, `limit` or `sample` that is not a
 * positive safe integer, `ids` that are not an array, an `after` that is not an id of the entity. Or one
 * of a window (`count`, `series`, `top`): a `since` or `until` that is not a date, an `until` not after
 * `since`, a `granularity` the counter does not keep. Nothing was read or changed.
 */
export class InvalidCounterOptionError extends CounterError {
  constructor(
    /** The option refused, e.g. 'batchSize'. */
    readonly option: string,
    message: string,
  ) {
    super(message);
  }
}
