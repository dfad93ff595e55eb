import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './http.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);

/** Where scripts/gitea-toolchain.sh leaves the binaries (and the module source Gitea reads its templates from). */
export function giteaBinDir(): string | undefined {
  const home = process.env.AGENTPLANE_GITEA_HOME ?? path.join(os.homedir(), '.cache/agentplane/gitea');
  const bin = path.join(home, (process.env.AGENTPLANE_GITEA_VERSION ?? 'v1.26.0').replace(/^v/, ''), 'bin');
  const ok = ['gitea', 'gitea-runner'].every((b) => fs.existsSync(path.join(bin, b))) && fs.existsSync(path.join(bin, 'gitea-src/options'));
  return ok ? bin : undefined;
}

/** Why the Gitea tests cannot run here, or undefined when they can. */
export function giteaMissing(): string | undefined {
  return giteaBinDir() ? undefined : 'Gitea is not built: run bash scripts/gitea-toolchain.sh';
}

export interface GiteaUser {
  login: string;
  password: string;
  token: string;
}

export interface Gitea {
  url: string;
  bin: string;
  dir: string;
  admin: GiteaUser;
  /** The Gitea API as `as` (default: the admin): JSON in and out, status kept. */
  api(method: string, apiPath: string, opts?: { body?: unknown; as?: GiteaUser | string }): Promise<{ status: number; body: any; headers: Headers }>;
  createUser(login: string): Promise<GiteaUser>;
  createOrg(owner: GiteaUser, name: string): Promise<void>;
  /** A repository with an initial commit on `main` holding `files` (path -> content). */
  createRepo(owner: GiteaUser, repo: { org?: string; name: string; private?: boolean; files?: Record<string, string> }): Promise<string>;
  /** Writes files onto a branch in one commit (creating the branch from main when it is new). */
  commitFiles(as: GiteaUser, repo: string, files: Record<string, string>, opts?: { branch?: string; message?: string }): Promise<void>;
  stop(): Promise<void>;
}

const tokenOf = (as: GiteaUser | string) => (typeof as === 'string' ? as : as.token);

