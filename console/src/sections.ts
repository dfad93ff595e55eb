import type { VNode } from 'preact';
import type { Route } from './router.ts';

export interface PageProps {
  route: Route;
}

export interface Section {
  id: string;
  label: string;
  group: 'Platform' | 'Organization' | 'Insights';
  /**
   * A cheap read the section's page makes anyway: a 403 or 404 from it means the API keeps the
   * section from this caller, and the section leaves the navigation. The console decides nothing
   * itself; a page opened by its address still shows the API's answer.
   */
  probe: () => string;
  load: () => Promise<{ default: (props: PageProps) => VNode | null }>;
}

/**
 * Every page of the console, in navigation order. A new area (the wiki, CI automations) is one
 * entry here and one module in pages/.
 */
export const SECTIONS: Section[] = [
  { id: 'computers', label: 'Computers', group: 'Platform', probe: () => '/api/v0/computers', load: () => import('./pages/computers.ts') },
  { id: 'templates', label: 'Templates', group: 'Platform', probe: () => '/api/v0/computer-templates', load: () => import('./pages/templates.ts') },
  { id: 'sessions', label: 'Sessions', group: 'Platform', probe: () => '/api/v0/sessions?limit=1', load: () => import('./pages/sessions.ts') },
];

/** Statuses by which the API withholds a section from the caller. */
export const DENIED = new Set([403, 404]);
