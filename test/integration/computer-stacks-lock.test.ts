import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import type { StackProgram } from '../../src/provisioning/programs/index.ts';
import { COMPUTERS_PROJECT, createComputerStacks, type ComputerStacks } from '../../src/provisioning/pulumi/computer-stacks.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';
import { stackConfig } from './computer-stack-config.ts';

const toolchain = locatePulumiToolchain();
const missing = `Pulumi CLI ${toolchain.version} or pulumi-resource-command missing under ${path.dirname(toolchain.binDir)}; run scripts/pulumi-toolchain.sh`;
const skip = skipWithout("the computer stacks' lock test", toolchain.available ? undefined : missing);

/** A program with nothing to create: each operation is one quick CLI run. */
const program: StackProgram = {
  kind: 'builtin',
  name: 'test',
  program: async () => ({ ssh: { host: '127.0.0.1', port: 22, user: 'agent', hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITEST' }, pausable: true }),
};
const input = (computerId: string) => stackConfig(computerId, 'agent');

/**
 * A stack lock left by a Pulumi CLI that died with its control plane (kill -9): its PID may since
 * belong to another process. The lock is written as the CLI writes it (file backend, JSON with
 * pid, user, host and RFC 3339 time).
 */
describe.skipIf(skip)("computer stacks' locks left by a killed run", { timeout: 90_000 }, () => {
  let dir: string;
  let stacks: ComputerStacks;
  const lines: string[] = [];
  const log = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } });
  const sleepers: ChildProcess[] = [];
  const locksOf = (id: string) => path.join(dir, 'state', '.pulumi', 'locks', 'organization', COMPUTERS_PROJECT, id);
  const stateFile = (id: string) => path.join(dir, 'state', '.pulumi', 'stacks', COMPUTERS_PROJECT, `${id}.json`);

  /** A live process started now, to stand in for whatever process holds the PID. */
  async function liveProcess(): Promise<ChildProcess> {
    const child = spawn('sleep', ['300'], { stdio: 'ignore' });
    sleepers.push(child);
    await new Promise((resolve) => child.once('spawn', resolve));
    return child;
  }
  async function lock(id: string, pid: number, takenAt: Date) {
    await mkdir(locksOf(id), { recursive: true });
    const body = { pid, username: os.userInfo().username, hostname: os.hostname(), timestamp: takenAt.toISOString() };
    await writeFile(path.join(locksOf(id), `${randomUUID()}.json`), JSON.stringify(body));
  }

  beforeAll(async () => {
    if (!toolchain.available) throw new Error(missing);
    dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-stack-lock-'));
    stacks = createComputerStacks({
      backendUrl: pathToFileURL(path.join(dir, 'state')).href,
      passphrase: 'lock test',
      workspacesDir: path.join(dir, 'workspaces'),
      toolchain,
      stackKeys: createSecretBox(randomBytes(32)),
    });
  });
  afterAll(async () => {
    for (const s of sleepers) s.kill('SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('clears at once a lock whose PID now belongs to a process started after the lock was taken', async () => {
    const id = 'cmp_lockpidreused00000001';
    await stacks.up(program, input(id), { log, fresh: true });
    // The CLI that took the lock a minute ago died; its PID went to a process started since.
    const reused = await liveProcess();
    await lock(id, reused.pid!, new Date(Date.now() - 60_000));
    lines.length = 0;
    await stacks.destroy(program, input(id), { log });
    expect(existsSync(stateFile(id))).toBe(false);
    expect(await readdir(locksOf(id)).catch(() => [])).toEqual([]);
    expect(lines.some((l) => l.includes('clearing a stale stack lock'))).toBe(true);
    expect(lines.some((l) => l.includes('waiting for the process holding the stack lock'))).toBe(false);
    expect(reused.exitCode).toBeNull();
  });

  it('waits while the process that took the lock runs, and clears the lock once it is gone', async () => {
    const id = 'cmp_lockholderlives000001';
    await stacks.up(program, input(id), { log, fresh: true });
    // An orphaned CLI, still running, that took the lock after it started.
    const holder = await liveProcess();
    await lock(id, holder.pid!, new Date(Date.now() + 1_000));
    lines.length = 0;
    let done = false;
    const destroyed = stacks.destroy(program, input(id), { log }).finally(() => (done = true));
    await waitFor('the destroy to wait for the lock', () => lines.some((l) => l.includes('waiting for the process holding the stack lock')), 30_000);
    expect(done).toBe(false);
    expect(existsSync(stateFile(id))).toBe(true);
    holder.kill('SIGKILL');
    await destroyed;
    expect(existsSync(stateFile(id))).toBe(false);
    expect(await readdir(locksOf(id)).catch(() => [])).toEqual([]);
  });
});
