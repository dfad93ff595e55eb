import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/agent-cli.ts';
import { ALLOW_LOOPBACK } from '../support/api.ts';
import { createTestDatabase, postgresMissing } from '../support/databases.ts';
import { hostTraces, localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { skipWithout } from '../support/parts.ts';
import { seedDataDir } from '../support/pglite-template.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { keyedCaller, type KeyedCall } from '../support/http.ts';
import { waitFor } from '../support/wait.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * `agentplane backup` and `restore` through real processes: a server on an embedded data
 * directory with `local` computers (the cheap real managed provider) and a burst of writes while
 * the backup is taken; the archive restored onto a fresh directory and a server started there.
 */

const missing = await localProviderMissing();
const skip = skipWithout('the backup e2e tests', missing);
const PROVISION_MS = 90_000;
const PASSPHRASE = 'correct horse battery staple';

const cli = (args: string[], env: Record<string, string>) =>
  runCli(args, { env: { AGENTPLANE_BACKUP_PASSPHRASE: PASSPHRASE, AGENTPLANE_LOG_LEVEL: 'warn', ...env } }).done;

const computer = (call: KeyedCall, id: string) => call('GET', `/api/v0/computers/${id}?includeProvisioningSteps=true`).then((r) => r.body);
const settled = (call: KeyedCall, id: string) =>
  waitFor(
    `computer ${id} to leave provisioning`,
    async () => {
      const c = await computer(call, id);
      return c.status !== 'provisioning' && c;
    },
    PROVISION_MS,
    100,
  );
const tornDown = (call: KeyedCall, id: string) =>
  waitFor(
    `computer ${id} to be torn down`,
    async () => {
      const list = await call('GET', '/api/v0/computers?includeDeleted=true&includeUnlisted=true&includeProvisioningSteps=true');
      const c = list.body.computers.find((x: { id: string }) => x.id === id);
      return c?.provisioningSteps.find((s: { id: string }) => s.id === 'teardown')?.status === 'completed';
    },
    PROVISION_MS,
    100,
  );

/** A server on `dataDir` whose `local` computers live in `computers` (kept across a restore: see the README). */
const serverEnv = (dataDir: string, computers: string) => ({
  AGENTPLANE_DATA_DIR: dataDir,
  AGENTPLANE_LOCAL_ROOT: computers,
  AGENTPLANE_COMPUTER_MEMORY_MIB: '256',
});

/** What is in a directory, recursively, with sizes: a restore that fails must leave this as it was. */
const listing = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => `${path.relative(dir, path.join(e.parentPath, e.name))}:${e.isFile() ? statSync(path.join(e.parentPath, e.name)).size : 'dir'}`)
    .sort();

