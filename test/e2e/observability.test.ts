import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../src/observability/metrics.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { launchChromium } from '../support/browser.ts';
import { freePort } from '../support/http.ts';
import { localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { machineMissing, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Metrics and traces through real parts: Debian's Prometheus scrapes a running server's
 * AGENTPLANE_METRICS_PORT and Jaeger (scripts/jaeger-toolchain.sh) receives its OTLP, while the
 * server runs a session turn on a byom computer (scripted model, real sshd) and provisions a
 * `local` managed computer (Pulumi). One server, one Prometheus, one Jaeger for the file.
 */

const PROMETHEUS = '/usr/bin/prometheus';
const JAEGER = path.join(process.env.AGENTPLANE_JAEGER_HOME ?? path.join(os.homedir(), '.cache/agentplane/jaeger'), '1.76.0/bin/jaeger');
const missing =
  (existsSync(PROMETHEUS) ? undefined : `${PROMETHEUS} (apt-get install prometheus)`) ??
  (existsSync(JAEGER) ? undefined : `${JAEGER} (bash scripts/jaeger-toolchain.sh)`) ??
  machineMissing ??
  (await localProviderMissing());
const skip = skipWithout('the observability tests', missing);

const PROVISION_MS = 120_000;

interface Part {
  url: string;
  stop(): Promise<void>;
}

/** Starts `cmd` and waits until `ready` answers; its output is kept for the failure message. */
async function startPart(name: string, cmd: string, args: string[], url: string, ready: string): Promise<Part & { proc: ChildProcess }> {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  proc.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  await waitFor(
    () => `${name} to answer at ${url}${ready}: ${output}`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}: ${output}`);
      return (await fetch(`${url}${ready}`).catch(() => undefined))?.ok;
    },
    30_000,
    100,
  );
  return {
    proc,
    url,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function startPrometheus(dir: string, target: string): Promise<Part> {
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: {scrape_interval: 1s, evaluation_interval: 1s}',
      'scrape_configs:',
      '  - job_name: agentplane',
      `    static_configs: [{targets: ['${target}']}]`,
      '',
    ].join('\n'),
  );
  const url = `http://127.0.0.1:${port}`;
  const part = await startPart(
    'prometheus',
    PROMETHEUS,
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    url,
    '/-/ready',
  );
  return part;
}

/** Jaeger v2 all-in-one with in-memory storage: OTLP/HTTP in, the query API out, each on a free port. */
async function startJaeger(dir: string): Promise<Part & { otlp: string }> {
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'jaeger.yaml');
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
extensions:
  jaeger_query:
    storage: {traces: memstore}
    http: {endpoint: "127.0.0.1:${query}"}
    grpc: {endpoint: "127.0.0.1:${grpc}"}
  jaeger_storage:
    backends:
      memstore: {memory: {max_traces: 10000}}
receivers:
  otlp:
    protocols:
      http: {endpoint: "127.0.0.1:${otlp}"}
processors:
  batch: {timeout: 200ms}
exporters:
  jaeger_storage_exporter: {trace_storage: memstore}
`,
  );
  const part = await startPart('jaeger', JAEGER, ['--config', `file:${config}`], `http://127.0.0.1:${query}`, '/api/services');
  return { ...part, otlp: `http://127.0.0.1:${otlp}` };
}

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  processID: string;
}

