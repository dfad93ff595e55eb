import { defaultTools, type AgentTool } from '../../agent/index.ts';
import type { StoredSettings } from './settings.ts';

/**
 * The tools a session's model is offered: the built-in ones plus `extra`, minus the ids in
 * `disabledToolIds`. Every tool is on by default, so `enabledToolIds` is stored and returned but
 * changes nothing yet; ids that name no tool are ignored (a client may know a newer server's tools).
 */
export function sessionTools(settings: StoredSettings, extra: readonly AgentTool[] = []): AgentTool[] {
  const disabled = new Set(settings.disabledToolIds ?? []);
  return [...defaultTools, ...extra].filter((t) => !disabled.has(t.name));
}
