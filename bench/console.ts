/**
 * Web console benchmark: what a first visit costs and how soon the computers page is on screen,
 * in Debian's Chromium against the real app on PGlite (in this process) with 50 computers. Run
 * on demand:
 *
 *   node bench/console.ts              # 5 runs, each in a fresh browser profile (cold cache)
 *   BENCH_RUNS=3 node bench/console.ts
 *
 * Figures (medians of the runs):
 * - shell: bytes transferred (compressed, headers included) until the sign-in form is rendered,
 *   and the same for the signed-in computers page (its page module, the client and API answers).
 *   Goal: the shell under 300 KB.
 * - a wiki page of text only (the wiki page module, marked and DOMPurify, from a cold cache after
 *   the shell) and then one with a Mermaid diagram and a TypeScript block (what loading Mermaid and
 *   highlight.js adds): what the lazy loading keeps out of the shell.
 * - time from navigation to the rendered computers table (its 50th row in the DOM, by the page's
 *   own clock; the wall clock from Playwright's goto, browser overhead included, beside it),
 *   with the credential in session storage
 *   (as after sign-in): cold (empty cache) and warm (a reload: the browser revalidates, 304s).
 *   Goal: under 1 s. Baseline beside it: the API call the page makes, `GET /api/v0/computers`,
 *   from Node.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bootstrapOrganization } from '../src/modules/organization/bootstrap.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { chromiumMissing, launchChromium } from '../test/support/browser.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const COMPUTERS = 50;

const missing = chromiumMissing();
if (missing) throw new Error(missing);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Sums what the page's responses put on the wire (compressed bodies and headers) while `during` runs. */
async function transferred(page: Page, during: () => Promise<void>): Promise<{ bytes: number; requests: number }> {
  const sizes: Promise<number>[] = [];
  const onFinished = (request: import('playwright-core').Request) =>
    sizes.push(
      request
        .sizes()
        .then((s) => s.responseBodySize + s.responseHeadersSize)
        .catch(() => 0),
    );
  page.on('requestfinished', onFinished);
  await during();
  page.off('requestfinished', onFinished);
  const all = await Promise.all(sizes);
  return { bytes: all.reduce((a, b) => a + b, 0), requests: all.length };
}

const log = createLogger({ level: 'silent' });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-'));
const db = await openDatabase({ dataDir });
await migrateDatabase(db, log);
const boot = await bootstrapOrganization(db.prisma, { org: 'bench', email: 'owner@bench.test' }, systemClock);
const key = boot.apiKey!;
const owner = boot.userId;
const plane = await compose({
  config: loadConfig({ AGENTPLANE_DATA_DIR: dataDir }),
  db,
  log,
  overrides: { providers: createProviderRegistry([]), queue: { send: () => Promise.reject(new Error('the benchmarked pages send no jobs')) } },
});
await plane.start();
const { url } = await plane.listen(0, '127.0.0.1');
const api = { url };
await db.prisma.computer.createMany({
  data: Array.from({ length: COMPUTERS }, (_, i) => ({
    id: newId('cmp'),
    organizationId: boot.organizationId,
    ownerKind: 'human',
    ownerId: owner,
    name: `bench-${String(i).padStart(2, '0')}`,
    providerType: 'byom',
    status: 'active' as const,
    remoteUser: 'dev',
    createdBy: owner,
  })),
});

const wikiRun = await fetch(`${api.url}/api/v0/wiki`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    repoUrl: 'https://example.com/bench/app',
    pages: [
      { path: 'plain', title: 'Plain', markdown: '# Plain\n\nText only, with a [link](diagram.md) and a list:\n\n- one\n- two\n' },
      {
        path: 'diagram',
        title: 'Diagram',
        markdown:
          '# Diagram\n\n```mermaid\nflowchart LR\n  a["apps/api"] --> b["packages/ssh"]\n  b --> c["ssh2"]\n```\n\n```ts\nexport const answer: number = 42;\n```\n',
      },
    ],
  }),
}).then((r) => r.json() as Promise<{ wikiRunId: string }>);

