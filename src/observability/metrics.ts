import type { Registry } from 'prom-client';

/**
 * agentplane's Prometheus series: defined here only, recorded through the narrow functions below.
 * Off (every function a no-op, prom-client not even loaded) until `enableMetrics` runs, which
 * the composition root does when AGENTPLANE_METRICS_PORT is set. Labels are bounded: route
 * templates, job kinds, providers, step ids, model ids, tool names and outcomes; never an id.
 */

/** Every series this process exports (the dashboard test checks its queries name only these). */
export const METRIC_NAMES = [
  'agentplane_http_requests_total',
  'agentplane_http_request_duration_seconds',
  'agentplane_jobs_total',
  'agentplane_job_duration_seconds',
  'agentplane_job_queue_depth',
  'agentplane_provisioning_step_duration_seconds',
  'agentplane_pulumi_operation_duration_seconds',
  'agentplane_warm_pool_computers',
  'agentplane_computers',
  'agentplane_turns_active',
  'agentplane_turn_duration_seconds',
  'agentplane_model_call_duration_seconds',
  'agentplane_model_tokens_total',
  'agentplane_model_errors_total',
  'agentplane_tool_call_duration_seconds',
  'agentplane_relay_tunnels',
  'agentplane_relay_sessions_open',
  'agentplane_sse_clients',
  'agentplane_webhook_deliveries_total',
  'agentplane_db_pool_connections',
] as const;

/** Sizes read at scrape time (a relay's tunnels and sessions), registered by what holds them. */
const samplers = { relayTunnels: new Set<() => number>(), relaySessions: new Set<() => number>() };
const sum = (reads: Set<() => number>) => [...reads].reduce((n, read) => n + read(), 0);

/** Reports `read()` as the series of `what` (summed over everything registered); returns the unregistration. */
export function sampleGauge(what: keyof typeof samplers, read: () => number): () => void {
  samplers[what].add(read);
  return () => samplers[what].delete(read);
}

// Seconds: most requests and tool calls take milliseconds; jobs, steps and turns take minutes.
const FAST = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SLOW = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

function define(p: typeof import('prom-client'), registry: Registry) {
  const registers = [registry];
  const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
    new p.Histogram<L>({ name, help, labelNames, buckets, registers });
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) => new p.Counter<L>({ name, help, labelNames, registers });
  return {
    httpRequests: counter('agentplane_http_requests_total', 'HTTP requests answered, by method, route template and status.', ['method', 'route', 'status']),
    httpDuration: histogram(
      'agentplane_http_request_duration_seconds',
      'Time from a request arriving to its response finishing, by method, route template and status.',
      ['method', 'route', 'status'],
      FAST,
    ),
    jobs: counter('agentplane_jobs_total', 'Job runs ended, by kind and outcome (completed, failed: retried or not, invalid: a payload that never parses).', [
      'kind',
      'outcome',
    ]),
    jobDuration: histogram('agentplane_job_duration_seconds', 'Time a job run took, by kind and outcome.', ['kind', 'outcome'], SLOW),
    stepDuration: histogram(
      'agentplane_provisioning_step_duration_seconds',
      "Time a computer's provisioning step took in one run, by provider, step and outcome.",
      ['provider', 'step', 'outcome'],
      SLOW,
    ),
    pulumiDuration: histogram(
      'agentplane_pulumi_operation_duration_seconds',
      "Time one Pulumi operation on a computer's stack took, by provider, operation (up, destroy) and outcome.",
      ['provider', 'operation', 'outcome'],
      SLOW,
    ),
    turnsActive: new p.Gauge({ name: 'agentplane_turns_active', help: 'Agent turns running in this process.', registers }),
    turnDuration: histogram(
      'agentplane_turn_duration_seconds',
      'Time an agent turn ran (until it ended or paused for approval), by model and stop reason.',
      ['model', 'outcome'],
      SLOW,
    ),
    modelDuration: histogram(
      'agentplane_model_call_duration_seconds',
      'Time one model call took, streaming included, by model and outcome.',
      ['model', 'outcome'],
      SLOW,
    ),
    modelTokens: counter(
      'agentplane_model_tokens_total',
      'Tokens model calls read and wrote, by model and direction (input, output, cache_read, cache_write).',
      ['model', 'direction'],
    ),
    modelErrors: counter('agentplane_model_errors_total', 'Model calls that failed, by model.', ['model']),
    toolDuration: new p.Histogram({
      name: 'agentplane_tool_call_duration_seconds',
      help: 'Time one tool call took on its computer, by tool and outcome (ok, error).',
      labelNames: ['tool', 'outcome'],
      buckets: FAST.concat([30, 60, 300]),
      registers,
    }),
    relayTunnels: new p.Gauge({
      name: 'agentplane_relay_tunnels',
      help: "Agents' tunnels this replica holds.",
      registers,
      collect() {
        this.set(sum(samplers.relayTunnels));
      },
    }),
    relaySessions: new p.Gauge({
      name: 'agentplane_relay_sessions_open',
      help: "People's relay sessions (ssh, port-forward) open on this replica.",
      registers,
      collect() {
        this.set(sum(samplers.relaySessions));
      },
    }),
    sseClients: new p.Gauge({ name: 'agentplane_sse_clients', help: 'Event-stream (SSE) clients connected to this replica.', registers }),
    webhookDeliveries: counter('agentplane_webhook_deliveries_total', 'Webhook delivery attempts, by outcome (delivered, failed).', ['outcome']),
  };
}

type Defined = ReturnType<typeof define>;

let m: (Defined & { registry: Registry; p: typeof import('prom-client') }) | undefined;

