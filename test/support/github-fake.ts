import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * THE ONE FAKE: a wire-level stand-in for GitHub's REST API (github.com cannot be reached from
 * here), written from GitHub's published REST description (api.github.com, version 2022-11-28)
 * for exactly the operations agentplane's adapter uses. It serves them under /api/v3, as GitHub
 * Enterprise Server does, and keeps GitHub's wire habits: bearer tokens, 401 "Bad credentials",
 * 403 without a User-Agent, `X-OAuth-Scopes`, `per_page`/`page` with RFC 8288 `Link` headers
 * (at most 100 per page), 404/409/422 error bodies `{message, documentation_url, status}`,
 * base64 contents with blob SHAs, and diffs for `Accept: application/vnd.github.diff`.
 */

interface FakeRepo {
  owner: string;
  name: string;
  private: boolean;
  archived: boolean;
  defaultBranch: string;
  /** branch -> { sha, files: path -> content } */
  branches: Map<string, { sha: string; files: Map<string, string> }>;
  pulls: { number: number; title: string; body: string; head: string; base: string; draft: boolean; user: string }[];
  comments: { id: number; issue: number; body: string }[];
  runs: Record<string, unknown>[];
}

export interface GitHubFake {
  /** The GHES-style web address: the API answers at `${url}/api/v3`. */
  url: string;
  token: string;
  login: string;
  /** Every request: method, path with query, and the headers agentplane sent. */
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders }[];
  addOrg(login: string): void;
  addRepo(fullName: string, opts?: { private?: boolean; archived?: boolean; files?: Record<string, string>; canPush?: boolean }): void;
  addRun(fullName: string, run: Record<string, unknown>): void;
  fileAt(fullName: string, branch: string, path: string): string | undefined;
  pulls(fullName: string): FakeRepo['pulls'];
  comments(fullName: string, issue: number): FakeRepo['comments'];
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';
const blobSha = (content: string) =>
  createHash('sha1')
    .update(`blob ${Buffer.byteLength(content)}\0${content}`)
    .digest('hex');
const commitSha = (seed: string) => createHash('sha1').update(seed).digest('hex');

