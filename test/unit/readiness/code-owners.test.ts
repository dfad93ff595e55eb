import { describe, expect, it } from 'vitest';
import { codeOwners } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('code_owners criterion', () => {
  it('fails without CODEOWNERS', async () => {
    expect(await score(codeOwners, { 'OWNERS.txt': '* @a' })).toMatchObject({ numerator: 0, rationale: expect.stringMatching(/^No CODEOWNERS file/) });
  });

  it('fails for a CODEOWNERS that assigns nobody', async () => {
    expect(await score(codeOwners, { '.github/CODEOWNERS': '# owners\n*\n' })).toMatchObject({
      numerator: 0,
      rationale: '.github/CODEOWNERS exists but assigns no owners',
    });
  });

  it('passes and counts the rules', async () => {
    expect(await score(codeOwners, { '.github/CODEOWNERS': '# owners\n* @acme/core\n/docs/ @acme/docs @bob\n' })).toEqual({
      numerator: 1,
      denominator: 1,
      rationale: '.github/CODEOWNERS assigns owners in 2 rules',
    });
  });
});