/** A Gitea server on a free loopback port, SQLite in a temporary directory; one per test file. */
export async function startGitea(bin: string): Promise<Gitea> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-gitea-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gitea = path.join(bin, 'gitea');
  const config = path.join(dir, 'custom/conf/app.ini');
  fs.mkdirSync(path.dirname(config), { recursive: true });
  const secret = async (kind: string) => (await run(gitea, ['generate', 'secret', kind])).stdout.trim();
  fs.writeFileSync(
    config,
    `RUN_USER = ${os.userInfo().username}
RUN_MODE = prod
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
WORK_PATH = ${dir}
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
ROOT_URL = ${url}/
DOMAIN = 127.0.0.1
DISABLE_SSH = true
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = ${fs.realpathSync(path.join(bin, 'gitea-src'))}
APP_DATA_PATH = ${dir}/data
[database]
DB_TYPE = sqlite3
PATH = ${dir}/data/gitea.db
[repository]
ROOT = ${dir}/repos
DEFAULT_BRANCH = main
[security]
INSTALL_LOCK = true
SECRET_KEY = ${await secret('SECRET_KEY')}
INTERNAL_TOKEN = ${await secret('INTERNAL_TOKEN')}
[oauth2]
ENABLED = false
[service]
DISABLE_REGISTRATION = true
[log]
MODE = file
LEVEL = warn
ROOT_PATH = ${dir}/log
[actions]
ENABLED = true
DEFAULT_ACTIONS_URL = self
[webhook]
ALLOWED_HOST_LIST = loopback
[cron.update_checker]
ENABLED = false
[api]
MAX_RESPONSE_ITEMS = 50
`,
  );
  const proc: ChildProcess = spawn(gitea, ['web', '--config', config], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  await waitFor(
    () => `Gitea at ${url} (${stderr})`,
    async () =>
      proc.exitCode === null &&
      (await fetch(`${url}/api/v1/version`).then(
        (r) => r.ok,
        () => false,
      )),
    60_000,
    100,
  );
  const password = 'Admin-Passw0rd!';
  await run(gitea, [
    'admin',
    'user',
    'create',
    '--admin',
    '--username',
    'root1',
    '--password',
    password,
    '--email',
    'root1@example.test',
    '--must-change-password=false',
    '--config',
    config,
  ]);
  const adminToken = (
    await run(gitea, ['admin', 'user', 'generate-access-token', '--username', 'root1', '--token-name', 'tests', '--scopes', 'all', '--raw', '--config', config])
  ).stdout
    .trim()
    .split('\n')
    .pop()!;
  const admin: GiteaUser = { login: 'root1', password, token: adminToken };

  const api: Gitea['api'] = async (method, apiPath, opts = {}) => {
    const res = await fetch(`${url}/api/v1${apiPath}`, {
      method,
      headers: { authorization: `token ${tokenOf(opts.as ?? admin)}`, ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // plain text (diffs, logs)
    }
    return { status: res.status, body, headers: res.headers };
  };
  const must = async (what: string, p: ReturnType<Gitea['api']>, ok = [200, 201, 204]) => {
    const res = await p;
    if (!ok.includes(res.status)) throw new Error(`${what}: Gitea answered ${res.status} ${JSON.stringify(res.body)}`);
    return res;
  };
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  const self: Gitea = {
    url,
    bin,
    dir,
    admin,
    api,
    async createUser(login) {
      const password = `${login}-Passw0rd!`;
      await must(
        `create user ${login}`,
        api('POST', '/admin/users', { body: { username: login, password, email: `${login}@example.test`, must_change_password: false } }),
      );
      const res = await fetch(`${url}/api/v1/users/${login}/tokens`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'agentplane', scopes: ['all'] }),
      });
      const body = (await res.json()) as { sha1?: string; message?: string };
      if (!body.sha1) throw new Error(`token for ${login}: ${res.status} ${JSON.stringify(body)}`);
      return { login, password, token: body.sha1 };
    },
    async createOrg(owner, name) {
      await must(`create org ${name}`, api('POST', '/orgs', { as: owner, body: { username: name, visibility: 'public' } }));
    },
    async createRepo(owner, repo) {
      const where = repo.org ? `/orgs/${repo.org}/repos` : '/user/repos';
      const res = await must(
        `create repo ${repo.name}`,
        api('POST', where, {
          as: owner,
          body: { name: repo.name, private: repo.private ?? false, auto_init: true, default_branch: 'main', readme: 'Default' },
        }),
      );
      const fullName = res.body.full_name as string;
      if (repo.files && Object.keys(repo.files).length) await self.commitFiles(owner, fullName, repo.files);
      return fullName;
    },
    async commitFiles(as, repo, files, opts = {}) {
      const branch = opts.branch ?? 'main';
      const exists = (await api('GET', `/repos/${repo}/branches/${branch}`, { as })).status === 200;
      const current = async (p: string) => {
        const r = await api('GET', `/repos/${repo}/contents/${p}?ref=${branch}`, { as });
        return r.status === 200 ? (r.body.sha as string) : undefined;
      };
      const list = await Promise.all(
        Object.entries(files).map(async ([p, content]) => {
          const sha = exists ? await current(p) : undefined;
          return { operation: sha ? 'update' : 'create', path: p, content: b64(content), ...(sha ? { sha } : {}) };
        }),
      );
      await must(
        `commit to ${repo}@${branch}`,
        api('POST', `/repos/${repo}/contents`, {
          as,
          body: { files: list, message: opts.message ?? 'test files', branch: exists ? branch : 'main', ...(exists ? {} : { new_branch: branch }) },
        }),
      );
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((resolve) => proc.once('exit', resolve));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}

export interface GiteaRunner {
  stop(): Promise<void>;
  log(): string;
}

/**
 * gitea-runner in host mode (jobs run as plain processes here, no Docker), registered to one
 * repository, with the labels the generated workflows ask for.
 */
export async function startGiteaRunner(gitea: Gitea, repo: string, env: Record<string, string> = {}): Promise<GiteaRunner> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-gitea-runner-'));
  const runner = path.join(gitea.bin, 'gitea-runner');
  const token = await gitea.api('POST', `/repos/${repo}/actions/runners/registration-token`);
  if (token.status !== 200 && token.status !== 201) throw new Error(`registration token: ${token.status} ${JSON.stringify(token.body)}`);
  const config = path.join(dir, 'config.yaml');
  // --labels is ignored once the config has labels; the cache server would bind a non-loopback address.
  fs.writeFileSync(
    config,
    `log:\n  level: info\nrunner:\n  file: ${dir}/.runner\n  capacity: 1\n  labels: ["ubuntu-latest:host"]\n  fetch_interval: 1s\n` +
      `cache:\n  enabled: false\nhost:\n  workdir_parent: ${dir}/work\n`,
  );
  await run(runner, ['--config', config, 'register', '--no-interactive', '--instance', gitea.url, '--token', token.body.token, '--name', 'test-runner'], {
    cwd: dir,
  });
  let output = '';
  const proc = spawn(runner, ['--config', config, 'daemon'], { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-20_000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return {
    log: () => output,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((resolve) => proc.once('exit', resolve));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Merges a pull request the way a user would once Gitea lets them: Gitea checks a new pull
 * request's mergeability in the background and refuses a merge (405) until it has. Returns the
 * merge's status.
 */
export async function mergeWhenReady(gitea: Gitea, repo: string, number: number, as: GiteaUser): Promise<number> {
  await waitFor(
    `pull request ${repo}#${number} to be mergeable`,
    async () => (await gitea.api('GET', `/repos/${repo}/pulls/${number}`)).body.mergeable === true,
    30_000,
  );
  return (await gitea.api('POST', `/repos/${repo}/pulls/${number}/merge`, { as, body: { Do: 'merge' } })).status;
}
