import { describe, expect, it } from 'vitest';
import { CRITERIA } from '../../../src/modules/readiness/catalogue.ts';
import { evaluateCheckout } from '../../../src/modules/readiness/evaluator.ts';
import { maturityLevel } from '../../../src/modules/readiness/levels.ts';
import { localWorkspace } from '../../../src/repos/local-workspace.ts';
import { useFixtureRepos } from './fixture-repo.ts';
import { NEGLECTED, NEGLECTED_SCORES, WELL_KEPT, WELL_KEPT_APPS, WELL_KEPT_LEVEL, WELL_KEPT_SCORES, scoresOf } from './fixture-scores.ts';

const { root, make } = useFixtureRepos();

describe('evaluator on fixture repositories', () => {
  it('scores every criterion of a well-kept monorepo as worked out by hand', async () => {
    const repo = make(WELL_KEPT);
    const result = await evaluateCheckout(localWorkspace(root), repo.name);
    expect(result.apps).toEqual(WELL_KEPT_APPS);
    expect(scoresOf(result.report)).toEqual(WELL_KEPT_SCORES);
    expect(Object.keys(result.report)).toEqual(CRITERIA.map((c) => c.id));
    expect(maturityLevel(result.report, CRITERIA)).toBe(WELL_KEPT_LEVEL);
    for (const [id, s] of Object.entries(result.report)) expect(s.rationale.trim(), id).not.toBe('');
  });

  it('scores every criterion of a neglected repository as worked out by hand', async () => {
    const repo = make(NEGLECTED);
    const result = await evaluateCheckout(localWorkspace(root), repo.name);
    expect(scoresOf(result.report)).toEqual(NEGLECTED_SCORES);
    expect(result.report.secrets_hygiene!.rationale).toContain('AWS access key id in config.py:1');
    expect(result.report.secrets_hygiene!.rationale).toContain('secret file .env committed');
    expect(maturityLevel(result.report, CRITERIA)).toBe(1);
  });
});
