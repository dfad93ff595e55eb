/** What agentplane asks of a forge, whichever it is (GitHub, GitHub Enterprise Server, Gitea, Forgejo). */
export type ForgeProvider = 'github' | 'gitea';

export interface ForgeAccount {
  login: string;
  /** OAuth scopes the token carries, where the forge says (GitHub's X-OAuth-Scopes); null when it does not. */
  scopes: string[] | null;
}

interface ForgeOwner {
  login: string;
  type: 'User' | 'Organization';
}

export interface ForgeRepository {
  fullName: string;
  owner: string;
  name: string;
  private: boolean;
  archived: boolean;
  /** The token may push: branches, commits and pull requests can be made. */
  canPush: boolean;
  defaultBranch: string;
  htmlUrl: string;
  cloneUrl: string;
}

export interface ForgeEntry {
  name: string;
  path: string;
  type: 'file' | 'dir' | 'other';
}

export interface ForgeFile {
  path: string;
  sha: string;
  content: string;
}

export interface ForgePullRequest {
  number: number;
  htmlUrl: string;
  title: string;
  body: string;
  draft: boolean;
  headRef: string;
  headSha: string;
  baseRef: string;
  author: string;
}

export interface ForgeRun {
  id: number;
  name: string;
  /** The workflow file, as the forge names it (GitHub: the repository path; Gitea: the file name, maybe with @ref). */
  path: string;
  event: string;
  status: string;
  conclusion: string | null;
  headBranch: string | null;
  headSha: string | null;
  pullRequests: number[];
  htmlUrl: string;
  /** Null where the forge does not say (Gitea gives only start and completion times). */
  createdAt: string | null;
  updatedAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
}

/** One change to one file, committed on a new branch cut from `base`. */
interface FileChange {
  path: string;
  /** New content; null deletes the file. */
  content: string | null;
  /** The blob the change replaces (edit, delete). */
  sha?: string;
  message: string;
  base: string;
  branch: string;
}

export interface ForgeClient {
  readonly provider: ForgeProvider;
  /** The workflow directories this forge reads, in the order it prefers them. */
  readonly workflowDirs: readonly string[];
  whoAmI(): Promise<ForgeAccount>;
  /** The account itself and the organizations it belongs to. */
  listOwners(): Promise<ForgeOwner[]>;
  /** Every repository the token reaches, paged through to the end. */
  listRepositories(): Promise<ForgeRepository[]>;
  getRepository(repo: string): Promise<ForgeRepository>;
  /** A directory's entries at `ref`; null when there is no such directory. */
  listDirectory(repo: string, dir: string, ref: string): Promise<ForgeEntry[] | null>;
  /** A file at `ref`; null when there is none. */
  readFile(repo: string, path: string, ref: string): Promise<ForgeFile | null>;
  /** Cuts `change.branch` from `change.base` and makes one commit on it. */
  commitOnNewBranch(repo: string, change: FileChange): Promise<void>;
  openPullRequest(repo: string, pr: { title: string; body: string; head: string; base: string }): Promise<ForgePullRequest>;
  getPullRequest(repo: string, number: number): Promise<ForgePullRequest>;
  /** The pull request's unified diff. */
  pullRequestDiff(repo: string, number: number): Promise<string>;
  commentOnPullRequest(repo: string, number: number, body: string): Promise<{ id: number; htmlUrl: string }>;
  /** The newest `limit` workflow runs of a repository. */
  listRuns(repo: string, limit: number): Promise<ForgeRun[]>;
}

/** A forge answered with an error; `reason` is its own message. */
export class ForgeError extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, what: string) {
    super(`${what}: the forge answered ${status}${reason ? ` (${reason})` : ''}`);
    this.status = status;
    this.reason = reason;
  }
}
