/** Prisma error codes, the same on both database drivers; kept at the boundary, never swallowed. */
function prismaCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/** A unique constraint refused the write (P2002). */
export function isUniqueViolation(err: unknown): boolean {
  return prismaCode(err) === 'P2002';
}
