import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEgressGuard } from '../../../src/egress/guard.ts';
import { parseEgressAllow } from '../../../src/egress/policy.ts';
import { controlPlaneClone } from '../../../src/modules/integrations/control-plane-clone.ts';
import { pinClone } from '../../../src/repos/pinned-clone.ts';
import { computerRepo, directoryCandidates, repoKey, repositoryHost, repositoryName, scratchCloneProblem } from '../../../src/repos/policy.ts';
import { redactCredentials } from '../../../src/repos/redact.ts';

/**
 * What every use of a repository URL answers for one wide table of inputs: the clone on a
 * computer (its identity and directory names), the stored key (`repo_key` of readiness reports
 * and wiki runs: it must never change for a URL that has one), the scratch clone's policy,
 * the host a forge credential is looked up by, the egress guard's host and port, the pinned clone,
 * whether the organization's connection authenticates the clone, and the wiki's title.
 *
 * Recorded against the four parsers before src/repos/ merged them; what the merge changed on
 * purpose: the wiki's title is the parser's name (no `%20`, query, fragment or trailing blanks);
 * an scp-like address with `://` later in it is read as git reads it (ssh to its host) by every
 * use instead of "not a URL" by some; a surrounding blank no longer stops the organization's
 * connection from authenticating an https clone; a stray `%` in a path is a clear refusal
 * instead of a URIError.
 */

const egress = createEgressGuard(parseEgressAllow(undefined), async () => ['203.0.113.7']);
const connectionRow = { id: 'c1', provider: 'github', baseUrl: '', username: 'bot', tokenCiphertext: 'sealed', organizationId: 'o1' };
const cloneDeps = (host: string | undefined) => ({
  db: {
    sourceControlIntegration: {
      findFirst: async ({ where }: { where: { host: string } }) => (host !== undefined && where.host === host ? { ...connectionRow, host } : null),
    },
  } as never,
  secrets: { open: () => 'token' } as never,
  egress,
});

const failure = (err: unknown) => `! ${err instanceof Error ? err.message : String(err)}`;

async function answers(input: string) {
  let computer: unknown;
  try {
    const r = computerRepo(input);
    computer = { url: r.url, host: r.host ?? null, owner: r.owner ?? null, name: r.name, identity: r.identity, directories: directoryCandidates(r) };
  } catch (err) {
    computer = failure(err);
  }
  let reach: unknown;
  let pinned: unknown;
  let withConnection: unknown;
  try {
    const target = await egress.check(input);
    reach = { host: target.host, port: target.port };
    pinned = pinClone(input, target);
    const host = repositoryHost(input);
    const clone = await controlPlaneClone(cloneDeps(host), 'o1', input);
    withConnection = clone.config.some((c) => c.startsWith('http.extraHeader=Authorization: Basic '));
  } catch (err) {
    reach ??= failure(err);
  }
  return {
    computer,
    key: repoKey(input) ?? null,
    scratchCloneProblem: scratchCloneProblem(input) ?? null,
    connectionHost: repositoryHost(input) ?? null,
    reach,
    pinned: pinned ?? null,
    withConnection: withConnection ?? null,
    wikiName: repositoryName(input),
  };
}

