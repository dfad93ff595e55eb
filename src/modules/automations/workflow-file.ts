import YAML from 'yaml';
import { MODES, type ModeContext, type ModeId } from './modes.ts';

/**
 * A generated workflow holds two marked blocks: the workflow's head (`name`, `on`,
 * `concurrency`) and the `agentplane` job. agentplane rewrites only the text between a block's
 * markers, so a user's own jobs, keys and comments outside them survive every edit.
 */
const BLOCKS = ['workflow', 'job'] as const;
type Block = (typeof BLOCKS)[number];
const begin = (b: Block) => `# >>> agentplane ${b}`;
const end = (b: Block) => `# <<< agentplane ${b}`;

/** Inputs `yamlParams` may set, and where each goes. */
export const PARAM_KEYS = ['model', 'reasoning-effort', 'register-runner', 'timeout-minutes', 'runs-on', 'workflows'] as const;
type ParamKey = (typeof PARAM_KEYS)[number];
export type Params = Partial<Record<ParamKey, string>>;
/** Params that shape the workflow itself rather than the run's inputs. */
const LAYOUT_PARAMS: readonly ParamKey[] = ['timeout-minutes', 'runs-on', 'workflows'];

const envName = (key: string) => `AGENTPLANE_${key.toUpperCase().replace(/-/g, '_')}`;

export interface WorkflowSpec {
  automationId: string;
  name: string;
  mode: ModeId;
  customPrompt?: string;
  context: Omit<ModeContext, 'workflows'>;
  params: Params;
}

const yamlText = (value: unknown) => YAML.stringify(value, { lineWidth: 0 }).trimEnd();
const indent = (text: string, by: string) =>
  text
    .split('\n')
    .map((l) => (l ? by + l : l))
    .join('\n');

function blockText(spec: WorkflowSpec, block: Block): string {
  const mode = MODES[spec.mode];
  const workflows = spec.params.workflows
    ? spec.params.workflows
        .split(',')
        .map((w) => w.trim())
        .filter(Boolean)
    : ['CI'];
  if (block === 'workflow') {
    return yamlText({
      name: spec.name,
      on: mode.on({ ...spec.context, workflows }),
      ...(mode.concurrencyKey ? { concurrency: { group: `agentplane-${spec.automationId}-${mode.concurrencyKey}`, 'cancel-in-progress': true } } : {}),
    });
  }
  const env: Record<string, string> = {
    AGENTPLANE_AUTOMATION_ID: spec.automationId,
    AGENTPLANE_MODE: spec.mode,
    ...Object.fromEntries(
      Object.entries(spec.params)
        .filter(([k]) => !LAYOUT_PARAMS.includes(k as ParamKey))
        .map(([k, v]) => [envName(k), v!]),
    ),
    ...(spec.customPrompt ? { AGENTPLANE_PROMPT: spec.customPrompt } : {}),
    AGENTPLANE_URL: '${{ vars.AGENTPLANE_URL }}',
    AGENTPLANE_API_KEY: '${{ secrets.AGENTPLANE_API_KEY }}',
  };
  const job = {
    ...(mode.condition ? { if: mode.condition } : {}),
    'runs-on': spec.params['runs-on'] ?? 'ubuntu-latest',
    'timeout-minutes': Number(spec.params['timeout-minutes'] ?? 30),
    env,
    // No `uses:` steps: the workflow needs nothing fetched from an action registry.
    steps: [{ name: `agentplane ${mode.title}`, run: "${{ vars.AGENTPLANE_CLI || 'npx --yes agentplane' }} ci run" }],
  };
  return indent(yamlText({ agentplane: job }), '  ');
}

const wrapped = (spec: WorkflowSpec, block: Block, pad = '') => `${pad}${begin(block)}\n${blockText(spec, block)}\n${pad}${end(block)}`;

/** A new workflow file. */
export function renderWorkflow(spec: WorkflowSpec): string {
  return [
    `# Written by agentplane for the automation "${spec.name}" (${spec.mode}).`,
    '# agentplane rewrites the lines between its ">>> agentplane" and "<<< agentplane" markers; the rest is yours.',
    wrapped(spec, 'workflow'),
    'jobs:',
    wrapped(spec, 'job', '  '),
    '',
  ].join('\n');
}

/**
 * The file with its generated blocks replaced and every other line kept. Throws, naming what is
 * missing, when a block's markers are gone, or when the result is not valid YAML.
 */
export function updateWorkflow(existing: string, spec: WorkflowSpec): string {
  let text = existing;
  for (const block of BLOCKS) {
    const start = text.indexOf(begin(block));
    const stop = text.indexOf(end(block));
    if (start < 0 || stop < start) {
      throw new Error(`the workflow has no "${begin(block)}" … "${end(block)}" block; delete it and create the automation again`);
    }
    const lineStart = text.lastIndexOf('\n', start) + 1;
    const pad = text.slice(lineStart, start);
    text = text.slice(0, lineStart) + wrapped(spec, block, pad) + text.slice(stop + end(block).length);
  }
  try {
    YAML.parse(text);
  } catch (err) {
    throw new Error(`the edited workflow would not be valid YAML: ${(err as Error).message}`);
  }
  return text;
}

/** The automation id a generated file carries, if it is one. */
export function automationIdIn(text: string): string | undefined {
  return /AGENTPLANE_AUTOMATION_ID:\s*["']?([0-9a-f-]{36})/.exec(text)?.[1];
}
