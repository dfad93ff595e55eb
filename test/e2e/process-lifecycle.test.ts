import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/db/data-dir-lock.ts';
import { CLI, REPO_ROOT, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';
import { seedDataDir } from '../support/pglite-template.ts';

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-lifecycle-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
/** A data directory whose embedded database is migrated already, for tests whose subject is not its first migration. */
const migratedDataDir = () => seedDataDir(tempDir());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Processes whose command line contains `needle` (any user, any parent). */
function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The PID written into the data directory's lock file: the process that really serves. */
const servingPid = (dataDir: string) => Number(fs.readFileSync(path.join(dataDir, LOCK_FILE), 'utf8').trim());

/** A system Node older than the project's (the build machines' Node 20), which bin/agentplane.js re-runs itself from. */
function olderNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const bin = path.join(dir, 'node');
    if (dir.includes('node_modules') || !fs.existsSync(bin)) continue;
    const res = spawnSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    const [major, minor] = String(res.stdout).trim().split('.').map(Number);
    if (major! < 22 || (major === 22 && minor! < 18)) return bin;
  }
  return undefined;
}

const agentplane = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, AGENTPLANE_LOG_LEVEL: 'info', ...env } });

describe('one process per embedded data directory', () => {
  it('refuses a second process at once, naming the directory and the PID, and a kill -9 leaves no stale lock', { timeout: 120_000 }, async () => {
    const dataDir = migratedDataDir();
    const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir });
    const pid = servingPid(dataDir);
    expect(pid).toBe(server.child.pid);
    for (const args of [
      ['serve'],
      ['migrate'],
      ['bootstrap', '--org', 'x', '--email', 'x@x.test'],
      ['analytics', 'seed', '--org', 'org_x', '--users', '1', '--days', '1'],
    ]) {
      const err = await agentplane(args, { AGENTPLANE_DATA_DIR: dataDir, PORT: '0' }).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(err, `agentplane ${args[0]} ran beside the server`).toMatchObject({ code: 1 });
      expect(err!.stderr).toContain(`the data directory ${dataDir} is in use by another agentplane process (PID ${pid})`);
      expect(err!.stderr).toContain('use DATABASE_URL');
    }
    // The server was not disturbed.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    server.child.kill('SIGKILL');
    await server.stop();
    const again = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir });
    try {
      expect((await fetch(`${again.url}/healthz`)).status).toBe(200);
      expect(servingPid(dataDir)).toBe(again.child.pid);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });
});

describe('a stop signal to the process the user started ends the real server', () => {
  const node20 = olderNode();
  const entries: Array<[string, string[] | undefined]> = [
    ['npm start', ['npm', 'start', '--silent']],
    ['npx agentplane serve', ['npx', 'agentplane', 'serve']],
    ['node bin/agentplane.js serve on an older Node (re-runs itself on Node 24)', node20 ? [node20, CLI, 'serve'] : undefined],
  ];

  it.each(entries)('%s', { timeout: 120_000 }, async (_name, command) => {
    if (!command) {
      skipWithout('the start on an older Node', 'the system Node 20 this test re-runs from is not installed');
      return;
    }
    const dataDir = migratedDataDir();
    const server: ServerProcess = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir }, { command });
    const real = servingPid(dataDir);
    expect(real).not.toBe(server.child.pid);
    expect(alive(real)).toBe(true);
    // Only the outermost process is signalled, as a supervisor does.
    await server.stop('SIGTERM');
    await waitFor('the real server to exit', () => !alive(real), 35_000);
    expect(server.output()).toContain('"msg":"agentplane stopped"');
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    expect(processesWith(dataDir)).toEqual([]);
  });

  it('npx agentplane agent', { timeout: 120_000 }, async () => {
    const dataDir = migratedDataDir();
    const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_SSH_GATEWAY_PORT: '0', AGENTPLANE_SSH_GATEWAY_HOST: '127.0.0.1' });
    try {
      const name = `sig-${path
        .basename(dataDir)
        .slice(-6)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, 'x')}`;
      const stateDir = tempDir();
      const agent = spawn('npx', ['agentplane', 'agent', '--url', server.url, '--name', name, '--state-dir', stateDir], {
        cwd: REPO_ROOT,
        env: { ...process.env, AGENTPLANE_API_KEY: server.firstStartKey! },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      agent.stdout.on('data', (d: Buffer) => (out += d));
      agent.stderr.on('data', (d: Buffer) => (out += d));
      const exited = new Promise<number | null>((resolve) => agent.on('exit', resolve));
      await waitFor(
        () => `the agent to connect:\n${out}`,
        () => /connected/i.test(out),
        60_000,
      );
      const real = processesWith(`--state-dir ${stateDir}`).filter((pid) => pid !== agent.pid);
      expect(real.length).toBeGreaterThan(0);
      agent.kill('SIGTERM');
      await exited;
      await waitFor('the agent processes to exit', () => processesWith(`--state-dir ${stateDir}`).length === 0, 20_000);
      expect(out).toMatch(/stopping/);
      // The server then stops as fast as one that never met an agent, not at the shutdown bound.
      const stopping = Date.now();
      expect(await server.stop()).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(5_000);
    } finally {
      await server.stop();
    }
  });
});

