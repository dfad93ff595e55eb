import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../../db/client.ts';
import { observeStep } from '../../../observability/observe.ts';

/**
 * The step runner: a list of steps run in order, each one's status stored and owned here
 * (pending → running → completed | failed | skipped). Every status change is a compare-and-set on
 * the stored row (it names the statuses it expects), so a step someone else moved meanwhile (a
 * teardown marking it skipped, the reaper failing it) is never overwritten: the runner stops
 * there. Steps are idempotent by id: a run resumed after a crash skips what completed. Shaped
 * after Medusa v2's workflow steps (retry, timeout, compensation), kept small.
 */

export type StepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

/** A step as stored. */
export interface StoredStep {
  id: string;
  status: StepStatus;
  startedAt: Date | null;
}

/** What a status change writes besides the status; `fields` are the store's own (e.g. an install session id). */
export interface StepChange {
  status: StepStatus;
  error?: string | null;
  startedAt?: Date;
  completedAt?: Date | null;
  fields?: Record<string, unknown>;
}

/** Where steps' statuses live. */
export interface StepStore {
  list(): Promise<StoredStep[]>;
  /**
   * Moves step `id` to `change` when its stored status is one of `from`, atomically; false (and
   * nothing written) otherwise. `change` may be computed inside the transaction, writing what
   * must be stored with the change (`tx`); throwing there rolls everything back.
   */
  move(id: string, from: StepStatus[], change: StepChange | ((tx: Db) => Promise<StepChange>)): Promise<boolean>;
  /** Skips every step still pending, saying why. */
  skipPending(reason: string): Promise<void>;
}

/** When a failed attempt is tried again, and for how long. */
export interface RetryRule {
  /** Whether trying again may succeed (a dropped connection may; a wrong host key never does). */
  transient(err: unknown): boolean;
  /** How long after the step's first attempt in this run it may still be tried again. */
  budgetMs: number;
  /** The pause between attempts. */
  delayMs: number;
  /** What the running step shows while it waits to try again; nothing is written without it. */
  note?(err: unknown): string;
}

/** Fails at the first error. */
export const NO_RETRY: RetryRule = { transient: () => false, budgetMs: 0, delayMs: 0 };

interface StepCall {
  /** Aborted when the job is, or when the step's timeout passes. */
  signal: AbortSignal;
  /** The step had started in an earlier run (cut short: a crash, an expired job). */
  resumed: boolean;
}

/**
 * What a step's run ends with: nothing (completed), `skip` (skipped, saying why), `handOff`
 * (left running: the work goes on elsewhere, which finishes the step). `complete` writes what
 * completing stores, in the completing transaction.
 */
type StepOutcome = void | { skip: string } | { handOff: StepChange['fields'] } | { complete?: (tx: Db) => Promise<void>; fields?: StepChange['fields'] };

/** A failure that stores more than its message (e.g. an install's exit code and output). */
export class StepFailure extends Error {
  readonly fields: Record<string, unknown>;

  constructor(message: string, fields: Record<string, unknown>) {
    super(message);
    this.name = 'StepFailure';
    this.fields = fields;
  }
}

export interface Step {
  id: string;
  /**
   * The work. A step that hands off (`start`) runs instead inside the transaction that moves it
   * from pending to running, so the hand-off and the status cannot part; it is never run again
   * once it left pending.
   */
  run?(call: StepCall): Promise<StepOutcome>;
  start?(tx: Db): Promise<{ skip: string } | { handOff: StepChange['fields'] }>;
  /** Per attempt; past it the attempt is aborted and the step fails saying so. */
  timeoutMs?: number;
  /** Default: no retry. */
  retry?: RetryRule;
  /** Undoes what a failed run left behind, before the failure is recorded (best effort). */
  compensate?(err: unknown): Promise<void>;
  /** A failure ends the list: every later pending step is skipped with this reason. Without it the next step runs. */
  stopsOnFailure?: string;
}

/** A step's run went past its `timeoutMs`. */
class StepTimeout extends Error {
  readonly ms: number;

  constructor(ms: number) {
    super(`did not finish within ${formatSeconds(ms)}`);
    this.name = 'StepTimeout';
    this.ms = ms;
  }
}

export interface RunOptions {
  signal: AbortSignal;
  /**
   * Aborted when the worker begins to stop: a step waiting to try again gives up at once (its job
   * runs again, resuming the step), where work in progress still finishes within the grace period.
   */
  stopping?: AbortSignal;
  now: () => Date;
  /** The computer's provider, for the steps' metrics and spans. */
  provider?: string;
  /** Logged only: a step that failed, a compensation that failed. */
  warn?: (msg: string, err: unknown) => void;
}

/**
 * How a run ended: `finished` (every step of the list was handled), `failed` (a step that stops
 * the list failed; the rest were skipped), `lost` (a step's status was changed by someone else;
 * the runner stopped without writing).
 */
export type RunResult = 'finished' | 'failed' | 'lost';