/** Runs in the page: one uPlot chart per panel, under its row's heading. */
const DRAW = `function () {
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const root = document.getElementById('d');
  let grid;
  for (const p of DATA) {
    if (p.row) {
      root.insertAdjacentHTML('beforeend', '<h2>' + p.row + '</h2><div class=grid></div>');
      grid = root.lastElementChild;
      continue;
    }
    const box = document.createElement('div');
    box.className = 'p';
    box.innerHTML = '<div class=t>' + p.title + ' <small>(' + p.unit + ')</small></div>';
    grid.append(box);
    // The busiest series, as a legend's top entries would be.
    const shown = [...p.series].sort((a, b) => b.max - a.max).slice(0, 6);
    if (shown.length === 0) {
      box.insertAdjacentHTML('beforeend', '<div class=none>no series in this run</div>');
      continue;
    }
    const xs = [...new Set(shown.flatMap((s) => s.values.map((v) => v[0])))].sort((a, b) => a - b);
    const cols = shown.map((s) => {
      const at = new Map(s.values.map((v) => [v[0], v[1]]));
      return xs.map((x) => (at.has(x) ? at.get(x) : null));
    });
    new uPlot(
      { width: 490, height: 170, legend: { live: false }, series: [{}, ...shown.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length], width: 1.5, spanGaps: true }))], axes: [{}, { size: 60 }] },
      [xs, ...cols],
      box,
    );
  }
}`;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe.skipIf(skip)('metrics and traces through Prometheus and Jaeger', () => {
  let dir: string;
  let prometheus: Part;
  let jaeger: Part & { otlp: string };
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let user: string;
  let managedId: string | undefined;
  const secretWords = () => [user, model.apiKey, api.acme.members.owner.apiKey, 'TOPSECRET-PROMPT', 'TOPSECRET-COMMAND'];
  const turnTrace = hex(16);
  const provisionTrace = hex(16);
  const callerSpan = hex(8);

  /** A PromQL query through Prometheus's HTTP API: its result vector, or the error Prometheus answered. */
  const promQuery = async (query: string) => {
    const res = await fetch(`${prometheus.url}/api/v1/query?${new URLSearchParams({ query })}`);
    return (await res.json()) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  };
  /** Waits until `query` answers a series for which `want` holds; returns the vector. */
  const untilSeries = (query: string, want: (r: { metric: Record<string, string>; value: number }[]) => boolean, timeoutMs = 30_000) =>
    waitFor(
      `Prometheus to answer ${query}`,
      async () => {
        const r = (await promQuery(query)).data.result.map((x) => ({ metric: x.metric, value: Number(x.value[1]) }));
        return want(r) && r;
      },
      timeoutMs,
      250,
    );
  type JaegerTrace = { spans: JaegerSpan[]; processes: Record<string, { serviceName: string }> };
  const traceOf = async (id: string): Promise<JaegerTrace | undefined> => {
    const res = await fetch(`${jaeger.url}/api/traces/${id}`);
    return res.ok ? ((await res.json()) as { data: JaegerTrace[] }).data[0] : undefined;
  };

  let startedAt = 0;

  beforeAll(async () => {
    startedAt = Date.now() / 1000;
    dir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-observability-'));
    const metricsPort = await freePort();
    [jaeger, machine, model] = await Promise.all([startJaeger(dir), startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi('pglite', {
      worker: true,
      env: {
        ...ALLOW_LOOPBACK,
        AGENTPLANE_LOCAL_PROVIDER: 'true',
        AGENTPLANE_METRICS_PORT: String(metricsPort),
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlp,
      },
    });
    prometheus = await startPrometheus(dir, `127.0.0.1:${metricsPort}`);
    user = api.acme.members.user.apiKey;
  }, 120_000);

  afterAll(async () => {
    if (managedId) {
      await api?.call('DELETE', `/api/v0/computers/${managedId}`, { as: user });
      await waitFor(
        'the managed computer torn down',
        async () => {
          const list = await api.call('GET', '/api/v0/computers?includeDeleted=true&includeProvisioningSteps=true', { as: user });
          const c = list.body.computers.find((x: { id: string }) => x.id === managedId);
          return !c || c.provisioningSteps.some((s: { id: string; status: string }) => s.id === 'teardown' && ['completed', 'failed'].includes(s.status));
        },
        PROVISION_MS,
        250,
      ).catch(() => removeLocalComputer(api.dataDir, managedId!));
    }
    await api?.close();
    await Promise.all([prometheus?.stop(), jaeger?.stop(), machine?.stop(), model?.close()]);
    models?.dispose();
    rmSync(dir, { recursive: true, force: true });
  }, PROVISION_MS + 30_000);

  it(
    'runs a session turn on a byom computer and provisions a local computer, each request carrying a traceparent',
    async () => {
      machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: user })).body.publicKey);
      const byom = await api.call('POST', '/api/v0/computers', {
        as: user,
        body: { name: 'observed-byom', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
      });
      expect(byom.status, byom.body.detail).toBe(201);
      const session = await api.call('POST', '/api/v0/sessions', {
        as: user,
        body: { computerId: byom.body.id, cwd: machine.scratch, sessionSettings: { model: 'coder', autonomyLevel: 'high' } },
      });
      expect(session.status, session.body.detail).toBe(201);
      model.enqueue({ toolCalls: [{ id: 'call_1', name: 'run_command', arguments: { command: 'echo TOPSECRET-COMMAND' } }] }, { text: 'Done.' });
      const traced = (trace: string) => ({
        authorization: `Bearer ${user}`,
        'content-type': 'application/json',
        traceparent: `00-${trace}-${callerSpan}-01`,
      });
      const sent = await fetch(`${api.url}/api/v0/sessions/${session.body.sessionId}/messages`, {
        method: 'POST',
        headers: traced(turnTrace),
        body: JSON.stringify({ text: 'TOPSECRET-PROMPT: say hi', waitForCompletion: true, waitTimeoutMs: 30_000 }),
      });
      expect(sent.status).toBe(200);
      expect(await sent.json()).toMatchObject({ status: 'idle' });

      const created = await fetch(`${api.url}/api/v0/computers`, {
        method: 'POST',
        headers: traced(provisionTrace),
        body: JSON.stringify({ name: 'observed-local', provider: 'local' }),
      });
      const body = (await created.json()) as { id: string; detail?: string };
      expect(created.status, body.detail).toBe(201);
      managedId = body.id;
      const computer = await waitFor(
        'the local computer to be active',
        async () => {
          const c = (await api.call('GET', `/api/v0/computers/${managedId}`, { as: user })).body;
          if (c.status === 'error') throw new Error(`provisioning failed: ${JSON.stringify(c)}`);
          return c.status === 'active' && c;
        },
        PROVISION_MS,
        250,
      );
      expect(computer.status).toBe('active');
      // A second turn once the first one's series exist, so rates have an increase to show.
      model.enqueue({ text: 'Again.' });
      const again = await api.call('POST', `/api/v0/sessions/${session.body.sessionId}/messages`, {
        as: user,
        body: { text: 'once more', waitForCompletion: true, waitTimeoutMs: 30_000 },
      });
      expect(again.body.status).toBe('idle');
    },
    PROVISION_MS + 60_000,
  );

  it('Prometheus scrapes the request, job, provisioning and model series the traffic made', async () => {
    expect((await untilSeries('up{job="agentplane"}', (r) => r[0]?.value === 1))[0]!.value).toBe(1);
    const posts = await untilSeries('sum by (route, status) (agentplane_http_requests_total{method="POST"})', (r) => r.length >= 3);
    expect(posts.map((p) => p.metric)).toEqual(
      expect.arrayContaining([
        { route: '/api/v0/computers', status: '201' },
        { route: '/api/v0/sessions', status: '201' },
        { route: '/api/v0/sessions/:sessionId/messages', status: '200' },
      ]),
    );
    const jobs = await untilSeries('sum by (kind, outcome) (agentplane_jobs_total)', (r) =>
      ['sessions.turn', 'computers.stack', 'computers.setup'].every((kind) => r.some((x) => x.metric.kind === kind && x.metric.outcome === 'completed')),
    );
    expect(jobs.filter((j) => j.metric.outcome !== 'completed')).toEqual([]);
    // The local computer's steps, each once: the stack's, then the set-up job's.
    const steps = await untilSeries('sum by (step, outcome) (agentplane_provisioning_step_duration_seconds_count{provider="local"})', (r) => r.length >= 3);
    expect(steps.map((s) => ({ ...s.metric, runs: s.value }))).toEqual(
      expect.arrayContaining(['create-infrastructure', 'connect', 'verify'].map((step) => ({ step, outcome: 'completed', runs: 1 }))),
    );
    await untilSeries('agentplane_pulumi_operation_duration_seconds_count{provider="local", operation="up", outcome="ok"}', (r) => r[0]?.value === 1);
    await untilSeries('agentplane_computers{provider="local", status="active"}', (r) => r[0]?.value === 1);
    await untilSeries('agentplane_model_call_duration_seconds_count{model="coder", outcome="ok"}', (r) => r[0]?.value === 3);
    await untilSeries('agentplane_model_tokens_total{model="coder", direction="input"}', (r) => (r[0]?.value ?? 0) > 0);
    await untilSeries('agentplane_tool_call_duration_seconds_count{tool="run_command", outcome="ok"}', (r) => r[0]?.value === 1);
    await untilSeries('agentplane_turn_duration_seconds_count{model="coder", outcome="end_turn"}', (r) => r[0]?.value === 2);
    await untilSeries('agentplane_turns_active', (r) => r[0]?.value === 0);
    await untilSeries('sum(agentplane_job_queue_depth)', (r) => r.length === 1);

    // Bounded labels: no value of any agentplane series is an id.
    const series = (await (await fetch(`${prometheus.url}/api/v1/series?${new URLSearchParams({ 'match[]': '{__name__=~"agentplane_.*"}' })}`)).json()) as {
      data: Record<string, string>[];
    };
    const names = new Set(series.data.map((s) => s.__name__!.replace(/_(bucket|count|sum)$/, '')));
    expect([...names].filter((n) => !(METRIC_NAMES as readonly string[]).includes(n))).toEqual([]);
    const values = series.data.flatMap((s) => Object.values(s));
    expect(values.filter((v) => /^(cmp|org|ses|usr|sa|msg)_/.test(v) || secretWords().some((w) => v.includes(w)))).toEqual([]);
  }, 60_000);

  it('every query of the Grafana dashboard runs on that Prometheus', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('../../docs/dashboards/agentplane.json', import.meta.url), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((t) => t.expr));
    const answers = await Promise.all(exprs.map(async (expr) => ({ expr, answer: await promQuery(expr) })));
    expect(answers.filter((a) => a.answer.status !== 'success').map((a) => `${a.expr}: ${a.answer.error}`)).toEqual([]);
    // And on real data: the request panel has series (a rate, once two scrapes hold the counters).
    expect((await untilSeries(exprs[0]!, (r) => r.length > 0)).length).toBeGreaterThan(0);
  });

  it.skipIf(!process.env.AGENTPLANE_DASHBOARD_PNG)(
    "draws the dashboard's panels from their queries over this run (the README's picture)",
    async () => {
      const dashboard = JSON.parse(readFileSync(new URL('../../docs/dashboards/agentplane.json', import.meta.url), 'utf8'));
      const end = Date.now() / 1000;
      const start = end - (end - startedAt);
      const panels = [];
      for (const p of dashboard.panels as {
        type: string;
        title: string;
        fieldConfig: { defaults: { unit: string } };
        targets: { expr: string; legendFormat: string }[];
      }[]) {
        if (p.type === 'row') {
          panels.push({ row: p.title });
          continue;
        }
        const series = [];
        for (const t of p.targets) {
          const q = new URLSearchParams({ query: t.expr, start: String(start), end: String(end), step: '2' });
          const answer = (await (await fetch(`${prometheus.url}/api/v1/query_range?${q}`)).json()) as {
            status: string;
            error?: string;
            data: { result: { metric: Record<string, string>; values: [number, string][] }[] };
          };
          expect(answer.status, `${t.expr}: ${answer.error}`).toBe('success');
          for (const r of answer.data.result) {
            // A quantile of no observations is NaN: a gap, as Grafana draws it.
            const values = r.values.map(([ts, v]) => [ts, Number.isFinite(Number(v)) ? Number(v) : null] as const);
            const max = Math.max(0, ...values.map(([, v]) => v ?? 0));
            series.push({ label: t.legendFormat.replace(/\{\{(\w+)\}\}/g, (_, k: string) => r.metric[k] ?? ''), values, max });
          }
        }
        panels.push({ title: p.title, unit: p.fieldConfig.defaults.unit, series });
      }
      // The request panel has this run's traffic.
      expect((panels[1] as { series: unknown[] }).series.length, JSON.stringify({ start, end })).toBeGreaterThan(0);
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ width: 1600, height: 1000 });
        const uplot = createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js');
        await page.setContent(
          `<html><head><style>${readFileSync(uplot.replace('uPlot.iife.min.js', 'uPlot.min.css'), 'utf8')}
        body{font:13px system-ui;margin:12px;background:#fff} h1{font-size:18px;margin:4px 0 8px} h2{font-size:14px;margin:14px 0 4px;border-bottom:1px solid #ddd}
        .grid{display:flex;flex-wrap:wrap;gap:8px} .p{border:1px solid #ddd;border-radius:4px;padding:4px;width:500px} .t{font-weight:600;margin:2px 4px}
        .none{height:150px;display:flex;align-items:center;justify-content:center;color:#888}</style></head>
        <body><h1>agentplane (docs/dashboards/agentplane.json): each panel's PromQL on Prometheus after this test's traffic, drawn with uPlot</h1><div id=d></div></body></html>`,
        );
        await page.addScriptTag({ path: uplot });
        await page.addScriptTag({ content: `const DATA = ${JSON.stringify(panels)};\n(${DRAW})();` });
        await page.screenshot({ path: process.env.AGENTPLANE_DASHBOARD_PNG!, fullPage: true });
      } finally {
        await browser.close();
      }
    },
    60_000,
  );

  it('Jaeger holds one trace from the create request through the jobs, the provisioning steps and the Pulumi run', async () => {
    const want = ['POST /api/v0/computers', 'job computers.stack', 'step create-infrastructure', 'pulumi up', 'job computers.setup', 'step connect'];
    const trace = await waitFor(
      'the provisioning trace in Jaeger',
      async () => {
        const t = await traceOf(provisionTrace);
        return t && want.every((op) => t.spans.some((s) => s.operationName === op)) && t;
      },
      30_000,
      250,
    );
    expect(Object.values(trace.processes).map((p) => p.serviceName)).toEqual(['agentplane']);
    const byName = (op: string) => trace.spans.find((s) => s.operationName === op)!;
    const parentOf = (s: JaegerSpan) => s.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
    // The request's span is the caller's child; each job, step and run hangs under what started it.
    expect(parentOf(byName('POST /api/v0/computers'))).toBe(callerSpan);
    expect(parentOf(byName('job computers.stack'))).toBe(byName('POST /api/v0/computers').spanID);
    expect(parentOf(byName('step create-infrastructure'))).toBe(byName('job computers.stack').spanID);
    expect(parentOf(byName('pulumi up'))).toBe(byName('step create-infrastructure').spanID);
    expect(parentOf(byName('job computers.setup'))).toBe(byName('step create-infrastructure').spanID);
    expect(parentOf(byName('step connect'))).toBe(byName('job computers.setup').spanID);
    expect(byName('pulumi up').tags).toEqual(expect.arrayContaining([{ key: 'agentplane.provider', type: 'string', value: 'local' }]));
  });

  it("Jaeger holds the turn's trace: the request, the turn job, its model calls and tool call; no secret or message in any attribute", async () => {
    const trace = await waitFor(
      'the turn trace in Jaeger',
      async () => {
        const t = await traceOf(turnTrace);
        return t && t.spans.filter((s) => s.operationName === 'model coder').length >= 2 && t.spans.some((s) => s.operationName === 'tool run_command') && t;
      },
      30_000,
      250,
    );
    const ops = trace.spans.map((s) => s.operationName);
    expect(ops).toEqual(expect.arrayContaining(['POST /api/v0/sessions/:sessionId/messages', 'job sessions.turn']));
    const job = trace.spans.find((s) => s.operationName === 'job sessions.turn')!;
    for (const s of trace.spans.filter((s) => s.operationName.startsWith('model ') || s.operationName.startsWith('tool '))) {
      expect(s.references[0]?.spanID).toBe(job.spanID);
    }
    const model = trace.spans.find((s) => s.operationName === 'model coder')!;
    expect(model.tags.map((t) => t.key)).toEqual(expect.arrayContaining(['gen_ai.request.model', 'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens']));
    const provisioning = await traceOf(provisionTrace);
    const tags = JSON.stringify([...trace.spans, ...(provisioning?.spans ?? [])].map((s) => s.tags));
    for (const word of secretWords()) expect(tags).not.toContain(word);
  });
});
