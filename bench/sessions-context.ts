/**
 * The figures of issue #23, run from bench/sessions.ts: a 60-turn scripted session (each turn reads
 * a 2 KB file on a real sshd computer, then answers), stored and reloaded between turns as the
 * worker does it, against the scripted model server measuring its prompts.
 *
 * 1. Tokens sent per turn (every call's prompt, compaction calls included) with compaction against
 *    a 16,000-token window, and without (compaction off, a window nothing reaches). Goal: flat
 *    instead of growing.
 * 2. The share of input tokens read from cache on the Anthropic-shaped server, after the first
 *    turn. Goal: over 80%.
 */
import type { Prisma, PrismaClient } from '../src/db/client.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import type { MachineAccess } from '../src/modules/computers/machine-access.ts';
import { runtimeHistory } from '../src/modules/sessions/context-history.ts';
import { runPersistedTurn, type TurnEnvironment } from '../src/modules/sessions/persisted-turn.ts';
import { COMPACTION_INSTRUCTION } from '../src/agent/compaction.ts';
import { createModelClient, defaultTools, type ModelConfig } from '../src/agent/index.ts';
import { sshToolHost } from '../src/agent/ssh-tool-host.ts';
import type { StoredSettings } from '../src/modules/sessions/settings.ts';
import { appendMessage, loadHistory } from '../src/modules/sessions/store.ts';
import type { SshTarget } from '../src/ssh/index.ts';
import { startModelServer, type ModelServer, type RecordedRequest } from '../test/support/model-server.ts';
import { startSshd } from '../test/support/sshd.ts';

const TURNS = 60;
const SMALL_WINDOW = 16_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? (content as { text?: string; content?: unknown }[]).map((p) => p.text ?? textOf(p.content)).join('')
      : '';

/** Reads the turn's file, then answers; a compaction request gets a summary. */
function script(model: ModelServer) {
  model.respondWith((r) => {
    const last = r.body.messages.at(-1)!;
    const text = textOf(last.content);
    if (text.includes(COMPACTION_INSTRUCTION))
      return { text: 'Summary: the user has the agent read notes-0..4.txt one per turn; each names the build tool; no problems are open.' };
    const answered = last.role === 'tool' || (Array.isArray(last.content) && (last.content as { type: string }[]).some((b) => b.type === 'tool_result'));
    if (answered) return { text: 'Read it: the note names the build tool.' };
    return { toolCalls: [{ name: 'read_file', arguments: { path: `notes-${Number(/Turn (\d+)/.exec(text)?.[1] ?? 0) % 5}.txt` } }] };
  });
}

/** Runs TURNS stored turns and answers the requests each turn made. */
async function session(
  prisma: PrismaClient,
  ids: { organizationId: string; userId: string },
  env: TurnEnvironment,
  model: ModelServer,
  cwd: string,
  settings: StoredSettings,
): Promise<RecordedRequest[][]> {
  const now = new Date();
  const row = await prisma.session.create({
    data: {
      id: newId('sess'),
      organizationId: ids.organizationId,
      ownerKind: 'human',
      ownerId: ids.userId,
      computerId: 'cmp_bench',
      cwd,
      status: 'running',
      settings: settings as Prisma.InputJsonObject,
      createdAt: now,
      updatedAt: now,
    },
  });
  const perTurn: RecordedRequest[][] = [];
  for (let n = 1; n <= TURNS; n++) {
    const before = model.requests.length;
    await appendMessage(prisma, row.id, { role: 'user', content: [{ type: 'text', text: `Turn ${n}: read the notes.` }], queueStatus: 'consumed' }, new Date());
    const result = await runPersistedTurn(
      env,
      row,
      { autonomyLevel: 'high', ...settings },
      {
        history: runtimeHistory(await loadHistory(prisma, row.id)),
        tools: defaultTools,
        signal: new AbortController().signal,
      },
    );
    if (result.stopReason !== 'end_turn') throw new Error(`turn ${n} ended ${result.stopReason}: ${result.error}`);
    perTurn.push(model.requests.slice(before));
  }
  return perTurn;
}

