import type { Computer } from '../../generated/prisma/client.ts';
import type { StoredSettings } from './settings.ts';

/** The instructions every turn starts from: where the agent works and how freely it may act. */
export function systemPrompt(computer: Pick<Computer, 'name' | 'remoteUser'>, cwd: string, settings: StoredSettings): string {
  const lines = [
    'You are a coding agent. You work on a computer through the tools you are given; every path and command runs on that computer.',
    `Computer: ${computer.name}${computer.remoteUser ? `, as user ${computer.remoteUser}` : ''}. Working directory: ${cwd}.`,
    'Read before you change, keep changes small and focused, and run the project\'s own checks after changing code.',
    'When a tool fails, read its error and adapt; do not repeat the same call unchanged.',
    'End your turn with a short summary of what you did and anything left for the user.',
  ];
  if (settings.interactionMode === 'spec') {
    lines.push('Spec mode: investigate and write a plan only. Do not change files or run commands that change the computer.');
  }
  return lines.join('\n');
}
