import { describe, expect, it } from 'vitest';
import { readme } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();
const prose = 'This service receives webhooks from the billing provider, stores them and forwards the important ones to the ledger. '.repeat(2);

describe('readme criterion', () => {
  it('scores 0/2 without a README at the root, even with one in a subfolder', async () => {
    expect(await score(readme, { 'docs/README.md': `# Docs\n${prose}` })).toEqual({
      numerator: 0,
      denominator: 2,
      rationale: 'No README at the repository root',
    });
  });

  it('scores 1/2 for a README holding only a title and a line', async () => {
    const s = await score(readme, { 'README.md': '# billing-hooks\n\nWebhooks.\n' });
    expect(s).toMatchObject({ numerator: 1, denominator: 2 });
    expect(s.rationale).toContain('README.md exists but holds only 9 characters');
  });

  it('scores 2/2 for a README that explains the project, whatever its extension case', async () => {
    const s = await score(readme, { 'Readme.rst': `billing-hooks\n=============\n\n${prose}` });
    expect(s).toMatchObject({ numerator: 2, denominator: 2 });
    expect(s.rationale).toMatch(/^Readme\.rst explains the project/);
  });
});
