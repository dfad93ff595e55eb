import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectInstallPlans, MachineCommandFailed, runInstall, ToolNotInstalled, type InstallPlan } from '../../src/provisioning/machine/index.ts';
import { LOGIN_PATH } from '../../src/provisioning/machine/remote-shell.ts';
import { SshError } from '../../src/ssh/index.ts';
import { GIT_COMMIT, skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';

describe.skipIf(skipMachineTests)('detecting and running installs on a real machine', () => {
  let m: TestMachine;

  /** A committed git repository on the machine holding `files` (path -> content). */
  async function repo(name: string, files: Record<string, string>): Promise<string> {
    const dir = `${m.scratch}/${name}`;
    const writes = Object.entries(files).map(([p, content]) => `mkdir -p "$(dirname '${p}')" && printf '%s' '${content}' > '${p}'`);
    await m.sh([`mkdir -p '${dir}'`, `cd '${dir}'`, 'git init -q -b main', ...writes, 'git add -A', `${GIT_COMMIT} -m init`].join(' && '));
    return dir;
  }

  beforeAll(async () => {
    m = await startMachine();
  });
  afterAll(async () => {
    await m?.stop();
  });

  it('detects plans with one find: root and subprojects, skipping dependencies and workspace members', async () => {
    const dir = await repo('poly', {
      'package.json': '{"name":"poly","version":"1.0.0","workspaces":["packages/*"]}',
      'yarn.lock': '',
      'packages/a/package.json': '{"name":"a"}',
      'node_modules/left-pad/package.json': '{}',
      'services/api/go.mod': 'module example.com/api\n',
      'services/ml/requirements.txt': '',
      'docs/README.md': '',
    });
    const calls: string[] = [];
    const counting = { ...m.ssh, exec: (...args: Parameters<typeof m.ssh.exec>) => (calls.push(args[1]), m.ssh.exec(...args)) };
    expect(await detectInstallPlans(counting, m.target, dir)).toEqual<InstallPlan[]>([
      { manager: 'yarn', directory: dir, command: 'yarn install --frozen-lockfile', tool: 'yarn', manifest: 'yarn.lock' },
      { manager: 'go', directory: `${dir}/services/api`, command: 'go mod download', tool: 'go', manifest: 'services/api/go.mod' },
      {
        manager: 'pip',
        directory: `${dir}/services/ml`,
        command: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt',
        tool: 'python3',
        manifest: 'services/ml/requirements.txt',
      },
    ]);
    expect(calls).toHaveLength(1);
  });

  it('detects nothing in a repository without manifests, and fails clearly for a missing directory', async () => {
    expect(await detectInstallPlans(m.ssh, m.target, await repo('plain', { 'main.c': 'int main(){}' }))).toEqual([]);
    await expect(detectInstallPlans(m.ssh, m.target, `${m.scratch}/gone`)).rejects.toThrow(
      `repository directory ${m.scratch}/gone does not exist on the machine`,
    );
  });

  it('runs npm install, then npm ci once a lockfile exists, streaming the output', async () => {
    const dir = await repo('web', { 'package.json': '{"name":"web","version":"1.0.0","scripts":{"postinstall":"echo postinstall-ran"}}' });
    const [install] = await detectInstallPlans(m.ssh, m.target, dir);
    expect(install).toMatchObject({ manager: 'npm', command: 'npm install' });
    const chunks: Buffer[] = [];
    const res = await runInstall(m.ssh, m.target, install!, { timeoutMs: 120_000, onOutput: (c) => chunks.push(c) });
    expect(res.exitCode).toBe(0);
    expect(res.outputTail).toContain('postinstall-ran');
    expect(Buffer.concat(chunks).toString()).toBe(res.outputTail);
    expect(res.durationMs).toBeGreaterThan(0);
    expect(await m.sh(`ls '${dir}'`)).toContain('package-lock.json');

    const [ci] = await detectInstallPlans(m.ssh, m.target, dir);
    expect(ci).toMatchObject({ manager: 'npm', command: 'npm ci' });
    expect((await runInstall(m.ssh, m.target, ci!, { timeoutMs: 120_000 })).exitCode).toBe(0);
  });

  it("reports a failing install's exit code and output rather than throwing", async () => {
    const dir = await repo('broken', { 'package.json': '{"name":"broken","version":"1.0.0"}' });
    const plan: InstallPlan = { manager: 'npm', directory: dir, command: 'npm ci', tool: 'npm', manifest: 'package-lock.json' };
    const res = await runInstall(m.ssh, m.target, plan, { timeoutMs: 120_000 });
    expect(res.exitCode).not.toBe(0);
    expect(res.outputTail).toMatch(/npm ci.*package-lock\.json|package-lock\.json.*npm ci/s);
  });

  it('creates a virtualenv for requirements.txt', async () => {
    const dir = await repo('py', { 'requirements.txt': '# nothing to install\n' });
    const [plan] = await detectInstallPlans(m.ssh, m.target, dir);
    const res = await runInstall(m.ssh, m.target, plan!, { timeoutMs: 120_000 });
    expect(res).toMatchObject({ exitCode: 0 });
    expect(await m.sh(`test -x '${dir}/.venv/bin/python' && echo venv`)).toBe('venv\n');
  });

  // Go's release tarball installs to /usr/local/go/bin, which no default PATH of sshd includes.
  it("finds tools the login PATH has but sshd's default PATH lacks (Go)", async (ctx) => {
    const where = await m.sh(`${LOGIN_PATH}\ncommand -v go || true`);
    if (where.trim() === '') ctx.skip();
    const version = (await m.sh(`${LOGIN_PATH}\ngo env GOVERSION`)).trim().replace(/^go(\d+\.\d+).*/, '$1');
    const dir = await repo('gomod', { 'go.mod': `module example.com/x\n\ngo ${version}\n` });
    const [plan] = await detectInstallPlans(m.ssh, m.target, dir);
    const res = await runInstall(m.ssh, m.target, plan!, { timeoutMs: 120_000 });
    expect(res.exitCode, res.outputTail).toBe(0);
  });

  it('says which tool is missing instead of exiting 127', async () => {
    const dir = await repo('pn', { 'package.json': '{"name":"pn"}', 'pnpm-lock.yaml': "lockfileVersion: '9.0'\n" });
    const [detected] = await detectInstallPlans(m.ssh, m.target, dir);
    expect(detected).toMatchObject({ manager: 'pnpm', tool: 'pnpm' });
    const pnpmHere = (await m.sh(`${LOGIN_PATH}\ncommand -v pnpm || true`)).trim() !== '';
    const plan = pnpmHere ? { ...detected!, tool: 'pnpm-not-on-this-machine' } : detected!;
    const err = await runInstall(m.ssh, m.target, plan, { timeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolNotInstalled);
    expect((err as ToolNotInstalled).message).toMatch(new RegExp(`^${plan.tool} is not installed on the machine \\(not found on PATH=/`));
    expect((err as ToolNotInstalled).tool).toBe(plan.tool);
  });

  it('keeps the last 64 KiB of interleaved stdout and stderr', async () => {
    const plan: InstallPlan = {
      manager: 'npm',
      directory: m.scratch,
      command: 'yes 0123456789 | head -c 220000; echo END >&2; exit 3',
      tool: 'sh',
      manifest: 'package.json',
    };
    let streamed = 0;
    const res = await runInstall(m.ssh, m.target, plan, { timeoutMs: 30_000, onOutput: (c) => (streamed += c.length) });
    expect(res.exitCode).toBe(3);
    expect(streamed).toBe(220_004);
    expect(Buffer.byteLength(res.outputTail)).toBe(64 * 1024);
    expect(res.outputTail.endsWith('0123456789\nEND\n')).toBe(true);
  });

  it('fails clearly for a missing directory and kills an install that runs past its timeout', async () => {
    const gone: InstallPlan = { manager: 'npm', directory: `${m.scratch}/gone`, command: 'npm install', tool: 'npm', manifest: 'package.json' };
    const err = await runInstall(m.ssh, m.target, gone).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MachineCommandFailed);
    expect((err as Error).message).toBe(`cannot install with npm: directory ${m.scratch}/gone does not exist on the machine; clone the repository again`);

    const marker = `sleep 30.${Date.now() % 100000}`;
    const slow: InstallPlan = { manager: 'npm', directory: m.scratch, command: marker, tool: 'sh', manifest: 'package.json' };
    const timeout = await runInstall(m.ssh, m.target, slow, { timeoutMs: 700 }).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(SshError);
    expect((timeout as SshError).kind).toBe('timeout');
    await new Promise((r) => setTimeout(r, 300));
    expect(await m.sh(`pgrep -f -- '[s]${marker.slice(1)}' || true`)).toBe('');
  });
});
