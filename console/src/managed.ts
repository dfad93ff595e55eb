import type { components } from '../../clients/typescript/src/index.ts';
import { api, must } from './api.ts';
import { html } from './html.ts';
import { useResource } from './resource.ts';

type Managed = components['schemas']['ConfigManagedResource'];

/**
 * What config manages (GET /api/v0/config/managed), for pages to mark: `find(kind, idOrKey)` is
 * the object's record (matched by its id, or by what identifies it: an email, a host, a URL).
 */
export function useManaged() {
  const managed = useResource(async () => (await must(api.GET('/api/v0/config/managed'))).resources, []);
  return {
    find: (kind: string, ...ids: (string | undefined)[]) =>
      managed.data?.find((m) => m.kind === kind && ids.some((id) => id && (m.resourceId === id || m.key === id))),
  };
}

const sourceLabel = (m: Managed) => (m.source.repository ? `${m.source.repository} (${m.source.branch}, ${m.source.path})` : 'config apply requests (API)');

/** "Managed by config": its source and file; a change made here is drift from what they declare. */
export function ManagedMark({ of }: { of?: Managed }) {
  if (!of) return null;
  return html`<div class="managed-mark" title="Changes made here are drift from the declared configuration">
    Managed by config · <a href="#/configuration">${sourceLabel(of)}</a>${of.file ? html` · <code>${of.file}</code>` : null}
  </div>`;
}