export async function contextFigures(prisma: PrismaClient, ids: { organizationId: string; userId: string; machines: MachineAccess }): Promise<void> {
  const [sshd, model] = await Promise.all([startSshd(), startModelServer({ measureUsage: true })]);
  try {
    const target: SshTarget = {
      host: sshd.host,
      port: sshd.port,
      username: sshd.username,
      privateKey: sshd.privateKey,
      hostKeyFingerprint: sshd.hostKeyFingerprint,
    };
    const cwd = (await ids.machines.ssh.exec(target, 'mktemp -d')).stdout.trim();
    const note = (i: number) => `note ${i}: ${'the build uses make; run make test before committing. '.repeat(36)}`;
    for (let i = 0; i < 5; i++) await ids.machines.ssh.writeFile(target, `${cwd}/notes-${i}.txt`, note(i));
    const env = (config: Omit<ModelConfig, 'apiKey'>, compaction: TurnEnvironment['compaction']): TurnEnvironment => ({
      db: prisma,
      clock: systemClock,
      host: sshToolHost(ids.machines.ssh, target, cwd),
      model: createModelClient({ ...config, apiKey: model.apiKey }),
      compaction,
      system: 'You are a coding agent working in the notes repository.',
    });
    const tokensPerTurn = (turns: RecordedRequest[][]) => turns.map((calls) => calls.reduce((n, r) => n + r.promptTokens, 0));

    script(model);
    const open = tokensPerTurn(
      await session(prisma, ids, env({ id: 'wide', provider: 'openai-compatible', baseUrl: model.baseUrl, contextWindow: 1_000_000 }, 'off'), model, cwd, {
        compactionThresholdCheckEnabled: false,
      }),
    );
    model.reset();
    script(model);
    const compacted = tokensPerTurn(
      await session(
        prisma,
        ids,
        env({ id: 'small', provider: 'openai-compatible', baseUrl: model.baseUrl, contextWindow: SMALL_WINDOW, maxOutputTokens: 2_000 }, undefined),
        model,
        cwd,
        {},
      ),
    );
    const compactions = model.requests.filter((r) => textOf(r.body.messages.at(-1)?.content).includes(COMPACTION_INSTRUCTION)).length;
    model.reset();

    console.log(`\ntokens sent per turn over ${TURNS} turns (every call's prompt, compactions included; goal: flat, not growing)`);
    const row = (label: string, xs: number[]) =>
      console.log(
        `  ${label.padEnd(48)} median ${String(median(xs)).padStart(7)}   max ${String(Math.max(...xs)).padStart(7)}   turn 10 ${String(xs[9]).padStart(7)}   turn 30 ${String(xs[29]).padStart(7)}   turn 60 ${String(xs[TURNS - 1]).padStart(7)}`,
      );
    row('without compaction (window 1,000,000)', open);
    row(`with compaction (window ${SMALL_WINDOW.toLocaleString()}, ${compactions} compactions)`, compacted);
    console.log(`  ratio at turn ${TURNS} (with / without)                   ${(compacted[TURNS - 1]! / open[TURNS - 1]!).toFixed(3)}`);

    script(model);
    const anthropic = await session(
      prisma,
      ids,
      env({ id: 'claude', provider: 'anthropic', baseUrl: model.anthropicBaseUrl, upstreamModel: 'claude-scripted' }, undefined),
      model,
      cwd,
      {},
    );
    const later = anthropic.slice(1).flat();
    const read = later.reduce((n, r) => n + r.cache.readTokens, 0);
    const all = later.reduce((n, r) => n + r.promptTokens, 0);
    const perTurnShare = anthropic.slice(1).map((calls) => calls.reduce((n, r) => n + r.cache.readTokens, 0) / calls.reduce((n, r) => n + r.promptTokens, 0));
    console.log(`\ncache reads on the Anthropic-shaped server, turns 2-${TURNS} (goal > 80% of input tokens)`);
    console.log(
      `  share of input tokens read from cache          ${((100 * read) / all).toFixed(1)}%   (median turn ${(100 * median(perTurnShare)).toFixed(1)}%, lowest ${(100 * Math.min(...perTurnShare)).toFixed(1)}%)`,
    );
  } finally {
    await model.close();
    await sshd.stop();
  }
}
