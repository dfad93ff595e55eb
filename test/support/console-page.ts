import type { Page, Request } from 'playwright-core';
import { expect } from 'vitest';
import { axeViolations, type launchChromium } from './browser.ts';

type Browser = Awaited<ReturnType<typeof launchChromium>>;

/** A new tab signed in to the console at `url` with `key` (as a person does it, on the sign-in form), then at `at` when given. */
export async function signInConsole(browser: Browser, url: string, key: string, at?: string, options: Parameters<Browser['newPage']>[0] = {}): Promise<Page> {
  const page = await browser.newPage(options);
  await openSignInForm(page, url);
  await page.getByLabel('API key or JWT access token').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Computers' }).waitFor();
  if (at !== undefined) await page.goto(`${url}/${at}`);
  return page;
}

/**
 * Opens the console at `url` until its sign-in form shows. A file of the console failing to load
 * leaves the shell unrendered: seen on a busy machine as net::ERR_NETWORK_CHANGED, which Chromium
 * reports when another test adds or removes a network interface (a local computer's veth). The
 * page is loaded again when that happens (after a short pause that grows with each attempt), not
 * after a timeout.
 */
async function openSignInForm(page: Page, url: string): Promise<void> {
  const failures: string[] = [];
  page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => r.status() >= 500 && failures.push(`${r.url()} ${r.status()}`));
  page.on('pageerror', (e) => failures.push(e.message));
  const form = page.getByLabel('API key or JWT access token');
  for (let attempt = 1; ; attempt++) {
    let onFailed!: (r: Request) => void;
    const failed = new Promise<string>((resolve) => {
      onFailed = (r) => r.url().startsWith(url) && resolve(`${r.url()} ${r.failure()?.errorText}`);
    });
    page.on('requestfailed', onFailed);
    let outcome: string | undefined;
    try {
      // A failed load of the document itself rejects here: the form never shows then either.
      const shown = page
        .goto(url)
        .then(() => form.waitFor({ timeout: 45_000 }))
        .then(
          () => undefined,
          (err: Error) => err.message.split('\n')[0]!,
        );
      outcome = await Promise.race([shown, failed]);
    } finally {
      page.off('requestfailed', onFailed);
    }
    if (outcome === undefined) return;
    if (attempt === 6) throw new Error(`the console's sign-in form did not show: ${outcome}; failures: ${failures.join('; ') || 'none'}`);
    console.warn(`the console's sign-in form did not show (${outcome}); loading it again`);
    // Interfaces come and go in bursts (a bulk of local computers): let one pass before loading again.
    await page.waitForTimeout(500 * attempt);
  }
}

/** The four ways each page is checked: 1280 px and a phone, light and dark. */
export const LAYOUTS = [
  { name: '1280px-light', width: 1280, height: 800, dark: false },
  { name: '1280px-dark', width: 1280, height: 800, dark: true },
  { name: 'phone-light', width: 390, height: 844, dark: false },
  { name: 'phone-dark', width: 390, height: 844, dark: true },
];

/** Puts the tab in `layout` (the console follows the system's colour scheme until the user picks one) and reloads it. */
export async function useLayout(page: Page, layout: (typeof LAYOUTS)[number]) {
  await page.setViewportSize({ width: layout.width, height: layout.height });
  await page.emulateMedia({ colorScheme: layout.dark ? 'dark' : 'light' });
  await page.reload();
  await expect.poll(() => page.locator('html').getAttribute('data-theme'), { timeout: 30_000 }).toBe(layout.dark ? 'dark' : 'light');
}

/** No WCAG 2.1 A/AA violation axe-core finds on the page as it is. */
export async function expectAccessible(page: Page, what: string) {
  const violations = await axeViolations(page);
  expect(violations, `${what}: ${JSON.stringify(violations, null, 1)}`).toEqual([]);
}
