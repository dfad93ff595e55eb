import type { Config } from '../../../config.ts';

/** The limits and defaults of managed computers, from configuration. */
export type ManagedSettings = Pick<Config['managed'], 'provisionTimeoutMs' | 'idlePauseMs' | 'resources' | 'concurrency'>;

/** How long provisioning waits for the computer's sshd to answer with its pinned host key. */
export const SSH_WAIT_MS = 60_000;
