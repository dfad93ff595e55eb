import { describe, expect, it } from 'vitest';
import { repoKey, scratchCloneProblem } from '../../../src/repos/policy.ts';
import { redactCredentials } from '../../../src/repos/redact.ts';

describe('repository URLs', () => {
  it('gives https, ssh and scp-like forms of one repository the same key', () => {
    const forms = [
      'https://github.com/Acme/App',
      'https://github.com/acme/app.git',
      'https://token:x@GitHub.com/acme/app/',
      'ssh://git@github.com/acme/app.git',
      'git@github.com:acme/app.git',
      'http://github.com:80/acme/app',
    ];
    expect(new Set(forms.map(repoKey))).toEqual(new Set(['github.com/acme/app']));
  });

  it('keeps path case on hosts it does not know, and ports that are not defaults', () => {
    expect(repoKey('https://git.internal:8443/Team/Repo.git')).toBe('git.internal:8443/Team/Repo');
    expect(repoKey('https://git.internal/team/repo')).not.toBe(repoKey('https://git.internal/Team/Repo'));
  });

  it('rejects what is not a repository URL', () => {
    expect(repoKey('not a url')).toBeUndefined();
    expect(repoKey('')).toBeUndefined();
    expect(repoKey('acme/app')).toBeUndefined();
  });

  it('clones only over network transports', () => {
    expect(scratchCloneProblem('https://github.com/acme/app')).toBeUndefined();
    expect(scratchCloneProblem('git@github.com:acme/app.git')).toBeUndefined();
    expect(scratchCloneProblem('file:///etc')).toMatch(/^uses file:/);
    expect(scratchCloneProblem('ext::sh -c touch% /tmp/pwned')).toMatch(/not a repository URL/);
    expect(scratchCloneProblem('/srv/repos/app.git')).toMatch(/not a repository URL/);
    expect(scratchCloneProblem('https://github.com/')).toMatch(/not a repository URL/);
  });

  it('removes credentials from text', () => {
    expect(redactCredentials("fatal: repository 'https://user:s3cret@git.example/a.git/' not found")).toBe(
      "fatal: repository 'https://git.example/a.git/' not found",
    );
  });
});
