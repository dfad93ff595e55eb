import { z } from 'zod';
import { stableStringify } from './stable-json.ts';
import type { ToolKind } from './tool-definition.ts';

/** `autonomyLevel` of the wire reference (section 1.3). */
export const AutonomyLevelSchema = z.enum(['off', 'low', 'medium', 'high']);
export type AutonomyLevel = z.infer<typeof AutonomyLevelSchema>;

/**
 * Which tool kinds run without asking, per level:
 * - off: read-only tools (read, list, glob, search) only; nothing on the computer changes.
 * - low: also file writes and edits, which stay inside files the agent can see and revert.
 * - medium and high: also shell commands. The two differ once commands are classified by risk
 *   (medium would then ask before destructive or networked commands); with today's tool set they
 *   allow the same.
 * Reading is never gated: an agent that cannot look cannot even propose a change.
 */
const ALLOWED: Record<AutonomyLevel, ReadonlySet<ToolKind>> = {
  off: new Set<ToolKind>(['read']),
  low: new Set<ToolKind>(['read', 'write']),
  medium: new Set<ToolKind>(['read', 'write', 'shell']),
  high: new Set<ToolKind>(['read', 'write', 'shell']),
};

export function runsWithoutApproval(level: AutonomyLevel, kind: ToolKind): boolean {
  return ALLOWED[level].has(kind);
}

/** The tool result the model gets where nobody can be asked (a subagent's calls): it should ask the user instead. */
export function needsApprovalMessage(level: AutonomyLevel, toolName: string): string {
  return `${toolName} needs approval at autonomy level ${level}; it was not run. Ask the user to run it or to raise the session's autonomy level.`;
}

/**
 * What "a call like it" means for an approval (or denial) given for the rest of a session: the
 * same tool acting on the same subject. For `run_command` the subject is the command line
 * (trimmed; `npm test` approved does not approve `npm test && rm -rf ~`); for the file tools the
 * path as the model wrote it; for any other tool its whole input (keys in any order).
 */
export function approvalKey(toolName: string, input: unknown): string {
  const fields = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  if (toolName === 'run_command' && typeof fields.command === 'string') return `run_command:${fields.command.trim()}`;
  if ((toolName === 'write_file' || toolName === 'edit_file') && typeof fields.path === 'string') return `${toolName}:${fields.path}`;
  return `${toolName}:${stableStringify(input ?? null)}`;
}
