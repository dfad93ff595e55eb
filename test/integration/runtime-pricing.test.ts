import { describe, expect, it } from 'vitest';
import { AutonomyLevelSchema, runsWithoutApproval } from '../../src/agent/autonomy.ts';
import { creditsFor, ModelPricingSchema } from '../../src/agent/pricing.ts';

const usage = { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 5000, cacheWriteTokens: 200 };

describe('credits', () => {
  it('are standard credits (billable tokens) without pricing', () => {
    // input + output + cache writes + a tenth of cache reads.
    expect(creditsFor(usage)).toBe(1000 + 100 + 200 + 500);
    expect(creditsFor({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 14, cacheWriteTokens: 0 })).toBe(1);
  });

  it('follow the model pricing per million tokens, cache prices defaulting to a tenth and the full input price', () => {
    expect(creditsFor(usage, { inputPerMTok: 3, outputPerMTok: 15 })).toBe((1000 * 3 + 100 * 15 + 5000 * 0.3 + 200 * 3) / 1e6);
    expect(creditsFor(usage, { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.5, cacheWritePerMTok: 3.75 })).toBe(0.00775);
  });

  it('reject negative prices', () => {
    expect(ModelPricingSchema.safeParse({ inputPerMTok: -1, outputPerMTok: 1 }).success).toBe(false);
  });
});

describe('autonomy levels', () => {
  it('gate writes from low and shell from medium; reading always runs', () => {
    const table = AutonomyLevelSchema.options.map((level) => [
      level,
      runsWithoutApproval(level, 'read'),
      runsWithoutApproval(level, 'write'),
      runsWithoutApproval(level, 'shell'),
    ]);
    expect(table).toEqual([
      ['off', true, false, false],
      ['low', true, true, false],
      ['medium', true, true, true],
      ['high', true, true, true],
    ]);
    expect(AutonomyLevelSchema.safeParse('auto-high').success).toBe(false);
  });
});