describe.skipIf(skip)('backup and restore of an embedded installation', () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'agentplane-backup-'));
  const original = path.join(base, 'original');
  const restored = path.join(base, 'restored');
  const archive = path.join(base, 'installation.backup');
  // The computers' own files stay where they are: the restored server is told where (see the README).
  const env = (dataDir: string) => ({ ...serverEnv(dataDir, `${original}-computers`), ...ALLOW_LOOPBACK });
  const servers: ServerProcess[] = [];
  const ids: string[] = [];

  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    for (const id of ids) if (hostTraces(original, id).some((t) => !/^(stack|workspace) /.test(t))) removeLocalComputer(original, id);
    rmSync(base, { recursive: true, force: true });
    rmSync(`${original}-computers`, { recursive: true, force: true });
  });

  it('restores every acknowledged write, manageable computers and sealed secrets; refuses bad restores untouched', { timeout: 300_000 }, async () => {
    mkdirSync(original);
    seedDataDir(original);
    const receiver = await startWebhookReceiver();
    const a = await startServerProcess(env(original));
    servers.push(a);
    const key = a.firstStartKey!;
    let call = keyedCaller(a.url, key);

    // A sealed secret: the webhook's signing secret, opened by every delivery.
    const hook = await call('POST', '/api/v0/webhooks', { url: `${receiver.url}/hook`, eventTypes: ['computer.deleted'] });
    expect(hook.status).toBe(201);
    receiver.secret('/hook', hook.body.secret);
    const kept = await call('POST', '/api/v0/computers', { name: 'kept', provider: 'local' });
    expect(kept.status).toBe(201);
    ids.push(kept.body.id);
    expect((await settled(call, kept.body.id)).status).toBe('active');

    // Three writers, each creating service accounts one after another until told to stop.
    let stop = false;
    const acked: string[][] = [[], [], []];
    const writers = acked.map(async (mine, w) => {
      for (let i = 0; !stop; i++) {
        const res = await call('POST', '/api/v0/service-accounts', { name: `w${w}-${i}`, status: 'active' });
        expect(res.status).toBe(201);
        mine.push(`w${w}-${i}`);
      }
    });
    await waitFor('each writer to have written', () => acked.every((m) => m.length >= 5));
    // A computer whose provisioning starts as the backup does: its Pulumi run and the snapshot take turns.
    const during = await call('POST', '/api/v0/computers', { name: 'during', provider: 'local' });
    expect(during.status).toBe(201);
    ids.push(during.body.id);
    const ackedBefore = acked.map((m) => m.length);
    const backup = await cli(['backup', '--out', archive], { AGENTPLANE_DATA_DIR: original });
    stop = true;
    await Promise.all(writers);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/^backup \(database, Pulumi state, encryption key\) written to .*installation\.backup: \d+ bytes/);
    expect(acked.every((m, w) => m.length > ackedBefore[w]!)).toBe(true);
    // Never in clear: neither the webhook secret nor a writer's name is in the archive's bytes.
    const bytes = readFileSync(archive);
    expect(bytes.includes(Buffer.from(hook.body.secret))).toBe(false);
    expect(bytes.includes(Buffer.from('w0-0'))).toBe(false);
    await settled(call, during.body.id);
    expect(await a.stop()).toBe(0);
    // Refusals that change nothing: a directory that is not empty, a wrong passphrase, a cut archive;
    // side by side with a backup taken with no server running (the command opens the directory itself).
    const full = path.join(base, 'full');
    mkdirSync(full);
    writeFileSync(path.join(full, 'keep.txt'), 'mine');
    const cuts = [bytes.length - 7, Math.floor(bytes.length / 2)].map((size, i) => {
      const cut = path.join(base, `cut-${i}.backup`);
      copyFileSync(archive, cut);
      truncateSync(cut, size);
      return cut;
    });
    // The original data directory is left out: the backup without a server opens its database.
    const restoreSide = () => listing(base).filter((e) => !e.startsWith('original'));
    const before = restoreSide();
    const [notEmpty, wrong, offline, ...truncated] = await Promise.all([
      cli(['restore', archive], { AGENTPLANE_DATA_DIR: full }),
      cli(['restore', archive], { AGENTPLANE_DATA_DIR: restored, AGENTPLANE_BACKUP_PASSPHRASE: 'not the passphrase at all' }),
      cli(['backup', '--out', `${base}.offline`], { AGENTPLANE_DATA_DIR: original }),
      ...cuts.map((cut) => cli(['restore', cut], { AGENTPLANE_DATA_DIR: restored })),
    ]);
    expect(notEmpty!.code).toBe(1);
    expect(notEmpty!.stderr).toMatch(/full \(AGENTPLANE_DATA_DIR\) is not empty: restore into an empty or new directory/);
    expect(wrong!.code).toBe(1);
    expect(wrong!.stderr).toMatch(/wrong passphrase/);
    for (const t of truncated) {
      expect(t.code).toBe(1);
      expect(t.stderr).toMatch(/the archive is truncated/);
    }
    expect(offline!.code, offline!.stderr).toBe(0);
    rmSync(`${base}.offline`);
    for (const cut of cuts) rmSync(cut);
    expect(restoreSide()).toEqual(before.filter((e) => !e.startsWith('cut-')));
    expect(existsSync(restored)).toBe(false);
    const restore = await cli(['restore', archive], { AGENTPLANE_DATA_DIR: restored });
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toMatch(/^restored the installation taken at \S+ into .*restored$/m);
    const b = await startServerProcess(env(restored));
    servers.push(b);
    expect(b.firstStartKey).toBeUndefined();
    call = keyedCaller(b.url, key);

    // Every write acknowledged before the backup began is there, and each writer's restored
    // accounts are a prefix of what it wrote: one moment of the database, nothing half-applied.
    const names = new Set((await call('GET', '/api/v0/service-accounts')).body.serviceAccounts.map((s: { name: string }) => s.name));
    acked.forEach((mine, w) => {
      const present = mine.filter((n) => names.has(n)).length;
      expect(present).toBeGreaterThanOrEqual(ackedBefore[w]!);
      expect(mine.slice(0, present).every((n) => names.has(n))).toBe(true);
      expect(names.has(`w${w}-${present}`)).toBe(false);
    });

    // Both computers are managed by the restored server: a delete tears each down with the restored Pulumi state.
    for (const id of ids) {
      const c = await settled(call, id);
      expect(c.status, JSON.stringify(c.provisioningSteps)).toBe('active');
      expect((await call('DELETE', `/api/v0/computers/${id}`)).status).toBe(204);
    }
    for (const id of ids) await tornDown(call, id);
    for (const id of ids) {
      expect(hostTraces(original, id).filter((t) => !/^(stack|workspace) /.test(t))).toEqual([]);
      expect(hostTraces(restored, id)).toEqual([]);
    }
    // The webhook secret sealed before the backup still opens: both deletions arrive signed with it.
    await waitFor('both deletions to be delivered', () => receiver.received.filter((r) => r.path === '/hook').length >= 2, 30_000);
    expect(receiver.received.filter((r) => r.path === '/hook').every((r) => r.verified)).toBe(true);
    await receiver.close();
  });
});

