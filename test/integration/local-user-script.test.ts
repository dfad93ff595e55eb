import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { SCRIPTS, scriptEnvironment } from '../../src/provisioning/providers/local/scripts.ts';
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
  const names = scriptEnvironment(root, newId('cmp'));
  const env = { ...process.env, ...names, AUTHORIZED_KEY: 'ssh-ed25519 AAAA test', DISK_BYTES: '0' };
  const user = names.USER_NAME!;
  const bash = (script: string) => spawnSync('bash', ['-euc', script], { env, encoding: 'utf8' });
  const has = (db: 'passwd' | 'group') => spawnSync('getent', [db, user]).status === 0;

  afterAll(() => {
    bash(SCRIPTS.user.delete);
    rmSync(root, { recursive: true, force: true });
  });

  it('finishes a user useradd left without its group, and its home is owned by both', () => {
    // Made with the account tools, which take the account files' locks: other tests add users meanwhile.
    execFileSync('useradd', ['--no-create-home', '--user-group', '--password', '*', user]);
    execFileSync('groupdel', ['--force', user]);
    expect([has('passwd'), has('group')]).toEqual([true, false]);

    const again = bash(SCRIPTS.user.update);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(user);
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }));
    expect(execFileSync('getent', ['group', user], { encoding: 'utf8' }).split(':')[2]).toBe(String(gid));
    expect(statSync(path.join(names.DIR!, 'home'))).toMatchObject({ uid, gid });
  });

  it('removes a group userdel left without its user', () => {
    execFileSync('userdel', [user]);
    execFileSync('groupadd', [user]);
    expect([has('passwd'), has('group')]).toEqual([false, true]);

    const deleted = bash(SCRIPTS.user.delete);
    expect(deleted.status, deleted.stderr).toBe(0);
    expect([has('passwd'), has('group')]).toEqual([false, false]);
  });
});
