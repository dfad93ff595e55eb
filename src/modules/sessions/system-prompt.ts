import type { Computer } from '../../generated/prisma/client.ts';
import { instructionsSection, type InstructionsFile } from './repository-instructions.ts';
import type { StoredSettings } from './settings.ts';

/**
 * The instructions every turn starts from: where the agent works, how freely it may act, and the
 * repository's own AGENTS.md files. Nothing in it changes between turns unless those do, so
 * providers can keep it in their prompt cache.
 */
export function systemPrompt(
  computer: Pick<Computer, 'name' | 'remoteUser'>,
  cwd: string,
  settings: StoredSettings,
  instructions: readonly InstructionsFile[] = [],
): string {
  const lines = [
    'You are a coding agent. You work on a computer through the tools you are given; every path and command runs on that computer.',
    `Computer: ${computer.name}${computer.remoteUser ? `, as user ${computer.remoteUser}` : ''}. Working directory: ${cwd}.`,
    "Read before you change, keep changes small and focused, and run the project's own checks after changing code.",
    'When a tool fails, read its error and adapt; do not repeat the same call unchanged.',
    'End your turn with a short summary of what you did and anything left for the user.',
  ];
  if (settings.interactionMode === 'spec') {
    lines.push('Spec mode: investigate and write a plan only. Do not change files or run commands that change the computer.');
  }
  const section = instructionsSection(instructions);
  return section ? `${lines.join('\n')}\n\n${section}` : lines.join('\n');
}
