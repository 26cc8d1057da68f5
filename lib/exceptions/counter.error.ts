/** What an error is about, for code that handles it; each error sets the fields that apply to it. */
export interface CounterErrorSubject {
  /** The entity's class name. */
  entity?: string;
  /** The row's id: as given when the id itself was refused, else as text (17 and '17' name one row). */
  id?: unknown;
  /** The counter's name. */
  counter?: string;
}

/** Base class of every error the counter module throws. */
export class CounterError extends Error {
  constructor(message: string, options?: ErrorOptions & CounterErrorSubject) {
    super(message, options);
    this.name = this.constructor.name;
    // Only the fields given become properties: an error about an entity has no `id: undefined`.
    const { entity, id, counter } = options ?? {};
    Object.assign(
      this,
      Object.fromEntries(Object.entries({ entity, id, counter }).filter(([, value]) => value !== undefined)),
    );
  }
}
