import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobKind } from '../../src/jobs/job.ts';
import { JOB_SCHEDULES, jobsFor } from '../../src/job-catalog.ts';

const base = { name: 'test.kind', payload: z.object({ id: z.string() }), retryLimit: 1, expireInSeconds: 60 };

describe('job kinds', () => {
  it('refuses bad policies when the module loads, naming each', () => {
    expect(() => defineJobKind({ ...base, name: 'bad name!' })).toThrow(/name may only hold/);
    expect(() => defineJobKind({ ...base, retryLimit: -1, heartbeatSeconds: 5 })).toThrow(/retryLimit must be an integer >= 0; heartbeatSeconds/);
    expect(() => defineJobKind({ ...base, expireInSeconds: 0 })).toThrow(/expireInSeconds must be an integer >= 1/);
  });

  it('binds a handler, with tuning from the configuration checked the same way', async () => {
    const kind = defineJobKind({ ...base, concurrency: 2 });
    const seen: string[] = [];
    const def = kind.handledBy(async (p) => void seen.push(p.id), { concurrency: 8, expireInSeconds: undefined });
    expect(def).toMatchObject({ name: 'test.kind', concurrency: 8, expireInSeconds: 60, retryLimit: 1, heartbeatSeconds: 30 });
    expect(kind.concurrency).toBe(2);
    expect('handledBy' in def).toBe(false);
    await def.handler({ id: 'a' }, {} as never);
    expect(seen).toEqual(['a']);
    expect(() => kind.handledBy(async () => {}, { concurrency: 0 })).toThrow(/concurrency must be an integer >= 1/);
  });
});

describe('the job catalog', () => {
  it('names every scheduled kind among the kinds a worker runs, each once', () => {
    const deps = {
      prisma: {},
      clock: {},
      ssh: {},
      secrets: {},
      dataDir: '/tmp',
      provisioner: {},
      managed: { concurrency: 1 },
      egress: {},
      events: { retentionMs: 1 },
      webhooks: {},
    };
    const names = jobsFor(deps as never).map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    for (const s of JOB_SCHEDULES) expect(names).toContain(s.kind.name);
  });
});
