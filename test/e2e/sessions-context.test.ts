import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_INSTRUCTIONS_BYTES } from '../../src/modules/sessions/repository-instructions.ts';
import { GIT_COMMIT, skipMachineTests } from '../support/machine.ts';
import type { RecordedRequest } from '../support/model-server.ts';
import { startSessionHarness, type SessionHarness } from '../support/session-harness.ts';
import { BACKENDS } from '../support/test-db.ts';

if (skipMachineTests) console.warn('skipping the prompt-cache and instructions e2e tests: sshd is missing');

const KEY_ENV = 'AGENTPLANE_TEST_CONTEXT_KEY';
const PRICING = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

type Block = { type: string; cache_control?: unknown; text?: string };
const blocksOf = (m: { content?: unknown }): Block[] => (Array.isArray(m.content) ? (m.content as Block[]) : []);

/**
 * Prompt caching and repository instructions through the API, against the scripted model server
 * measuring its prompts and caching them as the providers do, on a real sshd computer.
 */
describe.skipIf(skipMachineTests).each(BACKENDS)('prompt caching and AGENTS.md on %s', (backend) => {
  let h: SessionHarness;
  let repo: string;

  beforeAll(async () => {
    h = await startSessionHarness(backend, {
      computerName: 'cache-box',
      server: { measureUsage: true },
      models: (m) => ({
        models: [
          { id: 'claude', provider: 'anthropic', baseUrl: m.anthropicBaseUrl, apiKeyEnv: KEY_ENV, upstreamModel: 'claude-scripted', pricing: PRICING },
          { id: 'coder', provider: 'openai-compatible', baseUrl: m.baseUrl, apiKeyEnv: KEY_ENV },
        ],
        keys: { [KEY_ENV]: m.apiKey },
      }),
    });
  });

  afterAll(() => h?.close());

  beforeEach(async () => {
    repo = `${h.machine.scratch}/repo-${Math.random().toString(36).slice(2, 8)}`;
    await h.machine.sh(`mkdir -p ${repo}/sub && cd ${repo} && git init -q && echo '# demo' > README.md && git add -A && ${GIT_COMMIT} -m init`);
  });

  afterEach(() => h.model.reset());

  const newSession = async (settings: Record<string, unknown>, cwd = repo) => {
    const res = await h.api.call('POST', '/api/v0/sessions', {
      as: h.user,
      body: { computerId: h.computerId, cwd, sessionSettings: { autonomyLevel: 'high', ...settings } },
    });
    expect(res.status, res.body.detail).toBe(201);
    return res.body.sessionId as string;
  };
  const turn = async (id: string, text: string) => {
    const res = await h.api.call('POST', `/api/v0/sessions/${id}/messages`, { as: h.user, body: { text, waitForCompletion: true, waitTimeoutMs: 30_000 } });
    expect(res.status, res.body.detail).toBe(200);
  };
  /**
   * Each turn writes a file, then answers. The arguments' keys are in an order PostgreSQL's jsonb
   * does not keep (it sorts shorter keys first), so a turn that re-reads the history from the
   * database would send other bytes if the runtime did not sort them itself.
   */
  const writeThenAnswer = () =>
    h.model.respondWith((r) => {
      const last = r.body.messages.at(-1)!;
      const answered = last.role === 'tool' || blocksOf(last).some((b) => b.type === 'tool_result');
      if (answered) return { text: 'Written.' };
      return { toolCalls: [{ name: 'write_file', arguments: { content: `turn ${r.body.messages.length}\n`, path: `out-${r.body.messages.length}.txt` } }] };
    });

  it('marks Anthropic cache breakpoints on the system prompt and the last two user turns, reads each previous prefix from cache, and prices the cache tokens', async () => {
    writeThenAnswer();
    const id = await newSession({ model: 'claude' });
    for (let n = 1; n <= 4; n++) await turn(id, `Write file number ${n}.`);

    const calls = h.model.requests;
    expect(calls).toHaveLength(8);
    for (const r of calls) {
      const system = r.body.system as Block[];
      expect(system).toEqual([{ type: 'text', text: expect.stringContaining('You are a coding agent'), cache_control: { type: 'ephemeral' } }]);
      const marked = r.body.messages.flatMap((m) =>
        blocksOf(m)
          .filter((b) => b.cache_control)
          .map(() => m.role),
      );
      const userTurns = r.body.messages.filter((m) => m.role === 'user').length;
      expect(marked).toEqual(Array(Math.min(2, userTurns)).fill('user'));
      expect(blocksOf(r.body.messages.at(-1)!).at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
      expect(system.length + marked.length).toBeLessThanOrEqual(4);
    }
    // Byte-stable prefixes: every call reads all the previous call wrote or read, across turns too.
    expect(calls[0]!.cache.readTokens).toBe(0);
    for (let i = 1; i < calls.length; i++) {
      expect(calls[i]!.cache.readTokens, `call ${i}`).toBe(calls[i - 1]!.cache.readTokens + calls[i - 1]!.cache.writeTokens);
    }

    const usage = (await h.api.call('GET', `/api/v0/sessions/${id}`, { as: h.user })).body.sessionSettings.tokenUsage;
    const sum = (f: (r: RecordedRequest) => number) => calls.reduce((n, r) => n + f(r), 0);
    expect(usage.cacheReadTokens).toBe(sum((r) => r.cache.readTokens));
    expect(usage.cacheCreationTokens).toBe(sum((r) => r.cache.writeTokens));
    expect(usage.inputTokens).toBe(sum((r) => r.promptTokens - r.cache.readTokens - r.cache.writeTokens));
    const credits =
      (usage.inputTokens * PRICING.inputPerMTok +
        usage.outputTokens * PRICING.outputPerMTok +
        usage.cacheReadTokens * PRICING.cacheReadPerMTok +
        usage.cacheCreationTokens * PRICING.cacheWritePerMTok) /
      1_000_000;
    expect(usage.serviceCredits).toBeCloseTo(credits, 5);
    const events = await h.api.db.prisma.analyticsEvent.aggregate({
      where: { sessionId: id, kind: 'token_usage' },
      _sum: { cacheReadTokens: true, cacheWriteTokens: true },
    });
    expect(events._sum).toEqual({ cacheReadTokens: BigInt(usage.cacheReadTokens), cacheWriteTokens: BigInt(usage.cacheCreationTokens) });
  });

  it('keeps OpenAI-compatible requests byte-stable: each call starts with the exact messages of the one before, across turns', async () => {
    writeThenAnswer();
    const id = await newSession({ model: 'coder' });
    for (let n = 1; n <= 3; n++) await turn(id, `Write file number ${n}.`);

    const calls = h.model.requests;
    expect(calls).toHaveLength(6);
    for (let i = 1; i < calls.length; i++) {
      const before = calls[i - 1]!.body;
      expect(JSON.stringify(calls[i]!.body.tools)).toBe(JSON.stringify(before.tools));
      expect(JSON.stringify(calls[i]!.body.messages.slice(0, before.messages.length)), `call ${i}`).toBe(JSON.stringify(before.messages));
      // The server's automatic cache (1,024-token prefixes and up) finds the previous prompt.
      expect(calls[i]!.cache.readTokens).toBeGreaterThan(0);
    }
    const toolCall = calls[1]!.body.messages.find((m) => m.tool_calls)!.tool_calls![0]!;
    expect(Object.keys(JSON.parse(toolCall.function.arguments) as object)).toEqual(['content', 'path']);
  });

  it('reads AGENTS.md from the working directory up to the repository root into the instructions, sees a change, bounds them, and can be turned off', async () => {
    h.model.respondWith(() => ({ text: 'ok' }));
    const system = (r: RecordedRequest) => String(r.body.messages[0]!.role === 'system' ? r.body.messages[0]!.content : '');
    // Above the repository root: not this repository's instructions.
    await h.machine.sh(`echo 'Outside rule: never read me.' > ${h.machine.scratch}/AGENTS.md`);
    await h.machine.sh(
      `echo 'Root rule: run the tests before committing.' > ${repo}/AGENTS.md && echo 'Sub rule: keep functions short.' > ${repo}/sub/AGENTS.md`,
    );
    const id = await newSession({ model: 'coder' }, `${repo}/sub`);

    await turn(id, 'Hello.');
    const first = system(h.model.requests[0]!);
    expect(first).toContain(`## ${repo}/AGENTS.md\nRoot rule: run the tests before committing.`);
    expect(first).toContain(`## ${repo}/sub/AGENTS.md\nSub rule: keep functions short.`);
    expect(first.indexOf('Root rule')).toBeLessThan(first.indexOf('Sub rule'));
    expect(first).not.toContain('Outside rule');

    await h.machine.sh(`echo 'Sub rule: prefer small commits.' > ${repo}/sub/AGENTS.md`);
    await turn(id, 'Again.');
    const second = system(h.model.requests[1]!);
    expect(second).toContain('Sub rule: prefer small commits.');
    expect(second).not.toContain('keep functions short');

    // Nearest file first within the bound: a huge sub/AGENTS.md is cut and leaves no room for the root's.
    await h.machine.sh(`head -c ${MAX_INSTRUCTIONS_BYTES + 5000} /dev/zero | tr '\\0' 'x' > ${repo}/sub/AGENTS.md`);
    await turn(id, 'Once more.');
    const third = system(h.model.requests[2]!);
    expect(third).toContain(`[${repo}/sub/AGENTS.md was cut at the ${MAX_INSTRUCTIONS_BYTES}-byte bound for instructions]`);
    expect(third).not.toContain('Root rule');
    expect(third.length).toBeLessThan(MAX_INSTRUCTIONS_BYTES + 2_000);

    const patched = await h.api.call('PATCH', `/api/v0/sessions/${id}`, { as: h.user, body: { sessionSettings: { agentsMdEnabled: false } } });
    expect(patched.status, patched.body.detail).toBe(200);
    expect(patched.body.sessionSettings.agentsMdEnabled).toBe(false);
    await turn(id, 'Without them.');
    const fourth = system(h.model.requests[3]!);
    expect(fourth).not.toContain('AGENTS.md');
    expect(fourth).toContain('You are a coding agent');
  });
});