const INPUTS = [
  'https://github.com/acme/app',
  'https://github.com/acme/app.git',
  'https://github.com/Acme/App/',
  'https://GitHub.com/acme/app.git/',
  'HTTPS://GITHUB.COM/ACME/APP',
  '  https://github.com/acme/app  ',
  'http://github.com:80/acme/app',
  'https://github.com:443/acme/app',
  'https://token:x@GitHub.com/acme/app/',
  'https://user@github.com/acme/app.git',
  'https://user:pa%40ss@host.example/a/b',
  'https://git.internal:8443/Team/Repo.git',
  'https://gitlab.com/group/sub/tool.git',
  'https://gitlab.example.com:8443/group/sub/tool.git',
  'https://bitbucket.org/Team/Repo',
  'https://codeberg.org/Forgejo/Forgejo.git',
  'https://github.com/acme/.github',
  'https://github.com/acme/my%20repo',
  'https://github.com/acme/app.git.git',
  'https://github.com/acme//app',
  'https://github.com/acme/app/tree/main',
  'https://github.com/acme/app.git?ref=main',
  'https://github.com/acme/app#readme',
  'https://github.com/acme/a%zz',
  'https://github.com/',
  'https://github.com',
  'https://[2001:db8::1]:8080/acme/app.git',
  'http://127.0.0.1/acme/app.git',
  'ssh://git@github.com/acme/app.git',
  'ssh://git@github.com/acme/app.git/',
  'ssh://git@github.com:22/acme/app.git',
  'ssh://git@git.internal:2222/team/repo.git',
  'ssh://github.com/~user/repo.git',
  'git+ssh://git@github.com/acme/app.git',
  'git@github.com:acme/app.git',
  'git@github.com:Acme/App',
  'github.com:acme/app',
  'gh-work:acme/app',
  'git@my_host:acme/app',
  'git@host:app.git',
  'git@gitlab.com:group/sub/tool.git',
  'user@host.example:~/repo.git',
  'git@[2001:db8::1]:acme/app.git',
  'a@b@c.example:d/e',
  '-x@host.example:path/repo',
  'git@host.example:path?x=http://y',
  'https:github.com/acme/app',
  'git://git.kernel.org/pub/scm/git/git.git',
  'git://host.example:9418/x/y',
  'file:///srv/git/team/repo.git',
  'file:///etc',
  '/srv/git/repo',
  './relative/repo',
  'C:\\repos\\app',
  'acme/app',
  '',
  '   ',
  'not a url',
  '--upload-pack=touch /tmp/x',
  'ext::sh -c touch% /tmp/pwned',
  'ext::ssh-wrapper%S',
  'fd::17/repo',
  'ftp://example.com/repo.git',
  'mailto:someone@example.com',
];

