import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, PageQuerySchema, pageQuery, toPage } from '../../src/http/pagination.ts';

describe('pagination', () => {
  it('parses limit from the query string with the spec bounds and default', () => {
    expect(PageQuerySchema.parse({}).limit).toBe(20);
    expect(PageQuerySchema.parse({ limit: '1' }).limit).toBe(1);
    expect(PageQuerySchema.parse({ limit: '100' }).limit).toBe(100);
    for (const limit of ['0', '101', '-1', '2.5', 'ten', '']) {
      expect(PageQuerySchema.safeParse({ limit }).success, limit).toBe(false);
    }
  });

  it('round-trips cursors and rejects forged ones with a clear 400', () => {
    const pos = { createdAt: new Date(1_700_000_000_123), id: 'x_1' };
    expect(decodeCursor(encodeCursor(pos))).toEqual(pos);
    for (const bad of ['garbage', Buffer.from('{"t":"x"}').toString('base64url')]) {
      expect(() => decodeCursor(bad)).toThrowError(/cursor is not valid/);
    }
  });

  it('pages newest first without repeats or gaps while items are inserted between pages', () => {
    let rows = Array.from({ length: 7 }, (_, i) => ({ createdAt: new Date(1000 + Math.floor(i / 2)), id: `id_${i}` }));
    const list = (q: ReturnType<typeof pageQuery>) => {
      const sorted = [...rows].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
      const or = (q.where as { OR?: [{ createdAt: { lt: Date } }, { createdAt: Date; id: { lt: string } }] }).OR;
      const after = or
        ? sorted.filter((r) => r.createdAt < or[0].createdAt.lt || (r.createdAt.getTime() === or[1].createdAt.getTime() && r.id < or[1].id.lt))
        : sorted;
      return after.slice(0, q.take);
    };
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = { limit: 3, cursor };
      const { items, pagination } = toPage(list(pageQuery(page)), page);
      seen.push(...items.map((r) => r.id));
      rows = [...rows, { createdAt: new Date(5000 + i), id: `new_${i}` }]; // newer items arrive meanwhile
      if (!pagination.hasMore) {
        expect(pagination.nextCursor).toBeNull();
        break;
      }
      cursor = pagination.nextCursor!;
    }
    expect(seen).toEqual(['id_6', 'id_5', 'id_4', 'id_3', 'id_2', 'id_1', 'id_0']);
  });
});
