import { useEffect } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Badge, Empty, ErrorBox, Loading, PageHeader } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { href } from '../router.ts';
import { useResource } from '../resource.ts';

type Template = components['schemas']['ComputerTemplate'];
type Version = components['schemas']['ComputerTemplateVersion'];
type Pool = components['schemas']['WarmPoolList']['pools'][number];

const short = (commit: string) => commit.slice(0, 12);

/** How a pool moves to a new version, in words. */
function poolUpdateText(p: Template['poolUpdate']): string {
  return p.type === 'RollingUpdate' ? `RollingUpdate (at most ${p.maxUnavailable} unavailable)` : p.type;
}

/** What the version's preview said: the objects it creates, or Pulumi's error. */
function PreviewOf({ v }: { v: Version }) {
  if (v.status === 'previewing') return html`<span>previewing…</span>`;
  if (v.error) return html`<pre class="error-text">${v.error}</pre>`;
  if (!v.preview?.length) return html`<span>creates nothing</span>`;
  return html`<ul class="plain">
    ${v.preview.map((o) => html`<li><code>${o.type}</code> ${o.name}</li>`)}
  </ul>`;
}

/** One template: its program and status, and every commit it has resolved with its preview and the computers running it. */
export function TemplateDetail({ id }: { id: string }) {
  const path = { templateId: id };
  const template = useResource(() => must(api.GET('/api/v0/computer-templates/{templateId}', { params: { path } })), [id]);
  const versions = useResource(
    async () => (await must(api.GET('/api/v0/computer-templates/{templateId}/versions', { params: { path, query: { limit: '50' } } }))).versions,
    [id],
  );
  // The template's warm pool, its members per version (none: the template keeps no pool).
  const pool = useResource(async () => (await must(api.GET('/api/v0/computers/pool'))).pools.find((p) => p.templateId === id), [id]);
  const rolling = pool.data?.versions?.some((v, i) => (i > 0 && v.ready + v.provisioning > 0) || v.provisioning > 0);
  const busy = template.data?.status === 'resolving' || template.data?.status === 'previewing' || rolling;
  // While a commit is resolved or previewed, or the pool rolls, look again every two seconds.
  useEffect(() => {
    if (!busy) return;
    const timer = setInterval(() => void Promise.all([template.reload(), versions.reload(), pool.reload()]), 2000);
    return () => clearInterval(timer);
  }, [busy]);

  const t = template.data;
  return html`
    <${PageHeader} title=${t ? `Template ${t.name}` : 'Template'}><a href=${href('templates')}>All templates</a><//>
    <${ErrorBox} error=${template.error} />
    ${
      !t
        ? html`<${Loading} />`
        : html`<section class="panel" aria-labelledby="template-fields">
            <h2 id="template-fields">Program</h2>
            ${
              t.program
                ? html`<dl class="fields">
                    <dt>Repository</dt><dd><code>${t.program.repository}</code></dd>
                    <dt>Path</dt><dd><code>${t.program.path || '/'}</code></dd>
                    <dt>Ref</dt><dd><code>${t.program.ref}</code></dd>
                    <dt>Status</dt><dd><${Badge} value=${t.status ?? 'resolving'} /> ${t.statusMessage ? html`<span data-testid="status-message">${t.statusMessage}</span>` : null}</dd>
                    <dt>Current version</dt><dd>${t.currentVersion ? html`<code>${short(t.currentVersion.commit)}</code>` : '—'}</dd>
                    <dt>Candidate</dt><dd>${t.candidateVersion ? html`<code>${short(t.candidateVersion.commit)}</code>` : '—'}</dd>
                    <dt>Pool update</dt><dd>${poolUpdateText(t.poolUpdate)}</dd>
                    <dt>Warm pool</dt><dd>${t.warmPoolSize}</dd>
                    <dt>Push webhook</dt><dd><code>${t.webhookUrl}</code></dd>
                  </dl>`
                : html`<p>This template runs the built-in program of provider <strong>${t.provider ?? 'default'}</strong>.</p>`
            }
          </section>`
    }
    ${
      t?.program
        ? html`<section class="panel" aria-labelledby="template-versions">
            <h2 id="template-versions">Versions</h2>
            <${ErrorBox} error=${versions.error} />
            ${
              versions.loading && !versions.data
                ? html`<${Loading} />`
                : versions.data && !versions.data.length
                  ? html`<${Empty} title="No version yet"><p>The program's ref is being resolved.</p><//>`
                  : versions.data
                    ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Versions">
                        <table>
                          <caption class="sr-only">Versions, newest first</caption>
                          <thead>
                            <tr>
                              <th scope="col">Commit</th><th scope="col">Status</th><th scope="col">Preview</th>
                              <th scope="col">Pool members</th><th scope="col">Owned computers</th><th scope="col">Seen</th>
                            </tr>
                          </thead>
                          <tbody>
                            ${versions.data.map(
                              (v) => html`<tr key=${v.id}>
                                <th scope="row"><code>${short(v.commit)}</code>${v.current ? html` <${Badge} value="current" />` : null}</th>
                                <td><${Badge} value=${v.status} /></td>
                                <td><${PreviewOf} v=${v} /></td>
                                <td>${v.computers.poolMembers}</td>
                                <td>${v.computers.owned}</td>
                                <td>${dateTime(v.createdAt)}</td>
                              </tr>`,
                            )}
                          </tbody>
                        </table>
                      </div>`
                    : null
            }
          </section>`
        : null
    }
    ${t?.program ? html`<${PoolByVersion} pool=${pool.data} error=${pool.error} />` : null}
  `;
}

/** The template's warm pool per version of its program (GET /computers/pool), the current version first. */
function PoolByVersion({ pool, error }: { pool?: Pool; error?: Parameters<typeof ErrorBox>[0]['error'] }) {
  return html`<section class="panel" aria-labelledby="template-pool">
    <h2 id="template-pool">Warm pool by version</h2>
    ${
      error?.status === 403
        ? html`<p class="muted">Only managers and owners see the warm pool.</p>`
        : error
          ? html`<${ErrorBox} error=${error} />`
          : !pool?.versions?.length
            ? html`<p>No warm pool members.</p>`
            : html`<p>Size ${pool.size}: ${pool.ready} ready, ${pool.provisioning} provisioning, ${pool.failed} failed.</p>
          <div class="table-wrap" tabindex="0" role="region" aria-label="Warm pool by version">
            <table>
              <caption class="sr-only">Warm pool members per version</caption>
              <thead><tr><th scope="col">Commit</th><th scope="col">Ready</th><th scope="col">Provisioning</th></tr></thead>
              <tbody>
                ${pool.versions.map(
                  (v) => html`<tr key=${v.versionId ?? 'none'}>
                    <th scope="row">${v.commit ? html`<code>${short(v.commit)}</code>` : 'no version'}</th>
                    <td>${v.ready}</td>
                    <td>${v.provisioning}</td>
                  </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  </section>`;
}
