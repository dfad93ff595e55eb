import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineCommandFailed } from '../../src/provisioning/machine/index.ts';
import { cloneRepo } from '../../src/repos/computer-clone.ts';
import { SshError } from '../../src/ssh/index.ts';
import { GIT_COMMIT, skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';

describe.skipIf(skipMachineTests)('cloneRepo on a real machine', () => {
  let m: TestMachine;
  let origins: string;
  let ws: string;

  /** A repository on the machine at origins/<owner>/<name> with one commit per message; its file:// URL. */
  async function originRepo(owner: string, name: string, ...messages: string[]): Promise<string> {
    const dir = `${origins}/${owner}/${name}`;
    await m.sh(`mkdir -p '${dir}' && cd '${dir}' && git init -q -b main && echo '${owner}/${name}' > README`);
    for (const msg of messages) await m.sh(`cd '${dir}' && echo '${msg}' >> README && git add README && ${GIT_COMMIT} -m '${msg}'`);
    return `file://${dir}`;
  }

  beforeAll(async () => {
    m = await startMachine();
    origins = `${m.scratch}/origins`;
    ws = `${m.scratch}/workspace`;
  });
  afterAll(async () => {
    await m?.stop();
  });

  it('clones into <workspace>/<name> and, run again, fetches without touching the working tree', async () => {
    const url = await originRepo('acme', 'api', 'one');
    const first = await cloneRepo(m.ssh, m.target, { url, workspaceDir: ws });
    expect(first).toEqual({ directory: `${ws}/api`, action: 'cloned' });
    expect(await m.sh(`git -C '${ws}/api' log --format=%s`)).toBe('one\n');
    expect(await m.sh(`git -C '${ws}/api' config --get remote.origin.url`)).toBe(`${url}\n`);

    await m.sh(`cd '${origins}/acme/api' && echo two >> README && git add README && ${GIT_COMMIT} -m two`);
    await m.sh(`echo 'local work' > '${ws}/api/notes.txt'`);
    const second = await cloneRepo(m.ssh, m.target, { url: `${url}.git`, workspaceDir: ws });
    expect(second).toEqual({ directory: `${ws}/api`, action: 'fetched' });
    expect(await m.sh(`git -C '${ws}/api' log --format=%s origin/main`)).toBe('two\none\n');
    // Fetch only: the checkout and the agent's uncommitted file stay as they were.
    expect(await m.sh(`git -C '${ws}/api' log --format=%s HEAD`)).toBe('one\n');
    expect(await m.sh(`cat '${ws}/api/notes.txt'`)).toBe('local work\n');
    expect(await m.sh(`ls -A '${ws}'`)).toBe('api\n');
  });

  it('gives a second repository with the same name owner-name, then name-hash, and finds each again on a retry', async () => {
    const acme = await originRepo('acme', 'web', 'a');
    const other = await originRepo('other', 'web', 'b');
    const third = await originRepo('third', 'web', 'c');
    await m.sh(`mkdir -p '${ws}/third-web' && echo mine > '${ws}/third-web/keep.txt'`);

    expect((await cloneRepo(m.ssh, m.target, { url: acme, workspaceDir: ws })).directory).toBe(`${ws}/web`);
    expect((await cloneRepo(m.ssh, m.target, { url: other, workspaceDir: ws })).directory).toBe(`${ws}/other-web`);
    const thirdDir = (await cloneRepo(m.ssh, m.target, { url: third, workspaceDir: ws })).directory;
    expect(thirdDir).toMatch(new RegExp(`^${ws}/web-[0-9a-f]{8}$`));
    expect(await m.sh(`git -C '${thirdDir}' log --format=%s`)).toBe('c\n');
    // A directory that held something else was left alone.
    expect(await m.sh(`ls -A '${ws}/third-web'`)).toBe('keep.txt\n');

    expect(await cloneRepo(m.ssh, m.target, { url: other, workspaceDir: ws })).toEqual({ directory: `${ws}/other-web`, action: 'fetched' });
    expect(await cloneRepo(m.ssh, m.target, { url: third, workspaceDir: ws })).toEqual({ directory: thirdDir, action: 'fetched' });
  });

  it('clones into an empty directory that stands in the way, and clears the leftover of an interrupted clone', async () => {
    const url = await originRepo('acme', 'docs', 'x');
    await m.sh(`mkdir -p '${ws}/docs' '${ws}/.docs.agentplane-clone/.git' && echo junk > '${ws}/.docs.agentplane-clone/junk'`);
    expect(await cloneRepo(m.ssh, m.target, { url, workspaceDir: ws })).toEqual({ directory: `${ws}/docs`, action: 'cloned' });
    expect(await m.sh(`cd '${ws}' && ls -A docs && ls -A | grep -c agentplane-clone || true`)).toBe('.git\nREADME\n0\n');
  });

  it('accepts a workspace relative to the home directory', async () => {
    const url = await originRepo('acme', 'rel', 'r');
    const relative = `~/${m.scratch.slice(m.home.length + 1)}/relative-ws`;
    expect(await cloneRepo(m.ssh, m.target, { url, workspaceDir: relative })).toEqual({ directory: `${m.scratch}/relative-ws/rel`, action: 'cloned' });
  });

  it("fails with git's own words and leaves nothing behind", async () => {
    const url = `file://${origins}/nobody/missing`;
    const err = await cloneRepo(m.ssh, m.target, { url, workspaceDir: ws }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MachineCommandFailed);
    const failure = err as MachineCommandFailed;
    expect(failure.operation).toBe('clone');
    expect(failure.exitCode).toBe(128);
    expect(failure.message).toContain(`git clone of ${url} into ${ws}/missing failed (exit 128)`);
    expect(failure.message).toMatch(/does not appear to be a git repository|does not exist/);
    expect(failure.outputTail).toMatch(/fatal:/);
    expect(await m.sh(`ls -A '${ws}' | grep -c missing || true`)).toBe('0\n');
  });

  it('says what to do when the git host asks for credentials', async () => {
    // A git forge's smart-HTTP answer to a clone without credentials: 401 with a Basic challenge.
    const requests: string[] = [];
    const forge = http.createServer((req, res) => {
      requests.push(req.url ?? '');
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="forge"', 'Content-Type': 'text/plain' });
      res.end('authentication required');
    });
    await new Promise<void>((resolve) => forge.listen(0, '127.0.0.1', resolve));
    const { port } = forge.address() as AddressInfo;
    try {
      const url = `http://127.0.0.1:${port}/acme/private.git`;
      const without = (await cloneRepo(m.ssh, m.target, { url, workspaceDir: ws }).catch((e: unknown) => e)) as MachineCommandFailed;
      expect(without).toBeInstanceOf(MachineCommandFailed);
      expect(without.message).toMatch(/could not read Username/);
      expect(without.message).toContain(
        `no git credentials are configured on the machine: connect a source-control integration for 127.0.0.1:${port} and refresh the computer`,
      );
      const withCreds = (await cloneRepo(m.ssh, m.target, { url, workspaceDir: ws, credentialsConfigured: true }).catch(
        (e: unknown) => e,
      )) as MachineCommandFailed;
      expect(withCreds.message).toContain(`the git credentials on the machine were not accepted for 127.0.0.1:${port}`);
      expect(requests[0]).toBe('/acme/private.git/info/refs?service=git-upload-pack');
    } finally {
      forge.close();
    }
  });

  it('refuses a URL that is not a git URL before touching the machine, and stops on cancellation', async () => {
    await expect(cloneRepo(m.ssh, m.target, { url: 'ext::sh -c id', workspaceDir: ws })).rejects.toThrow(/not a valid git URL/);
    const controller = new AbortController();
    controller.abort();
    const err = await cloneRepo(m.ssh, m.target, { url: await originRepo('acme', 'never', 'n'), workspaceDir: ws, signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SshError);
    expect((err as SshError).kind).toBe('cancelled');
  });
});
