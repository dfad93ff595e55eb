import { z } from 'zod';
import type { Session } from '../../generated/prisma/client.ts';
import type { Prisma } from '../../db/client.ts';
import { newId } from '../../lib/ids.ts';
import { recordEvents } from '../analytics/events.ts';
import { finalText, runPersistedTurn, type TurnEnvironment } from './persisted-turn.ts';
import { defineTool, type AgentTool } from '../../agent/index.ts';
import type { StoredSettings } from './settings.ts';
import { appendMessage, setSessionStatus } from './store.ts';

const SUBAGENT_TOOL = 'task';

/**
 * The `task` tool: hands a self-contained piece of work to a subagent, a child session on the
 * same computer and directory with the parent's settings and tools (but no `task` of its own, so
 * delegation stays one level deep). The child's history is a session of its own (listed under
 * the parent's `childInclusiveTokenUsageBySessionId`); its usage adds to the parent's inclusive
 * usage. The tool's result is the child's final answer.
 */
export function subagentTool(env: TurnEnvironment, parent: Session, settings: StoredSettings, childTools: readonly AgentTool[]): AgentTool {
  return defineTool({
    name: SUBAGENT_TOOL,
    description:
      'Delegate a self-contained sub-task (research, a focused change) to a subagent that works on the same computer and directory ' +
      'with the same tools. Give it everything it needs in prompt; it answers with a summary of what it found or did.',
    kind: 'read',
    input: z.object({
      description: z.string().min(1).max(200).describe('A few words naming the sub-task.'),
      prompt: z.string().min(1).describe('The full instructions for the subagent.'),
    }),
    async execute(ctx, input) {
      const now = env.clock.now();
      const child = await env.db.$transaction(async (tx) => {
        const row = await tx.session.create({
          data: {
            id: newId('sess'),
            organizationId: parent.organizationId,
            ownerKind: parent.ownerKind,
            ownerId: parent.ownerId,
            computerId: parent.computerId,
            parentSessionId: parent.id,
            cwd: parent.cwd,
            title: input.description,
            status: 'running',
            settings: settings as Prisma.InputJsonObject,
            createdAt: now,
            updatedAt: now,
          },
        });
        await appendMessage(tx, row.id, { role: 'user', content: [{ type: 'text', text: input.prompt }], queueStatus: 'consumed' }, now);
        await recordEvents(tx, [{ kind: 'session_started', organizationId: row.organizationId, userId: row.ownerId, occurredAt: now, sessionId: row.id }]);
        return row;
      });
      try {
        const result = await runPersistedTurn(env, child, settings, {
          history: [{ role: 'user', content: [{ type: 'text', text: input.prompt }] }],
          tools: childTools,
          signal: ctx.signal ?? new AbortController().signal,
        });
        const answer = finalText(result.emitted);
        const ref = `[subagent session ${child.id}]`;
        if (result.stopReason === 'error') return { isError: true, output: `${ref} The subagent failed: ${result.error}` };
        if (result.stopReason === 'interrupted')
          return { isError: true, output: `${ref} Interrupted before the subagent finished.${answer ? `\n${answer}` : ''}` };
        return { isError: false, output: `${ref}\n${answer || '(the subagent gave no answer)'}` };
      } finally {
        await setSessionStatus(env.db, child.id, 'running', 'idle', env.clock.now());
      }
    },
  });
}