/**
 * Runs `steps` in order against `store`. Only steps stored as pending or running run (a running
 * one was cut short and runs again, keeping its start time); steps not stored are not part of this
 * computer's list and are passed over. An aborted `signal` is thrown: the job is tried again and
 * resumes here.
 */
export async function runSteps(store: StepStore, steps: Step[], opts: RunOptions): Promise<RunResult> {
  const stored = new Map((await store.list()).map((s) => [s.id, s]));
  for (const step of steps) {
    const row = stored.get(step.id);
    if (!row || (row.status !== 'pending' && row.status !== 'running')) continue;
    const outcome = await observeStep(opts.provider ?? 'unknown', step.id, () =>
      step.start ? startStep(store, step, row, opts) : runStep(store, step, row, opts),
    );
    if (outcome === 'lost') return 'lost';
    if (outcome === 'failed' && step.stopsOnFailure !== undefined) {
      await store.skipPending(step.stopsOnFailure);
      return 'failed';
    }
  }
  return 'finished';
}

type StepEnd = 'completed' | 'failed' | 'skipped' | 'handed-off' | 'lost';

async function startStep(store: StepStore, step: Step, row: StoredStep, opts: RunOptions): Promise<StepEnd> {
  // Once started, a hand-off step is finished by the work it handed off to.
  if (row.status !== 'pending') return 'handed-off';
  let end: StepEnd = 'handed-off';
  const moved = await store.move(step.id, ['pending'], async (tx) => {
    const started = await step.start!(tx);
    const at = opts.now();
    if ('skip' in started) {
      end = 'skipped';
      return { status: 'skipped', error: started.skip, completedAt: at };
    }
    return { status: 'running', error: null, startedAt: at, completedAt: null, fields: started.handOff };
  });
  return moved ? end : 'lost';
}

async function runStep(store: StepStore, step: Step, row: StoredStep, opts: RunOptions): Promise<StepEnd> {
  const startedAt = row.startedAt ?? opts.now();
  if (!(await store.move(step.id, ['pending', 'running'], { status: 'running', error: null, startedAt, completedAt: null }))) return 'lost';
  const retry = step.retry ?? NO_RETRY;
  const until = Date.now() + retry.budgetMs;
  for (;;) {
    let outcome: StepOutcome;
    try {
      outcome = await attempt(step, { resumed: row.startedAt !== null }, opts.signal);
    } catch (err) {
      if (opts.signal.aborted || opts.stopping?.aborted) throw err;
      if (retry.transient(err) && Date.now() + retry.delayMs < until) {
        // Still ours? A step skipped meanwhile (its computer deleted) is not tried again.
        const note = retry.note?.(err);
        const still = await store.move(step.id, ['running'], { status: 'running', ...(note === undefined ? {} : { error: note }) });
        if (!still) return 'lost';
        await delay(retry.delayMs, undefined, { signal: opts.stopping ? AbortSignal.any([opts.signal, opts.stopping]) : opts.signal });
        continue;
      }
      opts.warn?.(`step ${step.id} failed`, err);
      if (step.compensate) await step.compensate(err).catch((e: unknown) => opts.warn?.(`compensating step ${step.id} failed`, e));
      const failed = await store.move(step.id, ['running'], {
        status: 'failed',
        error: messageOf(err),
        completedAt: opts.now(),
        fields: err instanceof StepFailure ? err.fields : undefined,
      });
      return failed ? 'failed' : 'lost';
    }
    if (outcome && 'handOff' in outcome) {
      return (await store.move(step.id, ['running'], { status: 'running', fields: outcome.handOff })) ? 'handed-off' : 'lost';
    }
    if (outcome && 'skip' in outcome) {
      const skip = outcome.skip;
      return (await store.move(step.id, ['running'], { status: 'skipped', error: skip, completedAt: opts.now() })) ? 'skipped' : 'lost';
    }
    const { complete, fields } = outcome ?? {};
    const done = await store.move(step.id, ['running'], async (tx) => {
      await complete?.(tx);
      return { status: 'completed', error: null, completedAt: opts.now(), fields };
    });
    return done ? 'completed' : 'lost';
  }
}

/** One attempt, bounded by the step's timeout. */
async function attempt(step: Step, call: Omit<StepCall, 'signal'>, jobSignal: AbortSignal): Promise<StepOutcome> {
  if (!step.timeoutMs) return step.run!({ ...call, signal: jobSignal });
  const timeout = AbortSignal.timeout(step.timeoutMs);
  const signal = AbortSignal.any([jobSignal, timeout]);
  let timer: NodeJS.Timeout | undefined;
  // The work may not heed its signal at once; the timeout ends the wait regardless.
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StepTimeout(step.timeoutMs!)), step.timeoutMs! + 1_000);
  });
  try {
    const outcome = await Promise.race([step.run!({ ...call, signal }), timedOut]);
    // Work that swallowed the abort was still cut short.
    if (timeout.aborted && !jobSignal.aborted) throw new StepTimeout(step.timeoutMs);
    return outcome;
  } catch (err) {
    if (timeout.aborted && !jobSignal.aborted) throw new StepTimeout(step.timeoutMs);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
