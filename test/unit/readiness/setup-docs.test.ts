import { describe, expect, it } from 'vitest';
import { setupDocs } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();
const SETUP = '# app\n\nIntro.\n\n## Getting started\n\n```sh\nnpm ci\nnpm test\n```\n\n## License\nMIT\n';

describe('setup_docs criterion', () => {
  it('scores 0/2 for a README without a setup section and no guide', async () => {
    expect(await score(setupDocs, { 'README.md': '# app\n\n## Setup\n\nAsk Bob.\n\n## Commands\n\n```\nmake\n```\n' })).toEqual({
      numerator: 0,
      denominator: 2,
      rationale: 'README.md has no setup section with commands; no CONTRIBUTING, DEVELOPMENT or setup guide at the root, in docs/ or .github/',
    });
  });

  it('gives a point for a setup section with commands', async () => {
    expect(await score(setupDocs, { 'README.md': SETUP })).toMatchObject({
      numerator: 1,
      rationale: expect.stringContaining('README.md section "Getting started" with commands'),
    });
  });

  it('gives both points with a guide in docs/ or .github/', async () => {
    expect(await score(setupDocs, { 'README.md': SETUP, 'docs/development.md': '# Dev\n' })).toEqual({
      numerator: 2,
      denominator: 2,
      rationale: 'README.md section "Getting started" with commands; setup guide docs/development.md',
    });
    expect(await score(setupDocs, { '.github/CONTRIBUTING.md': '# How\n' })).toMatchObject({ numerator: 1 });
  });
});