describe.skipIf(skip || skipWithout('the PostgreSQL backup test', postgresMissing()))('backup --pulumi-state-only beside PostgreSQL', () => {
  it('carries the Pulumi state and key of a PostgreSQL installation; a full backup points to pg_dump', { timeout: 240_000 }, async () => {
    const database = await createTestDatabase();
    const base = mkdtempSync(path.join(os.tmpdir(), 'agentplane-backup-pg-'));
    const first = path.join(base, 'first');
    const second = path.join(base, 'second');
    const archive = path.join(base, 'pulumi.backup');
    const env = (dataDir: string) => ({ ...serverEnv(dataDir, `${first}-computers`), DATABASE_URL: database.url });
    let server: ServerProcess | undefined;
    let id = '';
    try {
      server = await startServerProcess(env(first));
      const key = server.firstStartKey!;
      let call = keyedCaller(server.url, key);
      const created = await call('POST', '/api/v0/computers', { name: 'pg', provider: 'local' });
      id = created.body.id;
      expect((await settled(call, id)).status).toBe('active');

      const whole = await cli(['backup', '--out', archive], { AGENTPLANE_DATA_DIR: first, DATABASE_URL: database.url });
      expect(whole.code).toBe(1);
      expect(whole.stderr).toMatch(/uses PostgreSQL \(DATABASE_URL\): back the database up with pg_dump or PITR/);
      expect(existsSync(archive)).toBe(false);
      const taken = await cli(['backup', '--pulumi-state-only', '--out', archive], { AGENTPLANE_DATA_DIR: first, DATABASE_URL: database.url });
      expect(taken.code, taken.stderr).toBe(0);
      expect(await server.stop()).toBe(0);

      const restore = await cli(['restore', archive], { AGENTPLANE_DATA_DIR: second });
      expect(restore.code, restore.stderr).toBe(0);
      expect(restore.stdout).toMatch(/restore the PostgreSQL database to the same moment/);
      expect(readFileSync(path.join(second, 'encryption.key'), 'utf8')).toBe(readFileSync(path.join(first, 'encryption.key'), 'utf8'));
      expect(existsSync(path.join(second, 'pgdata'))).toBe(false);

      // The same database, a data directory with only the restored state: the computer is still managed.
      server = await startServerProcess(env(second));
      call = keyedCaller(server.url, key);
      expect((await call('DELETE', `/api/v0/computers/${id}`)).status).toBe(204);
      await tornDown(call, id);
      expect(hostTraces(first, id).filter((t) => !/^(stack|workspace) /.test(t))).toEqual([]);
      expect(hostTraces(second, id)).toEqual([]);
    } finally {
      await server?.stop('SIGKILL');
      if (id && hostTraces(first, id).some((t) => !/^(stack|workspace) /.test(t))) removeLocalComputer(first, id);
      rmSync(base, { recursive: true, force: true });
      rmSync(`${first}-computers`, { recursive: true, force: true });
      await database.drop();
    }
  });
});
