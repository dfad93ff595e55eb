import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { chromiumMissing, launchChromium, screenshot } from '../support/browser.ts';
import { expectAccessible, signInConsole } from '../support/console-page.ts';
import { hostTraces, localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';

const missing = chromiumMissing() ?? (await localProviderMissing());
const skip = skipWithout("the console's first-day test", missing);
/** Long enough to click through an approval on a loaded machine; the last step waits it out. */
const APPROVAL_SECONDS = 15;

/**
 * The first day of issue #34 in a real Chromium against one server (its worker, the scripted
 * model, one `local` computer): sign in, create the computer, start a session choosing a model
 * from the list with autonomy off, approve the agent's command in the transcript and see its
 * output and the answer, deny another, and leave one unanswered until it expires.
 */
describe.skipIf(skip)('the first day in the console', { timeout: 300_000 }, () => {
  let api: TestApi;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    model = await startModelServer();
    models = writeModelsFile([coderModel(model), { ...coderModel(model), id: 'coder-large', contextWindow: 400_000 }], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi('pglite', {
      worker: true,
      env: {
        ...ALLOW_LOOPBACK,
        AGENTPLANE_LOCAL_PROVIDER: 'true',
        AGENTPLANE_COMPUTER_CPUS: '0.5',
        AGENTPLANE_COMPUTER_MEMORY_MIB: '256',
        AGENTPLANE_APPROVAL_TIMEOUT_SECONDS: String(APPROVAL_SECONDS),
        AGENTPLANE_DEFAULT_MODEL: 'coder-large',
      },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (api) {
      const live = await api.db.prisma.computer.findMany({ where: { deletedAt: null, providerType: 'local' } });
      await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`, { as: api.acme.members.owner.apiKey })));
      await waitFor('the teardown', async () => (await api.db.prisma.computer.count({ where: { operation: 'teardown' } })) === 0, 90_000, 250).catch(
        (err: unknown) => console.error(err),
      );
      for (const { id } of await api.db.prisma.computer.findMany({ where: { providerType: 'local' }, select: { id: true } })) {
        if (hostTraces(api.dataDir, id).length > 0) removeLocalComputer(api.dataDir, id);
      }
    }
    await api?.close();
    await model?.close();
    models?.dispose();
  });

  it('gets a working agent session from the console, approving, denying and letting one expire', async () => {
    const page = await signInConsole(browser, api.url, api.acme.members.user.apiKey);
    await page.getByRole('button', { name: 'New computer' }).click();
    await page.getByLabel('Name', { exact: true }).fill('first-day');
    await page.getByLabel('Provider').selectOption('local');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'first-day' }).waitFor();
    await expect.poll(() => page.locator('.fields dd').first().textContent(), { timeout: 90_000, interval: 500 }).toContain('active');

    // The computer's own Sessions link opens the New session form with it chosen.
    await page.locator('#main').getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('heading', { name: 'New session' }).waitFor();
    await expect.poll(() => page.getByLabel('Computer').locator('option:checked').textContent()).toBe('first-day');
    // The list offers the deployment's models with its default chosen; the person picks another.
    const picker = page.getByLabel('Model');
    await expect.poll(() => picker.inputValue()).toBe('coder-large');
    expect(await picker.locator('option').allTextContents()).toEqual([
      'coder (openai-compatible, 128,000 tokens)',
      'coder-large (openai-compatible, 400,000 tokens) — default',
    ]);
    await picker.selectOption('coder');
    await page.getByLabel(/^Autonomy/).selectOption('off');
    await expectAccessible(page, 'new session form');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.getByLabel('Message').waitFor();
    const sessionId = decodeURIComponent(page.url().split('#/sessions/')[1]!);
    const header = page.getByRole('form', { name: 'Session settings' });
    expect(await header.getByLabel('Model').inputValue()).toBe('coder');
    expect(await header.getByLabel('Autonomy').inputValue()).toBe('off');

    // The agent's command waits in the transcript until it is approved; then its output and the answer show.
    model.enqueue(
      { text: 'I will look at the machine.', toolCalls: [{ id: 'call_uname', name: 'run_command', arguments: { command: 'echo first-day-$((6*7))' } }] },
      { text: 'The machine answered first-day-42.' },
    );
    await page.getByLabel('Message').fill('What does the machine say?');
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.getByTestId('approval');
    await approval.waitFor({ timeout: 30_000 });
    expect(await approval.textContent()).toContain('The agent asks to run run_command.');
    await expectAccessible(page, 'session with a pending approval');
    await screenshot(page, 'session-approval');
    await approval.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('The machine answered first-day-42.').waitFor({ timeout: 30_000 });
    const ran = page.locator('details[data-tool="run_command"]').first();
    await expect.poll(() => ran.locator('.tool-output').textContent()).toContain('first-day-42');
    expect(await approval.count()).toBe(0);

    // Another command is denied: the model is told so and answers.
    model.enqueue(
      { toolCalls: [{ id: 'call_rm', name: 'run_command', arguments: { command: 'rm -rf ~/workspace' } }] },
      { text: 'Understood, I left the workspace alone.' },
    );
    await page.getByLabel('Message').fill('Clean up the workspace.');
    await page.getByRole('button', { name: 'Send' }).click();
    await approval.waitFor({ timeout: 30_000 });
    await approval.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Understood, I left the workspace alone.').waitFor({ timeout: 30_000 });
    const denied = page.locator('details[data-tool="run_command"]').nth(1);
    await denied.locator('summary').click();
    await expect.poll(() => denied.locator('.tool-output').textContent()).toMatch(/The user denied this run_command call/);

    // The header changes the session's settings: autonomy low now lets the agent write files, still not run commands.
    await header.getByLabel('Autonomy').selectOption('low');
    await expect
      .poll(async () => (await api.call('GET', `/api/v0/sessions/${sessionId}`, { as: api.acme.members.user.apiKey })).body.sessionSettings.autonomyLevel)
      .toBe('low');

    // One left unanswered expires, and the agent says so.
    model.enqueue(
      { toolCalls: [{ id: 'call_late', name: 'run_command', arguments: { command: 'make deploy' } }] },
      { text: 'Nobody approved the deploy, so I did not run it.' },
    );
    await page.getByLabel('Message').fill('Deploy it.');
    await page.getByRole('button', { name: 'Send' }).click();
    await approval.waitFor({ timeout: 30_000 });
    // The session list says which session waits for an approval, and leads back to it.
    await page.goto(`${api.url}/#/sessions`);
    const waiting = page.getByRole('link', { name: 'waits for your approval (1 call)' });
    await waiting.waitFor();
    await waiting.click();
    await approval.waitFor();
    await page.getByText('Nobody approved the deploy, so I did not run it.').waitFor({ timeout: (APPROVAL_SECONDS + 30) * 1000 });
    expect(await approval.count()).toBe(0);
    const expired = page.locator('details[data-tool="run_command"]').nth(2);
    await expired.locator('summary').click();
    await expect
      .poll(() => expired.locator('.tool-output').textContent())
      .toMatch(new RegExp(`Nobody answered the approval request .* within ${APPROVAL_SECONDS} seconds`));
    await screenshot(page, 'session-approvals-done');
    await page.context().close();
  });
});
