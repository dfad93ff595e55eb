import { z } from 'zod';

export const HealthSchema = z.strictObject({ status: z.literal('ok') }).meta({ id: 'Health' });

export const ReadinessSchema = z
  .strictObject({
    status: z.enum(['ready', 'not_ready']),
    checks: z.strictObject({
      database: z.boolean().meta({ description: 'the database answers' }),
      migrations: z.boolean().meta({ description: 'every migration is applied' }),
    }),
  })
  .meta({ id: 'Readiness' });

/** The OpenAPI document is produced by the generator; its shape is not re-declared here. */
export const OpenApiDocumentSchema = z.record(z.string(), z.unknown()).meta({ id: 'OpenApiDocument' });
