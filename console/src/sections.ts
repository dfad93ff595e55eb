import type { VNode } from 'preact';
import { isoDay } from './format.ts';
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

const yesterday = () => isoDay(new Date(Date.now() - 86_400_000));

/**
 * Every page of the console, in navigation order. A new area (the wiki, CI automations) is one
 * entry here and one module in pages/.
 */
export const SECTIONS: Section[] = [
  { id: 'computers', label: 'Computers', group: 'Platform', probe: () => '/api/v0/computers', load: () => import('./pages/computers.ts') },
  { id: 'templates', label: 'Templates', group: 'Platform', probe: () => '/api/v0/computer-templates', load: () => import('./pages/templates.ts') },
  { id: 'sessions', label: 'Sessions', group: 'Platform', probe: () => '/api/v0/sessions?limit=1', load: () => import('./pages/sessions.ts') },
  {
    id: 'automations',
    label: 'CI automations',
    group: 'Platform',
    probe: () => '/api/v0/automations/ci/jobs?limit=1',
    load: () => import('./pages/automations.ts'),
  },
  { id: 'wiki', label: 'Wiki', group: 'Platform', probe: () => '/api/v0/wiki?limit=1', load: () => import('./pages/wiki.ts') },
  {
    id: 'configuration',
    label: 'Configuration',
    group: 'Platform',
    probe: () => '/api/v0/config/revisions?limit=1',
    load: () => import('./pages/configuration.ts'),
  },
  {
    id: 'service-accounts',
    label: 'Service accounts',
    group: 'Organization',
    probe: () => '/api/v0/service-accounts',
    load: () => import('./pages/service-accounts.ts'),
  },
  { id: 'members', label: 'Members', group: 'Organization', probe: () => '/api/v0/organization/users?limit=1', load: () => import('./pages/members.ts') },
  {
    id: 'limits',
    label: 'Credit limits',
    group: 'Organization',
    probe: () => '/api/v0/organization/usage/limits/global',
    load: () => import('./pages/limits.ts'),
  },
  {
    id: 'enterprise',
    label: 'Enterprise controls',
    group: 'Organization',
    probe: () => '/api/v0/organization/enterprise-controls/history?limit=1',
    load: () => import('./pages/enterprise.ts'),
  },
  {
    id: 'analytics',
    label: 'Analytics',
    group: 'Insights',
    probe: () => `/api/v1/analytics/activity?startDate=${yesterday()}&endDate=${yesterday()}`,
    load: () => import('./pages/analytics.ts'),
  },
  {
    id: 'readiness',
    label: 'Readiness',
    group: 'Insights',
    probe: () => '/api/organization/agent-readiness-reports?limit=1',
    load: () => import('./pages/readiness.ts'),
  },
];

/** Statuses by which the API withholds a section from the caller. */
export const DENIED = new Set([403, 404]);
