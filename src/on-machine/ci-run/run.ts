import { setTimeout as sleep } from 'node:timers/promises';
import { apiClient, ApiError, type ApiCall } from './client.ts';
import { readCiEvent } from './event.ts';
import { registerRunner } from './runner-computer.ts';

/** The options of `agentplane ci run`; each falls back to the AGENTPLANE_* variable the generated workflow sets. */
export interface CiRunOptions {
  url?: string;
  apiKey?: string;
  automation?: string;
  model?: string;
  reasoningEffort?: string;
  registerRunner?: boolean;
  timeoutMinutes?: string;
}

interface Started {
  jobId: string;
  status: 'running' | 'paused' | 'skipped' | 'wiki';
  detail?: string;
  modeId: string;
  computerId?: string;
  prompt?: string;
}

const WAIT_MS = 600_000;
const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes)$/i.test(v);

/** Sends the prompt and waits for the agent to be idle again; returns its last answer. */
async function converse(call: ApiCall, computerId: string, prompt: string, settings: Record<string, string>, deadline: number) {
  const { sessionId } = await call<{ sessionId: string }>('POST', '/api/v0/sessions', {
    computerId,
    ...(Object.keys(settings).length ? { sessionSettings: settings } : {}),
  });
  try {
    await call('POST', `/api/v0/sessions/${sessionId}/messages`, {
      text: prompt,
      waitForCompletion: true,
      waitTimeoutMs: Math.max(1, Math.min(WAIT_MS, deadline - Date.now())),
    });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 504)) throw err;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`the agent did not finish in time (session ${sessionId})`);
      const s = await call<{ status: string }>('GET', `/api/v0/sessions/${sessionId}`);
      if (s.status === 'idle') break;
      await sleep(2_000);
    }
  }
  const { messages } = await call<{ messages: { content: { type: string; text?: string }[] }[] }>(
    'GET',
    `/api/v0/sessions/${sessionId}/messages?role=assistant&limit=1`,
  );
  const text = (messages[0]?.content ?? [])
    .filter((b) => b.type === 'text' && b.text)
    .map((b) => b.text)
    .join('\n\n')
    .trim();
  return { sessionId, text: text || '(the agent gave no answer)' };
}

/**
 * `agentplane ci run`: what a generated workflow's one step does. Exit code 0 when the run
 * succeeded or the automation is paused (CI shows why, without a failing run every time), 1 when it failed.
 */
export async function runCi(
  opts: CiRunOptions,
  env: NodeJS.ProcessEnv = process.env,
  out = (line: string) => process.stdout.write(`${line}\n`),
): Promise<number> {
  const url = opts.url ?? env.AGENTPLANE_URL;
  const apiKey = opts.apiKey ?? env.AGENTPLANE_API_KEY;
  const automationId = opts.automation ?? env.AGENTPLANE_AUTOMATION_ID;
  if (!url || !apiKey || !automationId) {
    throw new Error('agentplane ci run needs AGENTPLANE_URL (a repository variable), AGENTPLANE_API_KEY (a repository secret) and AGENTPLANE_AUTOMATION_ID');
  }
  const call = apiClient(url, apiKey);
  const event = readCiEvent(env);
  const deadline = Date.now() + Number(opts.timeoutMinutes ?? env.AGENTPLANE_TIMEOUT_MINUTES ?? 30) * 60_000;
  const log = (line: string) => process.stderr.write(`agentplane ci run: ${line}\n`);

  const runner =
    opts.registerRunner || truthy(env.AGENTPLANE_REGISTER_RUNNER)
      ? await registerRunner({
          url,
          apiKey,
          call,
          log,
          name: `ci-${event.repository.replace(/[^A-Za-z0-9]+/g, '-')}-${env.GITHUB_RUN_ID ?? Date.now()}`.slice(0, 63),
        })
      : undefined;
  try {
    const started = await call<Started>('POST', '/api/v0/automations/ci/jobs', {
      automationId,
      repoFullName: event.repository,
      event: event.event,
      ...(event.pullRequestNumber ? { pullRequestNumber: event.pullRequestNumber } : {}),
      ...(event.ref ? { ref: event.ref } : {}),
      ...(event.sha ? { sha: event.sha } : {}),
      ...(event.runUrl ? { runUrl: event.runUrl } : {}),
      ...(runner ? { computerId: runner.computerId } : {}),
    });
    if (started.status !== 'running') {
      out(`${started.status}: ${started.detail ?? ''}`);
      return 0;
    }
    const settings: Record<string, string> = {};
    const model = opts.model ?? env.AGENTPLANE_MODEL;
    const effort = opts.reasoningEffort ?? env.AGENTPLANE_REASONING_EFFORT;
    if (model) settings.model = model;
    if (effort) settings.reasoningEffort = effort;
    let result: { sessionId?: string; text?: string; error?: string };
    try {
      result = await converse(call, started.computerId!, started.prompt!, settings, deadline);
    } catch (err) {
      result = { error: (err as Error).message };
    }
    const job = await call<{ status: string; repos: { commentUrl?: string; commentError?: string }[] }>(
      'POST',
      `/api/v0/automations/ci/jobs/${started.jobId}/complete`,
      {
        conclusion: result.error ? 'failure' : 'success',
        ...(result.sessionId ? { sessionId: result.sessionId } : {}),
        ...(result.text ? { result: result.text } : {}),
        ...(result.error ? { error: result.error } : {}),
      },
    );
    const [repo] = job.repos;
    out(
      `job ${started.jobId} ${job.status}${result.sessionId ? `, session ${result.sessionId}` : ''}${repo?.commentUrl ? `, comment ${repo.commentUrl}` : ''}`,
    );
    if (result.error) log(result.error);
    if (repo?.commentError) log(`the comment was not posted: ${repo.commentError}`);
    return job.status === 'succeeded' ? 0 : 1;
  } finally {
    await runner?.release();
  }
}