describe('command output', () => {
  it('`npx agentplane` under an older Node warns about no engine: the project brings its own runtime', { timeout: 60_000 }, async () => {
    const node20 = olderNode();
    if (!node20) {
      skipWithout('the run on an older Node', 'the system Node 20 this test runs npx from is not installed');
      return;
    }
    // npm runs on the older Node here, as on a machine whose only Node is 20: it checks engines against that.
    const PATH = [path.dirname(node20), ...(process.env.PATH ?? '').split(path.delimiter).filter((d) => !d.includes('node_modules'))].join(path.delimiter);
    const { stdout, stderr } = await run('npx', ['agentplane', '--help'], { cwd: REPO_ROOT, env: { ...process.env, PATH } });
    expect(stdout).toContain('Usage: agentplane');
    expect(stderr).not.toContain('EBADENGINE');
  });

  it('`bootstrap --json` writes only its JSON to stdout, logs to stderr', { timeout: 60_000 }, async () => {
    const { stdout, stderr } = await agentplane(['bootstrap', '--org', 'acme', '--email', 'ops@acme.test', '--json'], { AGENTPLANE_DATA_DIR: tempDir() });
    expect(JSON.parse(stdout)).toEqual({
      organizationId: expect.stringMatching(/^org_/),
      userId: expect.stringMatching(/^usr_/),
      apiKey: expect.stringMatching(/^apk_/),
    });
    expect(stdout.trim().split('\n')).toHaveLength(1);
    // The migrations it applied were logged, on stderr.
    expect(stderr).toMatch(/"msg":"[^"]*migrat/);
  });

  it('logs readable lines in a terminal and JSON lines otherwise, AGENTPLANE_LOG_FORMAT overriding; credentials redacted in both', {
    timeout: 60_000,
  }, async () => {
    const script = [
      "const { createLogger } = await import('./src/lib/logger.ts');",
      "const log = createLogger({ level: 'info', format: process.env.FMT || undefined });",
      "log.info({ apiKey: 'apk_secretvalue', req: { headers: { authorization: 'Bearer apk_secretvalue' } } }, 'hello there');",
    ].join(' ');
    const under = async (fmt: string, tty: boolean) => {
      const node = `${process.execPath} --input-type=module -e "${script.replaceAll('"', '\\"')}"`;
      const cmd = tty ? ['script', '-qec', node, '/dev/null'] : ['sh', '-c', node];
      const { stdout } = await run(cmd[0]!, cmd.slice(1), { cwd: REPO_ROOT, env: { ...process.env, FMT: fmt } });
      return stdout;
    };
    for (const [fmt, tty, json] of [
      ['', false, true],
      ['', true, false],
      ['pretty', false, false],
      ['json', true, true],
    ] as const) {
      const out = await under(fmt, tty);
      expect(out, `format=${fmt || 'auto'} tty=${tty}`).toContain('hello there');
      expect(out).not.toContain('apk_secretvalue');
      expect(out).toContain('[redacted]');
      if (json) expect(JSON.parse(out.trim())).toMatchObject({ msg: 'hello there', apiKey: '[redacted]' });
      else expect(() => JSON.parse(out.trim())).toThrow();
    }
  });
});

describe('a first start that explains itself', () => {
  it('a busy PORT stops the start before the owner is created, naming PORT; the next start prints the key', { timeout: 90_000 }, async () => {
    const dataDir = tempDir();
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const err = await agentplane(['serve'], { AGENTPLANE_DATA_DIR: dataDir, PORT: String(port), AGENTPLANE_HOST: '127.0.0.1' }).then(
        () => undefined,
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(err).toMatchObject({ code: 1 });
      expect(err!.stderr).toContain(`agentplane: PORT ${port} is in use on 127.0.0.1`);
      expect(err!.stdout + err!.stderr).not.toMatch(/apk_/);
    } finally {
      busy.close();
    }
    const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir });
    try {
      expect(server.firstStartKey).toMatch(/^apk_/);
      const me = await fetch(`${server.url}/api/v0/organization/users`, { headers: { authorization: `Bearer ${server.firstStartKey}` } });
      expect(me.status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('logs each managed provider with what it misses, and includeUnavailable lists them', { timeout: 60_000 }, async () => {
    const dataDir = migratedDataDir();
    const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false', KUBECONFIG: '' });
    try {
      const lines = server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
      const k8s = lines.find((l) => l.provider === 'kubernetes');
      expect(k8s).toMatchObject({ level: 40, missing: expect.arrayContaining([expect.stringContaining('no cluster: set KUBECONFIG')]) });
      expect(lines.find((l) => l.provider === 'local')).toMatchObject({ missing: ['disabled by AGENTPLANE_LOCAL_PROVIDER=false'] });

      const auth = { authorization: `Bearer ${server.firstStartKey}` };
      // `program` (templates' Pulumi YAML programs) needs only the toolchain, which this machine may have.
      const listed = (await (await fetch(`${server.url}/api/v0/computers/providers`, { headers: auth })).json()) as { providers: string[] };
      expect(listed.providers.filter((p) => p !== 'program')).toEqual([]);
      const all = (await (await fetch(`${server.url}/api/v0/computers/providers?includeUnavailable=true`, { headers: auth })).json()) as {
        unavailable: { name: string }[];
      };
      expect({ ...all, unavailable: all.unavailable.filter((p) => p.name !== 'program') }).toEqual({
        providers: listed.providers,
        unavailable: [
          { name: 'kubernetes', missing: expect.arrayContaining([expect.stringContaining('no cluster')]) },
          { name: 'local', missing: ['disabled by AGENTPLANE_LOCAL_PROVIDER=false'] },
        ],
      });
      const bad = await fetch(`${server.url}/api/v0/computers/providers?includeUnavailable=yes`, { headers: auth });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { detail: string }).detail).toContain('includeUnavailable must be "true" or "false"');
    } finally {
      await server.stop();
    }
  });
});
