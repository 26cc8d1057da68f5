import type { Span, Tracer } from '@opentelemetry/api';
import { missingPeer } from '../optional-peer.js';
import type { CounterSpan, CounterSpanAttributes, CounterTracer } from './counter.tracer.js';

type OpenTelemetryApi = typeof import('@opentelemetry/api');

/** Instrumentation scope of the module's spans. */
export const TRACER_NAME = 'nestjs-counter';

/**
 * Spans through `@opentelemetry/api`, of kind INTERNAL, in the active context (a flush's batch spans are its
 * children). Without an SDK registered the API's tracer is a no-op; one registered later is used from then on.
 */
export class OpenTelemetryTracer implements CounterTracer {
  private readonly tracer: Tracer;

  private constructor(private readonly api: OpenTelemetryApi) {
    this.tracer = api.trace.getTracer(TRACER_NAME);
  }

  /** Loads `@opentelemetry/api`. */
  static async create(): Promise<OpenTelemetryTracer> {
    const api: OpenTelemetryApi = await import('@opentelemetry/api').catch(
      missingPeer('@opentelemetry/api', 'CounterModule option "tracing"'),
    );
    return new OpenTelemetryTracer(api);
  }

  inSpan<T>(name: string, attributes: CounterSpanAttributes, work: (span: CounterSpan) => Promise<T>): Promise<T> {
    const { SpanKind } = this.api;
    return this.tracer.startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
      try {
        return await work(this.wrap(span));
      } catch (error) {
        this.fail(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  private wrap(span: Span): CounterSpan {
    return {
      setAttributes: (attributes) => span.setAttributes(attributes),
      fail: (error) => this.fail(span, error),
    };
  }

  private fail(span: Span, error: unknown): void {
    const exception = error instanceof Error ? error : new Error(String(error));
    span.recordException(exception);
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: exception.message });
  }
}
