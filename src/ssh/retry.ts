import { SshError } from './errors.ts';

/**
 * The one rule for whether an SSH failure is worth trying again, for every caller. A machine
 * that does not answer yet, refuses the key yet (a fresh sshd before its keys are in place), drops
 * the connection, has no free session or does not answer in time may answer a moment later. A
 * host key mismatch never will: it is another machine, or someone in between. A cancellation (the
 * caller's decision) and an SFTP status (the remote side's answer) are not transient either; nor
 * is anything that is not an SSH failure (a non-zero exit, a git error). How long to keep trying
 * is the retry budget's business (`SSH_RETRY`): a long command that timed out outlasts it.
 */
export function isTransientSshError(err: unknown): boolean {
  if (!(err instanceof SshError)) return false;
  switch (err.kind) {
    case 'unreachable':
    case 'auth_failed':
    case 'connection_lost':
    case 'channel_refused':
    case 'timeout':
      return true;
    default:
      return false;
  }
}

/**
 * How long work on a machine keeps trying after transient SSH failures, whichever job runs it:
 * two minutes covers an agent machine dialling in after it registered and a machine rebooting, at
 * one attempt every three seconds.
 */
export const SSH_RETRY = {
  transient: isTransientSshError,
  budgetMs: 120_000,
  delayMs: 3_000,
} as const;
