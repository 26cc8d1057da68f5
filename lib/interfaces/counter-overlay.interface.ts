/** Options of `CounterService.overlay()` and `@LiveCounts()`. */
export interface CounterOverlayOptions {
  /**
   * Fill the `@RollingCount()` properties too, with what `count` gives over their windows, live. Costs one
   * SQL statement per entity type in the value, and two Redis round trips. @default false
   */
  windowed?: boolean;
}
