import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_RETRY, runSteps, type RetryRule, type Step } from '../../src/modules/computers/steps/runner.ts';
import { provisioningSteps } from '../../src/modules/computers/steps/store.ts';
import { ConnectionLost, HostKeyMismatch, SshTimeout, Unreachable, AuthFailed, Cancelled, SftpFailed, isTransientSshError } from '../../src/ssh/index.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

const at = { host: '10.0.0.5', port: 22 };

describe('the SSH layer’s transient-error rule', () => {
  it('retries what may answer later, never a host key mismatch, a cancellation or a non-SSH failure', () => {
    expect(isTransientSshError(new Unreachable({ ...at, reason: 'connection refused' }))).toBe(true);
    expect(isTransientSshError(new ConnectionLost({ ...at, reason: 'reset' }))).toBe(true);
    expect(isTransientSshError(new AuthFailed({ ...at, username: 'u' }))).toBe(true);
    expect(isTransientSshError(new SshTimeout({ ...at, phase: 'connect', ms: 5000 }))).toBe(true);
    expect(isTransientSshError(new HostKeyMismatch({ ...at, expected: 'SHA256:a', presented: 'SHA256:b' }))).toBe(false);
    expect(isTransientSshError(new Cancelled(at))).toBe(false);
    expect(isTransientSshError(new SftpFailed({ ...at, op: 'stat', path: '/x', reason: 'no such file', code: 2 }))).toBe(false);
    expect(isTransientSshError(new Error('git clone exited with 128'))).toBe(false);
  });
});

