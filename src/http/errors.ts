import { STATUS_CODES } from 'node:http';
import { z } from 'zod';

/** The /api/v0 error body (spec section 7): no other properties. */
export const ErrorBodySchema = z
  .strictObject({
    detail: z.string().meta({ description: 'Human-readable error message' }),
    status: z.number().int().meta({ description: 'HTTP status code' }),
    title: z.string().meta({ description: 'HTTP status title' }),
    metadata: z.record(z.string(), z.unknown()).optional().meta({ description: 'Additional error metadata' }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** The analytics and readiness error body. */
export const RequestErrorBodySchema = z
  .strictObject({
    title: z.string(),
    detail: z.string(),
    status: z.number().int(),
    requestId: z.string(),
  })
  .meta({ id: 'RequestError' });

export function statusTitle(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

export function errorBody(status: number, detail: string, metadata?: Record<string, unknown>): ErrorBody {
  return { detail, status, title: statusTitle(status), ...(metadata ? { metadata } : {}) };
}
