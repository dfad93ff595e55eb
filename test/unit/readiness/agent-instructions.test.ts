import { describe, expect, it } from 'vitest';
import { agentInstructions } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('agent_instructions criterion', () => {
  it('scores 0/2 without any agent instruction file', async () => {
    expect(await score(agentInstructions, { 'README.md': 'npm test' })).toMatchObject({ numerator: 0, denominator: 2 });
  });

  it('scores 1/2 for instructions that name no command', async () => {
    expect(await score(agentInstructions, { 'CLAUDE.md': 'Be nice. Keep functions small.\n' })).toEqual({
      numerator: 1,
      denominator: 2,
      rationale: 'CLAUDE.md exist but name no build, test or lint command',
    });
  });

  it('scores 2/2 for AGENTS.md (or the tool-specific files) naming a command', async () => {
    expect(await score(agentInstructions, { 'AGENTS.md': '# Agents\nRun `pnpm test` before committing.\n' })).toEqual({
      numerator: 2,
      denominator: 2,
      rationale: 'AGENTS.md tells agents what to run (e.g. `pnpm test`)',
    });
    expect(await score(agentInstructions, { '.github/copilot-instructions.md': 'Use go test ./...\n' })).toMatchObject({ numerator: 2 });
    expect(await score(agentInstructions, { '.cursor/rules/testing.mdc': 'Run make check\n' })).toMatchObject({ numerator: 2 });
  });
});
