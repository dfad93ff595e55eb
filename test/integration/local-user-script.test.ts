import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { SCRIPTS, scriptEnvironment, withLib } from '../../src/provisioning/providers/local/scripts.ts';
import { localProviderMissing } from '../support/local-computers.ts';
import { skipWithout } from '../support/parts.ts';

const skip = skipWithout('the local user script tests', await localProviderMissing());

/**
 * The local provider's user script on the host, in the states a control plane killed with
 * `kill -9` leaves: useradd and userdel each write /etc/passwd before /etc/group, so a kill between
 * the two leaves a user without its group, or a group without its user.
 */
describe.skipIf(skip)('the local computer user script after a kill halfway', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'agentplane-user-'));
  const env = { ...process.env, ...scriptEnvironment(root, newId('cmp')), AUTHORIZED_KEY: 'ssh-ed25519 AAAA test', DISK_BYTES: '0' };
  const user = env.USER_NAME;
  const bash = (script: string) => spawnSync('bash', ['-euc', script], { env, encoding: 'utf8' });
  const has = (db: 'passwd' | 'group') => spawnSync('getent', [db, user]).status === 0;
  /** Drops the user's lines from the host's account files, under the scripts' host lock, as a kill between the files' writes leaves them. */
  const forget = (files: string[]) => {
    const done = bash(withLib(`host_lock\nsed -i "/^$USER_NAME:/d" ${files.join(' ')}\nflock -u 9`));
    expect(done.status, done.stderr).toBe(0);
  };

  afterAll(() => {
    bash(SCRIPTS.user.delete);
    rmSync(root, { recursive: true, force: true });
  });

  it('finishes a user useradd left without its group, and its home is owned by both', () => {
    execFileSync('useradd', ['--no-create-home', '--user-group', '--password', '*', user]);
    forget(['/etc/group', '/etc/gshadow']);
    expect([has('passwd'), has('group')]).toEqual([true, false]);

    const again = bash(SCRIPTS.user.update);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(user);
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }));
    expect(execFileSync('getent', ['group', user], { encoding: 'utf8' }).split(':')[2]).toBe(String(gid));
    expect(statSync(path.join(env.DIR, 'home'))).toMatchObject({ uid, gid });
  });

  it('removes a group userdel left without its user', () => {
    forget(['/etc/passwd', '/etc/shadow']);
    expect([has('passwd'), has('group')]).toEqual([false, true]);

    const deleted = bash(SCRIPTS.user.delete);
    expect(deleted.status, deleted.stderr).toBe(0);
    expect([has('passwd'), has('group')]).toEqual([false, false]);
  });
});
