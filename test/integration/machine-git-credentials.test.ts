import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidMachineInput } from '../../src/provisioning/machine/index.ts';
import { GIT_CREDENTIALS_FILE, writeGitCredentials } from '../../src/repos/git-credentials.ts';
import type { SshClient } from '../../src/ssh/index.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { isRoot } from '../support/sshd.ts';

// These tests rewrite the remote user's global git config. As root that user is a dedicated
// test account; otherwise it is whoever runs the tests, so only CI may do it.
const notOnYourAccount = !isRoot && process.env.CI !== 'true';
if (notOnYourAccount && !skipMachineTests)
  console.warn('skipping the git credential tests: they would rewrite your own ~/.gitconfig (run as root or with CI=true)');

describe.skipIf(skipMachineTests || notOnYourAccount)('writeGitCredentials on a real machine', () => {
  let m: TestMachine;
  /** Every command line sent to the machine, to prove no token is in one. */
  let commands: string[];
  let ssh: SshClient;

  /** What git on the machine answers for https://<host>, as a map of git-credential fields. */
  async function fill(host: string): Promise<Record<string, string>> {
    const res = await m.ssh.exec(m.target, `printf 'protocol=https\\nhost=${host}\\n\\n' | GIT_TERMINAL_PROMPT=0 git credential fill`, { timeoutMs: 30_000 });
    if (res.exitCode !== 0) return {};
    return Object.fromEntries(
      res.stdout
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  }

  beforeAll(async () => {
    m = await startMachine();
    commands = [];
    ssh = { ...m.ssh, exec: (target, command, opts) => (commands.push(command + JSON.stringify(opts?.env ?? {})), m.ssh.exec(target, command, opts)) };
    // A helper of the user's own for another host must survive every call.
    await m.sh(`git config --global credential.https://own.example.test.helper 'store --file=/dev/null'`);
  });
  afterAll(async () => {
    await m?.sh('git config --global --remove-section credential.https://own.example.test').catch(() => {});
    if (m) await writeGitCredentials(m.ssh, m.target, []).catch(() => {});
    await m?.stop();
  });

  it('makes git answer with the token for that host, from a 0600 file in a 0700 directory', async () => {
    const token = 'ghp_first+token/with=odd%chars';
    expect(await writeGitCredentials(ssh, m.target, [{ host: 'github.com', username: 'x-access-token', token }])).toEqual({ configured: 1 });
    expect(await fill('github.com')).toEqual({ protocol: 'https', host: 'github.com', username: 'x-access-token', password: token });
    expect(await fill('gitlab.com')).toEqual({});

    const file = await m.ssh.stat(m.target, GIT_CREDENTIALS_FILE);
    expect(file?.mode).toBe(0o600);
    expect((await m.ssh.stat(m.target, '.config/agentplane'))?.mode).toBe(0o700);
    for (const c of commands) expect(c).not.toContain('ghp_first');
  });

  it('replaces rather than adds on a second call, and leaves the user’s own helpers alone', async () => {
    const creds = [
      { host: 'gitlab.example.com:8443', username: 'oauth2', token: 'glpat-second' },
      { host: 'bitbucket.org', username: 'team', token: 'bb-third' },
    ];
    expect(await writeGitCredentials(ssh, m.target, creds)).toEqual({ configured: 2 });
    expect(await writeGitCredentials(ssh, m.target, creds)).toEqual({ configured: 2 });

    expect(await fill('github.com')).toEqual({});
    expect(await fill('gitlab.example.com:8443')).toMatchObject({ username: 'oauth2', password: 'glpat-second' });
    expect(await fill('bitbucket.org')).toMatchObject({ username: 'team', password: 'bb-third' });
    expect((await m.ssh.readFile(m.target, GIT_CREDENTIALS_FILE)).toString().trim().split('\n')).toHaveLength(2);
    const helpers = (await m.sh(`git config --global --get-regexp '^credential\\..*\\.helper$'`)).trim().split('\n').sort();
    expect(helpers).toEqual([
      'credential.https://bitbucket.org.helper !"$HOME"/.config/agentplane/git-credential-helper',
      'credential.https://gitlab.example.com:8443.helper !"$HOME"/.config/agentplane/git-credential-helper',
      'credential.https://own.example.test.helper store --file=/dev/null',
    ]);
    for (const c of commands) expect(c).not.toMatch(/glpat-second|bb-third/);
  });

  it('keeps the token when git reports it rejected (git calls every helper with "erase")', async () => {
    await writeGitCredentials(m.ssh, m.target, [{ host: 'github.com', username: 'u', token: 'tok-kept' }]);
    await m.sh(`printf 'protocol=https\\nhost=github.com\\nusername=u\\npassword=tok-kept\\n\\n' | git credential reject`);
    expect(await fill('github.com')).toMatchObject({ password: 'tok-kept' });
  });

  it('removes the file, the helper and its config for an empty list', async () => {
    expect(await writeGitCredentials(m.ssh, m.target, [])).toEqual({ configured: 0 });
    expect(await m.ssh.stat(m.target, GIT_CREDENTIALS_FILE)).toBeNull();
    expect(await m.ssh.stat(m.target, '.config/agentplane/git-credential-helper')).toBeNull();
    expect(await m.sh(`git config --global --get-regexp '^credential\\.' || true`)).toBe('credential.https://own.example.test.helper store --file=/dev/null\n');
    expect(await fill('github.com')).toEqual({});
    expect(await writeGitCredentials(m.ssh, m.target, [])).toEqual({ configured: 0 });
  });

  it('refuses hosts and tokens that could break the file, before touching the machine', async () => {
    const before = commands.length;
    await expect(writeGitCredentials(ssh, m.target, [{ host: 'evil.com/x', username: 'u', token: 't' }])).rejects.toThrow(InvalidMachineInput);
    await expect(writeGitCredentials(ssh, m.target, [{ host: 'github.com', username: 'u', token: 'a\nhttps://x:y@evil.com' }])).rejects.toThrow(
      /token without control characters/,
    );
    expect(commands.length).toBe(before);
  });
});
