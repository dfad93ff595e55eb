import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Chart } from '../components/chart.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, LiveIndicator, Loading, Notice, PageHeader, Progress } from '../components/ui.ts';
import { bytes, dateTime, duration } from '../format.ts';
import { html } from '../html.ts';
import { follow, type LiveMode } from '../live.ts';
import { useNames, type Names } from '../names.ts';
import { href, navigate } from '../router.ts';
import { useAction, useResource } from '../resource.ts';

type Computer = components['schemas']['Computer'];
type Step = NonNullable<Computer['provisioningSteps']>[number];

const FINISHED = new Set(['completed', 'skipped', 'failed']);
const short = (commit: string) => commit.slice(0, 12);

/** A person reads only their own computers, and managers also service accounts' (the API's rule). */
export function ownerOf(c: Pick<Computer, 'ownerPrincipalKind' | 'ownerId'>, names: Names): string {
  return c.ownerPrincipalKind === 'service' ? `service account ${names.of('serviceAccounts', c.ownerId)}` : 'you';
}

/** Where the computer came from, by name: a template or another computer's workspace. */
function sourceOf(c: Computer, names: Names) {
  const source = c.computerSource;
  if (!source) return '—';
  if ('templateId' in source) return `template ${names.of('templates', source.templateId)}`;
  return html`a copy of <a href=${href('computers', source.computerId)}>${names.of('computers', source.computerId)}</a>`;
}

