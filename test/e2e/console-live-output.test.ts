import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, chromiumMissing, launchChromium, screenshot } from '../support/browser.ts';
import { startSessionHarness, type SessionHarness } from '../support/session-harness.ts';
import { machineMissing } from '../support/machine.ts';
import { CODER_KEY_ENV, coderModel } from '../support/models-file.ts';
import { skipWithout } from '../support/parts.ts';

const missing = chromiumMissing() ?? machineMissing;
const skip = skipWithout('the console live output test', missing);

/**
 * The session page in a real Chromium following the real `GET /api/v0/sessions/{id}/events` of a
 * real server (its worker, a real sshd, the scripted model): a running command's output shows in
 * its tool call as it arrives, and the result replaces it.
 */
describe.skipIf(skip)('the console shows a running command’s output live', { timeout: 120_000 }, () => {
  let h: SessionHarness;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    h = await startSessionHarness('pglite', {
      computerName: 'live-output-box',
      models: (m) => ({ models: [coderModel(m)], keys: { [CODER_KEY_ENV]: m.apiKey } }),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('shows line1 while the command still runs, then the result in its place', async () => {
    const { api, user } = h;
    const created = await api.call('POST', '/api/v0/sessions', {
      as: user,
      body: { computerId: h.computerId, cwd: h.machine.scratch, sessionSettings: { model: 'coder', autonomyLevel: 'high' } },
    });
    expect(created.status, created.body.detail).toBe(201);
    const sessionId = created.body.sessionId as string;

    const page = await browser.newPage();
    const streams: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith(`/api/v0/sessions/${sessionId}/events`)) streams.push(r.headers().accept ?? '');
    });
    await page.goto(api.url);
    // The console's modules load unbundled: on a busy shared machine the first page can take a while.
    await page.getByLabel('API key or JWT access token').waitFor({ timeout: 60_000 });
    await page.getByLabel('API key or JWT access token').fill(user);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Computers' }).waitFor();
    await page.goto(`${api.url}/#/sessions/${sessionId}`);
    // Following the server's own stream, not polling.
    await page.getByRole('status').getByText('Live', { exact: true }).waitFor({ timeout: 15_000 });
    expect(streams).toEqual(['text/event-stream']);

    h.model.enqueue(
      {
        text: 'Counting slowly.',
        toolCalls: [{ id: 'call_count', name: 'run_command', arguments: { command: 'for i in 1 2 3; do echo line$i; sleep 1; done' } }],
      },
      { text: 'Counted to three.' },
    );
    await page.getByLabel('Message').fill('Count to three, slowly.');
    await page.getByRole('button', { name: 'Send' }).click();

    const tool = page.locator('details[data-tool="run_command"]');
    const live = tool.getByTestId('tool-output-live');
    await live.getByText('line1').waitFor({ timeout: 20_000 });
    // Seen while the command runs (a second between lines): no result stored yet, the call still marked running, its output open to read.
    expect(await live.textContent()).not.toContain('line3');
    expect(await api.db.prisma.sessionMessage.count({ where: { sessionId, role: 'tool' } })).toBe(0);
    expect(await tool.locator('summary .badge').textContent()).toBe('running');
    expect(await tool.getAttribute('open')).not.toBeNull();
    expect(await live.isVisible()).toBe(true);
    const violations = await axeViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
    await screenshot(page, 'session-tool-output-live');

    // The result replaces the live output: the live block is gone, the result holds every line and the exit code.
    await page.getByText('Counted to three.').waitFor({ timeout: 20_000 });
    expect(await live.count()).toBe(0);
    expect(await tool.locator('summary .badge').textContent()).toBe('completed');
    await tool.locator('summary').click();
    await expect.poll(() => tool.locator('.tool-output').textContent()).toBe('line1\nline2\nline3\n[exit code 0]');
    expect(streams).toEqual(['text/event-stream']);
    await page.context().close();
  });
});
