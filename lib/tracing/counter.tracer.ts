/** Attributes of a span: OpenTelemetry's primitive values and homogeneous arrays. */
export type CounterSpanAttributes = Record<string, string | number | boolean | string[] | number[]>;

/** A span the module's code may add to while it runs. */
export interface CounterSpan {
  setAttributes(attributes: CounterSpanAttributes): void;
  /** Marks the span failed with `error` (recorded as an exception). */
  fail(error: unknown): void;
}

/**
 * Runs work in a span. The default does nothing but run it, so that tracing costs nothing when it is off.
 * Spans cover a flush, a batch transaction, a load of rows from the database: never a single command.
 */
export interface CounterTracer {
  /** Runs `work` in a span named `name`, a child of the active one; a rejection fails the span. */
  inSpan<T>(name: string, attributes: CounterSpanAttributes, work: (span: CounterSpan) => Promise<T>): Promise<T>;
}

const NO_OP_SPAN: CounterSpan = { setAttributes: () => undefined, fail: () => undefined };

/** The tracer when tracing is off. */
export const NO_OP_TRACER: CounterTracer = { inSpan: (_name, _attributes, work) => work(NO_OP_SPAN) };
