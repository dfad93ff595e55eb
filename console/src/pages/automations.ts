import { useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, FormToggle, Loading, Notice, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { useAction, useResource } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';

type Integration = components['schemas']['SourceControlIntegration'];
type Workflow = components['schemas']['CiScan']['workflows'][number];
type EditResult = components['schemas']['CiEditResult'];
type Job = components['schemas']['CiJobs']['jobs'][number];

const MODES = [
  { id: 'code-review', label: 'Code review: reviews each pull request' },
  { id: 'ci-fix', label: 'CI fix: fixes a failed check on a pull request' },
  { id: 'wiki-refresh', label: 'Wiki refresh: regenerates the wiki on each push' },
  { id: 'custom', label: 'Custom: your prompt, on a schedule or events' },
] as const;
type ModeId = (typeof MODES)[number]['id'];
const EVENTS = ['pull-request', 'pr-opened', 'comment-added', 'push', 'label-change', 'checks-completed'] as const;
type EventId = (typeof EVENTS)[number];

const value = (e: Event) => (e.target as HTMLInputElement).value;

/**
 * CI automations: the forge connections they act through, the repositories' workflows a scan
 * finds, automations created, edited and deleted by pull request, and their jobs and runs.
 */
export default function AutomationsPage() {
  const integrations = useResource(async () => (await must(api.GET('/api/v0/integrations/source-control'))).integrations, []);
  const scan = useResource(async () => must(api.GET('/api/v0/automations/ci/scan')), []);
  const jobs = useResource(async () => (await must(api.GET('/api/v0/automations/ci/jobs', { params: { query: { limit: '25' } } }))).jobs, []);
  const rescan = useAction(async () => {
    const fresh = await must(api.GET('/api/v0/automations/ci/scan', { params: { query: { forceRefresh: 'true' } } }));
    scan.set(() => fresh);
  });
  const afterEdit = async () => {
    await jobs.reload();
  };
  const connected = Boolean(integrations.data?.length);
  return html`
    <${PageHeader} title="CI automations" />
    <p class="hint">An automation is a workflow file agentplane writes into your repositories through a pull request; the forge runs it, and it calls agentplane.</p>
    <${Connections}
      integrations=${integrations}
      onChange=${async () => {
        await integrations.reload();
        await rescan.run();
      }}
    />
    ${
      connected
        ? html`
          <${NewAutomation} onDone=${afterEdit} />
          <section aria-labelledby="workflows-title">
            <div class="page-header">
              <h2 id="workflows-title">Repositories and their workflows</h2>
              <button type="button" disabled=${rescan.busy} onClick=${() => rescan.run()}>${rescan.busy ? 'Scanning…' : 'Scan again'}</button>
            </div>
            <${ErrorBox} error=${scan.error ?? rescan.error} what="Scan failed" />
            ${rescan.busy ? html`<${Loading} label="Scanning every repository the connection can write to…" />` : null}
            ${scan.data ? html`<${ScanResults} scan=${scan.data} onDone=${afterEdit} />` : scan.loading ? html`<${Loading} label="Scanning…" />` : null}
          </section>
        `
        : null
    }
    <${Jobs} jobs=${jobs} />
    ${connected ? html`<${Runs} />` : null}
  `;
}

function Connections({ integrations, onChange }: { integrations: ReturnType<typeof useResource<Integration[]>>; onChange: () => Promise<void> }) {
  const managed = useManaged();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState({ provider: 'github' as 'github' | 'gitea', baseUrl: 'https://github.com', token: '', username: '' });
  const create = useAction(async () => {
    await must(
      api.POST('/api/v0/integrations/source-control', {
        body: { provider: form.provider, baseUrl: form.baseUrl.trim(), token: form.token, ...(form.username.trim() ? { username: form.username.trim() } : {}) },
      }),
    );
    setForm({ ...form, token: '' });
    setOpen(false);
    await onChange();
    return 'Connected.';
  });
  const remove = useAction(async (id: string) => {
    await must(api.DELETE('/api/v0/integrations/source-control/{integrationId}', { params: { path: { integrationId: id } } }));
    await onChange();
    return 'The connection was removed.';
  });
  return html`<section aria-labelledby="connections-title">
    <div class="page-header">
      <h2 id="connections-title">Forge connections</h2>
      <button type="button" aria-expanded=${open} onClick=${() => setOpen(!open)}>${open ? 'Close' : 'Connect a forge'}</button>
    </div>
    ${
      open
        ? html`<form
          class="panel"
          aria-label="Connect a forge"
          onSubmit=${submitted(() => create.run())}
        >
          <div class="grid">
            <label
              >Forge
              <select
                value=${form.provider}
                onChange=${(e: Event) => {
                  const provider = value(e) as 'github' | 'gitea';
                  setForm({ ...form, provider, baseUrl: provider === 'github' ? 'https://github.com' : '' });
                }}
              >
                <option value="github">GitHub (github.com or Enterprise Server)</option>
                <option value="gitea">Gitea or Forgejo</option>
              </select>
            </label>
            <label>Forge URL <input required type="url" placeholder="https://gitea.example.com" value=${form.baseUrl} onInput=${(e: Event) => setForm({ ...form, baseUrl: value(e) })} /></label>
            <label>Access token <input required type="password" autocomplete="off" value=${form.token} onInput=${(e: Event) => setForm({ ...form, token: value(e) })} /></label>
            <label>User name (optional) <input autocomplete="off" placeholder="the token's account" value=${form.username} onInput=${(e: Event) => setForm({ ...form, username: value(e) })} /></label>
          </div>
          <p class="hint">The token is checked with the forge, then stored encrypted; it needs to read repositories and to push branches and open pull requests.</p>
          <${ErrorBox} error=${create.error} what="Not connected" />
          <button type="submit" class="primary" disabled=${create.busy}>${create.busy ? 'Checking the token…' : 'Connect'}</button>
        </form>`
        : null
    }
    <${ErrorBox} error=${integrations.error} />
    <${ErrorBox} error=${remove.error} what="Not removed" />
    <${Notice} text=${create.result ?? remove.result} />
    ${
      integrations.loading && !integrations.data
        ? html`<${Loading} />`
        : integrations.data && !integrations.data.length
          ? html`<${Empty} title="No forge connected">
            <p>Connect GitHub or Gitea with “Connect a forge” (managers and owners): agentplane then scans your repositories’ workflows and opens pull requests for automations.</p>
          <//>`
          : integrations.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Table of forge connections">
              <table>
                <caption class="sr-only">Forge connections</caption>
                <thead>
                  <tr><th scope="col">Forge</th><th scope="col">Account</th><th scope="col">Token</th><th scope="col">Origin</th><th scope="col">Connected</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
                </thead>
                <tbody>
                  ${integrations.data.map(
                    (i) => html`<tr key=${i.id}>
                      <th scope="row">${i.provider} · ${i.baseUrl}<${ManagedMark} of=${managed.find('SourceControlIntegration', i.id)} /></th>
                      <td>${i.login ?? i.username}</td>
                      <td>${i.token ? html`<code>${i.token}</code>` : '—'}</td>
                      <td>${i.origin === 'config' ? 'server configuration' : 'this console or the API'}</td>
                      <td>${dateTime(i.createdAt)}</td>
                      <td>
                        <${ConfirmButton}
                          label="Delete"
                          danger
                          question=${`Remove the connection to ${i.baseUrl}? Automations stop opening pull requests there; computers keep the credential until their next refresh.`}
                          onConfirm=${() => remove.run(i.id)}
                        />
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
  </section>`;
}

/** The fields an automation is created or edited with. */
interface Settings {
  name: string;
  schedule: string;
  events: EventId[];
  customPrompt: string;
  yamlParams: string;
}

function changesOf(s: Settings, initial?: Settings) {
  const differs = <K extends keyof Settings>(k: K) => !initial || JSON.stringify(initial[k]) !== JSON.stringify(s[k]);
  return {
    ...(s.name.trim() && differs('name') ? { name: s.name.trim() } : {}),
    ...(s.schedule.trim() && differs('schedule') ? { schedule: s.schedule.trim() } : {}),
    ...(s.events.length && differs('events') ? { githubEvents: s.events } : {}),
    ...(s.customPrompt.trim() && differs('customPrompt') ? { customPrompt: s.customPrompt } : {}),
    ...(s.yamlParams.trim() && differs('yamlParams') ? { yamlParams: s.yamlParams } : {}),
  };
}

function SettingsFields({ settings, set, mode }: { settings: Settings; set: (s: Settings) => void; mode: ModeId }) {
  return html`<div class="grid">
    <label>Name <input required value=${settings.name} onInput=${(e: Event) => set({ ...settings, name: value(e) })} /></label>
    <label>Schedule (cron, UTC) <input placeholder=${mode === 'custom' ? '17 3 * * 1-5' : 'the mode’s own triggers'} value=${settings.schedule} onInput=${(e: Event) => set({ ...settings, schedule: value(e) })} /></label>
    <fieldset class="wide">
      <legend>Events${mode === 'custom' ? '' : ' (the mode’s own when none are picked)'}</legend>
      <div class="segmented">
        ${EVENTS.map(
          (ev) => html`<label key=${ev}
            ><input
              type="checkbox"
              checked=${settings.events.includes(ev)}
              onChange=${() => set({ ...settings, events: settings.events.includes(ev) ? settings.events.filter((x) => x !== ev) : [...settings.events, ev] })}
            />
            ${ev}</label
          >`,
        )}
      </div>
    </fieldset>
    ${
      mode === 'custom'
        ? html`<label class="wide">Prompt <textarea rows="3" value=${settings.customPrompt} onInput=${(e: Event) => set({ ...settings, customPrompt: value(e) })}></textarea></label>`
        : null
    }
    <label class="wide"
      >Workflow inputs (YAML, optional)
      <textarea rows="2" placeholder=${'model: claude-sonnet-4\ntimeout-minutes: 20'} value=${settings.yamlParams} onInput=${(e: Event) => set({ ...settings, yamlParams: value(e) })}></textarea>
    </label>
  </div>`;
}

function NewAutomation({ onDone }: { onDone: () => Promise<void> }) {
  const [open, setOpen] = useState(false);
  const repositories = useResource(async () => (open ? (await must(api.GET('/api/v0/automations/ci/repositories'))).repositories : undefined), [open]);
  const [mode, setMode] = useState<ModeId>('code-review');
  const [repos, setRepos] = useState<string[]>([]);
  const [settings, setSettings] = useState<Settings>({ name: '', schedule: '', events: [], customPrompt: '', yamlParams: '' });
  const create = useAction(async () => {
    const result = await must(
      api.POST('/api/v0/automations/ci/edit', {
        body: {
          action: 'create',
          modeId: mode,
          automationName: settings.name.trim(),
          repos: repos.map((repoFullName) => ({ repoFullName })),
          changes: changesOf(settings),
        },
      }),
    );
    await onDone();
    return result;
  });
  return html`<section aria-labelledby="new-automation-title">
    <div class="page-header">
      <h2 id="new-automation-title">Automations</h2>
      <${FormToggle} open=${open} set=${setOpen} label="New automation" />
    </div>
    ${
      open
        ? html`<form
          class="panel"
          aria-label="New automation"
          onSubmit=${submitted(() => create.run())}
        >
          <div class="grid">
            <label
              >Mode
              <select value=${mode} onChange=${(e: Event) => setMode(value(e) as ModeId)}>
                ${MODES.map((m) => html`<option value=${m.id}>${m.label}</option>`)}
              </select>
            </label>
          </div>
          <fieldset>
            <legend>Repositories</legend>
            <${ErrorBox} error=${repositories.error} />
            ${repositories.loading && !repositories.data ? html`<${Loading} label="Listing the repositories the connection can write to…" />` : null}
            ${repositories.data && !repositories.data.length ? html`<p>The connection can write to no repository: give its token access to some, then come back.</p>` : null}
            <div class="segmented">
              ${(repositories.data ?? []).map(
                (r) => html`<label key=${r.repoFullName}
                  ><input
                    type="checkbox"
                    checked=${repos.includes(r.repoFullName)}
                    onChange=${() => setRepos(repos.includes(r.repoFullName) ? repos.filter((x) => x !== r.repoFullName) : [...repos, r.repoFullName])}
                  />
                  ${r.repoFullName}${r.private ? ' (private)' : ''}</label
                >`,
              )}
            </div>
          </fieldset>
          <${SettingsFields} settings=${settings} set=${setSettings} mode=${mode} />
          <${ErrorBox} error=${create.error} what="Not created" />
          <button type="submit" class="primary" disabled=${create.busy || !repos.length}>${create.busy ? 'Opening pull requests…' : 'Create: open pull requests'}</button>
          ${create.busy ? html`<${Loading} label="Writing the workflow and opening a pull request in each repository…" />` : null}
        </form>`
        : null
    }
    ${create.result ? html`<${EditOutcome} result=${create.result} title="Automation created" />` : null}
  </section>`;
}

/** What an edit request did in each repository: its pull request, or why not. */
function EditOutcome({ result, title }: { result: EditResult; title: string }) {
  return html`<div class="panel" role="status" aria-label=${title}>
    <p><strong>${title}</strong>: merge the pull request${result.sessions.length > 1 ? 's' : ''} to put it in force.</p>
    <ul>
      ${result.sessions.map(
        (s) => html`<li key=${s.repoFullName}>
          <code>${s.repoFullName}</code>${s.filePath ? html` · <code>${s.filePath}</code>` : null}:
          ${s.prUrl ? html`<a href=${s.prUrl} target="_blank" rel="noopener noreferrer">${s.message ?? 'pull request'}</a>` : html`<span class="diff-removed">${s.error}</span>`}
        </li>`,
      )}
    </ul>
  </div>`;
}

function ScanResults({ scan, onDone }: { scan: components['schemas']['CiScan']; onDone: () => Promise<void> }) {
  const [editing, setEditing] = useState<string>();
  const [outcome, setOutcome] = useState<{ result: EditResult; title: string }>();
  const remove = useAction(async (w: Workflow) => {
    const automationId = w.droidActionInputs['automation-id'];
    const result = await must(
      api.POST('/api/v0/automations/ci/edit', {
        body: {
          action: 'delete',
          repos: [{ repoFullName: w.repoFullName, filePath: w.filePath }],
          ...(automationId ? { factoryAutomationId: automationId } : {}),
        },
      }),
    );
    setOutcome({ result, title: 'Deletion proposed' });
    await onDone();
  });
  const key = (w: Workflow) => `${w.repoFullName}:${w.filePath}`;
  return html`
    <p class="muted">
      ${scan.repositoriesScanned} repositor${scan.repositoriesScanned === 1 ? 'y' : 'ies'} scanned ${scan.scannedAt ? dateTime(scan.scannedAt) : ''}${scan.cached ? ' (kept for 30 minutes; “Scan again” reads them anew)' : ''}.
    </p>
    <${ErrorBox} error=${remove.error} what="Not deleted" />
    ${outcome ? html`<${EditOutcome} result=${outcome.result} title=${outcome.title} />` : null}
    ${
      scan.workflows.length
        ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Workflows found">
          <table>
            <caption class="sr-only">Workflows found</caption>
            <thead>
              <tr><th scope="col">Repository</th><th scope="col">Workflow</th><th scope="col">Runs on</th><th scope="col">Automation</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              ${scan.workflows.map(
                (w) => html`<tr key=${key(w)}>
                    <th scope="row">${w.repoFullName}</th>
                    <td>${w.workflowName}<div class="muted"><code>${w.filePath}</code></div></td>
                    <td>${w.triggerEvents.join(', ')}${w.scheduleCron ? html`<div><code>${w.scheduleCron}</code></div>` : null}</td>
                    <td>${w.templateId ? html`<${Badge} value=${w.templateId} />` : html`<span class="muted">not an agentplane workflow</span>`}</td>
                    <td>
                      <div class="row">
                        ${
                          w.templateId
                            ? html`<button type="button" aria-expanded=${editing === key(w)} onClick=${() => setEditing(editing === key(w) ? undefined : key(w))} aria-label=${`Edit ${w.workflowName} in ${w.repoFullName}`}>Edit</button>
                              <${ConfirmButton}
                                label="Delete"
                                danger
                                question=${`Open a pull request in ${w.repoFullName} that removes ${w.filePath}?`}
                                onConfirm=${() => remove.run(w)}
                              />`
                            : null
                        }
                      </div>
                    </td>
                  </tr>
                  ${
                    editing === key(w)
                      ? html`<tr key=${`${key(w)}-edit`}>
                        <td colspan="5">
                          <${EditAutomation}
                            workflow=${w}
                            onDone=${async (result: EditResult) => {
                              setEditing(undefined);
                              setOutcome({ result, title: 'Change proposed' });
                              await onDone();
                            }}
                          />
                        </td>
                      </tr>`
                      : null
                  }`,
              )}
            </tbody>
          </table>
        </div>`
        : html`<${Empty} title="No workflows found">
          <p>None of the repositories has a workflow on its default branch yet. Create an automation above and merge its pull request; it shows here after the next scan.</p>
        <//>`
    }
    ${
      scan.failures.length
        ? html`<details>
          <summary>${scan.failures.length} could not be read</summary>
          <ul>
            ${scan.failures.map((f) => html`<li><code>${f.repoFullName}${f.filePath ? `/${f.filePath}` : ''}</code>: ${f.error}</li>`)}
          </ul>
        </details>`
        : null
    }
  `;
}

function EditAutomation({ workflow, onDone }: { workflow: Workflow; onDone: (r: EditResult) => Promise<void> }) {
  const initial: Settings = {
    name: workflow.workflowName,
    schedule: workflow.scheduleCron ?? '',
    events: [],
    customPrompt: workflow.droidActionInputs.prompt ?? '',
    yamlParams: '',
  };
  const [settings, setSettings] = useState<Settings>(initial);
  const automationId = workflow.droidActionInputs['automation-id'];
  const save = useAction(async () => {
    const changes = changesOf(settings, initial);
    const result = await must(
      api.POST('/api/v0/automations/ci/edit', {
        body: {
          action: 'edit',
          repos: [{ repoFullName: workflow.repoFullName, filePath: workflow.filePath }],
          changes,
          ...(automationId ? { factoryAutomationId: automationId } : {}),
        },
      }),
    );
    await onDone(result);
  });
  return html`<form
    aria-label=${`Edit ${workflow.workflowName}`}
    onSubmit=${submitted(() => save.run())}
  >
    <${SettingsFields} settings=${settings} set=${setSettings} mode=${(workflow.templateId ?? 'custom') as ModeId} />
    <${ErrorBox} error=${save.error} what="Not changed" />
    <button type="submit" class="primary" disabled=${save.busy}>${save.busy ? 'Opening a pull request…' : 'Propose the change'}</button>
  </form>`;
}

function prLinks(job: Job) {
  return job.repos.map((r) => {
    const repo = String(r.repoFullName ?? '');
    const prUrl = typeof r.prUrl === 'string' ? r.prUrl : typeof r.pullRequestUrl === 'string' ? r.pullRequestUrl : undefined;
    const error = typeof r.error === 'string' ? r.error : undefined;
    return html`<div key=${repo}>
      <code>${repo}</code> ${prUrl ? html`<a href=${prUrl} target="_blank" rel="noopener noreferrer">${prUrl.replace(/^.*\/(pulls|pull)\//, 'pull request #')}</a>` : error ? html`<span class="diff-removed">${error}</span>` : null}
    </div>`;
  });
}

function Jobs({ jobs }: { jobs: ReturnType<typeof useResource<Job[]>> }) {
  const managed = useManaged();
  return html`<section aria-labelledby="jobs-title">
    <div class="page-header">
      <h2 id="jobs-title">Jobs</h2>
      <button type="button" onClick=${() => jobs.reload()}>Refresh</button>
    </div>
    <${ErrorBox} error=${jobs.error} />
    ${
      jobs.loading && !jobs.data
        ? html`<${Loading} />`
        : jobs.data && !jobs.data.length
          ? html`<${Empty} title="No jobs yet"><p>Each automation created, changed or deleted, and each run the forge starts, is listed here with its pull requests.</p><//>`
          : jobs.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Table of jobs">
              <table>
                <caption class="sr-only">Jobs</caption>
                <thead>
                  <tr><th scope="col">Job</th><th scope="col">Automation</th><th scope="col">Status</th><th scope="col">Repositories and pull requests</th><th scope="col">Started</th></tr>
                </thead>
                <tbody>
                  ${jobs.data.map(
                    (j) => html`<tr key=${j.id}>
                      <th scope="row">${j.kind === 'edit' ? `${j.action ?? 'edit'}` : 'run'}<div class="muted"><code>${j.id}</code></div><${ManagedMark} of=${managed.find('CiAutomation', j.automationId ?? undefined)} /></th>
                      <td>${j.automationName ?? '—'}${j.modeId ? html`<div class="muted">${j.modeId}</div>` : null}</td>
                      <td><${Badge} value=${j.status} /></td>
                      <td>${prLinks(j)}</td>
                      <td>${dateTime(j.createdAt)}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
  </section>`;
}

function Runs() {
  const runs = useResource(async () => must(api.GET('/api/v0/automations/ci/runs', { params: { query: { limit: '25' } } })), []);
  return html`<section aria-labelledby="runs-title">
    <div class="page-header">
      <h2 id="runs-title">Workflow runs</h2>
      <button type="button" onClick=${() => runs.reload()}>Refresh</button>
    </div>
    <${ErrorBox} error=${runs.error} />
    ${
      runs.loading && !runs.data
        ? html`<${Loading} label="Asking the forge…" />`
        : runs.data && !runs.data.runs.length
          ? html`<${Empty} title="No workflow runs yet"><p>Runs show here once an automation’s workflow is merged and the forge runs it.</p><//>`
          : runs.data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Table of workflow runs">
              <table>
                <caption class="sr-only">Workflow runs</caption>
                <thead>
                  <tr><th scope="col">Run</th><th scope="col">Repository</th><th scope="col">Status</th><th scope="col">Event</th><th scope="col">Started</th></tr>
                </thead>
                <tbody>
                  ${runs.data.runs.map(
                    (r) => html`<tr key=${`${r.repoFullName}-${r.id}`}>
                      <th scope="row"><a href=${r.url} target="_blank" rel="noopener noreferrer">${r.name} #${r.id}</a></th>
                      <td>${r.repoFullName}<div class="muted"><code>${r.workflowPath}</code></div></td>
                      <td><${Badge} value=${r.conclusion ?? r.status} /></td>
                      <td>${r.event}${r.branch ? html` · <code>${r.branch}</code>` : null}</td>
                      <td>${dateTime(r.startedAt ?? r.createdAt)}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
            : null
    }
    ${runs.data?.failures.length ? html`<p class="hint">Not read: ${runs.data.failures.map((f) => `${f.repoFullName} (${f.error})`).join('; ')}</p>` : null}
  </section>`;
}
