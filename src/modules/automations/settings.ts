import YAML from 'yaml';
import type { EventId } from './modes.ts';
import type { Params } from './workflow-file.ts';

/** What an automation's workflow is generated from; kept on the automation so an edit changes only what it names. */
export interface AutomationSettings {
  customPrompt?: string;
  schedule?: string;
  events?: EventId[];
  params?: Params;
}

/** `yamlParams` text as params (lists become comma-separated, as the workflow's env holds them). */
function parseParams(yamlParams: string | undefined): Params | undefined {
  if (yamlParams === undefined) return undefined;
  const parsed = (YAML.parse(yamlParams) ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)])) as Params;
}

export function mergeSettings(
  stored: AutomationSettings,
  changes: { customPrompt?: string; schedule?: string; githubEvents?: EventId[]; yamlParams?: string } | undefined,
): AutomationSettings {
  if (!changes) return stored;
  return {
    customPrompt: changes.customPrompt ?? stored.customPrompt,
    // '' clears the schedule, as the hosted platform's `schedule: ''` does.
    schedule: changes.schedule === undefined ? stored.schedule : changes.schedule || undefined,
    events: changes.githubEvents ?? stored.events,
    params: parseParams(changes.yamlParams) ?? stored.params,
  };
}