export async function startGitHubFake(opts: { login?: string; token?: string; scopes?: string } = {}): Promise<GitHubFake> {
  const login = opts.login ?? 'octo';
  const token = opts.token ?? 'ghp_fake0123456789abcdefghijklmnopqrstuv';
  const orgs: string[] = [];
  const repos = new Map<string, FakeRepo & { canPush: boolean }>();
  const requests: GitHubFake['requests'] = [];
  let commits = 0;
  let ids = 1000;

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      requests.push({ method: req.method!, path: req.url!, headers: req.headers });
      const url = new URL(req.url!, 'http://fake');
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        const text = typeof body === 'string' ? body : JSON.stringify(body);
        res.writeHead(status, {
          'content-type': typeof body === 'string' ? 'application/vnd.github.diff; charset=utf-8' : 'application/json; charset=utf-8',
          'x-github-api-version-selected': '2022-11-28',
          ...headers,
        });
        res.end(text);
      };
      const error = (status: number, message: string) => send(status, { message, documentation_url: DOCS, status: String(status) });
      if (!req.headers['user-agent']) return error(403, 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header');
      if (!url.pathname.startsWith('/api/v3/')) return error(404, 'Not Found');
      if (req.headers.authorization !== `Bearer ${token}` && req.headers.authorization !== `token ${token}`) return error(401, 'Bad credentials');
      const version = req.headers['x-github-api-version'];
      if (version !== undefined && version !== '2022-11-28') return error(400, `API version ${String(version)} is not supported.`);
      let body: any = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        return error(400, 'Problems parsing JSON');
      }
      const path = url.pathname.slice('/api/v3'.length);

      /** One page of a list, with the Link header GitHub sends. */
      const page = (items: unknown[]) => {
        const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30), 100);
        const n = Math.max(1, Number(url.searchParams.get('page') ?? 1));
        const last = Math.max(1, Math.ceil(items.length / perPage));
        const link = (p: number, rel: string) => {
          const u = new URL(url.toString());
          u.searchParams.set('page', String(p));
          return `<http://${req.headers.host}${u.pathname}${u.search}>; rel="${rel}"`;
        };
        const links = [...(n < last ? [link(n + 1, 'next'), link(last, 'last')] : []), ...(n > 1 ? [link(1, 'first'), link(n - 1, 'prev')] : [])];
        send(200, items.slice((n - 1) * perPage, n * perPage), links.length ? { link: links.join(', ') } : {});
      };
      const repoJson = (r: FakeRepo & { canPush: boolean }) => ({
        id: ids++,
        name: r.name,
        full_name: `${r.owner}/${r.name}`,
        owner: { login: r.owner, type: r.owner === login ? 'User' : 'Organization' },
        private: r.private,
        archived: r.archived,
        default_branch: r.defaultBranch,
        html_url: `${fake.url}/${r.owner}/${r.name}`,
        clone_url: `${fake.url}/${r.owner}/${r.name}.git`,
        permissions: { admin: r.canPush, push: r.canPush, pull: true },
      });
      const pullJson = (r: FakeRepo, p: FakeRepo['pulls'][number]) => ({
        id: p.number + 5000,
        number: p.number,
        state: 'open',
        title: p.title,
        body: p.body,
        draft: p.draft,
        user: { login: p.user },
        html_url: `${fake.url}/${r.owner}/${r.name}/pull/${p.number}`,
        head: { ref: p.head, sha: r.branches.get(p.head)?.sha },
        base: { ref: p.base, sha: r.branches.get(p.base)?.sha },
      });

      if (req.method === 'GET' && path === '/user') return send(200, { login, id: 1, type: 'User' }, { 'x-oauth-scopes': opts.scopes ?? 'repo, workflow' });
      if (req.method === 'GET' && path === '/user/orgs') return page(orgs.map((o, i) => ({ login: o, id: 100 + i })));
      if (req.method === 'GET' && path === '/user/repos') return page([...repos.values()].map(repoJson));

      const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
      const repo = m ? repos.get(`${m[1]}/${m[2]}`) : undefined;
      if (!m || !repo) return error(404, 'Not Found');
      const rest = m[3] ?? '';
      const ref = url.searchParams.get('ref') ?? repo.defaultBranch;

      if (req.method === 'GET' && rest === '') return send(200, repoJson(repo));
      const contents = /^\/contents\/(.+)$/.exec(rest);
      if (contents) {
        const file = decodeURIComponent(contents[1]!);
        if (req.method === 'GET') {
          const branch = repo.branches.get(ref);
          if (!branch) return error(404, `No commit found for the ref ${ref}`);
          const content = branch.files.get(file);
          if (content !== undefined) {
            return send(200, {
              type: 'file',
              encoding: 'base64',
              size: content.length,
              name: file.split('/').pop(),
              path: file,
              sha: blobSha(content),
              content: Buffer.from(content).toString('base64'),
            });
          }
          const children = [...branch.files.keys()].filter((p) => p.startsWith(`${file}/`));
          if (!children.length) return error(404, 'Not Found');
          const names = [...new Set(children.map((p) => p.slice(file.length + 1).split('/')[0]!))];
          return send(
            200,
            names.map((n) => ({ name: n, path: `${file}/${n}`, type: branch.files.has(`${file}/${n}`) ? 'file' : 'dir' })),
          );
        }
        if (!repo.canPush) return error(403, 'Resource not accessible by personal access token');
        const branch = repo.branches.get(body.branch ?? repo.defaultBranch);
        if (!branch) return error(404, `Branch ${body.branch} not found`);
        const current = branch.files.get(file);
        if (!body.message) return error(422, 'Invalid request.\n\n"message" wasn\'t supplied.');
        if (req.method === 'PUT') {
          if (current !== undefined && body.sha !== blobSha(current)) return error(409, `${file} does not match ${body.sha ?? '(no sha)'}`);
          const text = Buffer.from(String(body.content ?? ''), 'base64').toString('utf8');
          branch.files.set(file, text);
          branch.sha = commitSha(`${++commits}`);
          return send(current === undefined ? 201 : 200, { content: { path: file, sha: blobSha(text) }, commit: { sha: branch.sha, message: body.message } });
        }
        if (req.method === 'DELETE') {
          if (current === undefined) return error(404, 'Not Found');
          if (body.sha !== blobSha(current)) return error(409, `${file} does not match ${body.sha}`);
          branch.files.delete(file);
          branch.sha = commitSha(`${++commits}`);
          return send(200, { content: null, commit: { sha: branch.sha, message: body.message } });
        }
      }
      const headRef = /^\/git\/ref\/heads\/(.+)$/.exec(rest);
      if (req.method === 'GET' && headRef) {
        const b = repo.branches.get(decodeURIComponent(headRef[1]!));
        return b ? send(200, { ref: `refs/heads/${headRef[1]}`, object: { sha: b.sha, type: 'commit' } }) : error(404, 'Not Found');
      }
      if (req.method === 'POST' && rest === '/git/refs') {
        if (!repo.canPush) return error(403, 'Resource not accessible by personal access token');
        const name = String(body.ref ?? '').replace(/^refs\/heads\//, '');
        if (!name || !body.sha) return error(422, 'Invalid request.\n\n"ref", "sha" weren\'t supplied.');
        if (repo.branches.has(name)) return error(422, 'Reference already exists');
        const from = [...repo.branches.values()].find((b) => b.sha === body.sha);
        if (!from) return error(422, 'Object does not exist');
        repo.branches.set(name, { sha: body.sha, files: new Map(from.files) });
        return send(201, { ref: body.ref, object: { sha: body.sha, type: 'commit' } });
      }
      if (req.method === 'POST' && rest === '/pulls') {
        if (!repo.branches.has(body.head)) return error(422, 'Validation Failed');
        const pr = {
          number: repo.pulls.length + 1,
          title: body.title,
          body: body.body ?? '',
          head: body.head,
          base: body.base,
          draft: Boolean(body.draft),
          user: login,
        };
        repo.pulls.push(pr);
        return send(201, pullJson(repo, pr));
      }
      const pull = /^\/pulls\/(\d+)$/.exec(rest);
      if (req.method === 'GET' && pull) {
        const pr = repo.pulls.find((p) => p.number === Number(pull[1]));
        if (!pr) return error(404, 'Not Found');
        if (req.headers.accept === 'application/vnd.github.diff') {
          const head = repo.branches.get(pr.head)!.files;
          const base = repo.branches.get(pr.base)!.files;
          const changed = [...new Set([...head.keys(), ...base.keys()])].filter((p) => head.get(p) !== base.get(p));
          return send(
            200,
            changed
              .map(
                (p) =>
                  `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n${(head.get(p) ?? '')
                    .split('\n')
                    .filter(Boolean)
                    .map((l) => `+${l}`)
                    .join('\n')}\n`,
              )
              .join(''),
          );
        }
        return send(200, pullJson(repo, pr));
      }
      const issueComments = /^\/issues\/(\d+)\/comments$/.exec(rest);
      if (req.method === 'POST' && issueComments) {
        if (!body.body) return error(422, 'Validation Failed');
        const comment = { id: ids++, issue: Number(issueComments[1]), body: body.body };
        repo.comments.push(comment);
        return send(201, { id: comment.id, body: comment.body, html_url: `${fake.url}/${m[1]}/${m[2]}/pull/${comment.issue}#issuecomment-${comment.id}` });
      }
      if (req.method === 'GET' && rest === '/actions/runs') {
        const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30), 100);
        return send(200, { total_count: repo.runs.length, workflow_runs: repo.runs.slice(0, perPage) });
      }
      error(404, 'Not Found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: GitHubFake = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    login,
    requests,
    addOrg: (o) => void orgs.push(o),
    addRepo(fullName, o = {}) {
      const [owner, name] = fullName.split('/') as [string, string];
      const files = new Map(Object.entries({ 'README.md': `# ${name}\n`, ...o.files }));
      repos.set(fullName, {
        owner,
        name,
        private: o.private ?? false,
        archived: o.archived ?? false,
        canPush: o.canPush ?? true,
        defaultBranch: 'main',
        branches: new Map([['main', { sha: commitSha(`${fullName}@init`), files }]]),
        pulls: [],
        comments: [],
        runs: [],
      });
    },
    addRun: (fullName, run) => void repos.get(fullName)!.runs.unshift(run),
    fileAt: (fullName, branch, p) => repos.get(fullName)?.branches.get(branch)?.files.get(p),
    pulls: (fullName) => repos.get(fullName)!.pulls,
    comments: (fullName, issue) => repos.get(fullName)!.comments.filter((c) => c.issue === issue),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return fake;
}
