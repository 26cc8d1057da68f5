/**
 * Puts `String.prototype` back in V8's fast mode, which ioredis takes it out of.
 *
 * ioredis 6 declares `class VerbatimString extends String` when it loads. V8 then keeps
 * `String.prototype`, now a prototype of a prototype, in dictionary ("setup") mode until an object is
 * made through a constructor of that chain, which a client that never receives a RESP3 verbatim string
 * never does. Until then every string method of the whole process (`charCodeAt`, `slice`, `indexOf`,
 * `Number(text)`, Map lookups by text) leaves its fast path: parsing a claim's reply, measured alone,
 * took 1.75 µs per row of three counters with ioredis loaded, 0.6 µs without it, and 0.6 µs again after
 * this call; `charCodeAt` over a string ran six times slower. One object made through a subclass that
 * adds a property of its own makes V8 turn the prototype chain fast again. Nothing a program can
 * observe changes; calling it again costs an allocation.
 */
export function keepStringPrototypeFast(): void {
  new StringPrototypeWarmer('');
}

class StringPrototypeWarmer extends String {
  // The own property is what matters: V8 makes the prototypes of an object fast when it first stores
  // into it (an instance of a bare subclass leaves them as they are).
  readonly warm: boolean;

  constructor(value: string) {
    super(value);
    this.warm = true;
  }
}
