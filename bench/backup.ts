/**
 * `agentplane backup` of an embedded installation at size: 100 computers and 100,000 session
 * messages, while a real `serve` process runs on it. Run on demand:
 *
 *   node bench/backup.ts [--computers 100] [--messages 100000] [--runs 5]
 *
 * Goal: the backup's median under 30 s. The rows are seeded directly through Prisma (computers,
 * 100 sessions, their messages of about 600 bytes each) rather than through the API, for speed;
 * each computer gets a synthetic Pulumi stack of a real one's shape and size (a checkpoint, two
 * backups and their metadata, ~16 KB each) instead of a provisioned `local` computer, which would
 * need 100 users and network namespaces. Beside the backup's median it prints a baseline timed in
 * the same run: a plain copy of the data directory (`cp -a`, not consistent while serving: the
 * floor for reading the same bytes), and the restore of the archive into an empty directory.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bootstrapOrganization } from '../src/modules/organization/bootstrap.ts';
import { COMPUTERS_PROJECT } from '../src/provisioning/pulumi/computer-stacks.ts';
import { CLI, startServerProcess } from '../test/support/server-process.ts';

const { values: args } = parseArgs({
  options: { computers: { type: 'string', default: '100' }, messages: { type: 'string', default: '100000' }, runs: { type: 'string', default: '5' } },
});
const COMPUTERS = Number(args.computers);
const MESSAGES = Number(args.messages);
const RUNS = Number(args.runs);
const SESSIONS = 100;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const seconds = (xs: number[]) => `${median(xs).toFixed(2)} s (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
const du = (dir: string) => execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0];

const base = mkdtempSync(path.join(tmpdir(), 'agentplane-bench-backup-'));
const dataDir = path.join(base, 'data');
const env = { AGENTPLANE_BACKUP_PASSPHRASE: 'bench passphrase, long enough', AGENTPLANE_LOG_LEVEL: 'warn' };
try {
  let t = performance.now();
  const db = await openDatabase({ dataDir });
  await migrateDatabase(db, createLogger({ level: 'warn' }));
  const prisma = db.prisma;
  const { organizationId, userId } = await bootstrapOrganization(prisma, { org: 'bench', email: 'owner@bench.test' }, systemClock);
  const computerIds = Array.from({ length: COMPUTERS }, () => newId('cmp'));
  await prisma.computer.createMany({
    data: computerIds.map((id, i) => ({
      id,
      organizationId,
      ownerKind: 'human',
      ownerId: userId,
      name: `bench-${i}`,
      liveName: `bench-${i}`,
      providerType: 'local',
      status: 'active' as const,
      powerState: 'running',
      createdBy: userId,
    })),
  });
  const sessionIds = Array.from({ length: SESSIONS }, () => newId('ses'));
  await prisma.session.createMany({
    data: sessionIds.map((id, i) => ({ id, organizationId, ownerKind: 'human', ownerId: userId, computerId: computerIds[i % COMPUTERS]!, cwd: '/home/agent' })),
  });
  const text = 'The agent read the failing test, traced the error to the date parser and proposed a fix. '.repeat(6);
  for (let done = 0; done < MESSAGES; done += 5_000) {
    await prisma.sessionMessage.createMany({
      data: Array.from({ length: Math.min(5_000, MESSAGES - done) }, (_, i) => ({
        id: newId('msg'),
        sessionId: sessionIds[(done + i) % SESSIONS]!,
        role: (done + i) % 2 ? 'assistant' : 'user',
        content: [{ type: 'text', text: `${done + i}: ${text}` }],
      })),
    });
  }
  await db.close();
  const stateDir = path.join(dataDir, 'pulumi', 'state', '.pulumi');
  for (const id of computerIds) {
    const checkpoint = JSON.stringify({
      version: 3,
      checkpoint: { stack: id, latest: { resources: [{ urn: `urn:pulumi:${id}`, outputs: randomBytes(6_000).toString('base64') }] } },
    });
    mkdirSync(path.join(stateDir, 'stacks', COMPUTERS_PROJECT), { recursive: true });
    mkdirSync(path.join(stateDir, 'backups', COMPUTERS_PROJECT, id), { recursive: true });
    writeFileSync(path.join(stateDir, 'stacks', COMPUTERS_PROJECT, `${id}.json`), checkpoint);
    for (const n of [1, 2]) {
      writeFileSync(path.join(stateDir, 'backups', COMPUTERS_PROJECT, id, `${id}.${n}.json`), checkpoint);
      writeFileSync(path.join(stateDir, 'backups', COMPUTERS_PROJECT, id, `${id}.${n}.json.attrs`), '{"user.content_type":"application/json"}');
    }
  }
  console.log(
    `seeded ${COMPUTERS} computers, ${SESSIONS} sessions, ${MESSAGES} messages in ${((performance.now() - t) / 1000).toFixed(1)} s; data directory ${du(dataDir)} bytes`,
  );

  const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false' });
  const backups: number[] = [];
  const copies: number[] = [];
  const restores: number[] = [];
  let size = 0;
  try {
    for (let run = 0; run < RUNS; run++) {
      const archive = path.join(base, `run-${run}.backup`);
      t = performance.now();
      const res = spawnSync(process.execPath, [CLI, 'backup', '--out', archive], {
        env: { ...process.env, ...env, AGENTPLANE_DATA_DIR: dataDir },
        encoding: 'utf8',
      });
      if (res.status !== 0) throw new Error(`backup failed: ${res.stderr}`);
      backups.push((performance.now() - t) / 1000);
      size = statSync(archive).size;

      const copy = path.join(base, `copy-${run}`);
      t = performance.now();
      execFileSync('cp', ['-a', dataDir, copy]);
      copies.push((performance.now() - t) / 1000);
      rmSync(copy, { recursive: true, force: true });

      const target = path.join(base, `restored-${run}`);
      t = performance.now();
      const restored = spawnSync(process.execPath, [CLI, 'restore', archive], {
        env: { ...process.env, ...env, AGENTPLANE_DATA_DIR: target },
        encoding: 'utf8',
      });
      if (restored.status !== 0) throw new Error(`restore failed: ${restored.stderr}`);
      restores.push((performance.now() - t) / 1000);
      rmSync(target, { recursive: true, force: true });
      rmSync(archive);
    }
  } finally {
    await server.stop();
  }
  console.log(`archive: ${size} bytes (gzip, then AES-256-GCM)`);
  console.log(`backup while serving (${RUNS} runs): median ${seconds(backups)}   goal: under 30 s`);
  console.log(`baseline, cp -a of the data directory: median ${seconds(copies)}`);
  console.log(`restore into an empty directory: median ${seconds(restores)}`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
