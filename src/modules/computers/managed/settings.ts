import type { Config } from '../../../config.ts';

/** The limits and defaults of managed computers, from configuration. */
export type ManagedSettings = Pick<Config['managed'], 'provisionTimeoutMs' | 'idlePauseMs' | 'resources' | 'concurrency'>;

/**
 * The stack operation a managed computer is in (`computers.operation`). Each has a deadline;
 * past it the reaper ends the operation in a real state.
 */
export const OPERATIONS = ['provision', 'pause', 'resume', 'teardown'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Pause and resume are one `pulumi up` each: minutes past that, something is stuck. */
export const POWER_TIMEOUT_MS = 5 * 60_000;
/** How long provisioning waits for the computer's sshd to answer with its pinned host key. */
export const SSH_WAIT_MS = 60_000;
/** Dependencies install for up to 30 minutes per run (install-run.ts); provisioning waits that long. */
export const INSTALL_DEADLINE_MS = 35 * 60_000;

export const deadline = (now: Date, ms: number) => new Date(now.getTime() + ms);
