import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK } from '../support/api.ts';
import { createTestDatabase, postgresMissing } from '../support/databases.ts';
import { giteaBinDir, giteaMissing, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

const bin = giteaBinDir();
const skip = skipWithout('config on two replicas', postgresMissing() ?? giteaMissing());
const REPO = 'alice/platform';
const N = 300;
const templates = (version: string, n = N) =>
  Array.from(
    { length: n },
    (_, i) => `apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: tpl-${i}\nspec:\n  repos: []\n  setupScript: echo ${version}\n`,
  ).join('---\n');

/** Two `agentplane serve` processes on one PostgreSQL database: reconciles never apply one commit twice; SIGKILL inside an apply leaves no half. */
describe.skipIf(skip)('config on two replicas on PostgreSQL', () => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-config-replicas-'));
  let database: { url: string; drop(): Promise<void> };
  let db: pg.Client;
  let gitea: Gitea;
  let alice: GiteaUser;
  let env: Record<string, string>;
  let a: ServerProcess;
  let b: ServerProcess;
  let key: string;

  const call = async (s: ServerProcess, method: string, p: string, body?: unknown) => {
    const res = await fetch(`${s.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };
  const head = async () => (await gitea.api('GET', `/repos/${REPO}/branches/main`)).body.commit.id as string;
  const reconciledBy = (s: ServerProcess, sourceId: string) =>
    s
      .output()
      .split('\n')
      .filter((l) => l.includes('config source reconciled') && l.includes(sourceId)).length;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    gitea = await startGitea(bin!);
    alice = await gitea.createUser('alice');
    await gitea.createRepo(alice, { name: 'platform', files: { 'config/templates.yaml': templates('v0', 3) } });
    env = { ...ALLOW_LOOPBACK, DATABASE_URL: database.url, AGENTPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64'), AGENTPLANE_LOCAL_PROVIDER: 'false' };
    a = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(stateDir, 'a') });
    key = a.firstStartKey!;
    b = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(stateDir, 'b') });
  }, 180_000);

  afterAll(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
    await db?.end();
    await database?.drop();
    await gitea?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('both replicas reconcile one source, never at once: one revision per commit', { timeout: 180_000 }, async () => {
    const created = await call(a, 'POST', '/api/v0/config/sources', { repository: `${gitea.url}/${REPO}.git`, path: 'config' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    // The first commit is applied when the source is defined.
    const commits = [await head()];
    for (let round = 1; round <= 2 || reconciledBy(a, id) === 0 || reconciledBy(b, id) === 0; round++) {
      expect(round, 'both replicas worked reconciles within 8 rounds').toBeLessThanOrEqual(8);
      await gitea.commitFiles(alice, REPO, { 'config/templates.yaml': templates(`v${round}`, 3) }, { message: `v${round}` });
      const commit = await head();
      commits.push(commit);
      // Reconciles asked of both replicas at once.
      const asked = await Promise.all(Array.from({ length: 6 }, (_, i) => call(i % 2 ? a : b, 'POST', `/api/v0/config/sources/${id}/reconcile`)));
      expect(asked.map((r) => r.status)).toEqual(Array(6).fill(202));
      await waitFor(`commit ${commit} applied and the reconciles drained`, async () => {
        const source = await call(a, 'GET', `/api/v0/config/sources/${id}`);
        const pending = await db.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'config.reconcile' AND state IN ('created', 'active', 'retry')`);
        return source.body.status.lastAppliedCommit === commit && pending.rows[0].n === 0;
      });
    }
    const revisions = await db.query<{ commit: string; n: number }>(
      `SELECT commit, count(*)::int AS n FROM config_revisions WHERE source = $1 GROUP BY commit`,
      [id],
    );
    expect(Object.fromEntries(revisions.rows.map((r) => [r.commit, r.n]))).toEqual(Object.fromEntries(commits.map((c) => [c, 1])));
    expect(reconciledBy(a, id)).toBeGreaterThan(0);
    expect(reconciledBy(b, id)).toBeGreaterThan(0);
    expect((await call(a, 'DELETE', `/api/v0/config/sources/${id}`)).status).toBe(204);
  });

  it('SIGKILL while the apply transaction holds writes leaves the old revision whole', { timeout: 180_000 }, async () => {
    const files = (version: string) => ({ files: [{ path: 'templates.yaml', content: templates(version) }] });
    const first = await call(a, 'POST', '/api/v0/config/apply', files('old'));
    expect(first.status).toBe(200);
    const revisionsBefore = (await db.query(`SELECT count(*)::int AS n FROM config_revisions`)).rows[0].n as number;

    const applying = call(a, 'POST', '/api/v0/config/apply', files('new')).catch(() => undefined);
    // The apply holds its organization's advisory lock for its whole transaction; once that backend has
    // written (it has a transaction id), with 300 updates to go, the kill lands inside the transaction.
    const inside = await waitFor(
      'the apply transaction writing',
      async () => {
        const rows = await db.query<{ pid: number; xid: string | null }>(
          `SELECT a.pid, a.backend_xid::text AS xid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.backend_xid IS NOT NULL`,
        );
        return rows.rows[0];
      },
      60_000,
      10,
    );
    expect(await a.stop('SIGKILL')).toBeNull();
    await applying;
    // The transaction was open when the process died: PostgreSQL rolls it back once the connection is gone.
    await waitFor('the dead backend gone', async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [inside.pid])).rowCount === 0);

    const scripts = await db.query<{ s: string; n: number }>(
      `SELECT setup_script AS s, count(*)::int AS n FROM computer_templates WHERE name LIKE 'tpl-%' AND deleted_at IS NULL GROUP BY setup_script`,
    );
    expect(scripts.rows).toEqual([{ s: 'echo old', n: N }]);
    expect((await db.query(`SELECT count(*)::int AS n FROM config_revisions`)).rows[0].n).toBe(revisionsBefore);

    // The other replica applies the same documents to completion.
    const again = await call(b, 'POST', '/api/v0/config/apply', files('new'));
    expect(again.status).toBe(200);
    expect(again.body.plan.summary.update).toBe(N);
    const after = await db.query(`SELECT count(*)::int AS n FROM computer_templates WHERE name LIKE 'tpl-%' AND setup_script = 'echo new'`);
    expect(after.rows[0].n).toBe(N);
  });
});
