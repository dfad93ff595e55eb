import { useState } from 'preact/hooks';
import { api, must } from '../api.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, FormToggle, Loading, OneTimeSecret, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';
import { href, useRoute } from '../router.ts';
import { TemplateDetail } from './template-detail.ts';

const EMPTY = { name: '', provider: '', repos: '', setupScript: '', autoInstallDeps: false, programRepository: '', programPath: '', programRef: 'main' };

/** Computer templates: what a new computer starts from (a provider or a program, repositories, set-up script). */
export default function TemplatesPage() {
  const route = useRoute();
  if (route.path[1]) return html`<${TemplateDetail} id=${route.path[1]} />`;
  return html`<${TemplateList} />`;
}

function TemplateList() {
  const templates = useResource(async () => (await must(api.GET('/api/v0/computer-templates'))).templates, []);
  const managed = useManaged();
  const providers = useResource(async () => (await must(api.GET('/api/v0/computers/providers'))).providers, []);
  const [form, setForm] = useState(EMPTY);
  const [open, setOpen] = useState(false);
  const [secret, setSecret] = useState<string>();
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const create = useAction(async () => {
    const created = await must(
      api.POST('/api/v0/computer-templates', {
        body: {
          name: form.name,
          ...(form.programRepository
            ? { program: { repository: form.programRepository, path: form.programPath, ref: form.programRef } }
            : form.provider
              ? { provider: form.provider }
              : {}),
          repos: form.repos.split(/[\s,]+/).filter(Boolean),
          autoInstallDeps: form.autoInstallDeps,
          ...(form.setupScript ? { setupScript: form.setupScript } : {}),
        },
      }),
    );
    setOpen(false);
    if (created.program && created.webhookSecret) setSecret(created.webhookSecret);
    setForm(EMPTY);
    await templates.reload();
  });
  const remove = useAction(async (templateId: string) => {
    await must(api.DELETE('/api/v0/computer-templates/{templateId}', { params: { path: { templateId } } }));
    await templates.reload();
  });
  return html`
    <${PageHeader} title="Templates">
      <${FormToggle} open=${open} set=${setOpen} label="New template" />
    <//>
    ${
      open
        ? html`<section class="panel" aria-labelledby="new-template">
          <h2 id="new-template">New template</h2>
          <form
            onSubmit=${submitted(() => create.run())}
          >
            <div class="grid">
              <label>Name <input required value=${form.name} onInput=${(e: Event) => setForm({ ...form, name: value(e) })} /></label>
              <label
                >Provider
                <select disabled=${!!form.programRepository} value=${form.provider} onChange=${(e: Event) => setForm({ ...form, provider: value(e) })}>
                  <option value="">default</option>
                  ${(providers.data ?? []).map((p) => html`<option value=${p}>${p}</option>`)}
                </select>
              </label>
              <label class="wide"
                >Program repository (a Pulumi YAML program; empty: the built-in one)
                <input value=${form.programRepository} onInput=${(e: Event) => setForm({ ...form, programRepository: value(e) })} />
              </label>
              ${
                form.programRepository
                  ? html`<label>Program path <input value=${form.programPath} placeholder="/" onInput=${(e: Event) => setForm({ ...form, programPath: value(e) })} /></label>
                      <label>Program ref <input required value=${form.programRef} onInput=${(e: Event) => setForm({ ...form, programRef: value(e) })} /></label>`
                  : null
              }
              <label class="wide">Repositories (one per line) <textarea rows="2" value=${form.repos} onInput=${(e: Event) => setForm({ ...form, repos: value(e) })}></textarea></label>
              <label class="wide">Set-up script <textarea rows="3" value=${form.setupScript} onInput=${(e: Event) => setForm({ ...form, setupScript: value(e) })}></textarea></label>
              <label class="check"><input type="checkbox" checked=${form.autoInstallDeps} onChange=${() => setForm({ ...form, autoInstallDeps: !form.autoInstallDeps })} /> Install dependencies</label>
            </div>
            <${ErrorBox} error=${create.error} what="Not created" />
            <button type="submit" class="primary" disabled=${create.busy}>Create template</button>
          </form>
        </section>`
        : null
    }
    ${secret ? html`<${OneTimeSecret} value=${secret} label="The template's push webhook secret" onDone=${() => setSecret(undefined)} />` : null}
    <${ErrorBox} error=${templates.error} />
    <${ErrorBox} error=${remove.error} what="Not deleted" />
    ${
      templates.loading && !templates.data
        ? html`<${Loading} />`
        : templates.data && !templates.data.length
          ? html`<${Empty} title="No templates yet"><p>A template names a provider or a Pulumi YAML program, repositories and a set-up script; create computers from it on the Computers page.</p><//>`
          : templates.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Templates">
              <table>
                <caption class="sr-only">Templates</caption>
                <thead>
                  <tr><th scope="col">Name</th><th scope="col">Provider</th><th scope="col">Program</th><th scope="col">Repositories</th><th scope="col">Updated</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
                </thead>
                <tbody>
                  ${templates.data.map(
                    (t) => html`<tr key=${t.id}>
                      <th scope="row"><a href=${href('templates', t.id)}>${t.name}</a><${ManagedMark} of=${managed.find('ComputerTemplate', t.id)} /></th>
                      <td>${t.provider ?? 'default'}</td>
                      <td>${t.program ? html`<code>${t.program.path || '/'}@${t.program.ref}</code> <${Badge} value=${t.status ?? 'resolving'} />` : '—'}</td>
                      <td>${t.repos.join(', ') || '—'}</td>
                      <td>${dateTime(t.updatedAt)}</td>
                      <td><${ConfirmButton} label="Delete" danger question=${`Delete the template ${t.name}? Computers made from it stay.`} onConfirm=${() => remove.run(t.id)} /></td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
  `;
}
