import { z } from 'zod';
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

/** The tool result the model gets while approval is not implemented: it should ask the user instead. */
export function needsApprovalMessage(level: AutonomyLevel, toolName: string): string {
  return `${toolName} needs approval at autonomy level ${level}; it was not run. Ask the user to run it or to raise the session's autonomy level.`;
}
