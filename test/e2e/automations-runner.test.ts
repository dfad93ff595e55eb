import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { giteaBinDir, giteaMissing, mergeWhenReady, startGitea, startGiteaRunner, type Gitea, type GiteaRunner, type GiteaUser } from '../support/gitea.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

const bin = giteaBinDir();
const skip = skipWithout('the gitea-runner end-to-end test', giteaMissing());
const CI = '/api/v0/automations/ci';
const CLI = `${process.execPath} ${path.resolve('bin/agentplane.js')}`;

/**
 * The generated code-review workflow run by Gitea's own Actions runner: a pull request opened on
 * the forge triggers it, its one step runs `agentplane ci run`, the session runs on a computer
 * with the scripted model, and the review lands on the pull request as a comment.
 */
describe.skipIf(skip || skipMachineTests)('a generated workflow run by gitea-runner end to end', () => {
  let gitea: Gitea;
  let runner: GiteaRunner;
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let alice: GiteaUser;
  let computerId: string;
  let robot: string;
  const repo = 'alice/web';

  const openPullRequest = async (branch: string, title: string) => {
    await gitea.commitFiles(alice, repo, { [`src/${branch}.ts`]: `export const ${branch.replace(/-/g, '_')} = 1;\n` }, { branch });
    const pr = await gitea.api('POST', `/repos/${repo}/pulls`, { as: alice, body: { title, head: branch, base: 'main' } });
    expect(pr.status).toBe(201);
    return pr.body.number as number;
  };
  const comments = async (n: number) => (await gitea.api('GET', `/repos/${repo}/issues/${n}/comments`)).body as { body: string; html_url: string }[];

  beforeAll(async () => {
    [gitea, machine, model] = await Promise.all([startGitea(bin!), startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi('pglite', { worker: true, gateway: true, env: ALLOW_LOOPBACK });
    robot = api.acme.serviceAccount.apiKey;
    alice = await gitea.createUser('alice');
    await gitea.createRepo(alice, { name: 'web' });

    // The automation's computer belongs to the service account whose key CI holds.
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: robot })).body.publicKey);
    const computer = await api.call('POST', '/api/v0/computers', {
      as: robot,
      body: { name: 'review-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(computer.status, computer.body.detail).toBe(201);
    computerId = computer.body.id;

    const owner = api.acme.members.owner.apiKey;
    expect(
      (await api.call('POST', '/api/v0/integrations/source-control', { as: owner, body: { provider: 'gitea', baseUrl: gitea.url, token: alice.token } }))
        .status,
    ).toBe(201);
    const edit = await api.call('POST', `${CI}/edit`, {
      as: owner,
      body: {
        action: 'create',
        automationName: 'Review',
        modeId: 'code-review',
        computerId,
        repos: [{ repoFullName: repo }],
        changes: { yamlParams: 'model: coder' },
      },
    });
    expect(edit.body.sessions[0].prUrl, JSON.stringify(edit.body)).toBeDefined();
    expect(await mergeWhenReady(gitea, repo, 1, alice)).toBe(200);

    // What a user sets once per repository (or organization): the key as a secret, where agentplane is.
    expect((await gitea.api('PUT', `/repos/${repo}/actions/secrets/AGENTPLANE_API_KEY`, { as: alice, body: { data: robot } })).status).toBeLessThan(300);
    expect((await gitea.api('POST', `/repos/${repo}/actions/variables/AGENTPLANE_URL`, { as: alice, body: { value: api.url } })).status).toBeLessThan(300);
    // Offline there is no npm registry to fetch agentplane from: the runner uses this checkout's CLI.
    expect((await gitea.api('POST', `/repos/${repo}/actions/variables/AGENTPLANE_CLI`, { as: alice, body: { value: CLI } })).status).toBeLessThan(300);
    runner = await startGiteaRunner(gitea, repo);
  }, 240_000);

  afterAll(async () => {
    await runner?.stop();
    await api?.close();
    await model?.close();
    await machine?.stop();
    await gitea?.stop();
    models?.dispose();
  });

  it('a pull request is reviewed: session on the computer, the model’s answer as a comment, the run and the job recorded', async () => {
    // Two runs: the pull request that added the workflow is reviewed too (Gitea runs the head's workflow), then this one.
    const review = { text: 'Looks good. One nit: `src/feature-a.ts` exports a constant nobody imports.' };
    model.enqueue(review, review);
    const number = await openPullRequest('feature-a', 'Add feature a');
    const comment = await waitFor(
      () => `the review comment (runner log: ${runner.log().slice(-3000)})`,
      async () => (await comments(number)).find((c) => c.body.includes('### agentplane code review')),
      180_000,
      1_000,
    );
    expect(comment.body).toContain('One nit: `src/feature-a.ts` exports a constant nobody imports.');
    // The model saw the pull request and its diff.
    const prompts = model.requests.map((r) => JSON.stringify(r.body.messages));
    expect(prompts.find((p) => p.includes(`Pull request #${number}: Add feature a`))).toContain('+export const feature_a = 1;');
    expect((await comments(1)).map((c) => c.body)).toEqual([expect.stringContaining('### agentplane code review')]);

    const runs = await waitFor(
      'a completed run',
      async () => {
        const res = await api.call('GET', `${CI}/runs`, { as: robot });
        return res.body.runs.find((r: any) => r.event === 'pull_request' && r.status === 'completed') ?? false;
      },
      60_000,
      500,
    );
    expect(runs).toMatchObject({ repoFullName: repo, conclusion: 'success', workflowPath: '.github/workflows/agentplane-review.yml' });

    const jobs = (await api.call('GET', `${CI}/jobs`, { as: robot })).body.jobs.filter((j: any) => j.repos[0].pullRequest === number);
    expect(jobs[0]).toMatchObject({
      kind: 'run',
      status: 'succeeded',
      modeId: 'code-review',
      repos: [{ repoFullName: repo, pullRequest: number, commentUrl: comment.html_url }],
    });
    expect(jobs[0].detail).toMatchObject({ event: 'pull_request', conclusion: 'success', computerId, sessionId: expect.stringMatching(/^sess_/) });
  }, 240_000);

  it('register-runner: the CI runner becomes a byom computer for the job through `agentplane agent`, and is removed after it', async () => {
    await gitea.createRepo(alice, { name: 'api' });
    const owner = api.acme.members.owner.apiKey;
    const edit = await api.call('POST', `${CI}/edit`, {
      as: owner,
      body: {
        action: 'create',
        automationName: 'Self-hosted review',
        modeId: 'code-review',
        repos: [{ repoFullName: 'alice/api' }],
        changes: { yamlParams: 'model: coder\nregister-runner: true' },
      },
    });
    const automationId = edit.body.factoryAutomationId as string;
    const file = await gitea.api('GET', `/repos/alice/api/pulls/1/files`);
    expect(file.body.map((f: any) => f.filename)).toEqual(['.github/workflows/agentplane-self-hosted-review.yml']);
    model.enqueue({ text: 'Reviewed on the runner itself.' });
    // The step exactly as the workflow runs it, with the environment a runner gives it.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-ci-event-'));
    fs.writeFileSync(path.join(dir, 'event.json'), JSON.stringify({ action: 'opened', pull_request: { number: 1 } }));
    const { stdout } = await promisify(execFile)(process.execPath, [path.resolve('bin/agentplane.js'), 'ci', 'run'], {
      env: {
        PATH: process.env.PATH,
        HOME: os.homedir(),
        AGENTPLANE_URL: api.url,
        AGENTPLANE_API_KEY: robot,
        AGENTPLANE_AUTOMATION_ID: automationId,
        AGENTPLANE_MODE: 'code-review',
        AGENTPLANE_MODEL: 'coder',
        AGENTPLANE_REGISTER_RUNNER: 'true',
        GITHUB_REPOSITORY: 'alice/api',
        GITHUB_EVENT_NAME: 'pull_request',
        GITHUB_EVENT_PATH: path.join(dir, 'event.json'),
        GITHUB_SERVER_URL: gitea.url,
        GITHUB_RUN_ID: '4242',
      },
      timeout: 120_000,
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(stdout).toMatch(/job cijob_\w+ succeeded, session sess_\w+, comment /);
    const [comment] = (await gitea.api('GET', '/repos/alice/api/issues/1/comments')).body;
    expect(comment.body).toContain('Reviewed on the runner itself.');
    const job = (await api.call('GET', `${CI}/jobs`, { as: robot })).body.jobs.find((j: any) => j.automationId === automationId && j.kind === 'run');
    expect(job).toMatchObject({ status: 'succeeded', detail: { runUrl: `${gitea.url}/alice/api/actions/runs/4242` } });
    const runnerComputer = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: job.detail.computerId } });
    expect(runnerComputer).toMatchObject({ name: 'ci-alice-api-4242', providerType: 'byom', connectionType: 'agent' });
    expect(runnerComputer.deletedAt).not.toBeNull();
  }, 180_000);

  it('deleting the computer pauses the automation: the next run answers "paused" and succeeds without a session', async () => {
    expect((await api.call('DELETE', `/api/v0/computers/${computerId}`, { as: robot })).status).toBeLessThan(300);
    const number = await openPullRequest('feature-b', 'Add feature b');
    const job = await waitFor(
      'the paused run',
      async () => {
        const res = await api.call('GET', `${CI}/jobs`, { as: robot });
        return res.body.jobs.find((j: any) => j.kind === 'run' && j.repos[0].pullRequest === number) ?? false;
      },
      180_000,
      1_000,
    );
    expect(job).toMatchObject({ status: 'paused', detail: { reason: expect.stringContaining('is paused: its computer "review-box"') } });
    const run = await waitFor(
      'the run to complete',
      async () => {
        const res = await api.call('GET', `${CI}/runs`, { as: robot });
        return res.body.runs.find((r: any) => r.status === 'completed' && r.pullRequests.includes(number)) ?? false;
      },
      60_000,
      500,
    );
    expect(run.conclusion).toBe('success');
    expect(await comments(number)).toEqual([]);
    expect(model.remaining()).toBe(0);
  }, 240_000);
});
