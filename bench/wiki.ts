/**
 * The figures of issue #16, on the embedded PGlite database, run on demand:
 *
 *   node bench/wiki.ts [--runs 3] [--queries 200]
 *
 * 1. Generation without a model of this project's own repository (HEAD of the working copy),
 *    cloned over HTTP from a local git server, beside `git clone --bare` of the same repository
 *    from the same server (the baseline). Goal: under 30 s on 2 cores.
 * 2. Search p50 over a 200-page run through HTTP, beside GET /healthz on the same server. Goal:
 *    under 20 ms.
 * 3. Export of the 200-page run (a streamed zip), beside fetching the same 200 pages one by one
 *    with GET .../pages/{pageId}, with the server's peak RSS growth during each. Goal: under 1 s,
 *    memory flat (growth well below the pages' size).
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { waitForRun } from '../test/support/wiki.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '3' }, queries: { type: 'string', default: '200' } } });
const RUNS = Number(args.runs);
const QUERIES = Number(args.queries);
const REPO = path.resolve(import.meta.dirname, '..');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/** Peak RSS growth of this process (which runs the server) while `fn` runs. */
async function peakRss<T>(fn: () => Promise<T>): Promise<{ value: T; growth: number }> {
  globalThis.gc?.();
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  try {
    const value = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { value, growth: peak - start };
  } finally {
    clearInterval(timer);
  }
}

