import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Badge, Empty, ErrorBox, FormToggle, LiveIndicator, Loading, PageHeader, Progress } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { follow, type LiveMode } from '../live.ts';
import { useNames } from '../names.ts';
import { href } from '../router.ts';
import type { PageProps } from '../sections.ts';
import { ComputerDetail, ownerOf } from './computer-detail.ts';
import { CreateComputer } from './computer-create.ts';

export type Computer = components['schemas']['Computer'];

export default function ComputersPage({ route }: PageProps) {
  if (route.path[1]) return html`<${ComputerDetail} id=${route.path[1]} />`;
  return html`<${ComputerList} />`;
}

function ComputerList() {
  const [unlisted, setUnlisted] = useState(false);
  const [deleted, setDeleted] = useState(false);
  const [status, setStatus] = useState('');
  const [text, setText] = useState('');
  const [creating, setCreating] = useState(false);
  const [data, setData] = useState<Computer[]>();
  const [error, setError] = useState<import('../api.ts').ApiProblem>();
  const names = useNames(['serviceAccounts']);

  const load = async () => {
    try {
      const body = await must(
        api.GET('/api/v0/computers', {
          params: {
            query: {
              includeProvisioningSteps: 'true',
              ...(unlisted ? { includeUnlisted: 'true' as const } : {}),
              ...(deleted ? { includeDeleted: 'true' as const } : {}),
            },
          },
        }),
      );
      setData(body.computers);
      setError(undefined);
    } catch (e) {
      setError(e as import('../api.ts').ApiProblem);
    }
  };
  // The organization's computer events (managers and owners, where the server streams them)
  // re-read the list; otherwise it is re-read every 15 s.
  const [mode, setMode] = useState<LiveMode>('connecting');
  useEffect(
    () =>
      follow({
        path: '/api/v0/events?types=computer.active,computer.error,computer.deleted',
        refresh: load,
        pollEvery: () => 15_000,
        onMode: setMode,
        onEvent: () => void load(),
      }),
    [unlisted, deleted],
  );
  // While something is being set up, the list re-reads itself every 2 s (the steps are not
  // organization events); each computer's own page follows its steps live.
  const provisioning = data?.some((c) => c.status === 'provisioning' && !c.deletedAt);
  useEffect(() => {
    if (!provisioning) return;
    const t = setInterval(() => void load(), 2000);
    return () => clearInterval(t);
  }, [provisioning, unlisted, deleted]);

  const shown = (data ?? []).filter(
    (c) => (!status || c.status === status) && (!text || c.name.toLowerCase().includes(text.toLowerCase()) || c.id.includes(text)),
  );
  return html`
    <${PageHeader} title="Computers">
      <${LiveIndicator} mode=${mode} />
      <${FormToggle} open=${creating} set=${setCreating} label="New computer" />
    <//>
    ${
      creating
        ? html`<${CreateComputer}
          computers=${data ?? []}
          onCreated=${() => {
            setCreating(false);
            void load();
          }}
        />`
        : null
    }
    <form class="filters" role="search" aria-label="Filter computers" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>Name or id <input type="search" value=${text} onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} /></label>
      <label
        >Status
        <select value=${status} onChange=${(e: Event) => setStatus((e.target as HTMLSelectElement).value)}>
          <option value="">any</option>
          <option>provisioning</option>
          <option>active</option>
          <option>error</option>
        </select>
      </label>
      <label class="check"><input type="checkbox" checked=${unlisted} onChange=${() => setUnlisted(!unlisted)} /> Unlisted</label>
      <label class="check"><input type="checkbox" checked=${deleted} onChange=${() => setDeleted(!deleted)} /> Deleted</label>
    </form>
    <${ErrorBox} error=${error} />
    ${
      data === undefined && !error
        ? html`<${Loading} />`
        : data && shown.length === 0
          ? html`<${Empty} title=${data.length ? 'No computer matches these filters' : 'No computers yet'}>
            <p>
              ${
                data.length
                  ? 'Clear the filters to see every computer.'
                  : 'Create a managed computer, or register a machine of your own (provider "byom") with "New computer".'
              }
            </p>
          <//>`
          : data
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Computers">
              <table>
                <caption class="sr-only">Computers</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Status</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Set-up</th>
                    <th scope="col">Owner</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  ${shown.map((c) => {
                    const steps = c.provisioningSteps ?? [];
                    const done = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
                    return html`<tr key=${c.id}>
                      <th scope="row"><a href=${href('computers', c.id)}>${c.name}</a>${c.isListed ? '' : html` <span class="muted">(unlisted)</span>`}</th>
                      <td>${c.deletedAt ? html`<${Badge} value="deleted" />` : html`<${Badge} value=${c.status} />`}</td>
                      <td>${c.providerType}${c.templateVersion ? html` <code>${c.templateVersion.commit.slice(0, 12)}</code>` : null}${c.updateAvailable ? html` <${Badge} value="update available" />` : null}</td>
                      <td>${steps.length ? html`<${Progress} value=${done} max=${steps.length} label=${`Set-up steps of ${c.name}`} />` : '—'}</td>
                      <td>${ownerOf(c, names)}</td>
                      <td>${dateTime(c.createdAt)}</td>
                    </tr>`;
                  })}
                </tbody>
              </table>
            </div>`
            : null
    }
  `;
}
