import { useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, FormToggle, Loading, Notice, OneTimeSecret, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { useNames } from '../names.ts';
import { href } from '../router.ts';
import { useAction, useResource } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';
import type { PageProps } from '../sections.ts';

type Issued = components['schemas']['IssuedServiceAccountApiKey'];
const value = (e: Event) => (e.target as HTMLInputElement).value;

export default function ServiceAccountsPage({ route }: PageProps) {
  if (route.path[1]) return html`<${ServiceAccountDetail} id=${route.path[1]} />`;
  return html`<${ServiceAccountList} />`;
}

function ServiceAccountList() {
  const managed = useManaged();
  const accounts = useResource(async () => (await must(api.GET('/api/v0/service-accounts'))).serviceAccounts, []);
  const [form, setForm] = useState({ name: '', description: '' });
  const [open, setOpen] = useState(false);
  const create = useAction(async () => {
    await must(
      api.POST('/api/v0/service-accounts', { body: { name: form.name, ...(form.description ? { description: form.description } : {}), status: 'active' } }),
    );
    setForm({ name: '', description: '' });
    setOpen(false);
    await accounts.reload();
  });
  return html`
    <${PageHeader} title="Service accounts">
      <${FormToggle} open=${open} set=${setOpen} label="New service account" />
    <//>
    ${
      open
        ? html`<section class="panel" aria-labelledby="new-sa">
          <h2 id="new-sa">New service account</h2>
          <form
            onSubmit=${submitted(() => create.run())}
          >
            <div class="grid">
              <label>Name (cannot be changed later) <input required value=${form.name} onInput=${(e: Event) => setForm({ ...form, name: value(e) })} /></label>
              <label>Description <input value=${form.description} onInput=${(e: Event) => setForm({ ...form, description: value(e) })} /></label>
            </div>
            <${ErrorBox} error=${create.error} what="Not created" />
            <button type="submit" class="primary" disabled=${create.busy}>Create</button>
          </form>
        </section>`
        : null
    }
    <${ErrorBox} error=${accounts.error} />
    ${
      accounts.loading && !accounts.data
        ? html`<${Loading} />`
        : accounts.data && !accounts.data.length
          ? html`<${Empty} title="No service accounts yet"><p>A service account is an identity for automation (CI, bots): create one, then give it an API key.</p><//>`
          : accounts.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Service accounts">
              <table>
                <caption class="sr-only">Service accounts</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Description</th><th scope="col">Created</th></tr></thead>
                <tbody>
                  ${accounts.data.map(
                    (a) => html`<tr key=${a.id}>
                      <th scope="row"><a href=${href('service-accounts', a.id)}>${a.name}</a><${ManagedMark} of=${managed.find('ServiceAccount', a.id)} /></th>
                      <td><${Badge} value=${a.status} /></td>
                      <td>${a.description ?? ''}</td>
                      <td>${dateTime(a.createdAt)}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
  `;
}

function ServiceAccountDetail({ id }: { id: string }) {
  const params = { params: { path: { serviceAccountId: id } } };
  const account = useResource(async () => (await must(api.GET('/api/v0/service-accounts/{serviceAccountId}', params))).serviceAccount, [id]);
  const keys = useResource(async () => (await must(api.GET('/api/v0/service-accounts/{serviceAccountId}/api-keys', params))).apiKeys, [id]);
  const names = useNames(['people']);
  const [issued, setIssued] = useState<{ key: Issued; how: string }>();
  const [notice, setNotice] = useState<string>();
  const [keyName, setKeyName] = useState('');
  const [grace, setGrace] = useState('0');

  const createKey = useAction(async () => {
    const res = await must(api.POST('/api/v0/service-accounts/{serviceAccountId}/api-keys', { ...params, body: { name: keyName } }));
    setIssued({ key: res.apiKey, how: `New API key “${res.apiKey.name}”` });
    setKeyName('');
    await keys.reload();
  });
  const rotate = useAction(async (keyId: string) => {
    const minutes = Number(grace) || 0;
    const res = await must(
      api.POST('/api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/rotate', {
        params: { path: { serviceAccountId: id, keyId } },
        body: minutes ? { gracePeriodMinutes: minutes } : {},
      }),
    );
    setIssued({ key: res.apiKey, how: `Replacement for “${res.apiKey.name}”` });
    setNotice(minutes ? `The old key keeps working for ${minutes} minutes.` : 'The old key no longer authenticates.');
    await keys.reload();
  });
  const revoke = useAction(async (keyId: string) => {
    await must(api.POST('/api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/revoke', { params: { path: { serviceAccountId: id, keyId } } }));
    setNotice('The key is revoked and no longer authenticates.');
    await keys.reload();
  });
  const setStatus = useAction(async (status: 'active' | 'inactive') => {
    await must(api.PATCH('/api/v0/service-accounts/{serviceAccountId}', { ...params, body: { status } }));
    await account.reload();
  });
  const remove = useAction(async () => {
    await must(api.DELETE('/api/v0/service-accounts/{serviceAccountId}', params));
    location.hash = href('service-accounts');
  });

  const a = account.data;
  if (!a) return account.error ? html`<${PageHeader} title="Service account" /><${ErrorBox} error=${account.error} />` : html`<${Loading} />`;
  return html`
    <${PageHeader} title=${a.name}>
      ${
        a.status === 'deleted'
          ? null
          : html`
            <button type="button" disabled=${setStatus.busy} onClick=${() => setStatus.run(a.status === 'active' ? 'inactive' : 'active')}>
              ${a.status === 'active' ? 'Deactivate' : 'Activate'}
            </button>
            <${ConfirmButton}
              label="Delete"
              danger
              question=${`Delete ${a.name}? Its keys stop working and the computers it owns are torn down.`}
              confirmLabel=${`Delete ${a.name}`}
              onConfirm=${() => remove.run()}
            />
          `
      }
    <//>
    <p><a href=${href('service-accounts')}>All service accounts</a></p>
    <${ErrorBox} error=${setStatus.error ?? remove.error} />
    <dl class="fields compact">
      <dt>Status</dt><dd><${Badge} value=${a.status} /></dd>
      <dt>Description</dt><dd>${a.description || '—'}</dd>
      <dt>Id</dt><dd><code>${a.id}</code></dd>
      <dt>Created</dt><dd>${dateTime(a.createdAt)} by ${names.of('people', a.createdBy)}</dd>
    </dl>
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      ${issued ? html`<${OneTimeSecret} label=${issued.how} value=${issued.key.value} onDone=${() => setIssued(undefined)} />` : null}
      <${Notice} text=${notice} />
      <${ErrorBox} error=${keys.error ?? rotate.error ?? revoke.error} />
      <form
        class="row"
        onSubmit=${submitted(() => createKey.run())}
      >
        <label>New key name <input required value=${keyName} onInput=${(e: Event) => setKeyName(value(e))} /></label>
        <button type="submit" class="primary" disabled=${createKey.busy}>Create key</button>
      </form>
      <${ErrorBox} error=${createKey.error} what="No key created" />
      ${
        keys.data?.some((k) => !k.isRevoked)
          ? html`<label class="row"
              >When a key is rotated, its old value keeps working for
              <input type="number" min="0" max="1440" value=${grace} onInput=${(e: Event) => setGrace(value(e))} aria-label="Grace period on rotation (minutes)" />
              minutes</label
            >`
          : null
      }
      ${
        keys.data && !keys.data.length
          ? html`<${Empty} title="No keys yet"><p>Create a key for the automation that acts as this account.</p><//>`
          : keys.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="API keys">
              <table>
                <caption class="sr-only">API keys</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Fingerprint</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  ${keys.data.map(
                    (k) => html`<tr key=${k.id} data-key=${k.id}>
                      <th scope="row">${k.name}</th>
                      <td><code>…${k.fingerprint}</code></td>
                      <td>${k.isRevoked ? html`<${Badge} value="revoked" /> ${dateTime(k.revokedAt)}` : html`<${Badge} value="active" />`}</td>
                      <td>${dateTime(k.createdAt)}</td>
                      <td>${k.expiresAt ? dateTime(k.expiresAt) : 'never'}</td>
                      <td>
                        ${
                          k.isRevoked
                            ? null
                            : html`<div class="row">
                              <${ConfirmButton}
                                label=${`Rotate ${k.name}`}
                                question=${`Rotate “${k.name}”? A new value is issued with the same name; the old one stops working${Number(grace) ? ` after ${grace} minutes` : ' at once'}.`}
                                confirmLabel="Rotate"
                                onConfirm=${() => rotate.run(k.id)}
                              />
                              <${ConfirmButton}
                                label=${`Revoke ${k.name}`}
                                danger
                                question=${`Revoke “${k.name}”? It stops authenticating at once.`}
                                confirmLabel="Revoke"
                                onConfirm=${() => revoke.run(k.id)}
                              />
                            </div>`
                        }
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
      }
    </section>
  `;
}
