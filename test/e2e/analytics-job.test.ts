import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { registerSchedules } from '../../src/background.ts';
import { compose, type ComposedWorker } from '../../src/compose.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { recordEvents } from '../../src/modules/analytics/events.ts';
import { analyticsRollupJob } from '../../src/modules/analytics/jobs.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

describe.each(BACKENDS)('analytics roll-up job on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let worker: ComposedWorker;
  const clock = fixedClock(new Date('2026-02-10T00:20:00.000Z'));

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const log = createLogger({ level: 'silent' });
    // The worker's whole job catalog, as a server runs it (computer jobs need the SSH side).
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-analytics-job-'));
    worker = await compose({
      role: 'worker',
      config: loadConfig({ AGENTPLANE_DATA_DIR: dataDir }),
      db,
      log,
      overrides: { clock, schedules: false, queueTimings: { maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 0.5 } },
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop(5_000);
    await db?.dispose();
  });

  it('is scheduled daily after midnight UTC and a run back-fills every missing day through yesterday', async () => {
    const org = await createOrgFixture(db, 'jobs');
    await db.prisma.organization.update({ where: { id: org.id }, data: { createdAt: new Date('2026-02-01T12:00:00.000Z') } });
    await recordEvents(db.prisma, [
      { organizationId: org.id, userId: org.members.user.userId, occurredAt: new Date('2026-02-05T10:00:00.000Z'), kind: 'session_started', client: 'web' },
    ]);
    await registerSchedules(worker.background!.queue);
    expect(await worker.background!.queue.boss.getSchedules(analyticsRollupJob.name)).toMatchObject([
      { name: analyticsRollupJob.name, cron: '15 0 * * *', timezone: 'UTC' },
    ]);

    const deadline = Date.now() + 20_000;
    let days: { day: Date; dailyActive: number }[] = [];
    while (Date.now() < deadline) {
      days = await db.prisma.analyticsOrgDay.findMany({ where: { organizationId: org.id }, orderBy: { day: 'asc' } });
      if (days.length > 0) break;
      await sleep(100);
    }
    expect(days.map((d) => d.day.toISOString().slice(0, 10))).toEqual([
      '2026-02-01',
      '2026-02-02',
      '2026-02-03',
      '2026-02-04',
      '2026-02-05',
      '2026-02-06',
      '2026-02-07',
      '2026-02-08',
      '2026-02-09',
    ]);
    expect(days.find((d) => d.day.toISOString().startsWith('2026-02-05'))?.dailyActive).toBe(1);
  });
});
