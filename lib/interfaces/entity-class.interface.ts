/** An entity class, as passed to `CounterService`. */
export type EntityClass<T = unknown> = abstract new (...args: never[]) => T;