/** Loads prom-client and defines the series, with Node's process metrics (once per process). */
export async function enableMetrics(): Promise<Registry> {
  if (m) return m.registry;
  const p = await import('prom-client');
  const registry = new p.Registry();
  p.collectDefaultMetrics({ register: registry });
  m = { ...define(p, registry), registry, p };
  return registry;
}

/** What a scrape reads at that moment (the database's counts, the job queue's depth), set by the composition root. */
export interface ScrapeSources {
  /** Non-deleted computers by provider, status, whether a warm pool holds them and whether from a template. */
  computers(): Promise<{ provider: string; status: string; pooled: boolean; template: boolean; count: number }[]>;
  /** Jobs per kind: queued (ready and deferred), active. */
  queues(): Promise<{ kind: string; queued: number; active: number; deferred: number }[]>;
  /** The database pool (PostgreSQL): connections open, idle, and requests waiting for one. */
  pool?(): { total: number; idle: number; waiting: number };
}

/** Gauges read at scrape time from `sources`: computers, warm pools, queue depth, database pool. */
export function collectOnScrape(sources: ScrapeSources): void {
  if (!m) return;
  const { p, registry } = m;
  const registers = [registry];
  const once = (name: string) => registry.getSingleMetric(name) !== undefined;
  if (once('agentplane_computers')) return;
  new p.Gauge({
    name: 'agentplane_computers',
    help: "Computers (not deleted) by provider and status, warm pools' included.",
    labelNames: ['provider', 'status'],
    registers,
    async collect() {
      this.reset();
      for (const c of await sources.computers()) this.inc({ provider: c.provider, status: c.status }, c.count);
    },
  });
  new p.Gauge({
    name: 'agentplane_warm_pool_computers',
    help: "Warm pools' unclaimed computers by provider, pool (default: the provider's plain pool; template: templates' pools) and state (ready, provisioning, error).",
    labelNames: ['provider', 'pool', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const c of await sources.computers()) {
        if (!c.pooled) continue;
        const state = c.status === 'active' ? 'ready' : c.status;
        this.inc({ provider: c.provider, pool: c.template ? 'template' : 'default', state }, c.count);
      }
    },
  });
  new p.Gauge({
    name: 'agentplane_job_queue_depth',
    help: 'Jobs waiting or running, by kind and state (queued: ready now, deferred: due later, active).',
    labelNames: ['kind', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const q of await sources.queues()) {
        this.set({ kind: q.kind, state: 'queued' }, Math.max(0, q.queued - q.deferred));
        this.set({ kind: q.kind, state: 'deferred' }, q.deferred);
        this.set({ kind: q.kind, state: 'active' }, q.active);
      }
    },
  });
  const pool = sources.pool;
  if (pool) {
    new p.Gauge({
      name: 'agentplane_db_pool_connections',
      help: "The database pool's connections by state (open, idle) and requests waiting for one (waiting).",
      labelNames: ['state'],
      registers,
      collect() {
        const s = pool();
        this.set({ state: 'open' }, s.total);
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
  }
}

/** The exposition text and its content type, for GET /metrics. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  if (!m) return { contentType: 'text/plain; version=0.0.4', text: '' };
  return { contentType: m.registry.contentType, text: await m.registry.metrics() };
}

/** Whether metrics are on (AGENTPLANE_METRICS_PORT): callers with per-call set-up skip it when they are off. */
export const metricsOn = (): boolean => m !== undefined;

// The recording functions: each a no-op while metrics are off.

export function recordHttpRequest(method: string, route: string, status: number, seconds: number): void {
  if (!m) return;
  const labels = { method, route, status: String(status) };
  m.httpRequests.inc(labels);
  m.httpDuration.observe(labels, seconds);
}

export function recordJob(kind: string, outcome: 'completed' | 'failed' | 'invalid', seconds: number): void {
  if (!m) return;
  m.jobs.inc({ kind, outcome });
  m.jobDuration.observe({ kind, outcome }, seconds);
}

export function recordStep(provider: string, step: string, outcome: string, seconds: number): void {
  m?.stepDuration.observe({ provider, step, outcome }, seconds);
}

export function recordPulumi(provider: string, operation: string, outcome: 'ok' | 'error', seconds: number): void {
  m?.pulumiDuration.observe({ provider, operation, outcome }, seconds);
}

/** A turn began: returns what to call when it ends. */
export function turnStarted(model: string): (outcome: string) => void {
  if (!m) return () => {};
  const started = performance.now();
  const own = m;
  own.turnsActive.inc();
  return (outcome) => {
    own.turnsActive.dec();
    own.turnDuration.observe({ model, outcome }, (performance.now() - started) / 1000);
  };
}

export function recordModelCall(model: string, outcome: 'ok' | 'error' | 'interrupted', seconds: number): void {
  if (!m) return;
  m.modelDuration.observe({ model, outcome }, seconds);
  if (outcome === 'error') m.modelErrors.inc({ model });
}

export function recordTokens(model: string, usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number }): void {
  if (!m) return;
  m.modelTokens.inc({ model, direction: 'input' }, usage.inputTokens);
  m.modelTokens.inc({ model, direction: 'output' }, usage.outputTokens);
  if (usage.cacheReadTokens) m.modelTokens.inc({ model, direction: 'cache_read' }, usage.cacheReadTokens);
  if (usage.cacheWriteTokens) m.modelTokens.inc({ model, direction: 'cache_write' }, usage.cacheWriteTokens);
}

export function recordToolCall(tool: string, outcome: 'ok' | 'error', seconds: number): void {
  m?.toolDuration.observe({ tool, outcome }, seconds);
}

/** +1 when an event stream opens, -1 when it closes. */
export function countSseClient(delta: 1 | -1): void {
  m?.sseClients.inc(delta);
}

export function recordWebhookDelivery(outcome: 'delivered' | 'failed'): void {
  m?.webhookDeliveries.inc({ outcome });
}
