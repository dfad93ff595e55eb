import { ForgeError } from './types.ts';

/** How one forge is called: its API root, the headers every call carries, and the fetch to use (the egress guard's). */
export interface ForgeTransport {
  apiUrl: string;
  headers: Record<string, string>;
  fetch: typeof globalThis.fetch;
}

export interface ForgeResponse<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** Both GitHub and Gitea put the reason in `message`; Gitea sometimes adds `errors`. */
function reasonOf(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; errors?: unknown };
    const extra = Array.isArray(body.errors) && body.errors.length ? `: ${JSON.stringify(body.errors)}` : '';
    if (typeof body.message === 'string') return `${body.message}${extra}`;
  } catch {
    // not JSON: the text itself is the reason
  }
  return text.trim().slice(0, 300);
}

/**
 * One API call. `allow` lists statuses the caller handles itself (e.g. 404 for "no such file");
 * any other non-2xx throws ForgeError with the forge's own reason.
 */
export async function forgeRequest<T>(
  t: ForgeTransport,
  method: string,
  pathOrUrl: string,
  opts: { body?: unknown; allow?: number[]; what?: string } = {},
): Promise<ForgeResponse<T>> {
  const url = pathOrUrl.startsWith('http') ? pathOrUrl : `${t.apiUrl}${pathOrUrl}`;
  const res = await t.fetch(url, {
    method,
    headers: { ...t.headers, ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    redirect: 'follow',
  });
  const text = await res.text();
  if (!res.ok && !opts.allow?.includes(res.status)) {
    throw new ForgeError(res.status, reasonOf(text), opts.what ?? `${method} ${new URL(url).pathname}`);
  }
  let body: unknown = null;
  if (text && res.ok) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: res.status, body: body as T, headers: res.headers };
}

/** The `rel="next"` target of an RFC 8288 Link header (GitHub and Gitea both page this way). */
function nextLink(link: string | null): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
    if (m && m[2]!.split(/\s+/).includes('next')) return m[1];
  }
  return undefined;
}

/**
 * Every item of a paged list: follows Link rel="next" to the end. `pick` takes the items out of
 * a page whose body is not the array itself. A cap stops a forge that pages forever.
 */
export async function forgeList<T>(
  t: ForgeTransport,
  path: string,
  opts: { pick?: (body: unknown) => T[]; maxPages?: number; what?: string } = {},
): Promise<T[]> {
  const items: T[] = [];
  let url: string | undefined = path;
  for (let page = 0; url && page < (opts.maxPages ?? 100); page++) {
    const res: ForgeResponse<unknown> = await forgeRequest<unknown>(t, 'GET', url, { what: opts.what });
    items.push(...(opts.pick ? opts.pick(res.body) : (res.body as T[])));
    url = nextLink(res.headers.get('link'));
  }
  return items;
}

export const encodePath = (p: string) => p.split('/').map(encodeURIComponent).join('/');
