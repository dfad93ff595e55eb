import YAML from 'yaml';
import { MODE_IDS, type ModeId } from './modes.ts';

export interface ScannedWorkflow {
  workflowName: string;
  triggerEvents: string[];
  scheduleCron?: string;
  /** How the workflow runs agentplane: its inputs; empty when it does not. */
  droidActionInputs: Record<string, string>;
  /** The mode of a workflow agentplane generated (or that runs `agentplane ci run` with a mode). */
  templateId?: ModeId;
  runsAgentplane: boolean;
}

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `on:` may be a name, a list of names or a mapping. */
function triggers(on: unknown): { events: string[]; cron?: string } {
  if (typeof on === 'string') return { events: [on] };
  if (Array.isArray(on)) return { events: on.map(String) };
  if (!isObject(on)) return { events: [] };
  const schedule = on.schedule;
  const cron = Array.isArray(schedule) ? schedule.map((s) => (isObject(s) ? s.cron : undefined)).find((c) => typeof c === 'string') : undefined;
  return { events: Object.keys(on), ...(cron ? { cron: cron as string } : {}) };
}

const inputName = (envKey: string) =>
  envKey
    .replace(/^AGENTPLANE_/, '')
    .toLowerCase()
    .replace(/_/g, '-');
/** Connection settings, not inputs; the key's value is a secret reference anyway. */
const NOT_INPUTS = new Set(['AGENTPLANE_URL', 'AGENTPLANE_API_KEY']);

/**
 * A job runs agentplane when a step runs `agentplane` (the CLI, `ci run`) or uses an action
 * whose name holds agentplane or droid. Its inputs: the action's `with`, or the AGENTPLANE_*
 * variables of the job and step.
 */
function agentplaneInputs(jobs: unknown): Record<string, string> | undefined {
  if (!isObject(jobs)) return undefined;
  for (const job of Object.values(jobs)) {
    if (!isObject(job) || !Array.isArray(job.steps)) continue;
    for (const step of job.steps) {
      if (!isObject(step)) continue;
      const uses = typeof step.uses === 'string' ? step.uses : '';
      const run = typeof step.run === 'string' ? step.run : '';
      if (/agentplane|droid/i.test(uses) && isObject(step.with)) {
        return Object.fromEntries(Object.entries(step.with).map(([k, v]) => [k, String(v)]));
      }
      if (/\bagentplane\b/.test(run) || /agentplane|droid/i.test(uses)) {
        const env = { ...(isObject(job.env) ? job.env : {}), ...(isObject(step.env) ? step.env : {}) };
        return Object.fromEntries(
          Object.entries(env)
            .filter(([k]) => k.startsWith('AGENTPLANE_') && !NOT_INPUTS.has(k))
            .map(([k, v]) => [inputName(k), String(v)]),
        );
      }
    }
  }
  return undefined;
}

/** Reads one workflow file with a YAML parser; throws with the parser's message when it is not YAML. */
export function scanWorkflow(text: string, filePath: string): ScannedWorkflow {
  const doc: unknown = YAML.parse(text);
  if (!isObject(doc)) throw new Error('not a workflow: the file is not a YAML mapping');
  const { events, cron } = triggers(doc.on);
  const inputs = agentplaneInputs(doc.jobs);
  const mode = inputs?.mode;
  return {
    workflowName: typeof doc.name === 'string' ? doc.name : filePath.split('/').pop()!,
    triggerEvents: events,
    ...(cron ? { scheduleCron: cron } : {}),
    droidActionInputs: inputs ?? {},
    ...(mode && (MODE_IDS as readonly string[]).includes(mode) ? { templateId: mode as ModeId } : {}),
    runsAgentplane: inputs !== undefined,
  };
}
