import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from './tracing.ts';

/**
 * The OpenTelemetry SDK, loaded only when tracing is on: a Node tracer provider (AsyncLocalStorage
 * context, so a span stays active across awaits), W3C trace context, batched OTLP/HTTP export.
 * Returns its shutdown, which flushes what is buffered.
 */
export function startTracerProvider(settings: TracingSettings): () => Promise<void> {
  const exporter = new OTLPTraceExporter({ url: `${settings.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return async () => {
    await provider.forceFlush();
  };
}
