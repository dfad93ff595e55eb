import { useState } from 'preact/hooks';
import { api, must } from '../api.ts';
import { Empty, ErrorBox, Loading, Notice, PageHeader, submitted } from '../components/ui.ts';
import { number } from '../format.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';

const MINIMUM = 1_000_000;
const parseLimit = (s: string): number | null => (s.trim() === '' ? null : Number(s.replace(/[_,\s]/g, '')));

/** Credit limits: the organization's per-user default and individual overrides. */
export default function LimitsPage() {
  const managed = useManaged();
  const limits = useResource(() => must(api.GET('/api/v0/organization/usage/limits/users')), []);
  const [globalText, setGlobalText] = useState<string>();
  const [override, setOverride] = useState({ email: '', limit: '' });
  const [notice, setNotice] = useState<string>();
  const [failures, setFailures] = useState<{ email: string; message: string }[]>([]);
  const saveGlobal = useAction(async () => {
    const res = await must(api.PUT('/api/v0/organization/usage/limits/global', { body: { limit: parseLimit(globalText ?? '') } }));
    setNotice(
      res.limit === null ? 'No global limit: users without an override are not limited.' : `Global limit set to ${number(res.limit)} credits per user.`,
    );
    setGlobalText(undefined);
    await limits.reload();
  });
  const saveUser = useAction(async (email: string, limit: number | null) => {
    const res = await must(api.PUT('/api/v0/organization/usage/limits/users', { body: { users: [{ email, limit }] } }));
    setFailures(res.errors);
    if (res.updated.length) setNotice(`${email}: ${limit === null ? 'override removed' : `limit ${number(limit)}`}.`);
    setOverride({ email: '', limit: '' });
    await limits.reload();
  });
  const l = limits.data;
  return html`
    <${PageHeader} title="Credit limits" />
    <${ManagedMark} of=${managed.find('CreditLimits', 'organization')} />
    <${ErrorBox} error=${limits.error} />
    <${Notice} text=${notice} />
    ${!l && !limits.error ? html`<${Loading} />` : null}
    ${
      l
        ? html`
          <section class="panel" aria-labelledby="global-title">
            <h2 id="global-title">Global limit per user</h2>
            <form
              class="row"
              onSubmit=${submitted(() => saveGlobal.run())}
            >
              <label
                >Credits (at least ${number(MINIMUM)}; empty for no limit)
                <input
                  inputmode="numeric"
                  value=${globalText ?? (l.globalLimit === null ? '' : String(l.globalLimit))}
                  onInput=${(e: Event) => setGlobalText((e.target as HTMLInputElement).value)}
                />
              </label>
              <button type="submit" class="primary" disabled=${saveGlobal.busy}>Save</button>
            </form>
            <${ErrorBox} error=${saveGlobal.error} what="Not saved" />
          </section>
          <section class="panel" aria-labelledby="overrides-title">
            <h2 id="overrides-title">Individual overrides</h2>
            <form
              class="row"
              onSubmit=${submitted(() => saveUser.run(override.email, parseLimit(override.limit)))}
            >
              <label>Member's email <input type="email" required value=${override.email} onInput=${(e: Event) => setOverride({ ...override, email: (e.target as HTMLInputElement).value })} /></label>
              <label>Credits (empty removes the override) <input inputmode="numeric" value=${override.limit} onInput=${(e: Event) => setOverride({ ...override, limit: (e.target as HTMLInputElement).value })} /></label>
              <button type="submit" class="primary" disabled=${saveUser.busy}>Set</button>
            </form>
            <${ErrorBox} error=${saveUser.error} what="Not saved" />
            ${failures.map((f) => html`<div class="error" role="alert"><strong>${f.email}</strong><p>${f.message}</p></div>`)}
            ${
              l.userLimits.length
                ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Individual overrides">
                  <table>
                    <caption class="sr-only">Individual overrides</caption>
                    <thead><tr><th scope="col">Email</th><th scope="col" class="num">Limit</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                    <tbody>
                      ${l.userLimits.map(
                        (u) => html`<tr key=${u.email}>
                          <th scope="row">${u.email}</th>
                          <td class="num">${u.limit === null ? 'no limit' : number(u.limit)}</td>
                          <td><button type="button" onClick=${() => saveUser.run(u.email, null)}>Remove override of ${u.email}</button></td>
                        </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`
                : html`<${Empty} title="No overrides"><p>Every member gets the global limit. Set an override above for someone who needs more or less.</p><//>`
            }
          </section>
        `
        : null
    }
  `;
}
