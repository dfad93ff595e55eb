import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, ApiProblem, authorizedFetch, must } from '../api.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, FormToggle, Loading, Notice, PageHeader, submitted } from '../components/ui.ts';
import { dateTime, duration, number } from '../format.ts';
import { html } from '../html.ts';
import { href, navigate } from '../router.ts';
import { useAction, useResource } from '../resource.ts';
import type { PageProps } from '../sections.ts';

type Run = components['schemas']['WikiRun'];
type RunDetail = components['schemas']['WikiRunDetail'];
type TreeItem = components['schemas']['WikiPageTreeItem'];
type Privacy = Run['privacy'];

const PRIVACY: { value: Privacy; label: string }[] = [
  { value: 'organization', label: 'Organization: every member' },
  { value: 'private', label: 'Private: me, managers and owners' },
  { value: 'public', label: 'Public: also anyone with its link' },
];
/** How often a run in progress is read again (the wiki has no event stream). */
const POLL_MS = 1500;
const inProgress = (r: Pick<Run, 'status'>) => r.status === 'queued' || r.status === 'running';

/** Wiki runs: the latest per repository, one repository's history, a run's tree and pages, search, export. */
export default function WikiPage({ route }: PageProps) {
  const runId = route.path[1];
  if (runId) return html`<${RunView} key=${runId} runId=${runId} pageId=${route.path[2]} query=${route.query.get('q') ?? ''} />`;
  return html`<${RunList} repo=${route.query.get('repo') ?? ''} />`;
}

/** Re-reads `reload` every POLL_MS while `active`: the page follows a run until it settles. */
function usePolling(active: boolean, reload: () => Promise<void>) {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => void reload(), POLL_MS);
    return () => clearInterval(timer);
  }, [active]);
}

