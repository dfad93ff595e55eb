import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { cronProblem } from '../../src/modules/automations/cron.ts';
import { renderWorkflow, updateWorkflow, type WorkflowSpec } from '../../src/modules/automations/workflow-file.ts';
import { scanWorkflow } from '../../src/modules/automations/workflow-scan.ts';

const spec = (over: Partial<WorkflowSpec> = {}): WorkflowSpec => ({
  automationId: '6f1c1c4e-9a59-4f8e-b7a7-3f1f0c6f1e11',
  name: 'Nightly',
  mode: 'custom',
  customPrompt: 'Tidy the changelog',
  context: { defaultBranch: 'trunk', schedule: '0 4 * * *', events: ['pr-opened', 'label-change', 'checks-completed'] },
  params: { model: 'm1', workflows: 'Build,Test' },
  ...over,
});

describe('cron', () => {
  it.each(['* * * * *', '*/15 0-6 1,15 jan-mar mon-fri', '0 0 * * 7'])('accepts %s', (c) => expect(cronProblem(c)).toBeUndefined());
  it.each([
    ['* * * *', /5 fields/],
    ['60 * * * *', /minute/],
    ['* 24 * * *', /hour/],
    ['* * 0 * *', /day of month/],
    ['* * * 13 *', /month/],
    ['*/0 * * * *', /step/],
    ['5-1 * * * *', /backwards/],
  ])('refuses %s', (c, why) => expect(cronProblem(c)).toMatch(why));
});

describe('generated workflows', () => {
  it('custom: merges the events into one trigger per kind, with the schedule and manual dispatch', () => {
    const doc = YAML.parse(renderWorkflow(spec()));
    expect(doc.on).toEqual({
      pull_request: { types: ['opened', 'labeled', 'unlabeled'] },
      workflow_run: { types: ['completed'], workflows: ['Build', 'Test'] },
      schedule: [{ cron: '0 4 * * *' }],
      workflow_dispatch: null,
    });
    expect(doc.jobs.agentplane.env).toMatchObject({ AGENTPLANE_MODE: 'custom', AGENTPLANE_MODEL: 'm1', AGENTPLANE_PROMPT: 'Tidy the changelog' });
    expect(doc.jobs.agentplane.env).not.toHaveProperty('AGENTPLANE_WORKFLOWS');
    expect(JSON.stringify(doc)).not.toContain('uses');
  });

  it('wiki-refresh runs on pushes to the default branch; ci-fix never for forks', () => {
    expect(YAML.parse(renderWorkflow(spec({ mode: 'wiki-refresh' }))).on).toEqual({ push: { branches: ['trunk'] } });
    const fix = YAML.parse(renderWorkflow(spec({ mode: 'ci-fix' })));
    expect(fix.on).toEqual({ workflow_run: { workflows: ['Build', 'Test'], types: ['completed'] } });
    expect(fix.jobs.agentplane.if).toContain('head_repository.full_name == github.repository');
  });

  it('the scanner reads back what the generator wrote', () => {
    const found = scanWorkflow(renderWorkflow(spec()), '.github/workflows/a.yml');
    expect(found).toMatchObject({
      workflowName: 'Nightly',
      triggerEvents: ['pull_request', 'workflow_run', 'schedule', 'workflow_dispatch'],
      scheduleCron: '0 4 * * *',
      templateId: 'custom',
      runsAgentplane: true,
    });
    expect(found.droidActionInputs).toMatchObject({ mode: 'custom', model: 'm1', 'automation-id': spec().automationId });
    expect(found.droidActionInputs).not.toHaveProperty('api-key');
  });

  it('an edit replaces the marked blocks and keeps every other line', () => {
    const original = renderWorkflow(spec());
    const mine = original.replace('jobs:\n', '# my note\nenv:\n  MINE: "1"\njobs:\n') + '  extra:\n    runs-on: x\n    steps: [{run: echo}]\n';
    const edited = updateWorkflow(mine, spec({ name: 'Renamed', params: { model: 'm2' } }));
    expect(edited).toContain('# my note\nenv:\n  MINE: "1"\n');
    const doc = YAML.parse(edited);
    expect(doc.name).toBe('Renamed');
    expect(doc.jobs.agentplane.env.AGENTPLANE_MODEL).toBe('m2');
    expect(doc.jobs.extra).toEqual({ 'runs-on': 'x', steps: [{ run: 'echo' }] });
  });

  it('an edit of a file without the markers fails, naming them', () => {
    expect(() => updateWorkflow('name: x\non: push\njobs: {}\n', spec())).toThrow(/# >>> agentplane workflow/);
  });
});
