import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT } from './server-process.ts';

/** Debian's Chromium (`apt-get install chromium`); nothing downloads a browser. */
const CHROMIUM = process.env.AGENTPLANE_CHROMIUM ?? '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  return fs.existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
}

/** Where the e2e run writes its screenshots (git-ignored), for a reviewer to look at. */
const SCREENSHOTS = path.join(REPO_ROOT, 'test-results', 'console');

/**
 * Headless Chromium with the flags this machine needs: no sandbox (root), no GPU, and none of
 * the background connections a closed network refuses. A fresh profile each time.
 */
export async function launchChromium(): Promise<{
  newPage(options?: { width?: number; height?: number; dark?: boolean }): Promise<Page>;
  close(): Promise<void>;
}> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-chromium-'));
  const contexts: BrowserContext[] = [];
  // One persistent context per page: each page is its own browser "tab session", as a second user's would be.
  const open = async (options: { width?: number; height?: number; dark?: boolean } = {}) => {
    const dir = fs.mkdtempSync(path.join(profile, 'ctx-'));
    const context = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
      colorScheme: options.dark ? 'dark' : 'light',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    contexts.push(context);
    return context.pages()[0] ?? (await context.newPage());
  };
  return {
    newPage: open,
    async close() {
      await Promise.all(contexts.map((c) => c.close().catch(() => {})));
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core (WCAG 2 A and AA rules) on the page as it is, and answers its violations. */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol: the console's Content-Security-Policy refuses inline scripts.
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    // The page's globals, typed without the DOM library (this file is compiled for Node).
    const g = globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> }; document: unknown };
    const result = await g.axe.run(g.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
}

export async function screenshot(page: Page, name: string) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
