import { useState } from 'preact/hooks';
import { api, must } from '../api.ts';
import { Badge, Empty, ErrorBox, Loading, OneTimeSecret, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';

type Plan = {
  changes: {
    kind: string;
    name: string;
    file: string | null;
    action: string;
    adopt: boolean;
    reverts?: boolean;
    fields: { field: string; old?: unknown; new?: unknown }[];
  }[];
};

const short = (commit: string | null | undefined) => (commit ? commit.slice(0, 12) : '—');
const shown = (v: unknown) => JSON.stringify(v ?? null);

/** A plan's changes (unchanged objects left out), as the CLI's diff prints them. */
function PlanChanges({ plan }: { plan: Plan }) {
  const changes = plan.changes.filter((c) => c.action !== 'unchanged' || c.adopt);
  if (!changes.length) return html`<p>No changes.</p>`;
  return html`<ul class="plan">
    ${changes.map(
      (c) => html`<li key=${`${c.kind}/${c.name}`}>
        <${Badge} value=${c.action} /> <strong>${c.kind}/${c.name}</strong>${c.file ? html` <span class="muted">${c.file}</span>` : null}
        ${c.adopt ? ' (adopted)' : null}${c.reverts ? ' (drift reverted)' : null}
        ${c.fields.length ? html`<ul>${c.fields.map((f) => html`<li key=${f.field}><code>${f.field}</code>: ${'old' in f ? `${shown(f.old)} → ` : ''}${shown(f.new)}</li>`)}</ul>` : null}
      </li>`,
    )}
  </ul>`;
}

/** Platform as code: the git sources the organization is reconciled from, their drift, and the revision history. */
export default function ConfigurationPage() {
  const sources = useResource(async () => (await must(api.GET('/api/v0/config/sources'))).sources, []);
  const revisions = useResource(async () => (await must(api.GET('/api/v0/config/revisions', { params: { query: { limit: '20' } } }))).revisions, []);
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState({ repository: '', branch: 'main', path: 'config', intervalSeconds: '180', prune: false, drift: 'warn' as 'warn' | 'fix' });
  const [created, setCreated] = useState<{ webhookUrl: string; webhookSecret: string }>();
  const [expanded, setExpanded] = useState<string>();
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const create = useAction(async () => {
    const source = await must(
      api.POST('/api/v0/config/sources', {
        body: {
          repository: form.repository,
          branch: form.branch,
          path: form.path,
          intervalSeconds: Number(form.intervalSeconds),
          prune: form.prune,
          drift: form.drift,
        },
      }),
    );
    setCreated({ webhookUrl: source.webhookUrl, webhookSecret: source.webhookSecret });
    setOpen(false);
    await sources.reload();
  });
  const reconcile = useAction(async (sourceId: string) => {
    await must(api.POST('/api/v0/config/sources/{sourceId}/reconcile', { params: { path: { sourceId } } }));
    await sources.reload();
  });
  const latest = revisions.data?.[0];
  return html`
    <${PageHeader} title="Configuration">
      <button type="button" class="primary" aria-expanded=${open} onClick=${() => setOpen(!open)}>${open ? 'Close' : 'New source'}</button>
    <//>
    <p>
      The organization's templates, pools, access, limits, integrations and webhooks as YAML documents in git:
      <code>agentplane config diff -f DIR</code> and <code>agentplane config apply -f DIR</code> from a pipeline, or a source reconciled on its interval
      and on each push.
    </p>
    ${
      created
        ? html`<p>Add a push webhook to the repository: URL <code>${created.webhookUrl}</code>, content type JSON, and this secret.</p>
          <${OneTimeSecret} value=${created.webhookSecret} label="Webhook secret" onDone=${() => setCreated(undefined)} />`
        : null
    }
    ${
      open
        ? html`<section class="panel" aria-labelledby="new-source">
          <h2 id="new-source">New source</h2>
          <form onSubmit=${submitted(() => create.run())}>
            <div class="grid">
              <label class="wide">Repository URL <input required value=${form.repository} onInput=${(e: Event) => setForm({ ...form, repository: value(e) })} /></label>
              <label>Branch <input required value=${form.branch} onInput=${(e: Event) => setForm({ ...form, branch: value(e) })} /></label>
              <label>Path <input value=${form.path} onInput=${(e: Event) => setForm({ ...form, path: value(e) })} /></label>
              <label>Interval (seconds) <input type="number" min="60" value=${form.intervalSeconds} onInput=${(e: Event) => setForm({ ...form, intervalSeconds: value(e) })} /></label>
              <label
                >Drift
                <select value=${form.drift} onChange=${(e: Event) => setForm({ ...form, drift: value(e) as 'warn' | 'fix' })}>
                  <option value="warn">warn: report it</option>
                  <option value="fix">fix: put declared values back</option>
                </select>
              </label>
              <label class="check"><input type="checkbox" checked=${form.prune} onChange=${() => setForm({ ...form, prune: !form.prune })} /> Prune objects no document declares</label>
            </div>
            <${ErrorBox} error=${create.error} what="Not created" />
            <button type="submit" class="primary" disabled=${create.busy}>Create source</button>
          </form>
        </section>`
        : null
    }
    <section aria-labelledby="sources-title">
      <h2 id="sources-title">Sources</h2>
      <${ErrorBox} error=${sources.error} />
      <${ErrorBox} error=${reconcile.error} what="Not reconciled" />
      ${
        sources.loading && !sources.data
          ? html`<${Loading} />`
          : sources.data && !sources.data.length
            ? html`<${Empty} title="No sources"><p>A source reconciles the organization from a directory of documents in a git repository.</p><//>`
            : sources.data
              ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Sources">
                <table>
                  <caption class="sr-only">Sources</caption>
                  <thead>
                    <tr><th scope="col">Repository</th><th scope="col">Branch and path</th><th scope="col">Applied commit</th><th scope="col">Last attempt</th><th scope="col">Drift</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
                  </thead>
                  <tbody>
                    ${sources.data.map(
                      (s) => html`<tr key=${s.id}>
                        <th scope="row">${s.repository}<br /><span class="muted">drift ${s.drift}${s.prune ? ', prune' : ''}, every ${s.intervalSeconds} s</span></th>
                        <td>${s.branch} · ${s.path || '.'}</td>
                        <td><code>${short(s.status.lastAppliedCommit)}</code></td>
                        <td>
                          ${s.status.lastResult ? html`<${Badge} value=${s.status.lastResult.ok ? 'ok' : 'failed'} /> ${dateTime(s.status.lastAttemptAt)}<br /><span>${s.status.lastResult.message}</span>` : 'not yet'}
                        </td>
                        <td>
                          ${
                            s.status.drift.length
                              ? html`<ul class="drift">${s.status.drift.map(
                                  (d) =>
                                    html`<li key=${`${d.kind}/${d.key}/${d.field}`}>${d.kind}/${d.name} <code>${d.field}</code>: declared ${shown(d.declared)}, actual ${shown(d.actual)}</li>`,
                                )}</ul>`
                              : 'none'
                          }
                        </td>
                        <td><button type="button" disabled=${reconcile.busy} onClick=${() => reconcile.run(s.id)}>Reconcile now</button></td>
                      </tr>`,
                    )}
                  </tbody>
                </table>
              </div>`
              : null
      }
    </section>
    <section aria-labelledby="latest-title">
      <h2 id="latest-title">Latest plan</h2>
      ${latest ? html`<p>Revision ${latest.number}, ${dateTime(latest.createdAt)}, from ${latest.source === 'api' ? 'the API' : latest.source}${latest.commit ? html` at <code>${short(latest.commit)}</code>` : null}</p><${PlanChanges} plan=${latest.plan} />` : html`<p>Nothing applied yet.</p>`}
    </section>
    <section aria-labelledby="revisions-title">
      <h2 id="revisions-title">Revisions</h2>
      <${ErrorBox} error=${revisions.error} />
      ${
        revisions.data?.length
          ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Revisions">
            <table>
              <caption class="sr-only">Revisions</caption>
              <thead>
                <tr><th scope="col">Revision</th><th scope="col">When</th><th scope="col">Source</th><th scope="col">Commit</th><th scope="col">Changes</th></tr>
              </thead>
              <tbody>
                ${revisions.data.map(
                  (r) => html`<tr key=${r.id}>
                    <th scope="row"><button type="button" class="link" aria-expanded=${expanded === r.id} onClick=${() => setExpanded(expanded === r.id ? undefined : r.id)}>#${r.number}</button></th>
                    <td>${dateTime(r.createdAt)}</td>
                    <td>${r.source === 'api' ? 'API' : r.source}</td>
                    <td><code>${short(r.commit)}</code></td>
                    <td>
                      ${r.plan.summary.create} created, ${r.plan.summary.update} updated, ${r.plan.summary.delete} deleted
                      ${expanded === r.id ? html`<${PlanChanges} plan=${r.plan} />` : null}
                    </td>
                  </tr>`,
                )}
              </tbody>
            </table>
          </div>`
          : revisions.loading
            ? html`<${Loading} />`
            : html`<p>No revisions yet.</p>`
      }
    </section>
  `;
}
