import { describe, expect, it } from 'vitest';
import { planRoll, type RollInput, type RollMember } from '../../src/modules/computers/pool/roll.ts';

let seq = 0;
const member = (versionId: string | null, ready = true): RollMember => ({ id: `m${++seq}`, versionId, ready, createdAt: new Date(1_000 + seq) });
const pool = (over: Partial<RollInput> = {}): RollInput => ({
  size: 4,
  currentVersionId: 'v2',
  update: 'RollingUpdate',
  maxUnavailable: 1,
  usable: new Set(['v1', 'v2']),
  ...over,
});

/**
 * Runs convergences until the pool holds `size` ready members of the current version, as the job
 * does: each run applies its plan; between runs every member being provisioned becomes ready.
 * Answers the fewest ready members seen after any run.
 */
function roll(input: RollInput, members: RollMember[]): { fewestReady: number; runs: number; members: RollMember[] } {
  let live = [...members];
  let fewestReady = Infinity;
  for (let runs = 1; runs < 50; runs++) {
    const plan = planRoll(input, live);
    live = live.filter((m) => !plan.retire.includes(m));
    for (let n = 0; n < plan.add; n++) live.push(member(input.currentVersionId, false));
    fewestReady = Math.min(fewestReady, live.filter((m) => m.ready).length);
    if (!plan.rolling && plan.add === 0 && plan.retire.length === 0) return { fewestReady, runs, members: live };
    live = live.map((m) => ({ ...m, ready: true }));
  }
  throw new Error('the roll never ended');
}

describe('program pools roll to the current version (planRoll)', () => {
  it('RollingUpdate keeps at most maxUnavailable members missing, and ends all current', () => {
    for (const maxUnavailable of [1, 2, 3]) {
      const { fewestReady, members } = roll(pool({ maxUnavailable }), [member('v1'), member('v1'), member('v1'), member('v1')]);
      expect(fewestReady).toBe(4 - maxUnavailable);
      expect(members.map((m) => m.versionId)).toEqual(['v2', 'v2', 'v2', 'v2']);
    }
  });

  it('RollingUpdate retires no ready member while replacements are not ready, and old provisioning ones at once', () => {
    const readyOld = [member('v1'), member('v1'), member('v1')];
    const provisioningOld = member('v1', false);
    const replacing = member('v2', false);
    const plan = planRoll(pool({ maxUnavailable: 1 }), [...readyOld, provisioningOld, replacing]);
    expect(plan.retire).toEqual([provisioningOld]);
    expect(plan.add).toBe(0);
    expect(plan.rolling).toBe(true);
    // With the first replacement ready, the oldest ready old member goes next.
    const next = planRoll(pool({ maxUnavailable: 1 }), [...readyOld, { ...replacing, ready: true }]);
    expect(next.retire).toEqual([readyOld[0]]);
    expect(next.add).toBe(1);
  });

  it('Recreate retires every old member now and refills at the current version', () => {
    const old = [member('v1'), member('v1', false), member('v2')];
    const plan = planRoll(pool({ update: 'Recreate', size: 3 }), old);
    expect(plan.retire).toEqual([old[0], old[1]]);
    expect(plan.add).toBe(2);
    expect(plan.rolling).toBe(false);
  });

  it('OnReplenish keeps old members serving and only fills with the current version', () => {
    const old = [member('v1'), member('v1')];
    expect(planRoll(pool({ update: 'OnReplenish', size: 3 }), old)).toEqual({ retire: [], add: 1, rolling: false });
    expect(planRoll(pool({ update: 'OnReplenish', size: 2 }), old)).toEqual({ retire: [], add: 0, rolling: false });
  });

  it("retires a failed version's members whatever the strategy, and adds none without a current version", () => {
    for (const update of ['Recreate', 'OnReplenish', 'RollingUpdate'] as const) {
      const failed = member('v3');
      const plan = planRoll(pool({ update, size: 2, usable: new Set(['v2']) }), [failed, member('v2')]);
      expect(plan.retire).toEqual([failed]);
      expect(plan.add).toBe(1);
    }
    const waiting = planRoll(pool({ currentVersionId: null, size: 3 }), [member('v1')]);
    expect(waiting).toEqual({ retire: [], add: 0, rolling: false });
  });

  it('shrinks provisioning members first, then old ones, newest first', () => {
    const a = member('v1');
    const b = member('v2');
    const c = member('v1');
    const d = member('v2', false);
    expect(planRoll(pool({ update: 'OnReplenish', size: 2 }), [a, b, c, d]).retire).toEqual([d, c]);
  });
});
