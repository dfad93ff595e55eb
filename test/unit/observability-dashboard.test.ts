import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { collectOnScrape, enableMetrics, METRIC_NAMES } from '../../src/observability/metrics.ts';

/**
 * The Grafana dashboard names only series agentplane exports, and every series the code defines is
 * in METRIC_NAMES. (The e2e test runs each of its queries through a real Prometheus.)
 */
const dashboard = JSON.parse(readFileSync(new URL('../../docs/dashboards/agentplane.json', import.meta.url), 'utf8'));
const targets: { expr: string }[] = dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => p.targets ?? []);

/** The series a query names: a histogram's _bucket, _count and _sum are its own. */
const seriesOf = (expr: string) => [...expr.matchAll(/\bagentplane_[a-z_]+/g)].map(([name]) => name.replace(/_(bucket|count|sum)$/, ''));

describe('the Grafana dashboard', () => {
  it('imports with a Prometheus data source chosen at import, and has the panels the README promises', () => {
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(dashboard.uid).toBe('agentplane-overview');
    const titles = dashboard.panels.map((p: { title: string }) => p.title).join('\n');
    for (const words of [
      'Requests per second',
      'Request latency',
      'Queue depth',
      'Provisioning step',
      'Warm pools',
      'Active turns',
      'Model call latency',
      'Model tokens',
    ]) {
      expect(titles).toContain(words);
    }
    for (const p of dashboard.panels.filter((p: { type: string }) => p.type !== 'row')) {
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      expect(p.targets.length).toBeGreaterThan(0);
    }
  });

  it('queries only the series agentplane exports, each with balanced brackets and quotes', () => {
    expect(targets.length).toBeGreaterThan(20);
    const exported = new Set<string>(METRIC_NAMES);
    for (const { expr } of targets) {
      const named = seriesOf(expr);
      expect(named.length, expr).toBeGreaterThan(0);
      for (const name of named) expect(exported.has(name), `${name} in ${expr}`).toBe(true);
      let depth = 0;
      for (const ch of expr.replace(/"[^"]*"/g, '""')) {
        depth += '([{'.includes(ch) ? 1 : ')]}'.includes(ch) ? -1 : 0;
        expect(depth, expr).toBeGreaterThanOrEqual(0);
      }
      expect(depth, expr).toBe(0);
      expect((expr.match(/"/g) ?? []).length % 2, expr).toBe(0);
    }
  });

  it('uses every exported series somewhere', () => {
    const used = new Set(targets.flatMap(({ expr }) => seriesOf(expr)));
    expect(METRIC_NAMES.filter((name) => !used.has(name))).toEqual([]);
  });
});

describe('METRIC_NAMES', () => {
  it('lists exactly the series the code registers, with Prometheus naming', async () => {
    const registry = await enableMetrics();
    collectOnScrape({ computers: async () => [], queues: async () => [], pool: () => ({ total: 0, idle: 0, waiting: 0 }) });
    const ours = (await registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith('agentplane_'));
    expect(ours.sort()).toEqual([...METRIC_NAMES].sort());
    for (const m of await registry.getMetricsAsJSON()) {
      if (!m.name.startsWith('agentplane_')) continue;
      if (String(m.type) === 'counter') expect(m.name).toMatch(/_total$/);
      if (String(m.type) === 'histogram') expect(m.name).toMatch(/_seconds$/);
      // Bounded labels: never an id.
      for (const v of m.values) for (const label of Object.keys(v.labels)) expect(label).not.toMatch(/id$/i);
    }
  });
});