describe.each(BACKENDS)('the step runner on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let orgId: string;
  let computerId: string;
  let n = 0;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    orgId = (await createOrgFixture(db, `steps-${backend}`)).id;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  /** A fresh computer whose steps are `ids`, all pending unless given. */
  async function computerWith(steps: (string | { id: string; status: string; startedAt?: Date })[]) {
    computerId = `cmp_steps${++n}`;
    await db.prisma.computer.create({
      data: {
        id: computerId,
        organizationId: orgId,
        ownerKind: 'human',
        ownerId: 'usr_x',
        name: computerId,
        providerType: 'byom',
        status: 'active',
        createdBy: 'usr_x',
        provisioningSteps: {
          create: steps.map((s, position) =>
            typeof s === 'string' ? { id: s, name: `Step ${s}`, status: 'pending', position } : { name: `Step ${s.id}`, position, ...s },
          ),
        },
      },
    });
    return provisioningSteps(db.prisma, computerId);
  }
  const stored = async () =>
    Object.fromEntries((await db.prisma.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } })).map((s) => [s.id, s]));
  const statuses = async () => Object.fromEntries(Object.entries(await stored()).map(([id, s]) => [id, s.status]));
  const stepEvents = async () =>
    (await db.prisma.event.findMany({ where: { computerId, type: 'computer.step' }, orderBy: { id: 'asc' } })).map((e) => {
      const step = (e.data as { step: { id: string; status: string } }).step;
      return `${step.id}:${step.status}`;
    });
  const opts = () => ({ signal: new AbortController().signal, now: () => new Date() });
  const done = (id: string, work: () => unknown = () => undefined): Step => ({ id, run: async () => void (await work()) });

  let log: string[];
  beforeEach(() => {
    log = [];
  });

  it('runs the steps in order, each pending → running → completed, publishing every change', async () => {
    const store = await computerWith(['a', 'b']);
    const result = await runSteps(store, [done('a', () => log.push('a')), done('b', () => log.push('b'))], opts());
    expect(result).toBe('finished');
    expect(log).toEqual(['a', 'b']);
    const s = await stored();
    expect([s.a!.status, s.b!.status]).toEqual(['completed', 'completed']);
    expect(s.a!.completedAt!.getTime()).toBeGreaterThanOrEqual(s.a!.startedAt!.getTime());
    expect(await stepEvents()).toEqual(['a:running', 'a:completed', 'b:running', 'b:completed']);
  });

  it('is idempotent by step id: a resumed run skips completed steps and re-runs a running one, keeping its start', async () => {
    const started = new Date(Date.now() - 60_000);
    const store = await computerWith([{ id: 'a', status: 'completed' }, { id: 'b', status: 'running', startedAt: started }, 'c']);
    const resumed: Record<string, boolean> = {};
    const step = (id: string): Step => ({ id, run: async (call) => void (log.push(id), (resumed[id] = call.resumed)) });
    await runSteps(store, [step('a'), step('b'), step('c'), step('not-stored')], opts());
    expect(log).toEqual(['b', 'c']);
    expect(resumed).toEqual({ b: true, c: false });
    const s = await stored();
    expect(s.b!.startedAt).toEqual(started);
    expect(await statuses()).toEqual({ a: 'completed', b: 'completed', c: 'completed' });
    // Run again: nothing left to do, nothing written.
    log = [];
    await runSteps(store, [step('a'), step('b'), step('c')], opts());
    expect(log).toEqual([]);
    expect(await stepEvents()).toEqual(['b:running', 'b:completed', 'c:running', 'c:completed']);
  });

  it('a failure that stops the list skips every later pending step with the reason; one that does not goes on', async () => {
    const store = await computerWith(['a', 'b', 'c', 'd']);
    const result = await runSteps(
      store,
      [
        {
          id: 'a',
          run: async () => {
            throw new Error('a broke');
          },
        },
        done('b', () => log.push('b')),
        {
          id: 'c',
          stopsOnFailure: 'c could not finish',
          run: async () => {
            throw new Error('c broke');
          },
        },
        done('d', () => log.push('d')),
      ],
      opts(),
    );
    expect(result).toBe('failed');
    expect(log).toEqual(['b']);
    const s = await stored();
    expect([s.a!.status, s.a!.error]).toEqual(['failed', 'a broke']);
    expect(s.b!.status).toBe('completed');
    expect([s.c!.status, s.c!.error]).toEqual(['failed', 'c broke']);
    expect([s.d!.status, s.d!.error]).toEqual(['skipped', 'c could not finish']);
    expect(await stepEvents()).toEqual(['a:running', 'a:failed', 'b:running', 'b:completed', 'c:running', 'c:failed', 'd:skipped']);
  });

  it('retries transient failures within the budget, showing the note on the running step, then completes', async () => {
    const store = await computerWith(['a']);
    const rule: RetryRule = { transient: (e) => e instanceof ConnectionLost, budgetMs: 5_000, delayMs: 50, note: (e) => `waiting: ${(e as Error).message}` };
    let tries = 0;
    const notes: (string | null)[] = [];
    const result = await runSteps(
      store,
      [
        {
          id: 'a',
          retry: rule,
          run: async () => {
            notes.push((await stored()).a!.error);
            if (++tries < 3) throw new ConnectionLost({ ...at, reason: 'reset' });
          },
        },
      ],
      opts(),
    );
    expect(result).toBe('finished');
    expect(tries).toBe(3);
    expect(notes).toEqual([null, 'waiting: connection to 10.0.0.5:22 lost: reset', 'waiting: connection to 10.0.0.5:22 lost: reset']);
    expect((await stored()).a).toMatchObject({ status: 'completed', error: null });
  });

  it('fails at once on a failure the rule does not call transient (a host key mismatch), and past the budget on one it does', async () => {
    const store = await computerWith(['hostkey', 'budget']);
    let hostKeyTries = 0;
    let budgetTries = 0;
    const rule: RetryRule = { transient: isTransientSshError, budgetMs: 300, delayMs: 100 };
    const started = Date.now();
    await runSteps(
      store,
      [
        {
          id: 'hostkey',
          retry: rule,
          run: async () => {
            hostKeyTries++;
            throw new HostKeyMismatch({ ...at, expected: 'SHA256:a', presented: 'SHA256:b' });
          },
        },
        {
          id: 'budget',
          retry: rule,
          run: async () => {
            budgetTries++;
            throw new Unreachable({ ...at, reason: `refused ${budgetTries}` });
          },
        },
      ],
      opts(),
    );
    expect(hostKeyTries).toBe(1);
    expect(budgetTries).toBeGreaterThanOrEqual(2);
    expect(budgetTries).toBeLessThanOrEqual(4);
    expect(Date.now() - started).toBeLessThan(2_000);
    const s = await stored();
    expect(s.hostkey).toMatchObject({ status: 'failed' });
    expect(s.hostkey!.error).toMatch(/host key mismatch/);
    // The last attempt's error is the one recorded.
    expect(s.budget).toMatchObject({ status: 'failed', error: `cannot connect to 10.0.0.5:22: refused ${budgetTries}` });
  });

  it('a step past its timeout is aborted and fails saying so', async () => {
    const store = await computerWith(['slow', 'next']);
    let aborted = false;
    const result = await runSteps(
      store,
      [
        {
          id: 'slow',
          timeoutMs: 200,
          stopsOnFailure: 'the slow step timed out',
          run: async ({ signal }) => {
            await sleep(10_000, undefined, { signal }).catch(() => (aborted = true));
          },
        },
        done('next'),
      ],
      opts(),
    );
    expect(result).toBe('failed');
    expect(aborted).toBe(true);
    expect((await stored()).slow).toMatchObject({ status: 'failed', error: 'did not finish within 200 ms' });
    expect((await stored()).next).toMatchObject({ status: 'skipped', error: 'the slow step timed out' });
  });

  it('compensates a step that failed for good, before the failure is recorded, and never one that completed', async () => {
    const store = await computerWith(['ok', 'bad']);
    await runSteps(
      store,
      [
        { id: 'ok', run: async () => void log.push('ok'), compensate: async () => void log.push('undo ok') },
        {
          id: 'bad',
          retry: { transient: () => true, budgetMs: 150, delayMs: 50 },
          run: async () => {
            log.push('bad');
            throw new Error('half done');
          },
          compensate: async (err) => {
            log.push(`undo bad (${(err as Error).message}) while ${(await stored()).bad!.status}`);
          },
        },
      ],
      opts(),
    );
    expect(log.filter((l) => l.startsWith('undo'))).toEqual(['undo bad (half done) while running']);
    expect((await stored()).bad).toMatchObject({ status: 'failed', error: 'half done' });
  });

  it('compare-and-set: a step skipped by someone else while it runs stays skipped, and the runner stops there', async () => {
    const store = await computerWith(['a', 'b']);
    const result = await runSteps(
      store,
      [
        {
          id: 'a',
          run: async () => {
            // A teardown marks what is pending or running skipped, meanwhile.
            await db.prisma.provisioningStep.updateMany({
              where: { computerId, status: { in: ['pending', 'running'] } },
              data: { status: 'skipped', error: 'the computer was deleted' },
            });
          },
        },
        done('b', () => log.push('b')),
      ],
      opts(),
    );
    expect(result).toBe('lost');
    expect(log).toEqual([]);
    expect(await statuses()).toEqual({ a: 'skipped', b: 'skipped' });
    expect((await stored()).a!.error).toBe('the computer was deleted');
  });

  it('compare-and-set also between retries: a skipped step is not tried again, nor failed over its skip', async () => {
    const store = await computerWith(['a']);
    let tries = 0;
    const result = await runSteps(
      store,
      [
        {
          id: 'a',
          retry: { transient: () => true, budgetMs: 5_000, delayMs: 20, note: () => 'waiting' },
          run: async () => {
            tries++;
            await db.prisma.provisioningStep.updateMany({ where: { computerId, id: 'a' }, data: { status: 'skipped', error: 'the computer was deleted' } });
            throw new Unreachable({ ...at, reason: 'gone' });
          },
        },
      ],
      opts(),
    );
    expect(result).toBe('lost');
    expect(tries).toBe(1);
    expect((await stored()).a).toMatchObject({ status: 'skipped', error: 'the computer was deleted' });
  });

  it('a hand-off step starts inside the transaction of its move to running, is never started twice, and can skip', async () => {
    const store = await computerWith(['handoff', 'empty', 'broken']);
    const handoff: Step = {
      id: 'handoff',
      start: async (tx) => {
        log.push('start');
        await tx.computer.update({ where: { id: computerId }, data: { clonedRepoDirectories: ['/w/app'] } });
        return { handOff: { installSessionId: '00000000-0000-4000-8000-000000000001' } };
      },
    };
    const empty: Step = { id: 'empty', start: async () => ({ skip: 'nothing to do' }) };
    const broken: Step = {
      id: 'broken',
      start: async (tx) => {
        await tx.computer.update({ where: { id: computerId }, data: { clonedRepoDirectories: [] } });
        throw new Error('could not queue');
      },
    };
    await expect(runSteps(store, [handoff, empty, broken], opts())).rejects.toThrow('could not queue');
    const s = await stored();
    expect(s.handoff).toMatchObject({ status: 'running', installSessionId: '00000000-0000-4000-8000-000000000001' });
    expect(s.empty).toMatchObject({ status: 'skipped', error: 'nothing to do' });
    // The failed start rolled back with its status: still pending, and what it wrote is undone.
    expect(s.broken!.status).toBe('pending');
    expect((await db.prisma.computer.findUniqueOrThrow({ where: { id: computerId } })).clonedRepoDirectories).toEqual(['/w/app']);
    await runSteps(store, [handoff, empty], opts());
    expect(log).toEqual(['start']);
    expect(await stepEvents()).toEqual(['handoff:running', 'empty:skipped']);
  });

  it('an aborted job throws and leaves the step running; the next run resumes it', async () => {
    const store = await computerWith(['a']);
    const job = new AbortController();
    const step: Step = {
      id: 'a',
      retry: { transient: () => true, budgetMs: 60_000, delayMs: 10 },
      run: async ({ signal, resumed }) => {
        log.push(`run resumed=${resumed}`);
        if (log.length === 1) {
          job.abort();
          signal.throwIfAborted();
        }
      },
    };
    await expect(runSteps(store, [step], { ...opts(), signal: job.signal })).rejects.toThrow();
    expect((await stored()).a!.status).toBe('running');
    await runSteps(store, [step], opts());
    expect(log).toEqual(['run resumed=false', 'run resumed=true']);
    expect((await stored()).a!.status).toBe('completed');
  });

  it('NO_RETRY fails at the first error', () => {
    expect(NO_RETRY.transient(new Unreachable({ ...at, reason: 'x' }))).toBe(false);
  });
});
