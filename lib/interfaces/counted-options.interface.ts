/** Options of `@Counted()`. */
export interface CountedOptions {
  /** Smallest value the counter may take; a change that would go below it is refused. @default -(2^53-1) */
  min?: number;
  /** Largest value the counter may take; a change that would go above it is refused. @default 2^53-1 */
  max?: number;
}

/** What `@Counted()` records on an entity class, one entry per decorated property. */
export interface CountedPropertyMetadata {
  propertyName: string;
  counterName: string;
  options: CountedOptions;
}
