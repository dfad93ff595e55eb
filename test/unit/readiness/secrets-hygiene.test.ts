import { describe, expect, it } from 'vitest';
import { secretsHygiene } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();
// Built at run time so this test file itself holds no secret-shaped strings.
const AWS = ['AKIA', 'Z7Q2MRT4KXW9PLNB'].join('');
const GITHUB = ['ghp_', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('');
const PRIVATE_KEY = ['-----BEGIN OPENSSH ', 'PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n'].join('');

describe('secrets_hygiene criterion', () => {
  it('passes a clean repository, documentation placeholders included', async () => {
    const s = await score(secretsHygiene, {
      'src/a.ts': 'export const region = "eu";\n',
      'README.md': `Set AWS_ACCESS_KEY_ID=${'AKIA'}IOSFODNN7EXAMPLE\n`,
      '.env.example': 'TOKEN=\n',
    });
    expect(s).toMatchObject({ numerator: 1, denominator: 1 });
    expect(s.rationale).toMatch(/^No private keys, tokens or secret files found in 3 files/);
  });

  it('names file and line of each finding, never the value', async () => {
    const s = await score(secretsHygiene, {
      'config/prod.ts': `export const a = 1;\nexport const key = "${AWS}";\n`,
      'scripts/deploy.sh': `TOKEN=${GITHUB}\n`,
      'keys/deploy': PRIVATE_KEY,
    });
    expect(s.numerator).toBe(0);
    expect(s.rationale).toContain('AWS access key id in config/prod.ts:2');
    expect(s.rationale).toContain('GitHub token in scripts/deploy.sh:1');
    expect(s.rationale).toContain('private key in keys/deploy:1');
    expect(s.rationale).not.toContain(AWS);
    expect(s.rationale).not.toContain(GITHUB);
  });

  it('flags committed environment and key files by name', async () => {
    const s = await score(secretsHygiene, { '.env': 'A=1\n', 'deploy/id_ed25519': 'x\n', 'certs/site.p12': Buffer.from([0, 1, 2]) });
    expect(s.numerator).toBe(0);
    expect(s.rationale).toContain('secret file .env committed');
    expect(s.rationale).toContain('secret file deploy/id_ed25519 committed');
    expect(s.rationale).toContain('secret file certs/site.p12 committed');
  });
});
