import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressGuard } from '../../src/egress/guard.ts';
import { parseEgressAllow } from '../../src/egress/policy.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { NotFound } from '../../src/lib/errors.ts';
import { newUuid } from '../../src/lib/ids.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { DEFAULT_WIKI_JOB_SETTINGS } from '../../src/modules/wiki/generate/job-deps.ts';
import { runGeneration } from '../../src/modules/wiki/generate/run-generation.ts';
import { createSshClient, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import { createOrgFixture } from '../support/api.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { openTestDatabase } from '../support/test-db.ts';
import { GO_MODULE } from '../support/wiki-fixtures.ts';
import { useFixtureRepos } from '../unit/readiness/fixture-repo.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the wiki generation tests over SSH', missing);
const log = createLogger({ level: 'silent' });

/** Generation with computerId: the clone is made on the computer over SSH and comes back as a bundle. */
describe.skipIf(skip)('wiki generation on a computer over SSH', () => {
  const fixtures = useFixtureRepos();
  let sshd: TestSshd;
  let ssh: SshClient;
  let target: SshTarget;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-wiki-ssh-'));

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    sshd = await startSshd();
    ssh = createSshClient();
    target = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, hostKeyFingerprint: sshd.hostKeyFingerprint };
    gitServer = await startGitHttpServer(fixtures.root);
    db = await openTestDatabase('pglite');
  });
  afterAll(async () => {
    await db?.dispose();
    await gitServer?.close();
    await ssh?.close();
    await sshd?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  async function generate(repoUrl: string, computerId: string, bounds = DEFAULT_WIKI_JOB_SETTINGS.bounds) {
    const org = await createOrgFixture(db, `ssh-${Math.random().toString(36).slice(2, 8)}`);
    const id = newUuid();
    await db.prisma.wikiRun.create({
      data: {
        id,
        organizationId: org.id,
        creatorKind: 'user',
        creatorId: org.members.user.userId,
        requestedBy: {},
        repoUrl,
        repoKey: repoUrl,
        source: 'generate',
        status: 'queued',
        computerId,
        createdAt: new Date(),
      },
    });
    await runGeneration(
      {
        prisma: db.prisma,
        clock: systemClock,
        scratchRoot: scratch,
        // The control plane itself reaches nothing here: only the computer clones.
        egress: createEgressGuard(parseEgressAllow(undefined)),
        secrets: createSecretBox(randomBytes(32)),
        computers: { ssh, resolveTarget: async (_p, cid) => (cid === 'box' ? target : Promise.reject(new NotFound(`no computer ${cid}`))) },
        settings: { ...DEFAULT_WIKI_JOB_SETTINGS, bounds },
      },
      id,
      { lastAttempt: false, signal: new AbortController().signal, log },
    );
    return db.prisma.wikiRun.findUniqueOrThrow({ where: { id } });
  }

  it('clones on the computer, surveys the bundle on the control plane and leaves no scratch behind', async () => {
    const repoUrl = gitServer.publish(fixtures.make(GO_MODULE).dir, 'shortener-ssh');
    const run = await generate(repoUrl, 'box');
    expect(run.status, run.error ?? '').toBe('succeeded');
    expect(run.branch).toBe('main');
    const store = await db.prisma.wikiPage.findUniqueOrThrow({ where: { runId_id: { runId: run.id, id: 'systems.internal-store' } } });
    expect(store.markdown).toContain('Package store keeps short codes and their target URLs.');
    expect(fs.readdirSync(scratch)).toEqual([]);
    expect((await ssh.exec(target, 'ls -d "${TMPDIR:-/tmp}"/agentplane-eval-* 2>/dev/null | wc -l')).stdout.trim()).toBe('0');
  });

  it('checks the size bounds on the computer and fails an unknown computer with the reason', async () => {
    const repoUrl = gitServer.publish(fixtures.make(GO_MODULE).dir, 'shortener-bounded');
    const bounded = await generate(repoUrl, 'box', { maxFiles: 2, maxBytes: 10 ** 9 });
    expect(bounded.status).toBe('failed');
    expect(bounded.error).toMatch(/more than AGENTPLANE_WIKI_MAX_FILES \(2\)/);
    const unknown = await generate(repoUrl, 'elsewhere');
    expect(unknown.status).toBe('failed');
    expect(unknown.error).toMatch(/computer elsewhere is not available: no computer elsewhere/);
  });
});
