import { z } from 'zod';
import { BadRequest } from '../lib/errors.ts';

/** Query `limit` (arrives as a string, 1-100, default 20) and an opaque `cursor`. */
/** Query `limit`: a string holding an integer from 1 to 100, default 20. */
export const LimitParamSchema = z
  .string()
  .regex(/^[0-9]+$/, 'must be an integer from 1 to 100')
  .optional()
  .transform((v) => (v === undefined ? 20 : Number(v)))
  .pipe(z.number().int().min(1, 'must be at least 1').max(100, 'must be at most 100'));

export const PageQuerySchema = z.object({
  limit: LimitParamSchema.meta({ description: 'Maximum number of items to return (1-100)', param: { example: '20' } }),
  cursor: z.string().min(1).optional().meta({ description: 'Cursor for pagination' }),
});
export type PageQuery = z.infer<typeof PageQuerySchema>;

export const PaginationSchema = z
  .strictObject({
    hasMore: z.boolean(),
    nextCursor: z.string().nullable().meta({ description: 'null if no more pages' }),
  })
  .meta({ id: 'Pagination' });
export type Pagination = z.infer<typeof PaginationSchema>;

/**
 * Keyset position of an item in a list ordered by (createdAt desc, id desc). Cursors name the
 * last item seen rather than an offset, so a page never repeats or skips items when new ones
 * arrive between requests.
 */
export interface Position {
  createdAt: Date;
  id: string;
}

const PositionSchema = z.object({ t: z.number().int(), id: z.string().min(1) });

/** An opaque cursor: base64url JSON of whatever position a list keys its pages on. */
export function encodeOpaqueCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeOpaqueCursor<T>(cursor: string, schema: z.ZodType<T>): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const value = schema.safeParse(parsed);
  if (!value.success) {
    throw new BadRequest('The cursor is not valid; pass the nextCursor value from a previous page unchanged');
  }
  return value.data;
}

export function encodeCursor(p: Position): string {
  return encodeOpaqueCursor({ t: p.createdAt.getTime(), id: p.id });
}

export function decodeCursor(cursor: string): Position {
  const pos = decodeOpaqueCursor(cursor, PositionSchema);
  return { createdAt: new Date(pos.t), id: pos.id };
}

/** Prisma `where` and `orderBy` for the page after `cursor`, newest first; fetch `take` rows. */
export function pageQuery(page: PageQuery) {
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  return {
    where: after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {},
    orderBy: [{ createdAt: 'desc' as const }, { id: 'desc' as const }],
    take: page.limit + 1,
  };
}

/** Cuts the extra row fetched by `pageQuery` and says whether there is more. */
export function toPage<T extends Position>(rows: T[], page: PageQuery): { items: T[]; pagination: Pagination } {
  const items = rows.slice(0, page.limit);
  const hasMore = rows.length > page.limit;
  return { items, pagination: { hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1]!) : null } };
}
