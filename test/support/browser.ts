import fs from 'node:fs';
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
 * the background connections a closed network refuses. One browser process for the caller;
 * each page in a fresh context of its own (its own cookies, storage and cache, as a second
 * user's tab would be), which opens in a fraction of a browser's start.
 */
export async function launchChromium(): Promise<{
  newPage(options?: { width?: number; height?: number; dark?: boolean }): Promise<Page>;
  close(): Promise<void>;
}> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
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
  const contexts: BrowserContext[] = [];
  const open = async (options: { width?: number; height?: number; dark?: boolean } = {}) => {
    const context = await browser.newContext({
      viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
      colorScheme: options.dark ? 'dark' : 'light',
    });
    contexts.push(context);
    return context.newPage();
  };
  return {
    newPage: open,
    async close() {
      await Promise.all(contexts.map((c) => c.close().catch(() => {})));
      await browser.close();
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
