import fs from 'node:fs';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createEgressGuard } from '../../src/egress/guard.ts';
import { parseEgressAllow } from '../../src/egress/policy.ts';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.ts';
import { NotFound } from '../../src/lib/errors.ts';
import { newUuid } from '../../src/lib/ids.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSshClient, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import { CRITERIA } from '../../src/modules/readiness/catalogue.ts';
import { evaluateCheckout } from '../../src/modules/readiness/evaluator.ts';
import { cloneRepository } from '../../src/repos/clone.ts';
import type { EvaluateJobDeps } from '../../src/modules/readiness/jobs.ts';
import { runEvaluation } from '../../src/modules/readiness/run-evaluation.ts';
import { createSshScratchWorkspace } from '../../src/repos/ssh-workspace.ts';
import { createOrgFixture, type OrgFixture } from '../support/api.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { useFixtureRepos } from '../unit/readiness/fixture-repo.ts';
import { WELL_KEPT, WELL_KEPT_APPS, WELL_KEPT_SCORES, scoresOf } from '../unit/readiness/fixture-scores.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the readiness SSH tests', missing);

const log = createLogger({ level: 'silent' });

describe.skipIf(skip)('readiness evaluation on a computer over SSH', () => {
  const fixtures = useFixtureRepos();
  let sshd: TestSshd;
  let ssh: SshClient;
  let target: SshTarget;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;
  let repoUrl: string;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    sshd = await startSshd();
    ssh = createSshClient();
    target = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, hostKeyFingerprint: sshd.hostKeyFingerprint };
    gitServer = await startGitHttpServer(fixtures.root);
    repoUrl = gitServer.publish(fixtures.make(WELL_KEPT).dir, 'well-kept');
  });
  afterAll(async () => {
    await gitServer?.close();
    await ssh?.close();
    await sshd?.stop();
  });

  const remoteExists = async (p: string) => (await ssh.exec(target, `test -e '${p}'`)).exitCode === 0;

  describe('SSH workspace', () => {
    it('works in a scratch directory on the machine and removes it on dispose', async () => {
      const ws = await createSshScratchWorkspace(ssh, target);
      const root = (await ws.exec('pwd')).stdout.trim();
      expect(root).toMatch(/\/agentplane-eval-/);
      await ws.exec('mkdir -p sub && printf remote > sub/f.txt');
      expect((await ws.readFile('sub/f.txt'))?.toString()).toBe('remote');
      expect(await ws.readFile('sub/missing.txt')).toBeUndefined();
      expect(await ws.readFile('sub')).toBeUndefined();
      expect(await ws.exec('pwd; exit 4', { cwd: 'sub' })).toEqual({ exitCode: 4, stdout: `${root}/sub\n`, stderr: '' });
      await expect(ws.readFile('../../etc/passwd')).rejects.toThrow(/leaves the workspace/);
      await ws.dispose();
      expect(await remoteExists(root)).toBe(false);
    });

    it('scores a repository cloned on the machine exactly as a local clone', async () => {
      const ws = await createSshScratchWorkspace(ssh, target);
      try {
        const dir = await cloneRepository(ws, { repoUrl });
        expect(await ws.listFiles(dir)).toContain('packages/api/src/index.test.ts');
        const result = await evaluateCheckout(ws, dir);
        expect(result.apps).toEqual(WELL_KEPT_APPS);
        expect(scoresOf(result.report)).toEqual(WELL_KEPT_SCORES);
        expect(Object.keys(result.report)).toEqual(CRITERIA.map((c) => c.id));
        expect(result).toMatchObject({ branch: 'main', hasLocalChanges: false, hasNonRemoteCommits: false });
      } finally {
        await ws.dispose();
      }
    });
  });

  describe.each(BACKENDS)('evaluation job on %s', (backend) => {
    let db: Awaited<ReturnType<typeof openTestDatabase>>;
    let org: OrgFixture;
    let scratchRoot: string;
    const resolved: string[] = [];

    beforeAll(async () => {
      db = await openTestDatabase(backend);
      org = await createOrgFixture(db, 'ssh-eval');
      scratchRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-readiness-scratch-'));
    });
    afterAll(async () => {
      await db?.dispose();
      if (scratchRoot) fs.rmSync(scratchRoot, { recursive: true, force: true });
    });

    const deps = (): EvaluateJobDeps => ({
      prisma: db.prisma,
      clock: systemClock,
      scratchRoot,
      secrets: createSecretBox(Buffer.alloc(32, 7)),
      // The fixture repositories are served on loopback.
      egress: createEgressGuard(parseEgressAllow('127.0.0.0/8')),
      computers: {
        ssh,
        resolveTarget: async (principal, computerId) => {
          resolved.push(`${principal.organizationId}/${computerId}`);
          if (computerId !== 'cmp_machine') throw new NotFound(`Computer ${computerId} not found`);
          return target;
        },
      },
    });

    async function queued(computerId: string | null, url = repoUrl) {
      const id = newUuid();
      const principal = {
        organizationId: org.id,
        role: 'user',
        credential: 'api_key',
        kind: 'user',
        userId: org.members.user.userId,
        email: org.members.user.email,
      };
      await db.prisma.readinessEvaluation.create({
        data: { id, organizationId: org.id, requestedBy: principal, repoUrl: url, computerId, status: 'queued', createdAt: new Date() },
      });
      return id;
    }
    const run = (id: string, attempt = 1) => runEvaluation(deps(), id, { lastAttempt: attempt > 2, signal: new AbortController().signal, log });

    it('clones on the computer named, with the requester resolving it, and stores the report', async () => {
      const id = await queued('cmp_machine');
      await run(id);
      const evaluation = await db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } });
      expect(evaluation).toMatchObject({ status: 'succeeded', error: null });
      expect(resolved).toContain(`${org.id}/cmp_machine`);
      const stored = await db.prisma.readinessReport.findUniqueOrThrow({ where: { id: evaluation.reportId! } });
      expect(scoresOf(stored.report as never)).toEqual(WELL_KEPT_SCORES);
      expect(stored).toMatchObject({ organizationId: org.id, repoKey: repoUrl.replace('http://', '').replace(/\.git$/, ''), branch: 'main' });
      expect((await ssh.exec(target, 'ls -d "${TMPDIR:-/tmp}"/agentplane-eval-* 2>/dev/null | wc -l')).stdout.trim()).toBe('0');
      // Running a settled evaluation again (a retry after a crash past the commit) changes nothing.
      await run(id, 2);
      expect(await db.prisma.readinessReport.count({ where: { organizationId: org.id } })).toBe(1);
    });

    it('fails at once when the computer is gone, naming it', async () => {
      const id = await queued('cmp_gone');
      await run(id);
      expect(await db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } })).toMatchObject({
        status: 'failed',
        error: 'computer cmp_gone is not available: Computer cmp_gone not found',
        reportId: null,
      });
    });

    it('evaluates locally in a scratch directory under the data directory and removes it', async () => {
      const id = await queued(null);
      await run(id);
      expect(await db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'succeeded' });
      expect(fs.readdirSync(scratchRoot)).toEqual([]);
    });

    it('retries transient failures and fails the evaluation on the last attempt', async () => {
      const id = await queued('cmp_machine');
      const unreachable = { ...target, port: 1 };
      const failing: EvaluateJobDeps = { ...deps(), computers: { ssh, resolveTarget: async () => unreachable } };
      const attempt = (n: number) => runEvaluation(failing, id, { lastAttempt: n > 1, signal: new AbortController().signal, log });
      await expect(attempt(1)).rejects.toThrow(/cannot connect/);
      expect(await db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'running', error: null });
      await expect(attempt(2)).rejects.toThrow(/cannot connect/);
      const failed = await db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } });
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatch(/cannot connect to 127\.0\.0\.1:1/);
    });
  });
});
