import { useMemo, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must, type ApiProblem } from '../api.ts';
import { Chart, type Series } from '../components/chart.ts';
import { Empty, ErrorBox, Loading, PageHeader, submitted } from '../components/ui.ts';
import { isoDay, number } from '../format.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';

type UserRow = components['schemas']['AnalyticsUsers']['data'][number];

/** The API's date rules (spec 4.8): history starts on this day; data runs through yesterday (UTC). */
const EPOCH = '2026-01-14';
const yesterday = () => isoDay(new Date(Date.now() - 86_400_000));
const daysBefore = (day: string, n: number) => isoDay(new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000));
const seconds = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;
const maxOf = (a: string, b: string) => (a > b ? a : b);

/** Rows pivoted into one series per key, on the sorted days of the rows. */
function pivot<R extends { date: string }>(rows: R[], key: (r: R) => string, value: (r: R) => number): { x: number[]; series: Series[] } {
  const days = [...new Set(rows.map((r) => r.date))].sort();
  const index = new Map(days.map((d, i) => [d, i]));
  const series = new Map<string, (number | null)[]>();
  for (const r of rows) {
    const k = key(r);
    if (!series.has(k))
      series.set(
        k,
        days.map(() => 0),
      );
    series.get(k)![index.get(r.date)!] = value(r);
  }
  return { x: days.map(seconds), series: [...series].map(([label, values]) => ({ label, values })) };
}

