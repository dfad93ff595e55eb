import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { chromiumMissing, launchChromium, screenshot } from '../support/browser.ts';
import { expectAccessible, LAYOUTS, signInConsole, useLayout } from '../support/console-page.ts';
import { giteaBinDir, giteaMissing, mergeWhenReady, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';

const bin = giteaBinDir();
const missing = chromiumMissing() ?? giteaMissing();
const skip = skipWithout("the console's CI-automation tests", missing);

const CI_WORKFLOW = 'name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo test\n';

/**
 * The console's CI-automation page in a real Chromium against a real server and a real Gitea:
 * a forge connected through the page, a scan listing its repositories' workflows, an automation
 * created as a pull request on Gitea, merged, changed and deleted by pull request, with its jobs.
 */
describe.skipIf(skip)('the console’s CI automations in Chromium against Gitea', { timeout: 240_000 }, () => {
  let gitea: Gitea;
  let alice: GiteaUser;
  let api: TestApi;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  const pulls = async (repo: string) => (await gitea.api('GET', `/repos/${repo}/pulls?state=all&limit=50`)).body as any[];

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    gitea = await startGitea(bin!);
    alice = await gitea.createUser('alice');
    await gitea.createRepo(alice, { name: 'app', files: { '.github/workflows/ci.yml': CI_WORKFLOW } });
    await gitea.createRepo(alice, { name: 'site', private: true });
    api = await startTestApi('pglite', { env: ALLOW_LOOPBACK, worker: true });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await gitea?.stop();
  });

  /** Tabs a test opened: closed after it even when it fails, so a failure leaves no browser busy for the next test. */
  const opened: Page[] = [];
  afterEach(async () => {
    await Promise.all(
      opened.splice(0).map((p) =>
        p
          .context()
          .close()
          .catch(() => {}),
      ),
    );
  });
  async function openPage(key: string): Promise<Page> {
    const page = await signInConsole(browser, api.url, key, '#/automations');
    opened.push(page);
    await page.getByRole('heading', { level: 1, name: 'CI automations' }).waitFor();
    // The section is in the navigation (folded behind "Menu" on a phone).
    expect(await page.locator('nav#nav a[href="#/automations"]').count()).toBe(1);
    return page;
  }

  it('says what to do before a forge is connected, and a member’s connect is refused with the API’s detail', async () => {
    const page = await openPage(api.acme.members.owner.apiKey);
    for (const layout of LAYOUTS) {
      await useLayout(page, layout);
      await page.getByText('No forge connected').waitFor();
      await page.getByText('No jobs yet').waitFor();
      await expectAccessible(page, `automations, nothing connected, ${layout.name}`);
      await screenshot(page, `automations-empty-${layout.name}`);
    }
    await page.context().close();
    const member = await openPage(api.acme.members.user.apiKey);
    await member.getByRole('button', { name: 'Connect a forge' }).click();
    await member.getByRole('combobox', { name: 'Forge', exact: true }).selectOption('gitea');
    await member.getByLabel('Forge URL').fill(gitea.url);
    await member.getByLabel('Access token').fill(alice.token);
    await member.getByRole('button', { name: 'Connect', exact: true }).click();
    await expect.poll(() => member.getByRole('alert').textContent()).toMatch(/Not connected: 403 Forbidden/);
    expect(await api.db.prisma.sourceControlIntegration.count({ where: { organizationId: api.acme.id } })).toBe(0);
    await member.context().close();
  });

  it('connects Gitea through the page (a refused token says why), scans its repositories, creates an automation as a pull request, changes and deletes it', async () => {
    const page = await openPage(api.acme.members.owner.apiKey);
    await page.getByRole('button', { name: 'Connect a forge' }).click();
    await page.getByRole('combobox', { name: 'Forge', exact: true }).selectOption('gitea');
    await page.getByLabel('Forge URL').fill(gitea.url);
    await page.getByLabel('Access token').fill('not-a-real-token-0000');
    await expectAccessible(page, 'connect form');
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/Not connected: 400 Bad Request.*refused the token \(401\)/);
    expect(await api.db.prisma.sourceControlIntegration.count({ where: { organizationId: api.acme.id } })).toBe(0);
    await page.getByLabel('Access token').fill(alice.token);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    const connections = page.getByRole('region', { name: 'Forge connections', exact: true });
    await connections
      .getByRole('row')
      .filter({ hasText: `gitea · ${gitea.url}` })
      .waitFor();
    expect(await connections.getByRole('row').filter({ hasText: 'alice' }).locator('code').textContent()).toBe(`••••••••${alice.token.slice(-4)}`);
    const stored = await api.db.prisma.sourceControlIntegration.findFirstOrThrow({ where: { organizationId: api.acme.id } });
    expect(stored).toMatchObject({ provider: 'gitea', login: 'alice' });

    // The scan: every repository the connection can write to, and the workflows on their default branches.
    const workflows = page.getByRole('region', { name: 'Workflows found' });
    await workflows.getByRole('row').filter({ hasText: 'alice/app' }).waitFor();
    expect(await workflows.getByRole('row').filter({ hasText: 'alice/app' }).textContent()).toContain('.github/workflows/ci.yml');
    await page.getByText(/2 repositories scanned/).waitFor();
    await expectAccessible(page, 'automations with a scan');
    await screenshot(page, 'automations-scan');

    // Create: a pull request on Gitea, linked from the page and from the job.
    await page.getByRole('button', { name: 'New automation' }).click();
    await page.getByLabel('Mode').selectOption('code-review');
    await page.getByRole('checkbox', { name: 'alice/app' }).check();
    await page.getByLabel('Name', { exact: true }).fill('Review bot');
    await expectAccessible(page, 'new automation form');
    await page.getByRole('button', { name: 'Create: open pull requests' }).click();
    const created = page.getByRole('status', { name: 'Automation created' });
    await created.waitFor({ timeout: 60_000 });
    const prLink = created.getByRole('link', { name: 'Opened pull request #1' });
    expect(await prLink.getAttribute('href')).toBe(`${gitea.url}/alice/app/pulls/1`);
    const [pr] = await pulls('alice/app');
    expect(pr).toMatchObject({ number: 1, state: 'open', title: 'Add the agentplane code review workflow (Review bot)' });
    const jobs = page.getByRole('region', { name: 'Jobs', exact: true });
    await jobs.getByRole('row').filter({ hasText: 'Review bot' }).waitFor();
    expect(await jobs.getByRole('row').filter({ hasText: 'Review bot' }).getByRole('link').getAttribute('href')).toBe(`${gitea.url}/alice/app/pulls/1`);
    expect(await api.db.prisma.ciJob.count({ where: { organizationId: api.acme.id, kind: 'edit', action: 'create', status: 'succeeded' } })).toBe(1);
    await screenshot(page, 'automations-created');

    // Merged on Gitea as a person would; the next scan finds the automation's workflow.
    expect(await mergeWhenReady(gitea, 'alice/app', 1, alice)).toBe(200);
    await page.getByRole('button', { name: 'Scan again' }).click();
    const row = workflows.getByRole('row').filter({ hasText: 'agentplane-review-bot.yml' });
    await row.waitFor();
    expect(await row.textContent()).toContain('code-review');

    // Change it by pull request (a bad schedule is refused with the API's detail first).
    await row.getByRole('button', { name: /^Edit / }).click();
    const edit = page.getByRole('form', { name: /^Edit / });
    await edit.getByLabel('Schedule (cron, UTC)').fill('61 * * * *');
    await edit.getByRole('button', { name: 'Propose the change' }).click();
    await expect.poll(() => edit.getByRole('alert').textContent()).toMatch(/Not changed: 400 Bad Request.*not a 5-field cron expression/);
    await edit.getByLabel('Schedule (cron, UTC)').fill('');
    await edit.getByLabel('Name', { exact: true }).fill('Review bot, strict');
    await edit.getByRole('button', { name: 'Propose the change' }).click();
    const changed = page.getByRole('status', { name: 'Change proposed' });
    await changed.waitFor({ timeout: 60_000 });
    expect(await changed.getByRole('link').getAttribute('href')).toBe(`${gitea.url}/alice/app/pulls/2`);
    expect((await pulls('alice/app')).find((p) => p.number === 2).title).toMatch(/^Update the agentplane code review workflow/);

    // Delete: a pull request that removes the file.
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    const deleted = page.getByRole('status', { name: 'Deletion proposed' });
    await deleted.waitFor({ timeout: 60_000 });
    expect(await deleted.getByRole('link').getAttribute('href')).toBe(`${gitea.url}/alice/app/pulls/3`);
    const removal = (await pulls('alice/app')).find((p) => p.number === 3);
    expect(removal.title).toMatch(/^Remove the agentplane code review workflow/);
    const files = (await gitea.api('GET', '/repos/alice/app/pulls/3/files')).body as any[];
    expect(files.map((f) => [f.filename, f.status])).toEqual([['.github/workflows/agentplane-review-bot.yml', 'deleted']]);
    await jobs
      .getByRole('row')
      .filter({ hasText: /^delete/ })
      .waitFor();
    await expectAccessible(page, 'automations after a deletion');
    await screenshot(page, 'automations-deleted');

    // Removing the connection.
    await connections.getByRole('button', { name: 'Delete' }).click();
    await connections.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No forge connected').waitFor();
    expect(await api.db.prisma.sourceControlIntegration.count({ where: { organizationId: api.acme.id } })).toBe(0);
    await page.context().close();
  });
});
