import { z } from 'zod';
import { billableTokens } from '../modules/analytics/metrics.ts';
import type { Usage } from './model-client.ts';

/**
 * A model's price in credits per million tokens (the models file's `pricing`). Cache prices
 * default to the providers' usual ratios, the same ones the billable-tokens formula uses: cache
 * reads at a tenth of input, cache writes at the input price.
 */
export const ModelPricingSchema = z.object({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
  cacheReadPerMTok: z.number().nonnegative().optional(),
  cacheWritePerMTok: z.number().nonnegative().optional(),
});
export type ModelPricing = z.infer<typeof ModelPricingSchema>;

/**
 * Credits for `usage`. Without pricing: standard credits, one per billable token (analytics'
 * `billableTokens`), so the credit totals and the analytics token figures agree. Priced credits
 * are rounded to micro-credits so sums of many calls do not drift with float noise.
 */
export function creditsFor(usage: Omit<Usage, 'thinkingTokens'>, pricing?: ModelPricing): number {
  if (!pricing) {
    return billableTokens({ input: usage.inputTokens, output: usage.outputTokens, cacheRead: usage.cacheReadTokens, cacheWrite: usage.cacheWriteTokens });
  }
  const cacheRead = pricing.cacheReadPerMTok ?? pricing.inputPerMTok / 10;
  const cacheWrite = pricing.cacheWritePerMTok ?? pricing.inputPerMTok;
  const credits =
    (usage.inputTokens * pricing.inputPerMTok +
      usage.outputTokens * pricing.outputPerMTok +
      usage.cacheReadTokens * cacheRead +
      usage.cacheWriteTokens * cacheWrite) /
    1_000_000;
  return Math.round(credits * 1_000_000) / 1_000_000;
}
