import fs from 'node:fs';

/** What triggered the workflow run, from the runner's environment (GitHub's and Gitea's runners set the same variables). */
export interface CiEvent {
  repository: string;
  event: string;
  ref?: string;
  sha?: string;
  runUrl?: string;
  pullRequestNumber?: number;
}

type Raw = Record<string, any>;

/** The pull request an event is about: a pull request, a comment on one, or a CI run of one. */
function pullRequestOf(payload: Raw): number | undefined {
  const n =
    payload.pull_request?.number ?? (payload.issue?.pull_request ? payload.issue.number : undefined) ?? payload.workflow_run?.pull_requests?.[0]?.number;
  return typeof n === 'number' ? n : undefined;
}

export function readCiEvent(env: NodeJS.ProcessEnv): CiEvent {
  const repository = env.GITHUB_REPOSITORY;
  if (!repository) throw new Error('GITHUB_REPOSITORY is not set: agentplane ci run runs inside a GitHub, Gitea or Forgejo Actions job');
  let payload: Raw = {};
  if (env.GITHUB_EVENT_PATH && fs.existsSync(env.GITHUB_EVENT_PATH)) payload = JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as Raw;
  const server = env.GITHUB_SERVER_URL?.replace(/\/+$/, '');
  return {
    repository,
    event: env.GITHUB_EVENT_NAME ?? 'unknown',
    ref: env.GITHUB_REF,
    sha: env.GITHUB_SHA,
    ...(server && env.GITHUB_RUN_ID ? { runUrl: `${server}/${repository}/actions/runs/${env.GITHUB_RUN_ID}` } : {}),
    ...(pullRequestOf(payload) ? { pullRequestNumber: pullRequestOf(payload) } : {}),
  };
}