/** One computer: its fields, its set-up steps as they happen, its metrics, and what can be done to it. */
export function ComputerDetail({ id }: { id: string }) {
  const computer = useResource(() => must(api.GET('/api/v0/computers/{computerId}', { params: { path: { computerId: id } } })), [id]);
  const names = useNames(['serviceAccounts', 'computers', 'templates']);
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [notice, setNotice] = useState<string>();
  // The poll interval is asked for on each tick: read the latest data, not the first render's.
  const latest = useRef(computer.data);
  latest.current = computer.data;

  useEffect(
    () =>
      follow({
        path: `/api/v0/computers/${encodeURIComponent(id)}/events`,
        refresh: computer.reload,
        pollEvery: () =>
          latest.current?.status === 'provisioning' || latest.current?.operation || latest.current?.provisioningSteps?.some((s) => !FINISHED.has(s.status))
            ? 1000
            : 5000,
        onMode: setMode,
        onEvent(event) {
          if (event.type === 'computer.step' && event.data.step) {
            const step = event.data.step as Step;
            computer.set((c) => {
              if (!c) return c;
              const steps = c.provisioningSteps ?? [];
              const known = steps.some((s) => s.id === step.id);
              const merged = { ...steps.find((s) => s.id === step.id), ...Object.fromEntries(Object.entries(step).filter(([, v]) => v !== null)) } as Step;
              return { ...c, provisioningSteps: known ? steps.map((s) => (s.id === step.id ? merged : s)) : [...steps, merged] };
            });
          } else if (event.type === 'computer.status' && typeof event.data.status === 'string') {
            computer.set((c) => (c ? { ...c, status: event.data.status as Computer['status'] } : c));
            void computer.reload();
          } else if (event.type === 'computer.power' && typeof event.data.powerState === 'string') {
            computer.set((c) => (c ? { ...c, powerState: event.data.powerState as Computer['powerState'] } : c));
          } else {
            void computer.reload();
          }
        },
      }),
    [id],
  );

  // The commit an update moves to: its template's current version.
  const templateId =
    computer.data?.updateAvailable && computer.data.computerSource && 'templateId' in computer.data.computerSource
      ? computer.data.computerSource.templateId
      : undefined;
  const target = useResource(
    async () =>
      templateId ? (await must(api.GET('/api/v0/computer-templates/{templateId}', { params: { path: { templateId } } }))).currentVersion : undefined,
    [templateId],
  );

  const action = useAction(async (what: 'restart' | 'refresh' | 'install-deps' | 'update') => {
    const params = { params: { path: { computerId: id } } };
    if (what === 'update') {
      const started = await must(api.POST('/api/v0/computers/{computerId}/update', params));
      computer.set(() => started);
      setNotice(`Update to ${short(target.data?.commit ?? '')} started.`);
      return;
    }
    if (what === 'restart') await must(api.POST('/api/v0/computers/{computerId}/restart', params));
    if (what === 'refresh') await must(api.POST('/api/v0/computers/{computerId}/refresh', params));
    if (what === 'install-deps') await must(api.POST('/api/v0/computers/{computerId}/install-deps', params));
    setNotice({ restart: 'Restart requested.', refresh: 'Credentials and environment refreshed.', 'install-deps': 'Dependency installation started.' }[what]);
    await computer.reload();
  });
  const remove = useAction(async () => {
    await must(api.DELETE('/api/v0/computers/{computerId}', { params: { path: { computerId: id } } }));
    navigate(href('computers'));
  });

  const c = computer.data;
  if (!c) return computer.error ? html`<${PageHeader} title="Computer" /><${ErrorBox} error=${computer.error} />` : html`<${Loading} />`;
  const steps = c.provisioningSteps ?? [];
  const done = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
  return html`
    <${PageHeader} title=${c.name}>
      <${LiveIndicator} mode=${mode} />
      ${
        c.deletedAt
          ? null
          : html`
            <button type="button" disabled=${action.busy} onClick=${() => action.run('restart')}>Restart</button>
            <button type="button" disabled=${action.busy} onClick=${() => action.run('refresh')}>Refresh</button>
            <button type="button" disabled=${action.busy} onClick=${() => action.run('install-deps')}>Install dependencies</button>
            ${
              c.updateAvailable && target.data
                ? html`<button type="button" disabled=${action.busy || !!c.operation} onClick=${() => action.run('update')}>Update to ${short(target.data.commit)}</button>`
                : null
            }
            <a class="button" href=${`${href('sessions')}?computerId=${encodeURIComponent(c.id)}`}>Sessions</a>
            <${ConfirmButton}
              label="Delete"
              danger
              question=${
                c.providerType === 'byom'
                  ? `Delete ${c.name}? Its registration is removed; the machine and its files stay as they are.`
                  : `Delete ${c.name}? Its sandbox and everything on it are torn down, its sessions archived. This cannot be undone.`
              }
              confirmLabel=${`Delete ${c.name}`}
              onConfirm=${() => remove.run()}
            />
          `
      }
    <//>
    <${ErrorBox} error=${computer.error} />
    <${ErrorBox} error=${action.error} what="The action failed" />
    <${ErrorBox} error=${remove.error} what="Not deleted" />
    <${Notice} text=${notice} />
    <dl class="fields">
      <dt>Status</dt><dd>${c.deletedAt ? html`<${Badge} value="deleted" /> ${dateTime(c.deletedAt)}` : html`<${Badge} value=${c.status} />`}</dd>
      <dt>Provider</dt><dd>${c.providerType}${c.powerState ? ` · ${c.powerState}` : ''}</dd>
      <dt>Id</dt><dd><code>${c.id}</code></dd>
      <dt>Host id</dt><dd>${c.hostId ?? html`<span class="muted">none: only a machine of your own (byom) reports the id of its host</span>`}</dd>
      <dt>Remote user</dt><dd>${c.remoteUser ?? '—'}</dd>
      <dt>Owner</dt><dd>${ownerOf(c, names)}</dd>
      <dt>Source</dt><dd>${sourceOf(c, names)}</dd>
      <dt>Program version</dt><dd>${c.templateVersion ? html`<code data-testid="template-version">${short(c.templateVersion.commit)}</code>` : '—'}</dd>
      <dt>Operation</dt><dd data-testid="operation">${c.operation ?? 'none'}${c.operationError ? html` · <span class="error-text" data-testid="operation-error">${c.operationError}</span>` : null}</dd>
      <dt>Created</dt><dd>${dateTime(c.createdAt)}</dd>
      <dt>Repositories</dt><dd>${c.clonedRepoDirectories.length ? c.clonedRepoDirectories.join(', ') : '—'}</dd>
    </dl>
    <section aria-labelledby="steps-title">
      <h2 id="steps-title">Set-up steps</h2>
      ${
        steps.length
          ? html`<${Progress} value=${done} max=${steps.length} label="Set-up progress" />
            <ol class="steps" aria-live="polite">
              ${steps.map(
                (s) => html`<li key=${s.id} class=${`step step-${s.status}`} data-step=${s.id}>
                  <${Badge} value=${s.status} />
                  <span class="step-name">${s.name}</span>
                  <span class="muted">${duration(s.startedAt, s.completedAt)}</span>
                  ${s.error ? html`<p class="step-error">${s.error}</p>` : null}
                </li>`,
              )}
            </ol>`
          : html`<${Empty} title="No set-up steps"><p>This computer was registered ready to use.</p><//>`
      }
    </section>
    ${c.status === 'active' && !c.deletedAt ? html`<${Metrics} id=${id} />` : null}
  `;
}

const gib = (n: number) => Math.round((n / 2 ** 30) * 100) / 100;

function Metrics({ id }: { id: string }) {
  const since = useMemo(() => new Date(Date.now() - 3_600_000).toISOString(), [id]);
  const metrics = useResource(
    () => must(api.GET('/api/v0/computers/{computerId}/metrics', { params: { path: { computerId: id }, query: { start: since } } })),
    [id],
  );
  useEffect(() => {
    const t = setInterval(() => void metrics.reload(), 30_000);
    return () => clearInterval(t);
  }, [id]);
  const samples = metrics.data ?? [];
  const x = useMemo(() => samples.map((s) => Date.parse(s.timestamp) / 1000), [samples]);
  const last = samples.at(-1);
  const range: [number, number] = [Date.parse(since) / 1000, Math.max(Date.parse(since) / 1000 + 3600, ...x)];
  return html`<section aria-labelledby="metrics-title">
    <h2 id="metrics-title">Metrics (last hour)</h2>
    <${ErrorBox} error=${metrics.error} />
    ${!metrics.data && !metrics.error ? html`<${Loading} label="Reading metrics…" />` : null}
    ${metrics.data && !samples.length ? html`<${Empty} title="No samples yet"><p>Samples appear once the computer has run for a minute.</p><//>` : null}
    ${
      samples.length
        ? html`<div class="charts">
          <${Chart} title=${`CPU (${last?.cpuCount ?? '?'} ${last?.cpuCount === 1 ? 'core' : 'cores'})`} range=${range} max=${100} unit="%" x=${x} series=${[{ label: 'CPU used %', values: samples.map((s) => s.cpuUsedPct) }]} />
          <${Chart}
            title=${`Memory (of ${bytes(last?.memTotal ?? 0)})`}
            range=${range}
            max=${last?.memTotal ? gib(last.memTotal) : undefined}
            unit=" GB"
            x=${x}
            series=${[{ label: 'Memory used GB', values: samples.map((s) => gib(s.memUsed)) }]}
          />
          <${Chart}
            title=${`Disk (of ${bytes(last?.diskTotal ?? 0)})`}
            range=${range}
            max=${last?.diskTotal ? gib(last.diskTotal) : undefined}
            unit=" GB"
            x=${x}
            series=${[{ label: 'Disk used GB', values: samples.map((s) => gib(s.diskUsed)) }]}
          />
        </div>`
        : null
    }
  </section>`;
}
