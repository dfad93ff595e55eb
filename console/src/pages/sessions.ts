import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must, type ApiProblem } from '../api.ts';
import { Badge, Empty, ErrorBox, FormToggle, Loading, PageHeader, submitted } from '../components/ui.ts';
import { dateTime, number } from '../format.ts';
import { html } from '../html.ts';
import { useNames } from '../names.ts';
import { href, navigate } from '../router.ts';
import { useAction, useResource } from '../resource.ts';
import type { PageProps } from '../sections.ts';
import { AUTONOMY_CHOICES, SessionDetail } from './session-detail.ts';

type Session = components['schemas']['Session'];
type Autonomy = NonNullable<components['schemas']['SessionSettingsInput']['autonomyLevel']>;

export default function SessionsPage({ route }: PageProps) {
  if (route.path[1]) return html`<${SessionDetail} id=${route.path[1]} />`;
  return html`<${SessionList} computerId=${route.query.get('computerId') ?? ''} />`;
}

function SessionList({ computerId }: { computerId: string }) {
  const [pages, setPages] = useState<{ sessions: Session[]; next: string | null }>();
  const [error, setError] = useState<ApiProblem>();
  const [creating, setCreating] = useState(Boolean(computerId));
  const names = useNames(['computers']);
  const load = async (cursor?: string) => {
    try {
      const body = await must(
        api.GET('/api/v0/sessions', { params: { query: { limit: '25', ...(cursor ? { cursor } : {}), ...(computerId ? { computerId } : {}) } } }),
      );
      setPages((p) => ({ sessions: [...(cursor ? (p?.sessions ?? []) : []), ...body.sessions], next: body.pagination.nextCursor }));
      setError(undefined);
    } catch (e) {
      setError(e as ApiProblem);
    }
  };
  useEffect(() => {
    void load();
  }, [computerId]);
  return html`
    <${PageHeader} title="Sessions">
      <${FormToggle} open=${creating} set=${setCreating} label="New session" />
    <//>
    ${creating ? html`<${CreateSession} computerId=${computerId} />` : null}
    ${computerId ? html`<p>On computer <a href=${href('computers', computerId)}>${names.of('computers', computerId)}</a> · <a href=${href('sessions')}>all sessions</a></p>` : null}
    <${ErrorBox} error=${error} />
    ${
      !pages && !error
        ? html`<${Loading} />`
        : pages && pages.sessions.length === 0
          ? html`<${Empty} title="No sessions yet"><p>Start one with “New session” on an active computer; its agent answers in the transcript.</p><//>`
          : pages
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Sessions">
                <table>
                  <caption class="sr-only">Sessions</caption>
                  <thead>
                    <tr>
                      <th scope="col">Session</th>
                      <th scope="col">Status</th>
                      <th scope="col">Messages</th>
                      <th scope="col">Credits</th>
                      <th scope="col">Computer</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${pages.sessions.map(
                      (s) => html`<tr key=${s.sessionId}>
                        <th scope="row"><a href=${href('sessions', s.sessionId)}>${s.title || s.sessionId}</a></th>
                        <td>
                          <${Badge} value=${s.status} />
                          ${s.pendingApprovals?.length ? html` <a class="waiting" href=${href('sessions', s.sessionId)}>${waitingFor(s.pendingApprovals.length)}</a>` : null}
                        </td>
                        <td>${s.messageCount}</td>
                        <td>${number(s.serviceCredits)}</td>
                        <td>${s.computerId ? html`<a href=${href('computers', s.computerId)}>${names.of('computers', s.computerId)}</a>` : '—'}</td>
                        <td>${dateTime(s.updatedAt)}</td>
                      </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              ${pages.next ? html`<button type="button" onClick=${() => load(pages.next!)}>Load more</button>` : null}`
            : null
    }
  `;
}

/** What a paused session's row says: its agent waits for someone to answer. */
const waitingFor = (calls: number) => `waits for your approval (${calls} ${calls === 1 ? 'call' : 'calls'})`;

function CreateSession({ computerId }: { computerId: string }) {
  const computers = useResource(async () => (await must(api.GET('/api/v0/computers'))).computers.filter((c) => c.status === 'active'), []);
  const models = useResource(async () => (await must(api.GET('/api/v0/models'))).models, []);
  const [form, setForm] = useState({ computerId, cwd: '', model: '', autonomyLevel: '' });
  // The deployment's default is preselected once the list arrives.
  const model = form.model || models.data?.find((m) => m.isDefault)?.id || '';
  const create = useAction(async () => {
    const session = await must(
      api.POST('/api/v0/sessions', {
        body: {
          computerId: form.computerId,
          ...(form.cwd ? { cwd: form.cwd } : {}),
          sessionSettings: {
            ...(model ? { model } : {}),
            ...(form.autonomyLevel ? { autonomyLevel: form.autonomyLevel as Autonomy } : {}),
          },
        },
      }),
    );
    navigate(href('sessions', session.sessionId));
  });
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  return html`<section class="panel" aria-labelledby="new-session-title">
    <h2 id="new-session-title">New session</h2>
    <form
      onSubmit=${submitted(() => create.run())}
    >
      <div class="grid">
        <label
          >Computer
          <select required value=${form.computerId} onChange=${(e: Event) => setForm({ ...form, computerId: value(e) })}>
            <option value="">Choose an active computer</option>
            ${(computers.data ?? []).map((c) => html`<option key=${c.id} value=${c.id}>${c.name}</option>`)}
          </select>
        </label>
        <label>Working directory <input value=${form.cwd} placeholder="the remote user's home" onInput=${(e: Event) => setForm({ ...form, cwd: value(e) })} /></label>
        <label
          >Model
          <select required value=${model} onChange=${(e: Event) => setForm({ ...form, model: value(e) })}>
            ${models.data && !models.data.length ? html`<option value="">No model is configured</option>` : null}
            ${(models.data ?? []).map(
              (m) =>
                html`<option key=${m.id} value=${m.id}>${m.id} (${m.provider}, ${number(m.contextWindow)} tokens)${m.isDefault ? ' — default' : ''}</option>`,
            )}
          </select>
        </label>
        <label
          >Autonomy (what the agent runs without asking)
          <select value=${form.autonomyLevel} onChange=${(e: Event) => setForm({ ...form, autonomyLevel: value(e) })}>
            <option value="">the organization's default (off unless set)</option>
            ${AUTONOMY_CHOICES.map(([v, label]) => html`<option key=${v} value=${v}>${label}</option>`)}
          </select>
        </label>
      </div>
      ${
        computers.data && !computers.data.length
          ? html`<p class="hint">No active computer yet: <a href=${href('computers')}>create or register one</a> first.</p>`
          : null
      }
      ${
        models.data && !models.data.length
          ? html`<p class="hint">This deployment offers no model yet: an operator points <code>AGENTPLANE_MODELS_FILE</code> at a models file (README, “Agent sessions”).</p>`
          : null
      }
      <${ErrorBox} error=${computers.error} />
      <${ErrorBox} error=${models.error} />
      <${ErrorBox} error=${create.error} what="Not started" />
      <button type="submit" class="primary" disabled=${create.busy}>${create.busy ? 'Starting…' : 'Start session'}</button>
    </form>
  </section>`;
}
