import type { z } from 'zod';
import type { Logger } from '../lib/logger.ts';
import type { SendOptions } from './queue.ts';

export interface JobContext {
  jobId: string;
  /** 1 on the first run; each later run (after a failure, an expiry, a lost heartbeat or a shutdown) adds one. */
  attempt: number;
  /** No retry follows if this run fails (`attempt` is past the kind's `retryLimit`): the handler records the failure. */
  lastAttempt: boolean;
  /** Aborted when the job expires, its claim is lost, or the worker shuts down past its grace period. */
  signal: AbortSignal;
  /** Aborted when the worker begins to stop: work that is only waiting (to retry, for a machine) ends then. */
  stopping: AbortSignal;
  log: Logger;
  /** Sends a follow-up job (e.g. inside the handler's own transaction with `tx`). */
  send<P, I>(kind: JobKind<P, I>, payload: I, opts?: SendOptions): Promise<string>;
}

type JobHandler<P> = (payload: P, ctx: JobContext) => Promise<void>;

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
  /**
   * Handlers mostly wait (on a model stream, on a remote machine): one fetch loop claims up to
   * `concurrency` jobs and runs them side by side (src/jobs/wide-worker.ts) rather than one
   * pg-boss worker, with its own poll, per slot. Sized for hundreds.
   */
  ioBound?: boolean;
}

/** What the process running the worker may set for a job from its configuration. */
type JobTuning = Partial<Pick<JobSpec<object, unknown>, 'concurrency' | 'expireInSeconds'>>;

/**
 * A job's name, payload and policies: enough to send one, so senders need not hold the handler's
 * dependencies. Method syntax (bivariant parameters) lets kinds of different payloads share a list.
 */
export interface JobKind<P = unknown, I = P> {
  readonly name: string;
  readonly payload: z.ZodType<P, I>;
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly expireInSeconds: number;
  readonly heartbeatSeconds: number;
  readonly concurrency: number;
  readonly serialized: boolean;
  readonly ioBound: boolean;
  serializeBy(payload: P): string | undefined;
}

/** A kind as a module declares it: it can be sent, and bound to its handler for the worker. */
export interface DeclaredJobKind<P = unknown, I = P> extends JobKind<P, I> {
  /** The kind with its handler, for the worker's catalog (where the handler's dependencies are at hand). */
  handledBy(handler: JobHandler<P>, tuning?: JobTuning): JobDefinition<P, I>;
}

/** A job kind and the handler that runs it: what a worker works. */
export interface JobDefinition<P = unknown, I = P> extends JobKind<P, I> {
  handler(payload: P, ctx: JobContext): Promise<void>;
}

// Every job heartbeats: without it a killed worker's job would wait out its whole expireInSeconds.
const DEFAULT_HEARTBEAT_SECONDS = 30;

// pg-boss's own queue-name rule, checked here so a bad name fails when the module loads.
const NAME = /^[\w.\-/]+$/;

/**
 * The one way to declare a background job: its name, zod payload and policies, checked when the
 * module loads. Modules export kinds; the composition root's catalog binds handlers with `handledBy`.
 */
export function defineJobKind<P extends object, I>(spec: JobSpec<P, I>): DeclaredJobKind<P, I> {
  const retryDelay = spec.retryDelaySeconds ?? 0;
  const heartbeat = spec.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS;
  const problems = [
    ...(NAME.test(spec.name) ? [] : ['name may only hold letters, digits, "_", "-", "." and "/"']),
    ...(Number.isInteger(spec.retryLimit) && spec.retryLimit >= 0 ? [] : ['retryLimit must be an integer >= 0']),
    ...(Number.isInteger(retryDelay) && retryDelay >= 0 ? [] : ['retryDelaySeconds must be an integer >= 0']),
    ...(Number.isInteger(heartbeat) && heartbeat >= 10 ? [] : ['heartbeatSeconds must be an integer >= 10 (pg-boss minimum)']),
    ...tuningProblems(spec),
  ];
  if (problems.length) throw new Error(`job ${JSON.stringify(spec.name)}: ${problems.join('; ')}`);

  const { serializeBy } = spec;
  const kind: DeclaredJobKind<P, I> = {
    name: spec.name,
    payload: spec.payload,
    retryLimit: spec.retryLimit,
    retryDelaySeconds: retryDelay,
    expireInSeconds: spec.expireInSeconds,
    heartbeatSeconds: heartbeat,
    concurrency: spec.concurrency ?? 1,
    serialized: serializeBy !== undefined,
    ioBound: spec.ioBound ?? false,
    serializeBy: (payload) => serializeBy?.(payload),
    handledBy: (handler, tuning = {}) => {
      const problems = tuningProblems(tuning);
      if (problems.length) throw new Error(`job ${JSON.stringify(spec.name)}: ${problems.join('; ')}`);
      const { handledBy: _, ...rest } = kind;
      return { ...rest, ...definedOnly(tuning), handler };
    },
  };
  return kind;
}

function tuningProblems(t: JobTuning): string[] {
  const problems: string[] = [];
  if (t.expireInSeconds !== undefined && !(Number.isInteger(t.expireInSeconds) && t.expireInSeconds >= 1)) {
    problems.push('expireInSeconds must be an integer >= 1');
  }
  if (t.concurrency !== undefined && !(Number.isInteger(t.concurrency) && t.concurrency >= 1)) {
    problems.push('concurrency must be an integer >= 1');
  }
  return problems;
}

function definedOnly(t: JobTuning): JobTuning {
  return Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined));
}

/** A cron schedule (UTC) of a job kind; the composition root registers every module's list. */
export interface JobSchedule<P = unknown, I = P> {
  kind: JobKind<P, I>;
  cron: string;
  payload: I;
  /** `once`: one run for occurrences that came due while nothing was running (default: skip them). */
  missed?: 'skip' | 'once';
  /** Also send one run whenever the schedules are registered (a process starts): catch-up work. */
  sendAtStart?: boolean;
}
