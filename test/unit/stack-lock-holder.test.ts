import { spawn } from 'node:child_process';
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { lockHolderRuns, lockHoldersIn } from '../../src/provisioning/pulumi/lock-holder.ts';

const LOCKED = 'error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.';
const line = (pid: number, at = ' at 2026-11-27T18:17:42Z', host = 'vm') =>
  `  file:///state/.pulumi/locks/organization/p/s/b0325223.json?no_tmp_dir=true: created by root@${host} (pid ${pid})${at}`;

describe('stack lock holders', () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const spawned = new Promise((resolve) => child.once('spawn', resolve));
  afterAll(() => void child.kill('SIGKILL'));

  it('reads each holder the CLI names once, with the time the lock was taken when given', () => {
    const text = `${LOCKED}\n${line(42)}\n${LOCKED}\n${line(42)}\n${line(7, '', 'other')}\n`;
    expect(lockHoldersIn(text)).toEqual([
      { host: 'vm', pid: 42, takenAt: new Date('2026-11-27T18:17:42Z') },
      { host: 'other', pid: 7 },
    ]);
    expect(lockHoldersIn(`update failed: ${line(42)}`)).toEqual([]);
  });

  it('counts a live PID as the holder only if its process started before the lock was taken', async () => {
    await spawned;
    const pid = child.pid!;
    const host = os.hostname();
    expect(await lockHolderRuns({ host, pid, takenAt: new Date(Date.now() + 5_000) })).toBe(true);
    // The PID went to this process after the lock's holder died.
    expect(await lockHolderRuns({ host, pid, takenAt: new Date(Date.now() - 60_000) })).toBe(false);
    // Without the lock's time, a live PID is waited for.
    expect(await lockHolderRuns({ host, pid })).toBe(true);
    expect(await lockHolderRuns({ host: `not-${host}`, pid })).toBe(false);
  });
});
