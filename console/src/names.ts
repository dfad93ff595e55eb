import { api, must } from './api.ts';
import { useResource } from './resource.ts';

export type NameKind = 'people' | 'serviceAccounts' | 'computers' | 'templates';

/** Each list a page names things from, read once per page: one request per kind, never one per row. */
const LISTS: Record<NameKind, () => Promise<Array<[string, string]>>> = {
  // Managers and owners read the members; others see ids (the API refuses them the list).
  people: async () => {
    const pairs: Array<[string, string]> = [];
    let cursor: string | undefined;
    do {
      const page = await must(api.GET('/api/v0/organization/users', { params: { query: { limit: '100', ...(cursor ? { cursor } : {}) } } }));
      // Computers and service accounts name people by agentplane's id; the list's own id may be the identity provider's.
      for (const u of page.users) pairs.push([u.userId, [u.firstName, u.lastName].filter(Boolean).join(' ') || u.email]);
      cursor = page.pagination.hasMore ? (page.pagination.nextCursor ?? undefined) : undefined;
    } while (cursor);
    return pairs;
  },
  serviceAccounts: async () => (await must(api.GET('/api/v0/service-accounts'))).serviceAccounts.map((a) => [a.id, a.name]),
  computers: async () =>
    (await must(api.GET('/api/v0/computers', { params: { query: { includeUnlisted: 'true', includeDeleted: 'true' } } }))).computers.map((c) => [c.id, c.name]),
  templates: async () => (await must(api.GET('/api/v0/computer-templates'))).templates.map((t) => [t.id, t.name]),
};

export interface Names {
  /** The name of the thing with `id`, or the id itself while the list loads or when the caller may not read it. */
  of(kind: NameKind, id: string): string;
}

/** Names for the ids a page shows: the lists of `kinds`, each read once when the page opens. */
export function useNames(kinds: NameKind[]): Names {
  const lists = useResource(async () => {
    const settled = await Promise.all(kinds.map((k) => LISTS[k]().catch(() => [] as Array<[string, string]>)));
    return Object.fromEntries(kinds.map((k, i) => [k, new Map(settled[i])])) as Partial<Record<NameKind, Map<string, string>>>;
  }, [kinds.join()]);
  return { of: (kind, id) => lists.data?.[kind]?.get(id) ?? id };
}
