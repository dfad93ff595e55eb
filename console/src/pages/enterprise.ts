import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must, type ApiProblem } from '../api.ts';
import { EnterpriseFields } from '../components/enterprise-fields.ts';
import { Empty, ErrorBox, Loading, Notice, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { diffJson } from '../diff.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';

type Change = components['schemas']['EnterpriseControlChange'];

/** The raw text as a settings object, or undefined while it is not one. */
function settingsObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Enterprise controls: the current settings, an editor, and the history of revisions with a diff between any two. */
export default function EnterprisePage() {
  const managed = useManaged();
  const current = useResource(() => must(api.GET('/api/v0/organization/enterprise-controls')), []);
  const [history, setHistory] = useState<{ changes: Change[]; next: string | null }>();
  const [historyError, setHistoryError] = useState<ApiProblem>();
  const [draft, setDraft] = useState<string>();
  const [parseError, setParseError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [pair, setPair] = useState<{ from?: number; to?: number }>({});

  const loadHistory = async (cursor?: string) => {
    try {
      const page = await must(
        api.GET('/api/v0/organization/enterprise-controls/history', { params: { query: { limit: '20', ...(cursor ? { cursor } : {}) } } }),
      );
      setHistory((h) => ({ changes: [...(cursor ? (h?.changes ?? []) : []), ...page.changes], next: page.pagination.nextCursor }));
      setHistoryError(undefined);
    } catch (e) {
      setHistoryError(e as ApiProblem);
    }
  };
  useEffect(() => {
    void loadHistory();
  }, []);
  useEffect(() => {
    const changes = history?.changes ?? [];
    if (pair.to === undefined && changes.length >= 1) setPair({ to: changes[0]!.revision, from: changes[1]?.revision });
  }, [history]);

  const save = useAction(async () => {
    let settings: Record<string, unknown>;
    try {
      settings = JSON.parse(draft ?? '{}');
    } catch (e) {
      setParseError(`The settings are not valid JSON: ${(e as Error).message}`);
      return;
    }
    setParseError(undefined);
    const res = await must(api.PUT('/api/v0/organization/enterprise-controls', { body: { settings } }));
    setNotice(`Saved as revision ${res.revision}.`);
    setDraft(undefined);
    setPair({});
    await Promise.all([current.reload(), loadHistory()]);
  });

  const text = draft ?? JSON.stringify(current.data?.settings ?? {}, null, 2);
  const editable = settingsObject(text);
  const byRevision = new Map((history?.changes ?? []).map((c) => [c.revision, c]));
  const from = pair.from !== undefined ? byRevision.get(pair.from) : undefined;
  const to = pair.to !== undefined ? byRevision.get(pair.to) : undefined;
  const changes = to ? diffJson(from?.settings ?? {}, to.settings) : [];
  const revisionSelect = (label: string, value: number | undefined, set: (n: number | undefined) => void) =>
    html`<label
      >${label}
      <select value=${value ?? ''} onChange=${(e: Event) => set((e.target as HTMLSelectElement).value === '' ? undefined : Number((e.target as HTMLSelectElement).value))}>
        <option value="">(empty settings)</option>
        ${(history?.changes ?? []).map((c) => html`<option value=${c.revision}>revision ${c.revision} — ${dateTime(c.updatedAt)}</option>`)}
      </select>
    </label>`;

  return html`
    <${PageHeader} title="Enterprise controls" />
    <${ManagedMark} of=${managed.find('EnterpriseControls', 'organization')} />
    <${ErrorBox} error=${current.error} />
    <${Notice} text=${notice} />
    ${
      current.data
        ? html`<section class="panel" aria-labelledby="current-title">
          <h2 id="current-title">Current settings (revision ${current.data.revision})</h2>
          <form
            onSubmit=${submitted(() => save.run())}
          >
            ${
              editable
                ? html`<${EnterpriseFields} settings=${editable} set=${(next: Record<string, unknown>) => setDraft(JSON.stringify(next, null, 2))} />`
                : html`<p class="error" role="alert">Fix the raw JSON below to edit the fields again.</p>`
            }
            <details open=${!editable}>
              <summary>Raw settings (JSON): every key, including those agentplane does not act on</summary>
              <label
                >Settings (JSON)
                <textarea rows="10" spellcheck=${false} value=${text} onInput=${(e: Event) => setDraft((e.target as HTMLTextAreaElement).value)}></textarea>
              </label>
            </details>
            ${parseError ? html`<div class="error" role="alert"><p>${parseError}</p></div>` : null}
            <${ErrorBox} error=${save.error} what="Not saved" />
            <div class="row"><button type="submit" class="primary" disabled=${save.busy || draft === undefined}>Save a new revision</button></div>
          </form>
        </section>`
        : !current.error
          ? html`<${Loading} />`
          : null
    }
    <section aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      <${ErrorBox} error=${historyError} />
      ${history && !history.changes.length ? html`<${Empty} title="No changes yet"><p>Each save above is recorded here as a revision.</p><//>` : null}
      ${
        history && history.changes.length
          ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Revisions">
              <table>
                <caption class="sr-only">Revisions</caption>
                <thead><tr><th scope="col">Revision</th><th scope="col">Changed by</th><th scope="col">When</th></tr></thead>
                <tbody>
                  ${history.changes.map(
                    (c) => html`<tr key=${c.revision}>
                      <th scope="row">${c.revision}</th>
                      <td>${c.user.name || c.user.email} <span class="muted">${c.user.email}</span></td>
                      <td>${dateTime(c.updatedAt)}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>
            ${history.next ? html`<button type="button" onClick=${() => loadHistory(history.next!)}>Load older revisions</button>` : null}
            <h3>Compare revisions</h3>
            <div class="row">
              ${revisionSelect('From', pair.from, (n) => setPair({ ...pair, from: n }))} ${revisionSelect('To', pair.to, (n) => setPair({ ...pair, to: n }))}
            </div>
            ${
              to
                ? changes.length
                  ? html`<ul class="diff" aria-label="Differences">
                    ${changes.map(
                      (c) => html`<li class=${`diff-${c.kind}`}>
                        <code>${c.path}</code> ${c.kind}:
                        ${c.kind !== 'added' ? html`<del>${JSON.stringify(c.before)}</del>` : null} ${c.kind === 'changed' ? '→ ' : ''}
                        ${c.kind !== 'removed' ? html`<ins>${JSON.stringify(c.after)}</ins>` : null}
                      </li>`,
                    )}
                  </ul>`
                  : html`<p>The two revisions hold the same settings.</p>`
                : null
            }`
          : null
      }
    </section>
  `;
}