/** Serves bare repositories under `dir` over git's dumb HTTP protocol, as the tests do. */
async function gitServer(dir: string) {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) return void res.writeHead(404).end();
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The real app and job worker on a fresh PGlite database, as `agentplane serve` runs them. */
async function startServer(dataDir: string) {
  const log = createLogger({ level: 'warn' });
  const db = await openDatabase({ dataDir: path.join(dataDir, 'pgdata') });
  await migrateDatabase(db, log);
  const config = loadConfig({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8', AGENTPLANE_LOCAL_PROVIDER: 'false' });
  const plane = await compose({ config, db, log, overrides: { work: true, schedules: false, providers: createProviderRegistry([]) } });
  await plane.start();
  const server = await plane.listen(0, '127.0.0.1');
  const org = await db.prisma.organization.create({ data: { id: newId('org'), name: 'bench' } });
  const user = await db.prisma.user.create({ data: { id: newId('usr'), email: 'user@bench.test' } });
  await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'user', status: 'active' } });
  const key = await issueApiKey(db.prisma, { organizationId: org.id, owner: { userId: user.id }, name: 'bench', now: new Date() });
  const call = async (method: string, p: string, o: { as?: string; body?: unknown } = {}) => {
    const res = await fetch(`${server.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${o.as}`, ...(o.body ? { 'content-type': 'application/json' } : {}) },
      body: o.body ? JSON.stringify(o.body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  return {
    url: server.url,
    key: key.value,
    call,
    close: async () => {
      await plane.stop(5_000);
      await db.close();
    },
  };
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-wiki-'));
const repos = path.join(root, 'repos');
fs.mkdirSync(repos);
const api = await startServer(path.join(root, 'data'));
const git = await gitServer(repos);
const key = api.key;
try {
  execFileSync('git', ['clone', '--quiet', '--bare', REPO, path.join(repos, 'agentplane.git')]);
  execFileSync('git', ['--git-dir', path.join(repos, 'agentplane.git'), 'update-server-info']);
  const url = `${git.url}/agentplane.git`;
  console.log(
    `repository: this project at ${execFileSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()}, ${execFileSync('git', ['-C', REPO, 'ls-files'], { encoding: 'utf8' }).split('\n').filter(Boolean).length} files`,
  );

  // 1. Generation against the clone alone.
  const clones: number[] = [];
  const generations: number[] = [];
  let generated: any;
  for (let i = 0; i < RUNS; i++) {
    const dir = path.join(root, `clone-${i}`);
    let t = performance.now();
    // Asynchronous: the git server answering this clone runs in this process.
    await promisify(execFile)('git', ['clone', '--quiet', '--bare', url, dir]);
    clones.push(performance.now() - t);
    fs.rmSync(dir, { recursive: true, force: true });
    t = performance.now();
    const created = await api.call('POST', '/api/v0/wiki', { as: key, body: { repoUrl: url } });
    generated = await waitForRun(api, created.body.wikiRunId, key, 120_000);
    generations.push(performance.now() - t);
    if (generated.status !== 'succeeded') throw new Error(`generation failed: ${generated.error}`);
  }
  console.log(`\n1. generation without a model (${generated.pageCount} pages; ${RUNS} runs, the later ones incremental: ${generated.pagesReused} reused)`);
  console.log(`   git clone --bare (baseline)   median ${ms(median(clones))}`);
  console.log(`   POST /wiki to succeeded       median ${ms(median(generations))}  first ${ms(generations[0]!)}  (goal < 30000 ms)`);

  // 2. A 200-page run: the generated pages plus pages holding source files, uploaded.
  const files = execFileSync('git', ['-C', REPO, 'ls-files', 'src'], { encoding: 'utf8' })
    .split('\n')
    .filter((f) => f.endsWith('.ts'))
    .slice(0, 199);
  const pages = [
    { path: 'source', title: 'Source files', markdown: files.map((f, i) => `- [${f}](f${i}.md)`).join('\n') },
    // Each page holds its file's text repeated to about 60 KB: 12 MB of Markdown, so export memory is measurable.
    ...files.map((f, i) => {
      const text = fs.readFileSync(path.join(REPO, f), 'utf8');
      return {
        path: `source/f${i}`,
        title: f,
        markdown: `# ${f}\n\n\`\`\`ts\n${text.repeat(Math.max(1, Math.ceil(60_000 / Math.max(1, text.length)))).slice(0, 60_000)}\n\`\`\`\n`,
      };
    }),
  ];
  const uploaded = await api.call('POST', '/api/v0/wiki', { as: key, body: { repoUrl: 'https://example.com/acme/bench.git', pages } });
  if (uploaded.status !== 200) throw new Error(`upload failed: ${JSON.stringify(uploaded.body)}`);
  const runId = uploaded.body.wikiRunId as string;
  const symbols = [
    ...new Set(
      files.flatMap((f) =>
        [...fs.readFileSync(path.join(REPO, f), 'utf8').matchAll(/export (?:async )?(?:function|class|interface|const|type) ([A-Za-z_]\w+)/g)].map(
          (m) => m[1]!,
        ),
      ),
    ),
  ];
  const words = ['ssh client', 'job queue', 'egress guard', '"api key"', 'provision*', 'pagination cursor'];
  const queries = Array.from({ length: QUERIES }, (_, i) => (i % 3 === 0 ? words[i % words.length]! : symbols[(i * 7) % symbols.length]!));
  const bytes = pages.reduce((s, p) => s + Buffer.byteLength(p.markdown), 0);
  const health: number[] = [];
  const search: number[] = [];
  for (const q of queries) {
    let t = performance.now();
    await fetch(`${api.url}/healthz`).then((r) => r.text());
    health.push(performance.now() - t);
    t = performance.now();
    const res = await fetch(`${api.url}/api/v0/wiki/${runId}/search?q=${encodeURIComponent(q)}`, { headers: { authorization: `Bearer ${key}` } });
    await res.text();
    search.push(performance.now() - t);
  }
  console.log(`\n2. search over a ${pages.length}-page run (${mib(bytes)} of Markdown), ${QUERIES} queries through HTTP`);
  console.log(`   GET /healthz (baseline)       p50 ${ms(median(health))}  p90 ${ms(p90(health))}`);
  console.log(`   GET .../search                p50 ${ms(median(search))}  p90 ${ms(p90(search))}  (goal p50 < 20 ms)`);

  // 3. Export against fetching the same pages one by one.
  const exports: number[] = [];
  const oneByOne: number[] = [];
  let exportGrowth = 0;
  let pagesGrowth = 0;
  let zipBytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const byPage = await peakRss(async () => {
      const t = performance.now();
      for (const p of pages)
        await (await fetch(`${api.url}/api/v0/wiki/${runId}/pages/${p.path.replace('/', '.')}`, { headers: { authorization: `Bearer ${key}` } })).text();
      return performance.now() - t;
    });
    oneByOne.push(byPage.value);
    pagesGrowth = Math.max(pagesGrowth, byPage.growth);
    const zip = await peakRss(async () => {
      const t = performance.now();
      const res = await fetch(`${api.url}/api/v0/wiki/${runId}/export`, { headers: { authorization: `Bearer ${key}` } });
      let size = 0;
      for await (const chunk of res.body!) size += (chunk as Uint8Array).length;
      zipBytes = size;
      return performance.now() - t;
    });
    exports.push(zip.value);
    exportGrowth = Math.max(exportGrowth, zip.growth);
  }
  console.log(`\n3. export of the ${pages.length}-page run (${mib(bytes)} of Markdown, zip ${mib(zipBytes)})`);
  console.log(`   GET each page (baseline)      median ${ms(median(oneByOne))}  peak RSS growth ${mib(pagesGrowth)}`);
  console.log(`   GET .../export (streamed zip) median ${ms(median(exports))}  peak RSS growth ${mib(exportGrowth)}  (goal < 1000 ms, flat memory)`);
} finally {
  await git.close();
  await api.close();
  fs.rmSync(root, { recursive: true, force: true });
}
