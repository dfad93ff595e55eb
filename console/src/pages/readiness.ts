import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must, type ApiProblem } from '../api.ts';
import { Empty, ErrorBox, Loading, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { CRITERION_LEVELS, LEVEL_NAMES, maturityLevel } from '../readiness-levels.ts';
import { href } from '../router.ts';
import type { PageProps } from '../sections.ts';

type Report = components['schemas']['ReadinessReport'];

function useReports(repoId: string | undefined) {
  const [state, setState] = useState<{ reports: Report[]; more: boolean }>();
  const [error, setError] = useState<ApiProblem>();
  const load = async (startAfter?: string) => {
    try {
      const limit = 25;
      const res = await must(
        api.GET('/api/organization/agent-readiness-reports', {
          params: { query: { limit: String(limit), ...(repoId ? { repoId } : {}), ...(startAfter ? { startAfter } : {}) } },
        }),
      );
      setState((s) => ({ reports: [...(startAfter ? (s?.reports ?? []) : []), ...res.reports], more: res.reports.length === limit }));
      setError(undefined);
    } catch (e) {
      setError(e as ApiProblem);
    }
  };
  // A new filter keeps the rows on screen until its answer replaces them (no flash of "Loading").
  useEffect(() => {
    void load();
  }, [repoId]);
  return { state, error, more: () => load(state?.reports.at(-1)?.reportId) };
}

const levelLabel = (r: Report) => {
  const level = maturityLevel(r.report);
  return `Level ${level} · ${LEVEL_NAMES[level]}`;
};

/** Readiness reports per repository: the level, the criteria table, and the repository's history. */
export default function ReadinessPage({ route }: PageProps) {
  const repo = route.query.get('repo') ?? undefined;
  const { state, error, more } = useReports(repo);
  const [filter, setFilter] = useState(repo ?? '');
  const selected = route.path[1] ? state?.reports.find((r) => r.reportId === route.path[1]) : undefined;
  return html`
    <${PageHeader} title="Readiness" />
    <form
      class="filters"
      role="search"
      aria-label="Filter reports by repository"
      onSubmit=${submitted(() => {
        location.hash = filter ? `${href('readiness')}?repo=${encodeURIComponent(filter)}` : href('readiness');
      })}
    >
      <label>Repository URL <input type="url" value=${filter} placeholder="https://github.com/acme/app" onInput=${(e: Event) => setFilter((e.target as HTMLInputElement).value)} /></label>
      <button type="submit">Show its history</button>
      ${repo ? html`<a href=${href('readiness')}>All repositories</a>` : null}
    </form>
    <${ErrorBox} error=${error} />
    ${selected ? html`<${ReportView} report=${selected} />` : null}
    ${
      !state && !error
        ? html`<${Loading} />`
        : state && !state.reports.length
          ? html`<${Empty} title="No readiness reports yet"><p>Evaluate a repository with <code>POST /api/organization/agent-readiness-reports/evaluate</code>, or let an agent client upload its report.</p><//>`
          : state
            ? html`<section aria-labelledby="history-title">
              <h2 id="history-title">${repo ? `History of ${repo}` : 'Latest reports'}</h2>
              <div class="table-wrap" tabindex="0" role="region" aria-label="Readiness reports">
                <table>
                  <caption class="sr-only">Readiness reports</caption>
                  <thead><tr><th scope="col">Repository</th><th scope="col">Level</th><th scope="col">Passing criteria</th><th scope="col">Branch / commit</th><th scope="col">Created</th></tr></thead>
                  <tbody>
                    ${state.reports.map((r) => {
                      const entries = Object.values(r.report);
                      const passed = entries.filter((c) => c.numerator >= c.denominator).length;
                      return html`<tr key=${r.reportId} aria-current=${selected?.reportId === r.reportId ? 'true' : undefined}>
                        <th scope="row"><a href=${`${href('readiness', r.reportId)}?repo=${encodeURIComponent(r.repoUrl)}`}>${r.repoUrl}</a></th>
                        <td>${levelLabel(r)}</td>
                        <td>${passed} / ${entries.length}</td>
                        <td>${r.branch ?? '—'} ${r.commitHash ? html`<code>${r.commitHash.slice(0, 10)}</code>` : null}</td>
                        <td>${dateTime(r.createdAt)}</td>
                      </tr>`;
                    })}
                  </tbody>
                </table>
              </div>
              ${state.more ? html`<button type="button" onClick=${more}>Load older reports</button>` : null}
            </section>`
            : null
    }
  `;
}

function ReportView({ report }: { report: Report }) {
  const criteria = Object.entries(report.report).sort(([a], [b]) => (CRITERION_LEVELS[a] ?? 9) - (CRITERION_LEVELS[b] ?? 9) || a.localeCompare(b));
  return html`<section class="panel" aria-labelledby="report-title">
    <h2 id="report-title">${report.repoUrl} — ${levelLabel(report)}</h2>
    <dl class="fields compact">
      <dt>Created</dt><dd>${dateTime(report.createdAt)}</dd>
      <dt>Branch</dt><dd>${report.branch ?? '—'} ${report.commitHash ? html`<code>${report.commitHash}</code>` : null}</dd>
      <dt>Working tree</dt><dd>${report.hasLocalChanges ? 'uncommitted changes' : 'clean'}${report.hasNonRemoteCommits ? ', unpushed commits' : ''}</dd>
      <dt>Model</dt><dd>${report.modelUsed ? `${report.modelUsed.id} (${report.modelUsed.reasoningEffort})` : '—'}</dd>
      <dt>Applications</dt><dd>${Object.entries(report.apps).map(([p, a]) => html`<div><code>${p}</code> ${a.description}</div>`)}</dd>
    </dl>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Criteria">
      <table>
        <caption>Criteria</caption>
        <thead><tr><th scope="col">Criterion</th><th scope="col">Level</th><th scope="col">Score</th><th scope="col">Rationale</th></tr></thead>
        <tbody>
          ${criteria.map(
            ([id, c]) => html`<tr key=${id}>
              <th scope="row">${id.replace(/_/g, ' ')}</th>
              <td>${CRITERION_LEVELS[id] ?? '—'}</td>
              <td><span class=${c.numerator >= c.denominator ? 'badge badge-completed' : 'badge badge-failed'}>${c.numerator} / ${c.denominator}</span></td>
              <td>${c.rationale}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}
