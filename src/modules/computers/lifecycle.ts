import type { Db } from '../../db/client.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { computerEvents } from './computer-events.ts';
import type { ManagedSettings } from './managed/settings.ts';

/**
 * A computer's lifecycle: every operation it can be in (`computers.operation`), each with its
 * deadline and what its expiry means, and the one compare-and-set by which a computer changes,
 * publishing the change's event in the same transaction. The API, the stack and set-up jobs, the
 * reaper and the warm pool all go through it, so none of them decides apart from the others what
 * an operation is or what its expiry does (expire.ts carries the expiry out). Shaped after
 * Coder's one workspace builder, which its API, lifecycle executor and prebuild reconciler share.
 */

/**
 * The operations Pulumi runs on a managed computer's stack, one at a time (its stack job's);
 * `update` runs a program computer's stack at its template's newer version (update.ts).
 */
export const STACK_OPERATIONS = ['provision', 'pause', 'resume', 'teardown', 'update'] as const;
type StackOperation = (typeof STACK_OPERATIONS)[number];
/** A stack operation, or `claim`: a warm pool's computer held for one request while its key is replaced (pool/claim.ts). */
export type Operation = StackOperation | 'claim';

/**
 * What an operation's expiry means:
 * - `fail`: provisioning ends in `error`, its running step failed ("timed out") and the pending ones skipped;
 * - `drop`: the operation is dropped, saying why, and the computer stays as it was;
 * - `retry`: the operation is queued again with a new deadline (a deleted computer's resources are never forgotten);
 * - `destroy`: the computer is destroyed (a claimed machine may hold either key: it is no one's).
 */
type Expiry = 'fail' | 'drop' | 'retry' | 'destroy';

/** The settings deadlines come from. */
type DeadlineSettings = Pick<ManagedSettings, 'provisionTimeoutMs'>;

interface OperationRule {
  /** How long it may take: fixed, or the setting named. */
  deadline: number | keyof DeadlineSettings;
  expiry: Expiry;
}

/** Pause and resume are one `pulumi up` each: minutes past that, something is stuck. */
const POWER_TIMEOUT_MS = 5 * 60_000;
/** How long a claim may hold a pool computer: its key swap over SSH. */
export const CLAIM_TIMEOUT_MS = 30_000;
/** Dependencies install for up to 30 minutes per run (install-run.ts); provisioning whose install started waits that long. */
export const INSTALL_DEADLINE_MS = 35 * 60_000;

/** Every operation, its deadline and what its expiry means. */
export const LIFECYCLE: Record<Operation, OperationRule> = {
  provision: { deadline: 'provisionTimeoutMs', expiry: 'fail' },
  pause: { deadline: POWER_TIMEOUT_MS, expiry: 'drop' },
  resume: { deadline: POWER_TIMEOUT_MS, expiry: 'drop' },
  teardown: { deadline: 'provisionTimeoutMs', expiry: 'retry' },
  // Dropped: the computer stays on the version it records (a hung `up` may have changed some of its resources).
  update: { deadline: 'provisionTimeoutMs', expiry: 'drop' },
  claim: { deadline: CLAIM_TIMEOUT_MS, expiry: 'destroy' },
};

/** The operations whose deadline is a setting. */
type Configured = 'provision' | 'teardown' | 'update';

/** When `operation`, started (or started again) now, expires. */
export function deadlineOf(operation: Exclude<Operation, Configured>, now: Date): Date;
export function deadlineOf(operation: Operation, now: Date, settings: DeadlineSettings): Date;
export function deadlineOf(operation: Operation, now: Date, settings?: DeadlineSettings): Date {
  const { deadline } = LIFECYCLE[operation];
  return new Date(now.getTime() + (typeof deadline === 'number' ? deadline : settings![deadline]));
}

interface Started {
  operation: Operation;
  operationDeadline: Date;
  operationError: null;
}

/** The fields that start `operation` now: it, its deadline, and the last operation's error cleared. */
export function begin(operation: Exclude<Operation, Configured>, now: Date): Started;
export function begin(operation: Operation, now: Date, settings: DeadlineSettings): Started;
export function begin(operation: Operation, now: Date, settings?: DeadlineSettings): Started {
  return { operation, operationDeadline: deadlineOf(operation, now, settings!), operationError: null };
}

/** The fields that end the operation under way; `error` (when given) says why it did not finish, null clears it. */
export function end(error?: string | null) {
  return { operation: null, operationDeadline: null, ...(error === undefined ? {} : { operationError: error }) };
}

/** What a transition announces (computer-events.ts). */
type LifecycleEvent =
  | { status: 'provisioning' | 'active' | 'error'; detail?: Record<string, unknown> }
  | { powerState: 'running' | 'paused' }
  | { tornDown: true };

interface Transition {
  /** What the computer must still be (usually its operation as the caller saw it). */
  from: Prisma.ComputerWhereInput;
  to: Prisma.ComputerUpdateManyMutationInput;
  event?: LifecycleEvent;
}

/**
 * The one compare-and-set by which a computer changes: `to` is written only while the computer
 * matches `from`, and then `event` is published, in one transaction (the caller's, when given
 * one). False, with nothing written, when the computer no longer matched.
 */
export async function transition(db: Db, computerId: string, { from, to, event }: Transition): Promise<boolean> {
  const write = async (tx: Db) => (await tx.computer.updateMany({ where: { ...from, id: computerId }, data: to })).count === 1;
  // Without an event the one statement is its own transaction.
  if (!event) return write(db);
  return inTransaction(db, async (tx) => {
    if (!(await write(tx))) return false;
    await announce(tx, computerId, event);
    return true;
  });
}

function announce(tx: Db, computerId: string, event: LifecycleEvent): Promise<void> {
  if ('status' in event) return computerEvents.status(tx, computerId, event.status, event.detail);
  if ('powerState' in event) return computerEvents.power(tx, computerId, event.powerState);
  return computerEvents.tornDown(tx, computerId);
}
