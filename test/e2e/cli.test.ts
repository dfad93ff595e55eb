import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { seedDataDir } from '../support/pglite-template.ts';
import { CLI, REPO_ROOT, startServerProcess } from '../support/server-process.ts';

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-cli-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const agentplane = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, AGENTPLANE_LOG_LEVEL: 'warn', ...env } });

describe('agentplane CLI', () => {
  it('bootstrap is idempotent, prints the key once, and the key works against the server', { timeout: 90_000 }, async () => {
    // Its subject is bootstrap, not the first migration of an empty directory (`migrate` below is).
    const env = { AGENTPLANE_DATA_DIR: seedDataDir(tempDir()) };
    const first = JSON.parse((await agentplane(['bootstrap', '--org', 'acme', '--email', 'Ops@Acme.test', '--json'], env)).stdout);
    expect(first).toEqual({ organizationId: expect.stringMatching(/^org_/), userId: expect.stringMatching(/^usr_/), apiKey: expect.stringMatching(/^apk_/) });
    const again = JSON.parse((await agentplane(['bootstrap', '--org', 'acme', '--email', 'ops@acme.test', '--json'], env)).stdout);
    expect(again).toEqual({ organizationId: first.organizationId, userId: first.userId, apiKey: null });
    const extra = JSON.parse((await agentplane(['bootstrap', '--org', 'acme', '--email', 'ops@acme.test', '--json', '--new-key'], env)).stdout);
    expect(extra.apiKey).toMatch(/^apk_/);
    expect(extra.apiKey).not.toBe(first.apiKey);

    const server = await startServerProcess(env);
    try {
      // The database was not empty, so the server bootstraps nothing and prints no key.
      expect(server.firstStartKey).toBeUndefined();
      for (const key of [first.apiKey, extra.apiKey]) {
        const res = await fetch(`${server.url}/api/v0/computers/providers`, { headers: { authorization: `Bearer ${key}` } });
        expect(res.status).toBe(200);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it("keeps its compiled code in the user's cache directory, and NODE_DISABLE_COMPILE_CACHE turns that off", async () => {
    const { NODE_COMPILE_CACHE: _, ...env } = process.env;
    const cli = (cacheHome: string, extra: Record<string, string> = {}) =>
      run(process.execPath, [CLI, '--help'], { cwd: REPO_ROOT, env: { ...env, XDG_CACHE_HOME: cacheHome, ...extra } });
    const cached = tempDir();
    expect((await cli(cached)).stdout).toContain('Usage: agentplane');
    const dir = path.join(cached, 'agentplane', 'node-compile-cache');
    expect(fs.readdirSync(dir, { recursive: true }).length).toBeGreaterThan(0);
    const off = tempDir();
    await cli(off, { NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(fs.existsSync(path.join(off, 'agentplane', 'node-compile-cache'))).toBe(false);
  });

  it('bootstrap rejects missing options with a usage error', async () => {
    await expect(agentplane(['bootstrap', '--org', 'x'], { AGENTPLANE_DATA_DIR: tempDir() })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("required option '--email <email>'"),
    });
  });

  it('bootstrap rejects an invalid email before touching the database', async () => {
    const dir = tempDir();
    await expect(agentplane(['bootstrap', '--org', 'x', '--email', 'not-an-email'], { AGENTPLANE_DATA_DIR: dir })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--email not-an-email is not an email address'),
    });
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  // Two fresh embedded databases: a few seconds alone, much more beside CPU-heavy files on two cores.
  it('migrate applies the migrations once and then reports the database up to date', { timeout: 90_000 }, async () => {
    const env = { AGENTPLANE_DATA_DIR: tempDir() };
    expect((await agentplane(['migrate'], env)).stdout).toMatch(/^applied: \d+_init/);
    expect((await agentplane(['migrate'], env)).stdout).toBe('database is up to date\n');
  });

  it('refuses to start on an invalid configuration and names the variable', async () => {
    await expect(agentplane(['serve'], { DATABASE_URL: 'mysql://nope', AGENTPLANE_DATA_DIR: tempDir() })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('DATABASE_URL'),
    });
  });

  it('`npm start` (the README command) serves and stops cleanly on Ctrl-C', async () => {
    const server = await startServerProcess({ AGENTPLANE_DATA_DIR: seedDataDir(tempDir()) }, { command: ['npm', 'start', '--silent'], processGroup: true });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(server.firstStartKey).toMatch(/^apk_/);
    await server.stop('SIGINT');
    // npm re-raises the signal on itself; what matters is that agentplane stopped gracefully.
    expect(server.output()).toContain('"msg":"agentplane stopped"');
    expect(() => process.kill(-server.child.pid!, 0)).toThrow(/ESRCH/);
  });
});