function RunStatus({ run }: { run: Run }) {
  const [, tick] = useState(0);
  useEffect(() => {
    if (!inProgress(run)) return;
    const timer = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [run.status]);
  if (run.status === 'queued')
    return html`<span class="progress-row"><${Badge} value="queued" /><progress aria-label="Waiting for a worker"></progress></span>`;
  if (run.status === 'running')
    return html`<span class="progress-row"><${Badge} value="running" /><progress aria-label="Generating pages"></progress><span>${duration(run.startedAt ?? run.createdAt)}</span></span>`;
  return html`<${Badge} value=${run.status} />`;
}

function RunList({ repo }: { repo: string }) {
  const runs = useResource(async () => {
    if (repo) return (await must(api.GET('/api/v0/wiki/history/{repoUrl}', { params: { path: { repoUrl: repo }, query: { limit: '50' } } }))).wikiRuns;
    return (await must(api.GET('/api/v0/wiki', { params: { query: { limit: '100' } } }))).wikiRuns;
  }, [repo]);
  const [creating, setCreating] = useState(false);
  const busy = (runs.data ?? []).some(inProgress);
  usePolling(busy, runs.reload);
  const remove = useAction(async (id: string) => {
    await must(api.DELETE('/api/v0/wiki/{wikiRunId}', { params: { path: { wikiRunId: id } } }));
    await runs.reload();
    return 'The wiki run was deleted.';
  });
  return html`
    <${PageHeader} title=${repo ? 'Wiki history' : 'Wiki'}>
      <${FormToggle} open=${creating} set=${setCreating} label="New wiki run" />
    <//>
    ${creating ? html`<${CreateRun} initialRepo=${repo} />` : null}
    ${repo ? html`<p>Every run of <code>${repo}</code> · <a href=${href('wiki')}>latest run of every repository</a></p>` : null}
    <${ErrorBox} error=${runs.error} />
    <${ErrorBox} error=${remove.error} what="Not deleted" />
    <${Notice} text=${remove.result} />
    ${busy ? html`<p class="live" role="status">A run is in progress: refreshing every ${POLL_MS / 1000} s</p>` : null}
    ${
      runs.loading && !runs.data
        ? html`<${Loading} />`
        : runs.data && !runs.data.length
          ? html`<${Empty} title="No wiki runs yet">
            <p>Start one with “New wiki run”: give the URL of a repository the control plane can clone (and a branch, or its default), and agentplane writes its wiki. Agent clients can also upload a wiki they generated.</p>
          <//>`
          : runs.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Wiki runs">
              <table>
                <caption class="sr-only">Wiki runs</caption>
                <thead>
                  <tr>
                    <th scope="col">Repository</th><th scope="col">Status</th><th scope="col" class="num">Pages</th><th scope="col">Branch / commit</th>
                    <th scope="col">Privacy</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${runs.data.map(
                    (r) => html`<tr key=${r.wikiRunId}>
                      <th scope="row"><a href=${href('wiki', r.wikiRunId)}>${r.repoUrl}</a></th>
                      <td><${RunStatus} run=${r} />${r.error ? html`<div class="step-error">${r.error}</div>` : null}</td>
                      <td class="num">${r.pageCount ? number(r.pageCount) : '—'}</td>
                      <td>${r.branch ?? 'default'} ${r.commitHash ? html`<code>${r.commitHash.slice(0, 10)}</code>` : null}</td>
                      <td>${r.privacy}</td>
                      <td>${dateTime(r.createdAt)}</td>
                      <td>
                        <div class="row">
                          ${repo ? null : html`<a href=${`${href('wiki')}?repo=${encodeURIComponent(r.repoUrl)}`} aria-label=${`History of ${r.repoUrl}`}>History</a>`}
                          <${ConfirmButton}
                            label="Delete"
                            danger
                            question=${`Delete the wiki run of ${r.repoUrl} from ${dateTime(r.createdAt)}, its pages and its search index?`}
                            onConfirm=${() => remove.run(r.wikiRunId)}
                          />
                        </div>
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
  `;
}

function CreateRun({ initialRepo }: { initialRepo: string }) {
  const [form, setForm] = useState({ repoUrl: initialRepo, branch: '', privacy: 'organization' as Privacy });
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const create = useAction(async () => {
    const run = await must(
      api.POST('/api/v0/wiki', {
        body: { repoUrl: form.repoUrl.trim(), privacy: form.privacy, ...(form.branch.trim() ? { branch: form.branch.trim() } : {}) },
      }),
    );
    navigate(href('wiki', run.wikiRunId));
  });
  return html`<section class="panel" aria-labelledby="new-wiki-run">
    <h2 id="new-wiki-run">New wiki run</h2>
    <form
      onSubmit=${submitted(() => create.run())}
    >
      <div class="grid">
        <label class="wide"
          >Repository URL
          <input required inputmode="url" autocomplete="off" placeholder="https://github.com/acme/app" value=${form.repoUrl} onInput=${(e: Event) => setForm({ ...form, repoUrl: value(e) })} />
        </label>
        <label>Branch <input placeholder="the default branch" value=${form.branch} onInput=${(e: Event) => setForm({ ...form, branch: value(e) })} /></label>
        <label
          >Privacy
          <select value=${form.privacy} onChange=${(e: Event) => setForm({ ...form, privacy: value(e) as Privacy })}>
            ${PRIVACY.map((p) => html`<option value=${p.value}>${p.label}</option>`)}
          </select>
        </label>
      </div>
      <p class="hint">The control plane clones the repository and writes a page per area of it; a run takes from seconds to minutes.</p>
      <${ErrorBox} error=${create.error} what="Not started" />
      <button type="submit" class="primary" disabled=${create.busy}>${create.busy ? 'Starting…' : 'Start the run'}</button>
    </form>
  </section>`;
}

/** Where a page lives in the run's export, as the API's relative `.md` links are written from. */
function exportFile(page: TreeItem, tree: TreeItem[]): string {
  return tree.some((p) => p.parentId === page.pageId) ? `${page.path}/index.md` : `${page.path}.md`;
}

/** The console address of a page's relative Markdown link, if it names a page of the run. */
function resolveWikiLink(runId: string, from: TreeItem, tree: TreeItem[], link: string): string | undefined {
  const target = link.split('#')[0] ?? '';
  if (!target.endsWith('.md')) return undefined;
  const parts = exportFile(from, tree).split('/').slice(0, -1);
  for (const seg of target.split('/')) {
    if (seg === '..') parts.pop();
    else if (seg !== '.' && seg) parts.push(seg);
  }
  const path = parts
    .join('/')
    .replace(/(^|\/)index\.md$/, '')
    .replace(/\.md$/, '');
  if (!path) return href('wiki', runId);
  const page = tree.find((p) => p.path === path);
  return page ? href('wiki', runId, page.pageId) : undefined;
}

function RunView({ runId, pageId, query }: { runId: string; pageId?: string; query: string }) {
  const run = useResource(() => must(api.GET('/api/v0/wiki/{wikiRunId}', { params: { path: { wikiRunId: runId } } })), [runId]);
  usePolling(Boolean(run.data && inProgress(run.data)), run.reload);
  const remove = useAction(async () => {
    await must(api.DELETE('/api/v0/wiki/{wikiRunId}', { params: { path: { wikiRunId: runId } } }));
    navigate(href('wiki'));
  });
  const privacy = useAction(async (value: Privacy) => {
    const updated = await must(api.POST('/api/v0/wiki/{wikiRunId}/privacy', { params: { path: { wikiRunId: runId } }, body: { privacy: value } }));
    run.set((r) => (r ? { ...r, ...updated } : r));
    return `Privacy set to ${value}.`;
  });
  const exporting = useAction(() => downloadExport(runId));
  const r = run.data;
  if (!r) return html`<${PageHeader} title="Wiki run" />${run.error ? html`<${ErrorBox} error=${run.error} />` : html`<${Loading} />`}`;
  const current = pageId ? r.pages.find((p) => p.pageId === pageId) : r.pages[0];
  return html`
    <${PageHeader} title=${r.repoUrl}>
      <${ConfirmButton} label="Delete" danger question=${`Delete this wiki run of ${r.repoUrl}, its pages and its search index?`} onConfirm=${() => remove.run()} />
    <//>
    <p><a href=${href('wiki')}>All wiki runs</a> · <a href=${`${href('wiki')}?repo=${encodeURIComponent(r.repoUrl)}`}>History of this repository</a></p>
    <${ErrorBox} error=${run.error} />
    <${ErrorBox} error=${remove.error} what="Not deleted" />
    <dl class="fields compact">
      <dt>Status</dt><dd><${RunStatus} run=${r} /></dd>
      <dt>Branch / commit</dt><dd>${r.branch ?? 'default'} ${r.commitHash ? html`<code>${r.commitHash}</code>` : null}</dd>
      <dt>Pages</dt><dd>${r.pageCount ? `${number(r.pageCount)} (${number(r.pagesGenerated)} written, ${number(r.pagesReused)} reused)` : '—'}</dd>
      <dt>Created</dt><dd>${dateTime(r.createdAt)}${r.completedAt ? ` · took ${duration(r.startedAt ?? r.createdAt, r.completedAt)}` : ''}</dd>
      ${r.model ? html`<dt>Model</dt><dd>${r.model}</dd>` : null}
      ${r.publicUrl ? html`<dt>Public link</dt><dd><code>${location.origin}${r.publicUrl}</code></dd>` : null}
    </dl>
    ${r.status === 'failed' ? html`<div class="error" role="alert"><strong>The run failed</strong><p>${r.error}</p></div>` : null}
    ${inProgress(r) ? html`<p class="live" role="status">The run is ${r.status}: this page refreshes every ${POLL_MS / 1000} s until its pages are written.</p>` : null}
    <div class="row toolbar">
      <label class="inline"
        >Privacy
        <select value=${r.privacy} disabled=${privacy.busy} onChange=${(e: Event) => void privacy.run((e.target as HTMLSelectElement).value as Privacy)}>
          ${PRIVACY.map((p) => html`<option value=${p.value}>${p.label}</option>`)}
        </select>
      </label>
      <button type="button" disabled=${r.status !== 'succeeded' || exporting.busy} onClick=${() => exporting.run()}>
        ${exporting.busy ? 'Preparing the zip…' : 'Export (zip)'}
      </button>
    </div>
    <${ErrorBox} error=${privacy.error} what="Privacy not changed" />
    <${ErrorBox} error=${exporting.error} what="Not exported" />
    <${Notice} text=${privacy.result ?? exporting.result} />
    ${r.status === 'succeeded' ? html`<${Search} runId=${runId} query=${query} />` : null}
    ${
      r.pages.length
        ? html`<div class="wiki">
          <nav class="wiki-tree" aria-label="Pages of the wiki"><${Tree} run=${r} current=${current?.pageId} /></nav>
          ${current ? html`<${PageView} key=${current.pageId} run=${r} item=${current} />` : null}
        </div>`
        : r.status === 'succeeded'
          ? html`<${Empty} title="This run has no pages" />`
          : null
    }
  `;
}

function Tree({ run, current }: { run: RunDetail; current?: string }) {
  const children = (parent: string | null) => run.pages.filter((p) => p.parentId === parent);
  const list = (parent: string | null): unknown => {
    const items = children(parent);
    return items.length
      ? html`<ul>
          ${items.map(
            (p) => html`<li key=${p.pageId}>
              <a href=${href('wiki', run.wikiRunId, p.pageId)} aria-current=${p.pageId === current ? 'page' : undefined}>${p.title}</a>
              ${list(p.pageId)}
            </li>`,
          )}
        </ul>`
      : null;
  };
  return list(null);
}

function useDarkTheme(): boolean {
  const read = () => document.documentElement.dataset.theme === 'dark';
  const [dark, setDark] = useState(read);
  useEffect(() => {
    const observer = new MutationObserver(() => setDark(read()));
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => observer.disconnect();
  }, []);
  return dark;
}

function PageView({ run, item }: { run: RunDetail; item: TreeItem }) {
  const page = useResource(
    () => must(api.GET('/api/v0/wiki/{wikiRunId}/pages/{pageId}', { params: { path: { wikiRunId: run.wikiRunId, pageId: item.pageId } } })),
    [run.wikiRunId, item.pageId],
  );
  const body = useRef<HTMLDivElement>(null);
  const dark = useDarkTheme();
  const [rendering, setRendering] = useState<'rendering' | 'done' | Error>('rendering');
  useEffect(() => {
    if (!page.data || !body.current) return;
    let cancelled = false;
    setRendering('rendering');
    const markdown = page.data.markdown;
    import('../markdown.ts')
      .then((m) => m.renderMarkdown(body.current!, markdown, { dark, resolveLink: (link) => resolveWikiLink(run.wikiRunId, item, run.pages, link) }))
      .then(() => !cancelled && setRendering('done'))
      .catch((e: Error) => !cancelled && setRendering(e));
    return () => {
      cancelled = true;
    };
  }, [page.data, dark]);
  const p = page.data;
  return html`<article class="wiki-page" aria-labelledby="wiki-page-title" aria-busy=${rendering === 'rendering'}>
    <h2 id="wiki-page-title" class=${p?.markdown.trimStart().startsWith('# ') ? 'sr-only' : ''}>${item.title}</h2>
    <${ErrorBox} error=${page.error} />
    ${!p && !page.error ? html`<${Loading} label="Loading the page…" />` : null}
    ${p?.degraded ? html`<p class="hint">Written from the repository survey only: ${p.degraded}</p>` : null}
    ${rendering instanceof Error ? html`<p class="error">The page could not be rendered: ${rendering.message}</p>` : null}
    <div class="markdown" ref=${body} data-testid="wiki-markdown"></div>
    ${
      p && p.sources.length
        ? html`<details class="sources">
          <summary>Sources (${p.sources.length})</summary>
          <ul>
            ${p.sources.map((s) => html`<li><code>${s.path}</code>${s.lines.length ? ` lines ${s.lines.map(([a, b]) => `${a}–${b}`).join(', ')}` : ''}</li>`)}
          </ul>
        </details>`
        : null
    }
    ${
      p && p.linksIn.length
        ? html`<p class="hint">Linked from: ${p.linksIn.map((l, i) => html`${i ? ', ' : ''}<a href=${href('wiki', run.wikiRunId, l.pageId)}>${l.title}</a>`)}</p>`
        : null
    }
  </article>`;
}

/**
 * A search snippet of the API (the page's text escaped, matches in `<mark>`) as text and marked
 * text only: parsed in an inert document and rendered as text nodes, never put into the page as HTML.
 */
export function snippetParts(snippet: string): { text: string; mark: boolean }[] {
  const doc = new DOMParser().parseFromString(`<!doctype html><body>${snippet}</body>`, 'text/html');
  return [...doc.body.childNodes].map((n) => ({ text: n.textContent ?? '', mark: n.nodeName === 'MARK' }));
}

function Search({ runId, query }: { runId: string; query: string }) {
  const [text, setText] = useState(query);
  const results = useResource(
    async () =>
      query
        ? (await must(api.GET('/api/v0/wiki/{wikiRunId}/search', { params: { path: { wikiRunId: runId }, query: { q: query, limit: '20' } } }))).results
        : undefined,
    [runId, query],
  );
  return html`<section aria-labelledby="wiki-search-title">
    <h2 id="wiki-search-title" class="sr-only">Search</h2>
    <form
      class="filters"
      role="search"
      aria-label="Search this wiki"
      onSubmit=${submitted(() => {
        navigate(text.trim() ? `${href('wiki', runId)}?q=${encodeURIComponent(text.trim())}` : href('wiki', runId));
      })}
    >
      <label>Search this wiki <input type="search" value=${text} placeholder="a word, an identifier, a phrase" onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} /></label>
      <button type="submit">Search</button>
      ${query ? html`<a href=${href('wiki', runId)}>Clear</a>` : null}
    </form>
    <${ErrorBox} error=${results.error} what="Search failed" />
    ${query && results.loading && !results.data ? html`<${Loading} label="Searching…" />` : null}
    ${
      query && results.data
        ? results.data.length
          ? html`<ol class="search-results" aria-label=${`Results for “${query}”`}>
            ${results.data.map(
              (hit) => html`<li key=${hit.pageId}>
                <a href=${`${href('wiki', runId, hit.pageId)}?q=${encodeURIComponent(query)}`}>${hit.title}</a>
                ${hit.definesSymbol ? html` <span class="badge">defines it</span>` : null}
                <span class="muted"> · ${hit.path}</span>
                <p class="snippet" data-testid="search-snippet">${snippetParts(hit.snippet).map((part) => (part.mark ? html`<mark>${part.text}</mark>` : part.text))}</p>
              </li>`,
            )}
          </ol>`
          : html`<${Empty} title=${`Nothing matches “${query}”`}><p>Try fewer words, an identifier as it is written in the code, or a prefix with <code>*</code>.</p><//>`
        : null
    }
  </section>`;
}

/**
 * Downloads the run's zip: fetched with the credential (never in a URL), handed to the browser
 * as a file.
 */
async function downloadExport(runId: string): Promise<string> {
  let response: Response;
  try {
    response = await authorizedFetch(`/api/v0/wiki/${encodeURIComponent(runId)}/export`);
  } catch (e) {
    throw new ApiProblem(0, 'Network error', `The control plane could not be reached: ${(e as Error).message}`);
  }
  // An error answer goes through `must`, as every call's does (a 401 signs the tab out).
  if (!response.ok) await must(Promise.resolve({ response, error: await response.json().catch(() => undefined) }));
  const blob = await response.blob();
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? `wiki-${runId}.zip`;
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  return `Downloaded ${name}.`;
}
