import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_INSTRUCTION, SUMMARY_HEADING } from '../../src/agent/compaction.ts';
import { DROPPED_NOTE } from '../../src/agent/context-trim.ts';
import { skipMachineTests } from '../support/machine.ts';
import type { RecordedRequest, ScriptedReply } from '../support/model-server.ts';
import { startSessionHarness, type SessionHarness } from '../support/session-harness.ts';

if (skipMachineTests) console.warn('skipping the compaction e2e tests: sshd is missing');

const WINDOW = 6_000;
const KEY_ENV = 'AGENTPLANE_TEST_SMALL_KEY';
const TURNS = 60;

type ChatMessage = RecordedRequest['body']['messages'][number];
const textOf = (m: ChatMessage | undefined): string =>
  typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? (m.content as { text?: string }[]).map((p) => p.text ?? '').join('') : '';
const isCompactionRequest = (r: RecordedRequest) => textOf(r.body.messages.at(-1)).includes(COMPACTION_INSTRUCTION);

/**
 * Long sessions through the API against a model with a 6,000-token window (the scripted server
 * refuses anything larger, as providers do): every turn reads a 1,200-character file, so the
 * history outgrows the window many times over in 60 turns.
 */
describe.skipIf(skipMachineTests)('a long session against a small-window model', () => {
  let h: SessionHarness;
  let repo: string;

  beforeAll(async () => {
    h = await startSessionHarness('pglite', {
      computerName: 'long-box',
      server: { contextWindow: WINDOW, measureUsage: true },
      models: (m) => ({
        models: [
          {
            id: 'small',
            provider: 'openai-compatible',
            baseUrl: m.baseUrl,
            apiKeyEnv: KEY_ENV,
            contextWindow: WINDOW,
            maxOutputTokens: 800,
            pricing: { inputPerMTok: 1000, outputPerMTok: 5000 },
          },
          {
            id: 'summariser',
            provider: 'openai-compatible',
            baseUrl: m.baseUrl,
            apiKeyEnv: KEY_ENV,
            upstreamModel: 'summariser-upstream',
            contextWindow: WINDOW,
            maxOutputTokens: 800,
            pricing: { inputPerMTok: 10, outputPerMTok: 50 },
          },
        ],
        keys: { [KEY_ENV]: m.apiKey },
      }),
    });
    repo = `${h.machine.scratch}/repo`;
    const notes = Array.from({ length: 5 }, (_, i) => `printf '%s' "$(printf 'note ${i}: the build uses tool ${i}; %.0s' $(seq 40))" > ${repo}/notes-${i}.txt`);
    await h.machine.sh(`mkdir -p ${repo} && ${notes.join(' && ')}`);
  });

  afterAll(() => h?.close());

  afterEach(() => h.model.reset());

  /** Reads the file a turn names, then answers; compaction requests get a summary, or `compaction` when given. */
  const script = (compaction: (n: number) => ScriptedReply) => {
    let summaries = 0;
    h.model.respondWith((r) => {
      if (isCompactionRequest(r)) return compaction(++summaries);
      const last = r.body.messages.at(-1)!;
      if (last.role === 'tool') return { text: `Read it (${textOf(last).length} characters).` };
      const turn = /Turn (\d+)/.exec(textOf(last))?.[1];
      return { toolCalls: [{ name: 'read_file', arguments: { path: `notes-${Number(turn) % 5}.txt` } }] };
    });
  };

  const runTurns = async (settings: Record<string, unknown>, turns: number) => {
    const created = await h.api.call('POST', '/api/v0/sessions', {
      as: h.user,
      body: { computerId: h.computerId, cwd: repo, sessionSettings: { model: 'small', autonomyLevel: 'high', ...settings } },
    });
    expect(created.status, created.body.detail).toBe(201);
    const id = created.body.sessionId as string;
    for (let n = 1; n <= turns; n++) {
      const res = await h.api.call('POST', `/api/v0/sessions/${id}/messages`, {
        as: h.user,
        body: { text: `Turn ${n}: read the notes.`, waitForCompletion: true, waitTimeoutMs: 30_000 },
      });
      expect(res.status, res.body.detail).toBe(200);
    }
    return id;
  };

  /** The whole history, oldest first, paging back through the list. */
  const history = async (id: string) => {
    const all: any[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: any } = await h.api.call('GET', `/api/v0/sessions/${id}/messages?limit=100${cursor ? `&cursor=${cursor}` : ''}`, {
        as: h.user,
      });
      expect(res.status).toBe(200);
      all.push(...res.body.messages);
      cursor = res.body.pagination.nextCursor;
    } while (cursor);
    return all.reverse();
  };

  const expectEveryRequestInsideTheWindow = () => {
    for (const r of h.model.requests) {
      expect(r.overWindow, `request of ${r.promptTokens} + ${r.maxTokens} tokens`).toBe(false);
      expect(r.promptTokens + r.maxTokens).toBeLessThanOrEqual(WINDOW);
    }
  };

  it('keeps working for 60 turns: every request fits the window, compactions are stored and listed, the model reads them, and their tokens are billed', async () => {
    script((n) => ({ text: `Summary ${n}: the user reads notes-0..4.txt turn by turn; each note names the build tool.` }));
    const id = await runTurns({}, TURNS);

    expectEveryRequestInsideTheWindow();
    const messages = await history(id);
    expect(messages.filter((m) => m.isError)).toEqual([]);
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(TURNS);
    const last = messages.at(-1);
    expect(last).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: expect.stringMatching(/^Read it/) }] });

    // Compactions: system messages of the history, marked with the range they replace; nothing is deleted.
    const compactions = messages.filter((m) => m.compaction);
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    for (const c of compactions) {
      expect(c).toMatchObject({ role: 'system', modelId: 'small', content: [{ type: 'text', text: expect.stringContaining(SUMMARY_HEADING) }] });
      expect(c.compaction.fromSeq).toBe(messages[0].seq);
      expect(c.compaction.toSeq).toBeLessThan(c.seq);
      expect(c.compaction.tokensAfter).toBeLessThan(c.compaction.tokensBefore);
    }
    const ranges = compactions.map((c) => c.compaction.toSeq);
    expect([...ranges].sort((a, b) => a - b)).toEqual(ranges);
    expect(messages.length).toBe(TURNS * 4 + compactions.length);

    // The model sees the latest summary first, then the messages after the range it replaces.
    const calls = h.model.requests.filter((r) => !isCompactionRequest(r));
    const lastSummary = compactions.at(-1).content[0].text as string;
    const seen = calls.filter((r) => textOf(r.body.messages[1]) === lastSummary);
    expect(seen.length).toBeGreaterThan(0);
    expect(calls.at(-1)!.body.messages.some((m) => textOf(m).includes(`Turn ${TURNS}:`))).toBe(true);
    // Later summaries carry the earlier one forward: the compaction request starts with it.
    const compactionRequests = h.model.requests.filter(isCompactionRequest);
    expect(compactionRequests).toHaveLength(compactions.length);
    expect(textOf(compactionRequests.at(-1)!.body.messages[1])).toBe(compactions.at(-2).content[0].text);

    // Tokens grow no further than the window allows, and every call (compactions too) is billed.
    const detail = (await h.api.call('GET', `/api/v0/sessions/${id}`, { as: h.user })).body;
    const usage = detail.sessionSettings.tokenUsage;
    expect(usage.inputTokens + usage.cacheReadTokens).toBe(h.model.requests.reduce((n, r) => n + r.promptTokens, 0));
    const events = await h.api.db.prisma.analyticsEvent.count({ where: { sessionId: id, kind: 'token_usage' } });
    expect(events).toBe(h.model.requests.length);
  }, 240_000);

  it('falls back to trimming when the compaction fails: the turns go on inside the window and nothing is stored as a compaction', async () => {
    script(() => ({ error: { status: 400, message: 'the compaction model refuses' } }));
    const id = await runTurns({}, 25);

    expectEveryRequestInsideTheWindow();
    const messages = await history(id);
    expect(messages.filter((m) => m.isError)).toEqual([]);
    expect(messages.filter((m) => m.compaction)).toEqual([]);
    expect(messages).toHaveLength(25 * 4);
    const failed = h.model.requests.filter(isCompactionRequest);
    expect(failed.length).toBeGreaterThan(0);
    // Once a turn's compaction failed, its later calls start with the note on dropped messages instead.
    const calls = h.model.requests.filter((r) => !isCompactionRequest(r));
    expect(calls.at(-1)!.body.messages.some((m) => textOf(m).includes('Turn 25:'))).toBe(true);
    expect(calls.filter((r) => textOf(r.body.messages[1]) === DROPPED_NOTE).length).toBeGreaterThan(0);
    expect(calls.some((r) => r.body.messages.some((m) => textOf(m).includes('Turn 1:')))).toBe(true);
    expect(calls.at(-1)!.body.messages.some((m) => textOf(m).includes('Turn 1:'))).toBe(false);
  }, 120_000);

  it('with compactionThresholdCheckEnabled false, never compacts and still never sends more than the window', async () => {
    script(() => {
      throw new Error('no compaction was expected');
    });
    const id = await runTurns({ compactionThresholdCheckEnabled: false }, 20);

    expectEveryRequestInsideTheWindow();
    expect(h.model.requests.filter(isCompactionRequest)).toEqual([]);
    const messages = await history(id);
    expect(messages.filter((m) => m.isError)).toEqual([]);
    expect(messages).toHaveLength(20 * 4);
  }, 120_000);

  it('learns from a provider that refuses a prompt as too large: the call is fitted again with the provider count and the turn goes on', async () => {
    script((n) => ({ text: `Summary ${n}.` }));
    // CJK text takes about three times the tokens per character of the ASCII the estimate learned on.
    const id = await runTurns({}, 2);
    const before = h.model.requests.length;
    const res = await h.api.call('POST', `/api/v0/sessions/${id}/messages`, {
      as: h.user,
      body: { text: `Turn 3: ${'漢'.repeat(4_500)}`, waitForCompletion: true, waitTimeoutMs: 30_000 },
    });
    expect(res.status, res.body.detail).toBe(200);
    // Under the estimate learned on ASCII, over the window by the server's count: refused once, then fitted with that count.
    const third = h.model.requests.slice(before);
    expect(third[0]!.overWindow).toBe(true);
    for (const r of third.slice(1)) expect(r.overWindow).toBe(false);
    const messages = await history(id);
    expect(messages.filter((m) => m.isError)).toEqual([]);
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: expect.stringMatching(/^Read it/) }] });
  }, 60_000);

  it('compacts with compactionModel when it names another model, billing those calls as that model', async () => {
    script((n) => ({ text: `Summary ${n} by the summariser.` }));
    const id = await runTurns({ compactionModel: 'summariser' }, 12);

    expectEveryRequestInsideTheWindow();
    const compactionRequests = h.model.requests.filter(isCompactionRequest);
    expect(compactionRequests.length).toBeGreaterThan(0);
    expect(new Set(compactionRequests.map((r) => r.body.model))).toEqual(new Set(['summariser-upstream']));
    expect(new Set(h.model.requests.filter((r) => !isCompactionRequest(r)).map((r) => r.body.model))).toEqual(new Set(['small']));
    const compactions = (await history(id)).filter((m) => m.compaction);
    expect(compactions).toHaveLength(compactionRequests.length);
    expect(compactions.every((c) => c.modelId === 'summariser')).toBe(true);
    const byModel = await h.api.db.prisma.analyticsEvent.groupBy({
      by: ['model'],
      where: { sessionId: id, kind: 'token_usage' },
      _count: true,
      _sum: { inputTokens: true, outputTokens: true, cacheReadTokens: true, serviceCredits: true },
    });
    const summariser = byModel.find((g) => g.model === 'summariser')!;
    expect(summariser._count).toBe(compactionRequests.length);
    // Its prices, cache reads at a tenth of input (the default when the models file names none).
    const { inputTokens, outputTokens, cacheReadTokens } = summariser._sum;
    expect(summariser._sum.serviceCredits).toBeCloseTo((Number(inputTokens) * 10 + Number(outputTokens) * 50 + Number(cacheReadTokens) * 1) / 1_000_000, 6);
  }, 120_000);
});