// prettier-ignore
const TABLE: Record<string, unknown> = {
  "https://github.com/acme/app": {"computer":{"url":"https://github.com/acme/app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com/acme/app.git": {"computer":{"url":"https://github.com/acme/app.git","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app.git","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com/Acme/App/": {"computer":{"url":"https://github.com/Acme/App/","host":"github.com","owner":"Acme","name":"App","identity":"github.com/Acme/App","directories":["App","Acme-App","App-dff7d0d2"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/Acme/App/","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"App"},
  "https://GitHub.com/acme/app.git/": {"computer":{"url":"https://GitHub.com/acme/app.git/","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://GitHub.com/acme/app.git/","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "HTTPS://GITHUB.COM/ACME/APP": {"computer":{"url":"HTTPS://GITHUB.COM/ACME/APP","host":"github.com","owner":"ACME","name":"APP","identity":"github.com/ACME/APP","directories":["APP","ACME-APP","APP-b8673594"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"HTTPS://GITHUB.COM/ACME/APP","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"APP"},
  "  https://github.com/acme/app  ": {"computer":{"url":"https://github.com/acme/app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"  https://github.com/acme/app  ","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":true,"wikiName":"app"},
  "http://github.com:80/acme/app": {"computer":{"url":"http://github.com:80/acme/app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":80},"pinned":{"url":"http://github.com:80/acme/app","config":["http.curloptResolve=github.com:80:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com:443/acme/app": {"computer":{"url":"https://github.com:443/acme/app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com:443/acme/app","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://token:x@GitHub.com/acme/app/": {"computer":"! repository URL github.com/acme/app/ contains a password; remove it and configure a git credential for github.com instead","key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://token:x@GitHub.com/acme/app/","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":false,"wikiName":"app"},
  "https://user@github.com/acme/app.git": {"computer":{"url":"https://user@github.com/acme/app.git","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://user@github.com/acme/app.git","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":false,"wikiName":"app"},
  "https://user:pa%40ss@host.example/a/b": {"computer":"! repository URL host.example/a/b contains a password; remove it and configure a git credential for host.example instead","key":"host.example/a/b","scratchCloneProblem":null,"connectionHost":"host.example","reach":{"host":"host.example","port":443},"pinned":{"url":"https://user:pa%40ss@host.example/a/b","config":["http.curloptResolve=host.example:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":false,"wikiName":"b"},
  "https://git.internal:8443/Team/Repo.git": {"computer":{"url":"https://git.internal:8443/Team/Repo.git","host":"git.internal:8443","owner":"Team","name":"Repo","identity":"git.internal:8443/Team/Repo","directories":["Repo","Team-Repo","Repo-553ea460"]},"key":"git.internal:8443/Team/Repo","scratchCloneProblem":null,"connectionHost":"git.internal:8443","reach":{"host":"git.internal","port":8443},"pinned":{"url":"https://git.internal:8443/Team/Repo.git","config":["http.curloptResolve=git.internal:8443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"Repo"},
  "https://gitlab.com/group/sub/tool.git": {"computer":{"url":"https://gitlab.com/group/sub/tool.git","host":"gitlab.com","owner":"sub","name":"tool","identity":"gitlab.com/group/sub/tool","directories":["tool","sub-tool","tool-4d535f11"]},"key":"gitlab.com/group/sub/tool","scratchCloneProblem":null,"connectionHost":"gitlab.com","reach":{"host":"gitlab.com","port":443},"pinned":{"url":"https://gitlab.com/group/sub/tool.git","config":["http.curloptResolve=gitlab.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"tool"},
  "https://gitlab.example.com:8443/group/sub/tool.git": {"computer":{"url":"https://gitlab.example.com:8443/group/sub/tool.git","host":"gitlab.example.com:8443","owner":"sub","name":"tool","identity":"gitlab.example.com:8443/group/sub/tool","directories":["tool","sub-tool","tool-1800b9e4"]},"key":"gitlab.example.com:8443/group/sub/tool","scratchCloneProblem":null,"connectionHost":"gitlab.example.com:8443","reach":{"host":"gitlab.example.com","port":8443},"pinned":{"url":"https://gitlab.example.com:8443/group/sub/tool.git","config":["http.curloptResolve=gitlab.example.com:8443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"tool"},
  "https://bitbucket.org/Team/Repo": {"computer":{"url":"https://bitbucket.org/Team/Repo","host":"bitbucket.org","owner":"Team","name":"Repo","identity":"bitbucket.org/Team/Repo","directories":["Repo","Team-Repo","Repo-f75881fd"]},"key":"bitbucket.org/team/repo","scratchCloneProblem":null,"connectionHost":"bitbucket.org","reach":{"host":"bitbucket.org","port":443},"pinned":{"url":"https://bitbucket.org/Team/Repo","config":["http.curloptResolve=bitbucket.org:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"Repo"},
  "https://codeberg.org/Forgejo/Forgejo.git": {"computer":{"url":"https://codeberg.org/Forgejo/Forgejo.git","host":"codeberg.org","owner":"Forgejo","name":"Forgejo","identity":"codeberg.org/Forgejo/Forgejo","directories":["Forgejo","Forgejo-Forgejo","Forgejo-5132a7d6"]},"key":"codeberg.org/forgejo/forgejo","scratchCloneProblem":null,"connectionHost":"codeberg.org","reach":{"host":"codeberg.org","port":443},"pinned":{"url":"https://codeberg.org/Forgejo/Forgejo.git","config":["http.curloptResolve=codeberg.org:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"Forgejo"},
  "https://github.com/acme/.github": {"computer":{"url":"https://github.com/acme/.github","host":"github.com","owner":"acme","name":".github","identity":"github.com/acme/.github","directories":[".github","acme-.github",".github-b3833d52"]},"key":"github.com/acme/.github","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/.github","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":".github"},
  "https://github.com/acme/my%20repo": {"computer":{"url":"https://github.com/acme/my%20repo","host":"github.com","owner":"acme","name":"my-repo","identity":"github.com/acme/my repo","directories":["my-repo","acme-my-repo","my-repo-dcfdc2fb"]},"key":"github.com/acme/my repo","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/my%20repo","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"my repo"},
  "https://github.com/acme/app.git.git": {"computer":{"url":"https://github.com/acme/app.git.git","host":"github.com","owner":"acme","name":"app.git","identity":"github.com/acme/app.git","directories":["app.git","acme-app.git","app.git-c5aa1b1f"]},"key":"github.com/acme/app.git","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app.git.git","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app.git"},
  "https://github.com/acme//app": {"computer":{"url":"https://github.com/acme//app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme//app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme//app","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com/acme/app/tree/main": {"computer":{"url":"https://github.com/acme/app/tree/main","host":"github.com","owner":"tree","name":"main","identity":"github.com/acme/app/tree/main","directories":["main","tree-main","main-125a3ec4"]},"key":"github.com/acme/app/tree/main","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app/tree/main","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"main"},
  "https://github.com/acme/app.git?ref=main": {"computer":{"url":"https://github.com/acme/app.git?ref=main","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app.git?ref=main","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com/acme/app#readme": {"computer":{"url":"https://github.com/acme/app#readme","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/app#readme","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "https://github.com/acme/a%zz": {"computer":"! repository URL https://github.com/acme/a%zz is not a valid URL (a stray % in its path)","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/acme/a%zz","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":false,"wikiName":"https://github.com/acme/a%zz"},
  "https://github.com/": {"computer":"! repository URL https://github.com/ does not name a repository","key":"github.com/","scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com/","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"https://github.com/"},
  "https://github.com": {"computer":"! repository URL https://github.com does not name a repository","key":"github.com/","scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"github.com","reach":{"host":"github.com","port":443},"pinned":{"url":"https://github.com","config":["http.curloptResolve=github.com:443:203.0.113.7","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"https://github.com"},
  "https://[2001:db8::1]:8080/acme/app.git": {"computer":{"url":"https://[2001:db8::1]:8080/acme/app.git","host":"[2001:db8::1]:8080","owner":"acme","name":"app","identity":"[2001:db8::1]:8080/acme/app","directories":["app","acme-app","app-66737b17"]},"key":"[2001:db8::1]:8080/acme/app","scratchCloneProblem":null,"connectionHost":"[2001:db8::1]:8080","reach":{"host":"2001:db8::1","port":8080},"pinned":{"url":"https://[2001:db8::1]:8080/acme/app.git","config":["http.curloptResolve=2001:db8::1:8080:[2001:db8::1]","http.followRedirects=false"],"sshOptions":[]},"withConnection":true,"wikiName":"app"},
  "http://127.0.0.1/acme/app.git": {"computer":{"url":"http://127.0.0.1/acme/app.git","host":"127.0.0.1","owner":"acme","name":"app","identity":"127.0.0.1/acme/app","directories":["app","acme-app","app-edc318f6"]},"key":"127.0.0.1/acme/app","scratchCloneProblem":null,"connectionHost":"127.0.0.1","reach":"! http://127.0.0.1 connects to 127.0.0.1, a loopback address, which agentplane does not reach on an organization's behalf; an operator can allow it by adding the address (or its CIDR block, or the host name) to AGENTPLANE_EGRESS_ALLOW","pinned":null,"withConnection":null,"wikiName":"app"},
  "ssh://git@github.com/acme/app.git": {"computer":{"url":"ssh://git@github.com/acme/app.git","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"ssh://git@github.com/acme/app.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"app"},
  "ssh://git@github.com/acme/app.git/": {"computer":{"url":"ssh://git@github.com/acme/app.git/","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"ssh://git@github.com/acme/app.git/","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"app"},
  "ssh://git@github.com:22/acme/app.git": {"computer":{"url":"ssh://git@github.com:22/acme/app.git","host":"github.com:22","owner":"acme","name":"app","identity":"github.com:22/acme/app","directories":["app","acme-app","app-3cb4a30a"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com:22","reach":{"host":"github.com","port":22},"pinned":{"url":"ssh://git@github.com:22/acme/app.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"app"},
  "ssh://git@git.internal:2222/team/repo.git": {"computer":{"url":"ssh://git@git.internal:2222/team/repo.git","host":"git.internal:2222","owner":"team","name":"repo","identity":"git.internal:2222/team/repo","directories":["repo","team-repo","repo-d5eaad9b"]},"key":"git.internal:2222/team/repo","scratchCloneProblem":null,"connectionHost":"git.internal:2222","reach":{"host":"git.internal","port":2222},"pinned":{"url":"ssh://git@git.internal:2222/team/repo.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=git.internal"]},"withConnection":false,"wikiName":"repo"},
  "ssh://github.com/~user/repo.git": {"computer":{"url":"ssh://github.com/~user/repo.git","host":"github.com","owner":"-user","name":"repo","identity":"github.com/~user/repo","directories":["repo","-user-repo","repo-700f489e"]},"key":"github.com/~user/repo","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"ssh://github.com/~user/repo.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"repo"},
  "git+ssh://git@github.com/acme/app.git": {"computer":"! repository URL git+ssh://git@github.com/acme/app.git uses git+ssh://; use https://, ssh://, git:// or file://","key":"github.com/acme/app","scratchCloneProblem":"uses git+ssh:, which the evaluator does not clone from; use an https, http, ssh or git URL","connectionHost":"github.com","reach":"! git+ssh://github.com is not a URL agentplane connects to","pinned":null,"withConnection":null,"wikiName":"app"},
  "git@github.com:acme/app.git": {"computer":{"url":"git@github.com:acme/app.git","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"git@github.com:acme/app.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"app"},
  "git@github.com:Acme/App": {"computer":{"url":"git@github.com:Acme/App","host":"github.com","owner":"Acme","name":"App","identity":"github.com/Acme/App","directories":["App","Acme-App","App-dff7d0d2"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"git@github.com:Acme/App","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"App"},
  "github.com:acme/app": {"computer":{"url":"github.com:acme/app","host":"github.com","owner":"acme","name":"app","identity":"github.com/acme/app","directories":["app","acme-app","app-98d9fc12"]},"key":"github.com/acme/app","scratchCloneProblem":null,"connectionHost":"github.com","reach":{"host":"github.com","port":22},"pinned":{"url":"github.com:acme/app","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=github.com"]},"withConnection":false,"wikiName":"app"},
  "gh-work:acme/app": {"computer":{"url":"gh-work:acme/app","host":"gh-work","owner":"acme","name":"app","identity":"gh-work/acme/app","directories":["app","acme-app","app-6208771d"]},"key":"gh-work/acme/app","scratchCloneProblem":null,"connectionHost":"gh-work","reach":{"host":"gh-work","port":22},"pinned":{"url":"gh-work:acme/app","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=gh-work"]},"withConnection":false,"wikiName":"app"},
  "git@my_host:acme/app": {"computer":{"url":"git@my_host:acme/app","host":"my_host","owner":"acme","name":"app","identity":"my_host/acme/app","directories":["app","acme-app","app-23527777"]},"key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"my_host","reach":{"host":"my_host","port":22},"pinned":{"url":"git@my_host:acme/app","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=my_host"]},"withConnection":false,"wikiName":"app"},
  "git@host:app.git": {"computer":{"url":"git@host:app.git","host":"host","owner":null,"name":"app","identity":"host/app","directories":["app","app-0709a317"]},"key":"host/app","scratchCloneProblem":null,"connectionHost":"host","reach":{"host":"host","port":22},"pinned":{"url":"git@host:app.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=host"]},"withConnection":false,"wikiName":"app"},
  "git@gitlab.com:group/sub/tool.git": {"computer":{"url":"git@gitlab.com:group/sub/tool.git","host":"gitlab.com","owner":"sub","name":"tool","identity":"gitlab.com/group/sub/tool","directories":["tool","sub-tool","tool-4d535f11"]},"key":"gitlab.com/group/sub/tool","scratchCloneProblem":null,"connectionHost":"gitlab.com","reach":{"host":"gitlab.com","port":22},"pinned":{"url":"git@gitlab.com:group/sub/tool.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=gitlab.com"]},"withConnection":false,"wikiName":"tool"},
  "user@host.example:~/repo.git": {"computer":{"url":"user@host.example:~/repo.git","host":"host.example","owner":null,"name":"repo","identity":"host.example/repo","directories":["repo","repo-641c2df2"]},"key":"host.example/~/repo","scratchCloneProblem":null,"connectionHost":"host.example","reach":{"host":"host.example","port":22},"pinned":{"url":"user@host.example:~/repo.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=host.example"]},"withConnection":false,"wikiName":"repo"},
  "git@[2001:db8::1]:acme/app.git": {"computer":{"url":"git@[2001:db8::1]:acme/app.git","host":"[2001","owner":"db8--1--acme","name":"app","identity":"[2001/db8::1]:acme/app","directories":["app","db8--1--acme-app","app-7394549b"]},"key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"[2001","reach":{"host":"[2001","port":22},"pinned":{"url":"git@[2001:db8::1]:acme/app.git","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=[2001"]},"withConnection":false,"wikiName":"app"},
  "a@b@c.example:d/e": {"computer":{"url":"a@b@c.example:d/e","host":"b@c.example","owner":"d","name":"e","identity":"b@c.example/d/e","directories":["e","d-e","e-707828ea"]},"key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"b@c.example","reach":{"host":"b@c.example","port":22},"pinned":{"url":"a@b@c.example:d/e","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=b@c.example"]},"withConnection":false,"wikiName":"e"},
  "-x@host.example:path/repo": {"computer":"! repository URL \"-x@host.example:path/repo\" is not a valid git URL","key":"host.example/path/repo","scratchCloneProblem":null,"connectionHost":"host.example","reach":{"host":"host.example","port":22},"pinned":{"url":"-x@host.example:path/repo","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=host.example"]},"withConnection":false,"wikiName":"repo"},
  "git@host.example:path?x=http://y": {"computer":{"url":"git@host.example:path?x=http://y","host":"host.example","owner":"path-x-http-","name":"y","identity":"host.example/path?x=http:/y","directories":["y","path-x-http--y","y-da9eb89e"]},"key":"host.example/path?x=http://y","scratchCloneProblem":null,"connectionHost":"host.example","reach":{"host":"host.example","port":22},"pinned":{"url":"git@host.example:path?x=http://y","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=host.example"]},"withConnection":false,"wikiName":"y"},
  "https:github.com/acme/app": {"computer":{"url":"https:github.com/acme/app","host":"https","owner":"acme","name":"app","identity":"https/github.com/acme/app","directories":["app","acme-app","app-43951f09"]},"key":"https/github.com/acme/app","scratchCloneProblem":null,"connectionHost":"https","reach":{"host":"https","port":22},"pinned":{"url":"https:github.com/acme/app","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=https"]},"withConnection":false,"wikiName":"app"},
  "git://git.kernel.org/pub/scm/git/git.git": {"computer":{"url":"git://git.kernel.org/pub/scm/git/git.git","host":"git.kernel.org","owner":"git","name":"git","identity":"git.kernel.org/pub/scm/git/git","directories":["git","git-git","git-38980f9d"]},"key":"git.kernel.org/pub/scm/git/git","scratchCloneProblem":null,"connectionHost":"git.kernel.org","reach":{"host":"git.kernel.org","port":9418},"pinned":{"url":"git://203.0.113.7/pub/scm/git/git.git","config":[],"sshOptions":[]},"withConnection":false,"wikiName":"git"},
  "git://host.example:9418/x/y": {"computer":{"url":"git://host.example:9418/x/y","host":"host.example:9418","owner":"x","name":"y","identity":"host.example:9418/x/y","directories":["y","x-y","y-c7d852c2"]},"key":"host.example:9418/x/y","scratchCloneProblem":null,"connectionHost":"host.example:9418","reach":{"host":"host.example","port":9418},"pinned":{"url":"git://203.0.113.7:9418/x/y","config":[],"sshOptions":[]},"withConnection":false,"wikiName":"y"},
  "file:///srv/git/team/repo.git": {"computer":{"url":"file:///srv/git/team/repo.git","host":null,"owner":"team","name":"repo","identity":"file/srv/git/team/repo","directories":["repo","team-repo","repo-01c28bb7"]},"key":"file/srv/git/team/repo","scratchCloneProblem":"uses file:, which the evaluator does not clone from; use an https, http, ssh or git URL","connectionHost":null,"reach":"! file:// is not a URL agentplane connects to","pinned":null,"withConnection":null,"wikiName":"repo"},
  "file:///etc": {"computer":{"url":"file:///etc","host":null,"owner":null,"name":"etc","identity":"file/etc","directories":["etc","etc-5086f40b"]},"key":"file/etc","scratchCloneProblem":"uses file:, which the evaluator does not clone from; use an https, http, ssh or git URL","connectionHost":null,"reach":"! file:// is not a URL agentplane connects to","pinned":null,"withConnection":null,"wikiName":"etc"},
  "/srv/git/repo": {"computer":"! repository URL /srv/git/repo is neither a URL (https://, ssh://, file://) nor host:path","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"/srv/git/repo\" is not a URL","pinned":null,"withConnection":null,"wikiName":"/srv/git/repo"},
  "./relative/repo": {"computer":"! repository URL ./relative/repo is neither a URL (https://, ssh://, file://) nor host:path","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"./relative/repo\" is not a URL","pinned":null,"withConnection":null,"wikiName":"./relative/repo"},
  "C:\\repos\\app": {"computer":{"url":"C:\\repos\\app","host":"c","owner":null,"name":"-repos-app","identity":"c/\\repos\\app","directories":["-repos-app","-repos-app-9e009e49"]},"key":"c/\\repos\\app","scratchCloneProblem":null,"connectionHost":"c","reach":{"host":"C","port":22},"pinned":{"url":"C:\\repos\\app","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=C"]},"withConnection":false,"wikiName":"\\repos\\app"},
  "acme/app": {"computer":"! repository URL acme/app is neither a URL (https://, ssh://, file://) nor host:path","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"acme/app\" is not a URL","pinned":null,"withConnection":null,"wikiName":"acme/app"},
  "": {"computer":"! repository URL \"\" is not a valid git URL","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"\" is not a URL","pinned":null,"withConnection":null,"wikiName":""},
  "   ": {"computer":"! repository URL \"   \" is not a valid git URL","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"\" is not a URL","pinned":null,"withConnection":null,"wikiName":"   "},
  "not a url": {"computer":"! repository URL \"not a url\" is not a valid git URL","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"not a url\" is not a URL","pinned":null,"withConnection":null,"wikiName":"not a url"},
  "--upload-pack=touch /tmp/x": {"computer":"! repository URL \"--upload-pack=touch /tmp/x\" is not a valid git URL","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":null,"reach":"! \"--upload-pack=touch /tmp/x\" is not a URL","pinned":null,"withConnection":null,"wikiName":"--upload-pack=touch /tmp/x"},
  "ext::sh -c touch% /tmp/pwned": {"computer":"! repository URL \"ext::sh -c touch% /tmp/pwned\" is not a valid git URL","key":null,"scratchCloneProblem":"is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git","connectionHost":"ext","reach":{"host":"ext","port":22},"pinned":{"url":"ext::sh -c touch% /tmp/pwned","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=ext"]},"withConnection":false,"wikiName":"pwned"},
  "ext::ssh-wrapper%S": {"computer":"! repository URL ext::ssh-wrapper%S names a git remote helper; use https://, ssh://, git:// or file://","key":"ext/:ssh-wrapper%S","scratchCloneProblem":null,"connectionHost":"ext","reach":{"host":"ext","port":22},"pinned":{"url":"ext::ssh-wrapper%S","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=ext"]},"withConnection":false,"wikiName":":ssh-wrapper%S"},
  "fd::17/repo": {"computer":"! repository URL fd::17/repo names a git remote helper; use https://, ssh://, git:// or file://","key":"fd/:17/repo","scratchCloneProblem":null,"connectionHost":"fd","reach":{"host":"fd","port":22},"pinned":{"url":"fd::17/repo","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=fd"]},"withConnection":false,"wikiName":"repo"},
  "ftp://example.com/repo.git": {"computer":"! repository URL ftp://example.com/repo.git uses ftp://; use https://, ssh://, git:// or file://","key":"example.com/repo","scratchCloneProblem":"uses ftp:, which the evaluator does not clone from; use an https, http, ssh or git URL","connectionHost":"example.com","reach":"! ftp://example.com is not a URL agentplane connects to","pinned":null,"withConnection":null,"wikiName":"repo"},
  "mailto:someone@example.com": {"computer":{"url":"mailto:someone@example.com","host":"mailto","owner":null,"name":"someone-example.com","identity":"mailto/someone@example.com","directories":["someone-example.com","someone-example.com-95dc306c"]},"key":"mailto/someone@example.com","scratchCloneProblem":null,"connectionHost":"mailto","reach":{"host":"mailto","port":22},"pinned":{"url":"mailto:someone@example.com","config":[],"sshOptions":["HostName=203.0.113.7","HostKeyAlias=mailto"]},"withConnection":false,"wikiName":"someone@example.com"},
};

describe('repository URLs, every use', () => {
  if (process.env.REPOS_TABLE_WRITE) {
    it('writes the table', async () => {
      const out: Record<string, unknown> = {};
      for (const input of INPUTS) out[input] = await answers(input);
      writeFileSync(process.env.REPOS_TABLE_WRITE!, JSON.stringify(out, null, 2));
    });
    return;
  }

  it.each(INPUTS)('%j', async (input) => {
    expect(await answers(input)).toEqual(TABLE[input]);
  });

  it.each([
    ["fatal: repository 'https://user:s3cret@git.example/a.git/' not found", "fatal: repository 'https://git.example/a.git/' not found"],
    ['cloning https://x-access-token:ghp_1@github.com/a/b and ssh://git:pw@host/c', 'cloning https://github.com/a/b and ssh://host/c'],
    ['git@github.com:acme/app.git stays', 'git@github.com:acme/app.git stays'],
    ['no URL here', 'no URL here'],
  ])('redacts %j', (text, shown) => {
    expect(redactCredentials(text)).toBe(shown);
  });
});