export default function AnalyticsPage() {
  const last = yesterday();
  const [range, setRange] = useState({ start: maxOf(EPOCH, daysBefore(last, 29)), end: last });
  const [draft, setDraft] = useState(range);
  const invalid =
    !draft.start || !draft.end
      ? 'Choose both days.'
      : draft.start > draft.end
        ? 'The first day must not be after the last.'
        : draft.start < EPOCH
          ? `History starts on ${EPOCH}.`
          : draft.end > last
            ? `Data is available through yesterday (${last}, UTC).`
            : undefined;
  const q = { startDate: range.start, endDate: range.end };
  const tokens = useResource(() => must(api.GET('/api/v1/analytics/tokens', { params: { query: { ...q, group_by: 'model' } } })), [range]);
  const activity = useResource(() => must(api.GET('/api/v1/analytics/activity', { params: { query: q } })), [range]);
  const tools = useResource(() => must(api.GET('/api/v1/analytics/tools', { params: { query: q } })), [range]);
  const productivity = useResource(() => must(api.GET('/api/v1/analytics/productivity', { params: { query: q } })), [range]);

  const tokenChart = useMemo(
    () =>
      tokens.data
        ? pivot(
            tokens.data.data as { date: string; group_key: string; billable_tokens: number }[],
            (r) => r.group_key,
            (r) => r.billable_tokens,
          )
        : undefined,
    [tokens.data],
  );
  const activityRows = (activity.data?.data ?? []).filter((r): r is Extract<typeof r, { weekly_active_users: number }> => 'weekly_active_users' in r);
  const toolRows = (tools.data?.data ?? []).filter((r): r is Extract<typeof r, { by_tool: unknown }> => 'by_tool' in r);
  const topTools = useMemo(() => {
    const totals = new Map<string, number>();
    for (const r of toolRows) for (const t of r.by_tool) totals.set(t.tool, (totals.get(t.tool) ?? 0) + t.invocations);
    return [...totals].sort((a, b) => b[1] - a[1]).slice(0, 10);
  }, [tools.data]);
  const productivityRows = productivity.data?.data ?? [];
  // Nothing at all in the range: one explanation instead of four empty panels and an empty table.
  const nothing =
    [tokens, activity, tools, productivity].every((r) => r.data && !r.error) &&
    !tokenChart?.x.length &&
    !activityRows.length &&
    !toolRows.length &&
    !productivityRows.length;

  return html`
    <${PageHeader} title="Analytics" />
    <form
      class="filters"
      aria-label="Date range"
      onSubmit=${submitted(() => {
        if (!invalid) setRange(draft);
      })}
    >
      <label>First day <input type="date" min=${EPOCH} max=${last} value=${draft.start} onInput=${(e: Event) => setDraft({ ...draft, start: (e.target as HTMLInputElement).value })} /></label>
      <label>Last day <input type="date" min=${EPOCH} max=${last} value=${draft.end} onInput=${(e: Event) => setDraft({ ...draft, end: (e.target as HTMLInputElement).value })} /></label>
      <button type="submit" class="primary" disabled=${Boolean(invalid)}>Show</button>
      <span class="hint">UTC days from ${EPOCH} through yesterday; each day appears once the nightly roll-up ran.</span>
    </form>
    ${invalid ? html`<p class="error" role="alert">${invalid}</p>` : null}
    ${
      nothing
        ? html`<${Empty} title=${`No agent activity from ${range.start} to ${range.end}`}>
          <p>
            Analytics counts what members' sessions did (tokens, tools, files, commits), per UTC day, once the nightly roll-up
            (00:15 UTC) has run: today's activity appears tomorrow. Choose other days, or try the page with synthetic data:
            <code>agentplane analytics seed --org ORGANIZATION_ID --users 5 --days 30</code>.
          </p>
        <//>`
        : null
    }
    <div class="charts" hidden=${nothing}>
      <${Panel} title="Tokens by model" resource=${tokens} empty=${!tokenChart?.x.length}>
        ${tokenChart ? html`<${Chart} title="Billable tokens by model" x=${tokenChart.x} series=${tokenChart.series} />` : null}
      <//>
      <${Panel} title="Active users" resource=${activity} empty=${!activityRows.length}>
        <${Chart}
          title="Daily, weekly and monthly active users"
          x=${activityRows.map((r) => seconds(r.date))}
          series=${[
            { label: 'DAU', values: activityRows.map((r) => r.daily_active_users) },
            { label: 'WAU', values: activityRows.map((r) => r.weekly_active_users) },
            { label: 'MAU', values: activityRows.map((r) => r.monthly_active_users) },
          ]}
        />
        <${Chart}
          title="Daily active users by client"
          x=${activityRows.map((r) => seconds(r.date))}
          series=${(['terminal-ui', 'web', 'non-interactive-cli'] as const).map((c) => ({ label: c, values: activityRows.map((r) => r.daily_active_users_by_client[c]) }))}
        />
      <//>
      <${Panel} title="Tools" resource=${tools} empty=${!toolRows.length}>
        <${Chart} title="Tool calls per day" x=${toolRows.map((r) => seconds(r.date))} series=${[{ label: 'Tool calls', values: toolRows.map((r) => r.tool_calls) }]} />
        <table>
          <caption>Most used tools</caption>
          <thead><tr><th scope="col">Tool</th><th scope="col" class="num">Calls</th></tr></thead>
          <tbody>${topTools.map(([tool, n]) => html`<tr key=${tool}><th scope="row">${tool}</th><td class="num">${number(n)}</td></tr>`)}</tbody>
        </table>
      <//>
      <${Panel} title="Productivity" resource=${productivity} empty=${!productivityRows.length}>
        <${Chart}
          title="Files and git"
          x=${productivityRows.map((r) => seconds(r.date))}
          series=${[
            { label: 'Files created', values: productivityRows.map((r) => r.files_created) },
            { label: 'Files edited', values: productivityRows.map((r) => r.files_edited) },
            { label: 'Commits', values: productivityRows.map((r) => r.git_commits) },
            { label: 'Pull requests', values: productivityRows.map((r) => r.git_prs_created) },
          ]}
        />
      <//>
    </div>
    ${nothing ? null : html`<${UsersTable} key=${`${range.start}/${range.end}`} start=${range.start} end=${range.end} />`}
  `;
}

function Panel(props: { title: string; resource: { data?: unknown; error?: ApiProblem }; empty: boolean; children: unknown }) {
  return html`<section class="panel" aria-label=${props.title}>
    <h2>${props.title}</h2>
    <${ErrorBox} error=${props.resource.error} />
    ${
      !props.resource.data && !props.resource.error
        ? html`<${Loading} />`
        : props.resource.data && props.empty
          ? html`<${Empty} title="No data in this range"><p>Pick days on which members used agents; today's activity appears tomorrow.</p><//>`
          : props.resource.data
            ? props.children
            : null
    }
  </section>`;
}

const USER_COLUMNS: (keyof UserRow)[] = [
  'date',
  'user_email',
  'user_id',
  'sessions',
  'messages',
  'tool_calls',
  'billable_tokens',
  'primary_model',
  'files_created',
  'files_edited',
  'git_commits',
  'git_prs_created',
  'delegation_level',
];

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? '' : Array.isArray(v) ? v.join(' ') : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function UsersTable({ start, end }: { start: string; end: string }) {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors.at(-1);
  const page = useResource(
    () => must(api.GET('/api/v1/analytics/users', { params: { query: { startDate: start, endDate: end, limit: '20', ...(cursor ? { cursor } : {}) } } })),
    [cursor],
  );
  const download = useAction(async () => {
    const rows: UserRow[] = [];
    let next: string | undefined;
    do {
      const res = await must(
        api.GET('/api/v1/analytics/users', { params: { query: { startDate: start, endDate: end, limit: '100', ...(next ? { cursor: next } : {}) } } }),
      );
      rows.push(...res.data);
      next = res.meta.has_more ? (res.meta.next_cursor ?? undefined) : undefined;
    } while (next);
    const csv = [USER_COLUMNS.join(','), ...rows.map((r) => USER_COLUMNS.map((c) => csvCell(r[c])).join(','))].join('\n') + '\n';
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    link.download = `agentplane-users-${start}-${end}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    return rows.length;
  });
  const rows = page.data?.data ?? [];
  return html`<section class="panel" aria-labelledby="users-title">
    <div class="page-header">
      <h2 id="users-title">Per user</h2>
      ${rows.length ? html`<button type="button" disabled=${download.busy} onClick=${() => download.run()}>${download.busy ? 'Preparing CSV…' : 'Download CSV'}</button>` : null}
    </div>
    <${ErrorBox} error=${page.error ?? download.error} />
    ${download.result !== undefined ? html`<p class="notice" role="status">CSV of ${download.result} rows downloaded.</p>` : null}
    ${
      !page.data && !page.error
        ? html`<${Loading} />`
        : page.data && !rows.length
          ? html`<${Empty} title="No member was active in this range"><p>Choose other days above.</p><//>`
          : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Per-user metrics">
            <table>
              <caption class="sr-only">Per-user metrics</caption>
              <thead><tr>${USER_COLUMNS.map((c) => html`<th scope="col">${c.replace(/_/g, ' ')}</th>`)}</tr></thead>
              <tbody>
                ${rows.map((r) => html`<tr key=${`${r.user_id}/${r.date}`}>${USER_COLUMNS.map((c) => html`<td>${typeof r[c] === 'number' ? number(r[c] as number) : String(r[c] ?? '—')}</td>`)}</tr>`)}
              </tbody>
            </table>
          </div>`
    }
    <div class="row" hidden=${cursors.length < 2 && !page.data?.meta.has_more}>
      <button type="button" disabled=${cursors.length < 2} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous page</button>
      <span>Page ${cursors.length}</span>
      <button type="button" disabled=${!page.data?.meta.has_more} onClick=${() => setCursors([...cursors, page.data!.meta.next_cursor ?? undefined])}>Next page</button>
    </div>
  </section>`;
}
