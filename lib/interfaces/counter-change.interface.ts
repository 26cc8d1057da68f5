/** Options of a counter change (`increment`, `decrement`, `change`). */
export interface CounterChangeOptions {
  /**
   * Names this change so that a retry of it applies nothing: the first change with a key on a row
   * applies, every later one with the same key on the same row (whatever its counter or delta) applies
   * nothing, from any instance, for `idempotencyTtlSeconds`. A non-empty string of at most 200
   * characters, well-formed Unicode (no lone surrogate), e.g. a UUID made when the change is first
   * attempted. Lost if Redis loses its data.
   */
  idempotencyKey?: string;
}

/** What a change did: the counter's value after it, and whether this call applied it. */
export interface CounterChangeOutcome {
  /** The counter's live value: after this change when applied, else as it stands now. */
  value: number;
  /** False when the change's idempotency key had already been used on the row, so nothing was applied. */
  applied: boolean;
}
