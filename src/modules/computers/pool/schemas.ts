import { z } from 'zod';
import { MAX_WARM_POOL_SIZE } from './pools.ts';

export const WarmPoolSize = z
  .number({ error: 'warmPoolSize must be a number' })
  .int('warmPoolSize must be a whole number')
  .min(0, 'warmPoolSize must be at least 0 (0: no warm pool)')
  .max(MAX_WARM_POOL_SIZE, `warmPoolSize must be at most ${MAX_WARM_POOL_SIZE}`)
  .meta({ description: `Computers kept provisioned ahead, 0-${MAX_WARM_POOL_SIZE} (0: no warm pool)` });

const PoolSchema = z.strictObject({
  provider: z.string(),
  templateId: z.string().optional().meta({ description: "The template whose computers the pool holds; absent: the provider's plain computers" }),
  size: z.number().meta({ description: 'The size asked for (0: the pool drains)' }),
  ready: z.number().meta({ description: 'Provisioned and waiting for a create request' }),
  provisioning: z.number().meta({ description: 'Being provisioned, or being handed to a caller right now' }),
  failed: z.number().meta({ description: 'Failed provisioning; destroyed and replaced at the next convergence' }),
  versions: z
    .array(
      z.strictObject({
        versionId: z.string().nullable(),
        commit: z.string().nullable(),
        ready: z.number(),
        provisioning: z.number(),
      }),
    )
    .optional()
    .meta({ description: "A program template's pool: its members per version of the program (the current version first)" }),
});

export const PoolListResponse = z.strictObject({ pools: z.array(PoolSchema) }).meta({ id: 'WarmPoolList' });
export type PoolView = z.infer<typeof PoolSchema>;

export const ProviderPoolParams = z.object({ provider: z.string().min(1).meta({ description: 'A managed provider, e.g. local' }) });
export const ProviderPoolBody = z.strictObject({ warmPoolSize: WarmPoolSize });
export const ProviderPoolResponse = z.strictObject({ provider: z.string(), warmPoolSize: z.number() }).meta({ id: 'ProviderWarmPool' });
