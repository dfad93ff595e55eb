import { useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { ErrorBox, submitted } from '../components/ui.ts';
import { html } from '../html.ts';
import { navigate, href } from '../router.ts';
import { useAction, useResource } from '../resource.ts';

type Computer = components['schemas']['Computer'];
type Mode = 'single' | 'bulk' | 'template' | 'computer';

const lines = (s: string) => s.split(/[\s,]+/).filter(Boolean);
const value = (e: Event) => (e.target as HTMLInputElement).value;

/** Creating computers: one, several at once (bulk), from a template, or as a copy of a computer. */
/**
 * The server's rule for computer names (src/modules/computers/schemas.ts), written for the `v` flag
 * Chromium compiles `pattern` with: a literal "-" in a class must be escaped there.
 */
const NAME_PATTERN = String.raw`[A-Za-z0-9][A-Za-z0-9._\-]{0,62}`;

export function CreateComputer({ computers, onCreated }: { computers: Computer[]; onCreated: () => void }) {
  const [mode, setMode] = useState<Mode>('single');
  const [form, setForm] = useState({
    name: '',
    provider: '',
    host: '',
    port: '22',
    remoteUser: '',
    repos: '',
    autoInstallDeps: false,
    quantity: '2',
    templateId: '',
    sourceComputerId: '',
    isListed: true,
  });
  const [bulkNote, setBulkNote] = useState<string>();
  const set = (patch: Partial<typeof form>) => setForm({ ...form, ...patch });
  const providers = useResource(async () => (await must(api.GET('/api/v0/computers/providers'))).providers, []);
  const templates = useResource(async () => (await must(api.GET('/api/v0/computer-templates'))).templates, []);
  const byom = form.provider === 'byom';
  const sshKey = useResource(async () => (byom ? (await must(api.GET('/api/v0/computers/ssh-public-key'))).publicKey : undefined), [byom]);

  const create = useAction(async () => {
    const repos = lines(form.repos);
    const provider = form.provider || undefined;
    if (mode === 'bulk') {
      const res = await must(
        api.POST('/api/v0/computers/bulk', {
          body: { quantity: Number(form.quantity), namePrefix: form.name, provider, repos, autoInstallDeps: form.autoInstallDeps },
        }),
      );
      setBulkNote(`${res.computers.length} of ${res.requestedQuantity} created` + (res.error ? ` — stopped: ${res.error.message}` : ''));
      if (!res.error) onCreated();
      return;
    }
    const source =
      mode === 'template'
        ? { kind: 'template' as const, templateId: form.templateId, isListed: form.isListed }
        : mode === 'computer'
          ? { kind: 'computer' as const, sourceComputerId: form.sourceComputerId }
          : undefined;
    const created = await must(
      api.POST('/api/v0/computers', {
        body: {
          name: form.name,
          ...(provider && mode !== 'template' ? { provider } : {}),
          ...(repos.length ? { repos } : {}),
          ...(form.autoInstallDeps ? { autoInstallDeps: true } : {}),
          ...(form.remoteUser ? { remoteUser: form.remoteUser } : {}),
          ...(byom && form.host ? { connection: { host: form.host, port: Number(form.port) || 22 } } : {}),
          ...(source ? { source } : {}),
        },
      }),
    );
    onCreated();
    navigate(href('computers', created.id));
  });

  return html`<section class="panel" aria-labelledby="create-title">
    <h2 id="create-title">New computer</h2>
    <form
      onSubmit=${submitted(() => create.run())}
    >
      <fieldset class="segmented">
        <legend>How</legend>
        ${(
          [
            ['single', 'One computer'],
            ['bulk', 'Several (bulk)'],
            ['template', 'From a template'],
            ['computer', 'Copy of a computer'],
          ] as const
        ).map(
          ([m, label]) =>
            html`<label key=${m}><input type="radio" name="mode" value=${m} checked=${mode === m} onChange=${() => setMode(m)} /> ${label}</label>`,
        )}
      </fieldset>
      <div class="grid">
        <label
          >${mode === 'bulk' ? 'Name prefix' : 'Name'}
          <input required value=${form.name} onInput=${(e: Event) => set({ name: value(e) })} pattern=${NAME_PATTERN}
            title="1–63 letters, digits, “.”, “_” and “-”, starting with a letter or digit" />
        </label>
        ${
          mode === 'bulk'
            ? html`<label>Quantity (1–20) <input type="number" min="1" max="20" required value=${form.quantity} onInput=${(e: Event) => set({ quantity: value(e) })} /></label>`
            : null
        }
        ${
          mode === 'template'
            ? html`<label
              >Template
              <select required value=${form.templateId} onChange=${(e: Event) => set({ templateId: value(e) })}>
                <option value="">Choose a template</option>
                ${(templates.data ?? []).map((t) => html`<option key=${t.id} value=${t.id}>${t.name}</option>`)}
              </select>
            </label>`
            : null
        }
        ${
          mode === 'computer'
            ? html`<label
              >Source computer
              <select required value=${form.sourceComputerId} onChange=${(e: Event) => set({ sourceComputerId: value(e) })}>
                <option value="">Choose a computer</option>
                ${computers.filter((c) => !c.deletedAt).map((c) => html`<option key=${c.id} value=${c.id}>${c.name}</option>`)}
              </select>
            </label>`
            : null
        }
        ${
          mode !== 'template'
            ? html`<label
              >Provider (where it runs)
              <select required=${mode !== 'computer'} value=${form.provider} onChange=${(e: Event) => set({ provider: value(e) })}>
                <option value="">${mode === 'computer' ? "the source computer's" : 'Choose a provider'}</option>
                ${(providers.data ?? []).map((p) => html`<option key=${p} value=${p}>${p}</option>`)}
                ${mode === 'single' ? html`<option value="byom">byom — a machine of my own</option>` : null}
              </select>
            </label>`
            : null
        }
        ${
          byom
            ? html`
              <label>Host <input required value=${form.host} onInput=${(e: Event) => set({ host: value(e) })} /></label>
              <label>SSH port <input type="number" min="1" max="65535" value=${form.port} onInput=${(e: Event) => set({ port: value(e) })} /></label>
              <label>Remote user <input required value=${form.remoteUser} onInput=${(e: Event) => set({ remoteUser: value(e) })} /></label>
            `
            : null
        }
        ${
          mode === 'single' || mode === 'bulk'
            ? html`<label class="wide"
              >Repositories to clone (one per line)
              <textarea rows="2" value=${form.repos} onInput=${(e: Event) => set({ repos: value(e) })}></textarea>
            </label>`
            : null
        }
        ${
          mode === 'template'
            ? html`<label class="check"><input type="checkbox" checked=${form.isListed} onChange=${() => set({ isListed: !form.isListed })} /> Listed
              <span class="muted">(shown in the computer list; an unlisted one shows only with the “Unlisted” filter)</span></label>`
            : null
        }
        ${
          mode !== 'template'
            ? html`<label class="check"
              ><input type="checkbox" checked=${form.autoInstallDeps} onChange=${() => set({ autoInstallDeps: !form.autoInstallDeps })} /> Install
              dependencies after cloning</label
            >`
            : null
        }
      </div>
      ${
        byom && sshKey.data
          ? html`<p class="hint">
            Add the organization's key to <code>~/.ssh/authorized_keys</code> of the remote user first:
            <code class="block" data-testid="org-ssh-key">${sshKey.data}</code>
          </p>`
          : null
      }
      <${ErrorBox} error=${providers.error ?? templates.error} />
      <${ErrorBox} error=${create.error} what="Not created" />
      ${bulkNote ? html`<p class="notice" role="status">${bulkNote}</p>` : null}
      <button type="submit" class="primary" disabled=${create.busy}>${create.busy ? 'Creating…' : 'Create'}</button>
    </form>
  </section>`;
}
