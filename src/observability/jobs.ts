import { recordJob } from './metrics.ts';
import { currentTraceparent, inSpan, JOB_TRACE_KEY } from './tracing.ts';

/** The job's data as sent: the payload, with the sender's trace context when a span is active. */
export function withTraceContext(payload: object): object {
  const traceparent = currentTraceparent();
  return traceparent ? { ...payload, [JOB_TRACE_KEY]: traceparent } : payload;
}

/** A received job's data without the trace context, and that context (for `observeJob`). */
export function splitTraceContext(data: unknown): { data: unknown; traceparent?: string } {
  if (typeof data !== 'object' || data === null || !(JOB_TRACE_KEY in data)) return { data };
  const { [JOB_TRACE_KEY]: traceparent, ...rest } = data as Record<string, unknown>;
  return { data: rest, traceparent: typeof traceparent === 'string' ? traceparent : undefined };
}

/**
 * One run of a job: a span (child of its sender's, so a trace follows a request into the jobs it
 * queued) and its count and duration by kind and outcome. `run` answers the outcome.
 */
export function observeJob<T extends { status: string }>(kind: string, attempt: number, traceparent: string | undefined, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  return inSpan(
    `job ${kind}`,
    { 'agentplane.job.kind': kind, 'agentplane.job.attempt': attempt },
    async (set) => {
      const result = await run();
      const outcome = result.status === 'completed' ? 'completed' : result.status === 'deadletter' ? 'invalid' : 'failed';
      set({ 'agentplane.job.outcome': outcome });
      recordJob(kind, outcome, (performance.now() - started) / 1000);
      return result;
    },
    traceparent,
  );
}
