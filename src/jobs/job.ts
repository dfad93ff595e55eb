import type { z } from 'zod';
import type { Logger } from '../lib/logger.ts';
import type { SendOptions } from './queue.ts';

export interface JobContext {
  jobId: string;
  /** 1 on the first run; each later run (after a failure, an expiry, a lost heartbeat or a shutdown) adds one. */
  attempt: number;
  /** Aborted when the job expires, its claim is lost, or the worker shuts down past its grace period. */
  signal: AbortSignal;
  log: Logger;
  /** Sends a follow-up job (e.g. inside the handler's own transaction with `tx`). */
  send<P, I>(def: JobKind<P, I>, payload: I, opts?: SendOptions): Promise<string>;
}

export interface JobSpec<P extends object, I> {
  /** Queue name: letters, digits, `_`, `-`, `.`, `/` (pg-boss's rule). */
  name: string;
  /** Validated when sent and again when received. Keep it JSON round-trippable (no transforms). */
  payload: z.ZodType<P, I>;
  /** Retries after a failed run; 0 means the job runs at most once. */
  retryLimit: number;
  retryDelaySeconds?: number;
  /** Upper bound for one run; past it the run is aborted and counts as a failed attempt. */
  expireInSeconds: number;
  /**
   * A run whose worker stops heartbeating for this long is taken back and retried, so a killed
   * worker's job resumes after roughly this delay instead of after `expireInSeconds`.
   * Minimum 10, default 30.
   */
  heartbeatSeconds?: number;
  /** Runs at once per process (workers in other processes add to it). Default 1. */
  concurrency?: number;
  /**
   * Jobs with the same key run one at a time, in the order they were sent (e.g. one operation per
   * computer); different keys run concurrently.
   */
  serializeBy?: (payload: P) => string;
  handler: (payload: P, ctx: JobContext) => Promise<void>;
}

/**
 * What `send` and `work` need. Method syntax (bivariant parameters) lets definitions of different
 * payloads share one `JobDefinition[]`.
 */
/** A job without its handler: enough to send one, so senders need not hold the handler's dependencies. */
export type JobKind<P = unknown, I = P> = Omit<JobDefinition<P, I>, 'handler'>;

export interface JobDefinition<P = unknown, I = P> {
  readonly name: string;
  readonly payload: z.ZodType<P, I>;
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly expireInSeconds: number;
  readonly heartbeatSeconds: number;
  readonly concurrency: number;
  readonly serialized: boolean;
  serializeBy(payload: P): string | undefined;
  handler(payload: P, ctx: JobContext): Promise<void>;
}

// Every job heartbeats: without it a killed worker's job would wait out its whole expireInSeconds.
const DEFAULT_HEARTBEAT_SECONDS = 30;

// pg-boss's own queue-name rule, checked here so a bad name fails when the module loads.
const NAME = /^[\w.\-/]+$/;

export function defineJob<P extends object, I>(spec: JobSpec<P, I>): JobDefinition<P, I> {
  return defineJobKind(spec).handledBy(spec.handler);
}

/**
 * A job's name, payload and policies, checked when the module loads; `handledBy` adds the
 * handler where its dependencies are at hand (the worker's job catalog).
 */
export function defineJobKind<P extends object, I>(
  spec: Omit<JobSpec<P, I>, 'handler'>,
): JobKind<P, I> & { handledBy(handler: JobSpec<P, I>['handler']): JobDefinition<P, I> } {
  const problems: string[] = [];
  if (!NAME.test(spec.name)) problems.push('name may only hold letters, digits, "_", "-", "." and "/"');
  if (!Number.isInteger(spec.retryLimit) || spec.retryLimit < 0) problems.push('retryLimit must be an integer >= 0');
  const retryDelay = spec.retryDelaySeconds ?? 0;
  if (!Number.isInteger(retryDelay) || retryDelay < 0) problems.push('retryDelaySeconds must be an integer >= 0');
  if (!Number.isInteger(spec.expireInSeconds) || spec.expireInSeconds < 1) {
    problems.push('expireInSeconds must be an integer >= 1');
  }
  const heartbeat = spec.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS;
  if (!Number.isInteger(heartbeat) || heartbeat < 10) {
    problems.push('heartbeatSeconds must be an integer >= 10 (pg-boss minimum)');
  }
  const concurrency = spec.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) problems.push('concurrency must be an integer >= 1');
  if (problems.length) throw new Error(`job ${JSON.stringify(spec.name)}: ${problems.join('; ')}`);

  const { serializeBy } = spec;
  const kind: JobKind<P, I> = {
    name: spec.name,
    payload: spec.payload,
    retryLimit: spec.retryLimit,
    retryDelaySeconds: retryDelay,
    expireInSeconds: spec.expireInSeconds,
    heartbeatSeconds: heartbeat,
    concurrency,
    serialized: serializeBy !== undefined,
    serializeBy: (payload) => serializeBy?.(payload),
  };
  return { ...kind, handledBy: (handler) => ({ ...kind, handler }) };
}
