import type * as Api from '@opentelemetry/api';

/**
 * OpenTelemetry traces: off (every function runs its work as it is, no OpenTelemetry module
 * loaded) until `enableTracing` runs, which the composition root does when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. Spans go over OTLP/HTTP; a request's W3C `traceparent` is
 * its parent; a job carries its sender's context in its data (JOB_TRACE_KEY). Attributes hold
 * route templates, kinds, step ids, models, tool names and outcomes: never a secret, a message or
 * a tool's input or output.
 */

type Attributes = Record<string, string | number | boolean>;

let api: typeof Api | undefined;
let tracer: Api.Tracer | undefined;
let shutdown: (() => Promise<void>) | undefined;

/** The key a job's data carries its sender's `traceparent` under (removed before the payload is parsed). */
export const JOB_TRACE_KEY = '_traceparent';

export interface TracingSettings {
  /** OTLP/HTTP base URL (…/v1/traces is appended), as OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  serviceName: string;
}

/** Starts the tracer provider and its OTLP exporter (once per process). */
export async function enableTracing(settings: TracingSettings): Promise<void> {
  if (tracer) return;
  const { startTracerProvider } = await import('./tracing-sdk.ts');
  api = await import('@opentelemetry/api');
  shutdown = startTracerProvider(settings);
  tracer = api.trace.getTracer('agentplane');
}

/** Sends what is buffered and stops (tests and a stopping process). */
export async function flushTracing(): Promise<void> {
  await shutdown?.();
}

/**
 * Runs `fn` in a new span, child of the active one (or of `parent`, a `traceparent`), ended when
 * `fn` settles; a thrown error marks it failed. `fn` may add attributes once it knows them.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (set: (more: Attributes) => void) => Promise<T>, parent?: string): Promise<T> {
  if (!tracer || !api) return fn(noop);
  const a = api;
  const ctx = parent ? parentContext(a, parent) : a.context.active();
  return tracer.startActiveSpan(name, { attributes }, ctx, async (span) => {
    try {
      return await fn((more) => span.setAttributes(more));
    } catch (err) {
      span.setStatus({ code: a.SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

const noop = () => {};

/** A server span for one HTTP request, its parent the request's `traceparent`; `end` names and closes it. */
export function startRequestSpan(method: string, traceparent: string | undefined, run: () => void): { end(route: string, status: number): void } | undefined {
  if (!tracer || !api) {
    run();
    return undefined;
  }
  const a = api;
  const parent = traceparent ? parentContext(a, traceparent) : a.ROOT_CONTEXT;
  const span = tracer.startSpan(method, { kind: a.SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
  a.context.with(a.trace.setSpan(parent, span), run);
  return {
    end(route, status) {
      span.updateName(`${method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
      if (status >= 500) span.setStatus({ code: a.SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/** The active span's `traceparent`, to carry in a job's data; undefined without one. */
export function currentTraceparent(): string | undefined {
  if (!api) return undefined;
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  return carrier.traceparent;
}

function parentContext(a: typeof Api, traceparent: string): Api.Context {
  return a.propagation.extract(a.ROOT_CONTEXT, { traceparent });
}
