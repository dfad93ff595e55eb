import { chmodSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { axeViolations, chromiumMissing, launchChromium, screenshot } from '../support/browser.ts';
import { hostTraces, localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { machineMissing, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { waitFor } from '../support/wait.ts';

const missing = chromiumMissing() ?? machineMissing;
// Locally a missing part skips; in CI it must fail, so the tests still run there and say why.
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the console e2e tests: ${missing}`);
const localMissing = await localProviderMissing();
const skipLocal = localMissing !== undefined && process.env.CI !== 'true';
if (!skip && skipLocal) console.warn(`skipping the console's managed-computer test: ${localMissing}`);

const PROVISION_MS = 90_000;

/**
 * The web console in a real Chromium against a real server (its worker, a real sshd machine, a
 * scripted model, and the local provider when this host has it): what a person sees and does.
 */
describe.skipIf(skip)('the web console in Chromium', { timeout: 180_000 }, () => {
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let byomId: string;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    const local: Record<string, string> = skipLocal ? {} : { AGENTPLANE_LOCAL_PROVIDER: 'true', AGENTPLANE_COMPUTER_CPUS: '0.5', AGENTPLANE_COMPUTER_MEMORY_MIB: '256' };
    api = await startTestApi('pglite', { worker: true, env: { ...ALLOW_LOOPBACK, ...local } });
    // Local computers' homes live under the data directory; their users must be able to reach them.
    if (!skipLocal) chmodSync(api.dataDir, 0o711);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (api && !skipLocal) {
      const live = await api.db.prisma.computer.findMany({ where: { deletedAt: null, providerType: 'local' } });
      await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`, { as: api.acme.members.owner.apiKey })));
      await waitFor('every teardown to finish', async () => (await api.db.prisma.computer.count({ where: { operation: 'teardown' } })) === 0, PROVISION_MS, 250).catch(
        (err: unknown) => console.error(err),
      );
      for (const { id } of await api.db.prisma.computer.findMany({ where: { providerType: 'local' }, select: { id: true } })) {
        if (hostTraces(api.dataDir, id).length > 0) removeLocalComputer(api.dataDir, id);
      }
    }
    await api?.close();
    await model?.close();
    await machine?.stop();
    models?.dispose();
  });

  /** A page signed in with `key`, showing the computers page. */
  async function signedIn(key: string, options: Parameters<typeof browser.newPage>[0] = {}): Promise<Page> {
    const page = await browser.newPage(options);
    await page.goto(api.url);
    await page.getByLabel('API key or JWT access token').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Computers' }).waitFor();
    return page;
  }

  async function expectAccessible(page: Page, what: string) {
    const violations = await axeViolations(page);
    expect(violations, `${what}: ${JSON.stringify(violations, null, 1)}`).toEqual([]);
  }

  it('is served at / beside the API: sign-in refuses a bad key with the API’s detail, then accepts a good one', async () => {
    const shell = await fetch(`${api.url}/`, { headers: { 'accept-encoding': 'br' } });
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-encoding')).toBe('br');
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'");
    // API paths keep precedence, and an unknown path is still the API's 404 body.
    expect((await fetch(`${api.url}/api/v0/openapi.json`)).headers.get('content-type')).toContain('application/json');
    const unknown = await fetch(`${api.url}/console/../package.json`);
    expect(unknown.status).toBe(404);

    const page = await browser.newPage();
    await page.goto(api.url);
    await expectAccessible(page, 'sign-in');
    await page.getByLabel('API key or JWT access token').fill(api.acme.members.user.apiKey.slice(0, -6) + 'zzzzzz');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/401 Unauthorized.*The API key is not valid/);
    await screenshot(page, 'sign-in-refused');
    await page.getByLabel('API key or JWT access token').fill(api.acme.members.user.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Computers' }).waitFor();
    expect(page.url()).not.toContain('apk_');
    expect(await page.evaluate(() => sessionStorage.getItem('agentplane.credential'))).toBe(api.acme.members.user.apiKey);
    await page.getByText('No computers yet').waitFor();
    await expectAccessible(page, 'empty computers page');
    await screenshot(page, 'computers-empty');
    await page.context().close();
  });

  it('registers a byom machine and shows it active', async () => {
    const page = await signedIn(api.acme.members.user.apiKey);
    await page.getByRole('button', { name: 'New computer' }).click();
    await page.getByLabel('Name', { exact: true }).fill('console-byom');
    await page.getByLabel('Provider').selectOption('byom');
    await page.getByLabel('Host').fill(machine.sshd.host);
    await page.getByLabel('SSH port').fill(String(machine.sshd.port));
    await page.getByLabel('Remote user').fill(machine.sshd.username);
    // The form shows the organization's key to authorize on the machine, as a user would copy it.
    machine.sshd.authorizeKey((await page.getByTestId('org-ssh-key').textContent())!);
    await expectAccessible(page, 'create computer form');
    await screenshot(page, 'computers-create-byom');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'console-byom' }).waitFor();
    byomId = decodeURIComponent(page.url().split('#/computers/')[1]!);
    await expect.poll(() => page.locator('.fields dd').first().textContent()).toContain('active');
    expect((await api.call('GET', `/api/v0/computers/${byomId}`, { as: api.acme.members.user.apiKey })).body.status).toBe('active');
    await expectAccessible(page, 'computer page');
    await screenshot(page, 'computer-byom');
    await page.goto(`${api.url}/#/computers`);
    await page.getByRole('link', { name: 'console-byom' }).waitFor();
    await screenshot(page, 'computers-list');
    await page.context().close();
  });

  it.skipIf(skipLocal)('creates a managed computer and shows its set-up steps complete', async () => {
    const page = await signedIn(api.acme.members.user.apiKey);
    await page.getByRole('button', { name: 'New computer' }).click();
    await page.getByLabel('Name', { exact: true }).fill('console-managed');
    await page.getByLabel('Provider').selectOption('local');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'console-managed' }).waitFor();
    // Steps appear while it is set up, and each one completes.
    await page.locator('li.step').first().waitFor();
    await expect
      .poll(() => page.locator('.fields dd').first().textContent(), { timeout: PROVISION_MS, interval: 500 })
      .toContain('active');
    await expect.poll(async () => {
      const classes = await page.locator('li.step').evaluateAll((lis) => lis.map((li) => li.className));
      return classes.length > 0 && classes.every((c) => /step-(completed|skipped)/.test(c));
    }, { timeout: 15_000 }).toBe(true);
    await screenshot(page, 'computer-managed-active');
    await page.context().close();
  });

  it('runs a session with the scripted model and shows the reply', async () => {
    model.enqueue({ text: 'Hello from the scripted model: the repository looks tidy.' });
    const page = await signedIn(api.acme.members.user.apiKey);
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByText('No sessions yet').waitFor();
    await screenshot(page, 'sessions-empty');
    await page.getByRole('button', { name: 'New session' }).click();
    await page.getByLabel('Computer').selectOption({ label: 'console-byom' });
    await page.getByLabel('Model').fill('coder');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.getByLabel('Message').waitFor();
    await page.getByLabel('Message').fill('How does the repository look?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Hello from the scripted model: the repository looks tidy.').waitFor({ timeout: 30_000 });
    await page.locator('[data-role="user"]').getByText('How does the repository look?').waitFor();
    await expect.poll(() => page.getByTestId('credits').textContent(), { timeout: 15_000 }).not.toBe('0');
    await expectAccessible(page, 'session page');
    await screenshot(page, 'session-transcript');
    await page.context().close();
  });
});