const shell: number[] = [];
const wikiPlain: number[] = [];
const wikiDiagram: number[] = [];
const shellRequests: number[] = [];
const signedIn: number[] = [];
const cold: number[] = [];
const warm: number[] = [];
const coldInPage: number[] = [];
const warmInPage: number[] = [];
const apiCall: number[] = [];
for (let run = 0; run < RUNS; run++) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const first = await transferred(page, async () => {
      await page.goto(api.url);
      await page.getByLabel('API key or JWT access token').waitFor();
    });
    shell.push(first.bytes);
    shellRequests.push(first.requests);
    const afterSignIn = await transferred(page, async () => {
      await page.getByLabel('API key or JWT access token').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'bench-49' }).waitFor();
    });
    signedIn.push(afterSignIn.bytes);
    await page.context().close();

    // Time to the rendered computers page, with the credential already in the tab (a fresh profile: cold cache).
    const timed = await browser.newPage();
    await timed.addInitScript((value) => {
      sessionStorage.setItem('agentplane.credential', value);
      // Notes, from the page itself, when the table's last row is on screen (ms since navigation start).
      const g = globalThis as unknown as {
        document: { querySelector(s: string): unknown };
        MutationObserver: new (cb: () => void) => { observe(n: unknown, o: unknown): void; disconnect(): void };
        __rendered?: number;
      };
      const observer = new g.MutationObserver(() => {
        if (g.__rendered === undefined && g.document.querySelector('tbody tr:nth-child(50) a')) {
          g.__rendered = performance.now();
          observer.disconnect();
        }
      });
      observer.observe(g.document, { childList: true, subtree: true });
    }, key);
    let t0 = performance.now();
    await timed.goto(`${api.url}/#/computers`);
    await timed.getByRole('link', { name: 'bench-49' }).waitFor();
    cold.push(performance.now() - t0);
    coldInPage.push(await timed.evaluate(() => (globalThis as unknown as { __rendered: number }).__rendered));
    t0 = performance.now();
    await timed.reload();
    await timed.getByRole('link', { name: 'bench-49' }).waitFor();
    warm.push(performance.now() - t0);
    warmInPage.push(await timed.evaluate(() => (globalThis as unknown as { __rendered: number }).__rendered));
    await timed.context().close();

    // The wiki: a text page after the shell (cold), then a page with a diagram and code.
    const wiki = await browser.newPage();
    await wiki.addInitScript((value) => sessionStorage.setItem('agentplane.credential', value), key);
    await wiki.goto(`${api.url}/#/computers`);
    await wiki.getByRole('link', { name: 'bench-49' }).waitFor();
    wikiPlain.push(
      (
        await transferred(wiki, async () => {
          await wiki.goto(`${api.url}/#/wiki/${wikiRun.wikiRunId}/plain`);
          await wiki.getByTestId('wiki-markdown').locator('li').first().waitFor();
        })
      ).bytes,
    );
    wikiDiagram.push(
      (
        await transferred(wiki, async () => {
          await wiki.getByRole('navigation', { name: 'Pages of the wiki' }).getByRole('link', { name: 'Diagram' }).click();
          await wiki.locator('figure.diagram svg').waitFor({ timeout: 60_000 });
          await wiki.locator('code.hljs').waitFor();
        })
      ).bytes,
    );
    await wiki.context().close();

    t0 = performance.now();
    const res = await fetch(`${api.url}/api/v0/computers?includeProvisioningSteps=true`, { headers: { authorization: `Bearer ${key}` } });
    await res.json();
    apiCall.push(performance.now() - t0);
  } finally {
    await browser.close();
  }
}
await plane.stop();
await db.close();
fs.rmSync(dataDir, { recursive: true, force: true });

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const ms = (n: number) => `${n.toFixed(0)} ms`;
console.log(`web console, ${RUNS} runs (medians), ${COMPUTERS} computers, Chromium ${process.env.AGENTPLANE_CHROMIUM ?? '/usr/bin/chromium'}`);
console.log(`  first load, shell to the sign-in form   ${kb(median(shell)).padStart(10)} in ${median(shellRequests)} requests   goal < 300 KB`);
console.log(`  sign-in to the computers table          ${kb(median(signedIn)).padStart(10)}`);
console.log(`  wiki page, text only (after the shell)  ${kb(median(wikiPlain)).padStart(10)}   page module, marked, DOMPurify, API answers`);
console.log(`  then a page with Mermaid + TS code      ${kb(median(wikiDiagram)).padStart(10)}   Mermaid's modules, highlight.js core and one grammar`);
console.log(
  `  rendered computers page, cold cache     ${ms(median(coldInPage)).padStart(10)} from navigation start (page's clock), ${ms(median(cold))} wall clock from goto   goal < 1 s`,
);
console.log(
  `  rendered computers page, reload (304s)  ${ms(median(warmInPage)).padStart(10)} from navigation start (page's clock), ${ms(median(warm))} wall clock from goto`,
);
console.log(`  baseline: GET /api/v0/computers (Node)  ${ms(median(apiCall)).padStart(10)}`);
