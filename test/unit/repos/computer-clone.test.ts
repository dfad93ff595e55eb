import { describe, expect, it } from 'vitest';
import { decideCloneTarget, parseProbe } from '../../../src/repos/computer-clone.ts';
import { InvalidMachineInput } from '../../../src/provisioning/machine/errors.ts';
import { computerRepo, directoryCandidates, sameRepository } from '../../../src/repos/policy.ts';

describe('computerRepo', () => {
  it.each([
    ['https://github.com/acme/api.git', 'github.com', 'acme', 'api'],
    ['https://github.com/acme/api', 'github.com', 'acme', 'api'],
    ['https://GitHub.com/acme/api/', 'github.com', 'acme', 'api'],
    ['https://gitlab.example.com:8443/group/sub/tool.git', 'gitlab.example.com:8443', 'sub', 'tool'],
    ['ssh://git@github.com/acme/api.git', 'github.com', 'acme', 'api'],
    ['git@github.com:acme/api.git', 'github.com', 'acme', 'api'],
    ['git@host:api.git', 'host', undefined, 'api'],
    ['file:///srv/git/team/repo.git', undefined, 'team', 'repo'],
    ['https://github.com/acme/.github', 'github.com', 'acme', '.github'],
    ['https://github.com/acme/my%20repo', 'github.com', 'acme', 'my-repo'],
  ])('%s', (url, host, owner, name) => {
    expect(computerRepo(url)).toMatchObject({ host, owner, name });
  });

  it.each([
    ['', /not a valid git URL/],
    ['--upload-pack=touch /tmp/x', /not a valid git URL/],
    ['ext::sh -c touch% /tmp/pwned', /not a valid git URL/],
    ['fd::17/repo', /names a git remote helper/],
    ['ext::ssh-wrapper%S', /names a git remote helper/],
    ['ftp://example.com/repo.git', /uses ftp:\/\//],
    ['https://github.com/', /does not name a repository/],
    ['/srv/git/repo', /neither a URL/],
    ['https://user:ghp_secret@github.com/acme/api.git', /contains a password; remove it and configure a git credential for github.com/],
  ])('refuses %j', (url, message) => {
    expect(() => computerRepo(url)).toThrow(InvalidMachineInput);
    expect(() => computerRepo(url)).toThrow(message);
  });

  it('never echoes the password of a refused URL', () => {
    expect(() => computerRepo('https://user:ghp_secret@github.com/acme/api.git')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('ghp_secret') }),
    );
  });

  it('gives the same repository reached over https and ssh one identity', () => {
    expect(sameRepository('https://github.com/acme/api.git', 'git@github.com:acme/api')).toBe(true);
    expect(sameRepository('https://github.com/acme/api', 'ssh://git@github.com/acme/api.git/')).toBe(true);
    expect(sameRepository('https://github.com/acme/api', 'https://github.com/other/api')).toBe(false);
    expect(sameRepository('https://github.com/acme/api', 'not a url')).toBe(false);
  });
});

describe('directory names', () => {
  it('tries the name, then owner-name, then name-hash, the same way every time', () => {
    const a = directoryCandidates(computerRepo('https://github.com/acme/api.git'));
    expect(a.slice(0, 2)).toEqual(['api', 'acme-api']);
    expect(a[2]).toMatch(/^api-[0-9a-f]{8}$/);
    expect(directoryCandidates(computerRepo('git@github.com:acme/api'))).toEqual(a);
    expect(directoryCandidates(computerRepo('https://github.com/other/api'))[2]).not.toBe(a[2]);
  });

  it('parses the probe', () => {
    expect(parseProbe('missing\nempty\ngit https://h/o/r.git\nother\n', 4)).toEqual([
      { state: 'missing' },
      { state: 'empty' },
      { state: 'git', origin: 'https://h/o/r.git' },
      { state: 'other' },
    ]);
  });

  const url = 'https://github.com/other/api';
  const names = ['api', 'other-api', 'api-12345678'];
  it.each([
    ['free first name', [{ state: 'missing' }, { state: 'missing' }, { state: 'missing' }], { action: 'clone', name: 'api' }],
    ['an empty directory counts as free', [{ state: 'empty' }, { state: 'missing' }, { state: 'missing' }], { action: 'clone', name: 'api' }],
    [
      'another repository has the name',
      [{ state: 'git', origin: 'https://github.com/acme/api' }, { state: 'missing' }, { state: 'missing' }],
      { action: 'clone', name: 'other-api' },
    ],
    [
      'already cloned: fetch',
      [{ state: 'git', origin: 'git@github.com:other/api.git' }, { state: 'missing' }, { state: 'missing' }],
      { action: 'fetch', name: 'api' },
    ],
    [
      'an existing clone under a later name wins over a free first name',
      [{ state: 'missing' }, { state: 'git', origin: url }, { state: 'missing' }],
      { action: 'fetch', name: 'other-api' },
    ],
    ['plain files in the way', [{ state: 'other' }, { state: 'other' }, { state: 'missing' }], { action: 'clone', name: 'api-12345678' }],
    ['nothing usable', [{ state: 'other' }, { state: 'git', origin: 'https://x/y/z' }, { state: 'other' }], { action: 'none' }],
  ] as const)('%s', (_, states, decision) => {
    expect(decideCloneTarget(url, names, [...states])).toEqual(decision);
  });
});
