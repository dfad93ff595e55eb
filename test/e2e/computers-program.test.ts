import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { newId } from '../../src/lib/ids.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createEgressGuard } from '../../src/egress/guard.ts';
import { pinClone } from '../../src/repos/pinned-clone.ts';
import { createProvisioner } from '../../src/provisioning/provisioner.ts';
import { sendProvision } from '../../src/modules/computers/managed/job-kinds.ts';
import { requestPause } from '../../src/modules/computers/managed/reaper.ts';
import { yamlLanguageHost } from '../../src/provisioning/programs/settings.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { generateKeyPair } from '../../src/ssh/index.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { giteaBinDir, giteaMissing, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';
import { CLI, killSession, REPO_ROOT } from '../support/server-process.ts';
import { storeProgramComputer, storeProgramTemplate } from '../support/program-computers.ts';
import { isRoot } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Computers made from a template's program, through the provisioning job, the registration
 * endpoint and the teardown: the dial-in-user example (pushed to Gitea as it is in examples/)
 * creates a unix user whose `agentplane agent` registers the computer, which turns active; its
 * deletion removes the user. A program whose outputs miss the contract fails the computer at its
 * infrastructure step and is destroyed at once.
 */
const toolchain = locatePulumiToolchain();
const missing =
  giteaMissing() ??
  (toolchain.available ? undefined : 'the Pulumi CLI is missing (bash scripts/pulumi-toolchain.sh)') ??
  (existsSync(yamlLanguageHost(toolchain)) ? undefined : 'pulumi-language-yaml is missing (bash scripts/pulumi-toolchain.sh)') ??
  (isRoot ? undefined : 'the dial-in example creates a unix user: needs root');
const EXAMPLE = 'examples/environments/dial-in-user';
const TIMEOUT_MS = 90_000;

describe.skipIf(skipWithout('the program computer tests', missing))('computers from a template program', { timeout: 150_000 }, () => {
  let gitea: Gitea;
  let api: TestApi;
  let repository: string;
  let platform: GiteaUser;
  let repoName: string;
  let commit: string;
  let bin: string;
  const path0 = process.env.PATH;

  beforeAll(async () => {
    gitea = await startGitea(giteaBinDir()!);
    const owner = await gitea.createUser('platform');
    platform = owner;
    const name = await gitea.createRepo(owner, {
      name: 'environments',
      files: {
        [`${EXAMPLE}/Pulumi.yaml`]: readFileSync(path.join(REPO_ROOT, EXAMPLE, 'Pulumi.yaml'), 'utf8'),
        // Its first create outlasts the kill below; the adopting `up` after it returns at once.
        'slow/Pulumi.yaml': [
          'name: slow',
          'runtime: yaml',
          'resources:',
          '  made:',
          '    type: command:local:Command',
          '    properties:',
          '      create: touch "$MARK"; [ -e "$MARK.once" ] || { touch "$MARK.once"; sleep 120; }',
          '      delete: rm -f "$MARK"',
          '      environment:',
          '        MARK: /tmp/agentplane-slow-${agentplane:computerId}',
          'outputs:',
          '  agent: true',
        ].join('\n'),
        'no-contract/Pulumi.yaml':
          'name: x\nruntime: yaml\nresources:\n  said:\n    type: command:local:Command\n    properties:\n      create: echo hi\noutputs:\n  said: ${said.stdout}\n',
      },
    });
    repoName = name;
    repository = `${gitea.url}/${name}.git`;
    commit = (await gitea.api('GET', `/repos/${name}/branches/main`)).body.commit.id;
    // `agentplane` on the control plane's PATH, as the example asks, readable by the users it makes.
    bin = mkdtempSync(path.join(os.tmpdir(), 'agentplane-bin-'));
    chmodSync(bin, 0o755);
    writeFileSync(path.join(bin, 'agentplane'), `#!/bin/sh\nexec ${process.execPath} ${CLI} "$@"\n`, { mode: 0o755 });
    process.env.PATH = `${bin}:${path0}`;
    api = await startTestApi('pglite', { worker: true, gateway: true, env: ALLOW_LOOPBACK });
  });

  afterAll(async () => {
    await api?.close();
    await gitea?.stop();
    process.env.PATH = path0;
    if (bin) rmSync(bin, { recursive: true, force: true });
  });

  const as = () => api.acme.members.user.apiKey;
  const get = async (id: string) => (await api.call('GET', `/api/v0/computers/${id}`, { as: as() })).body;
  const stateFile = (id: string) => path.join(api.dataDir, 'pulumi', 'state', '.pulumi', 'stacks', 'agentplane-computers', `${id}.json`);

  /** A computer of a template version of `programPath`, as the pools' creation stores it, its provisioning queued. */
  async function programComputer(name: string, programPath: string) {
    const version = await storeProgramTemplate(api, { name, repository, path: programPath, commit });
    const id = await storeProgramComputer(api, name, version);
    await sendProvision(api.queue, id);
    return { id, ...version };
  }

  const settled = (id: string) =>
    waitFor(
      `computer ${id} to leave provisioning`,
      async () => {
        const body = await get(id);
        return body.status !== 'provisioning' && body;
      },
      TIMEOUT_MS,
      100,
    );
  const userExists = (user: string) => spawnSync('id', ['-u', user]).status === 0;

  it('provisions the dial-in example: its agent registers the computer, which turns active, cannot pause, and is deleted with its user', async () => {
    const { id } = await programComputer('dial-in', EXAMPLE);
    const c = await settled(id);
    expect(c.status, JSON.stringify(c.provisioningSteps)).toBe('active');
    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(stored).toMatchObject({ connectionType: 'agent', remoteUser: id, programPausable: false, registrationTokenHash: null });
    expect(userExists(id)).toBe(true);
    // Through the agent's tunnel, as the user the program made.
    expect(execFileSync('ps', ['-o', 'user=', '-u', id], { encoding: 'utf8' })).toContain(id.slice(0, 8));

    // The program did not declare `pausable: true`: never paused, and the power job refuses it.
    expect(await requestPause(api.db.prisma, api.queue, id, new Date())).toBe(false);

    const del = await api.call('DELETE', `/api/v0/computers/${id}`, { as: as() });
    expect(del.status, JSON.stringify(del.body)).toBe(204);
    await waitFor('the teardown', async () => (await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).operation === null, TIMEOUT_MS, 100);
    expect(userExists(id)).toBe(false);
    expect(existsSync(stateFile(id))).toBe(false);
  });

  /**
   * The dial-in example at a new commit whose agent is replaced (its `triggers` change; delete
   * first, as its delete ends every agent of the user); the user is replaced whenever `userVersion`
   * (its trigger) changes, so userdel removes the home.
   */
  async function dialInVersion(version: string, userVersion?: string, edit = (text: string) => text) {
    const example = readFileSync(path.join(REPO_ROOT, EXAMPLE, 'Pulumi.yaml'), 'utf8');
    const triggers = (line: string, v = version) => `${line}      triggers:\n        - ${v}\n`;
    let text = example
      .replace('        TOKEN: ${agentplane:registrationToken}\n', triggers('        TOKEN: ${agentplane:registrationToken}\n'))
      .replace('        - ${user}\n', '        - ${user}\n      deleteBeforeReplace: true\n');
    if (userVersion) {
      const user = '        USER_NAME: ${agentplane:computerId}\n\n';
      text = text.replace(user, `${triggers(user.slice(0, -1), userVersion)}    options:\n      deleteBeforeReplace: true\n\n`);
    }
    expect(text.match(/triggers/g)?.length).toBe(userVersion ? 2 : 1);
    await gitea.commitFiles(platform, repoName, { [`${EXAMPLE}/Pulumi.yaml`]: edit(text) }, { message: version });
    return (await gitea.api('GET', `/repos/${repoName}/branches/main`)).body.commit.id as string;
  }

  /** The template's tracking found `sha` and its preview passed: it is the current version. */
  async function current(templateId: string, sha: string) {
    const versionId = newId('ctv');
    await api.db.prisma.computerTemplateVersion.create({ data: { id: versionId, templateId, organizationId: api.acme.id, commit: sha, status: 'ready' } });
    await api.db.prisma.computerTemplate.update({ where: { id: templateId }, data: { currentVersionId: versionId } });
  }

  it('updates a dial-in computer: a restarted agent answers with its kept credential, a new user re-registers, a silent one fails and goes back', async () => {
    const { id, templateId } = await programComputer('dial-in-update', EXAMPLE);
    expect((await settled(id)).status).toBe('active');
    const home = execFileSync('getent', ['passwd', id], { encoding: 'utf8' }).split(':')[5]!;
    writeFileSync(path.join(home, 'kept.txt'), 'v1');
    const registered = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    const agentPid = () => execFileSync('pgrep', ['-u', id, '-f', 'agent --url'], { encoding: 'utf8' }).trim();
    const firstAgent = agentPid();
    const updated = async (sha: string) => {
      await current(templateId, sha);
      expect(await get(id)).toMatchObject({ updateAvailable: true });
      const started = await api.call('POST', `/api/v0/computers/${id}/update`, { as: as() });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      return waitFor(`${id}'s update`, async () => ((await get(id)).operation === undefined ? get(id) : undefined), TIMEOUT_MS, 100);
    };
    const update = async (sha: string) => {
      const done = await updated(sha);
      expect(done, JSON.stringify(done)).toMatchObject({ status: 'active', updateAvailable: false, templateVersion: { commit: sha } });
      expect(done.operationError).toBeUndefined();
      // Reached through the (new) agent's tunnel; the token the update issued is spent.
      const metrics = await api.call('GET', `/api/v0/computers/${id}/metrics`, { as: as() });
      expect(metrics.status, `${JSON.stringify(metrics.body)}\n${readFileSync(path.join(home, 'agent.log'), 'utf8')}`).toBe(200);
      return api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    };

    // v2 replaces the agent, not the user: the home stays, and the agent started again finds its
    // credential there, so it answers without registering; the token is spent unused.
    const v2 = await update(await dialInVersion('v2'));
    expect(agentPid()).not.toBe(firstAgent);
    expect(v2).toMatchObject({ agentPublicKey: registered.agentPublicKey, registrationTokenHash: null, registrationExpiresAt: null });
    expect(readFileSync(path.join(home, 'kept.txt'), 'utf8')).toBe('v1');

    // v3 replaces the user: userdel removes the home, the new agent registers again with the token.
    const v3 = await update(await dialInVersion('v3', 'v3'));
    expect(v3.agentPublicKey).not.toBe(registered.agentPublicKey);
    expect(v3).toMatchObject({ remoteUser: id, registrationTokenHash: null, registrationExpiresAt: null });
    expect(existsSync(path.join(home, 'kept.txt'))).toBe(false);

    // v4's machine never dials in (its agent command starts nothing): by the token's expiry the update
    // fails, v3 runs again (its agent started again with the credential kept in the home) and answers.
    await api.db.prisma.computerTemplate.update({ where: { id: templateId }, data: { registrationTimeoutSeconds: 8 } });
    const v4 = await dialInVersion('v4', 'v3', (text) => text.replace('setsid -f "$0" agent', 'true "$0" agent'));
    const failed = await updated(v4);
    expect(failed).toMatchObject({ status: 'active', updateAvailable: true, templateVersion: { id: v3.templateVersionId } });
    expect(failed.operationError).toMatch(new RegExp(`^updating to commit ${v4.slice(0, 12)} failed: the machine did not answer through its agent by `));
    expect(failed.operationError).not.toMatch(/going back/);
    expect((await api.call('GET', `/api/v0/computers/${id}/metrics`, { as: as() })).status).toBe(200);
    expect(await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).toMatchObject({ agentPublicKey: v3.agentPublicKey, registrationTokenHash: null });

    const del = await api.call('DELETE', `/api/v0/computers/${id}`, { as: as() });
    expect(del.status).toBe(204);
    await waitFor('the teardown', async () => (await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).operation === null, TIMEOUT_MS, 100);
    expect(userExists(id)).toBe(false);
  });

  it('fails a computer whose program misses the contract at its infrastructure step, leaving no stack behind', async () => {
    const { id } = await programComputer('no-contract', 'no-contract');
    const c = await settled(id);
    expect(c.status).toBe('error');
    const step = c.provisioningSteps.find((s: { id: string }) => s.id === 'create-infrastructure');
    expect(step).toMatchObject({ status: 'failed' });
    expect(step.error).toContain(`the template's program's outputs miss the contract (it output said)`);
    expect(existsSync(stateFile(id))).toBe(false);
  });

  it("a control plane killed -9 during a program's up leaves a stack that the next destroy clears, lock and pending create included", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-program-kill-'));
    const key = randomBytes(32).toString('hex');
    const egress = createEgressGuard(loadConfig(ALLOW_LOOPBACK).egress);
    const provisioner = createProvisioner(
      loadConfig({ AGENTPLANE_DATA_DIR: dataDir }),
      createSecretBox(Buffer.from(key, 'hex')),
      () => 0,
      async (_o, url) => pinClone(url, await egress.check(url)),
    );
    const source = { repository, path: 'slow', ref: 'main' };
    const program = await provisioner.programs.stackProgram('org_kill', source, commit, new AbortController().signal);
    const computerId = newId('cmp');
    const mark = `/tmp/agentplane-slow-${computerId}`;
    const config = {
      computerId,
      name: 'slow',
      organizationId: 'org_kill',
      authorizedKey: generateKeyPair().publicKey,
      cpu: 1,
      memoryMb: 64,
      diskGb: 1,
      running: true,
    };
    // Another process runs the `up`, as the control plane would; it is killed with everything it started.
    const script = [
      `import { loadConfig } from ${JSON.stringify(path.join(REPO_ROOT, 'src/config.ts'))};`,
      `import { createSecretBox } from ${JSON.stringify(path.join(REPO_ROOT, 'src/lib/secret-box.ts'))};`,
      `import { createLogger } from ${JSON.stringify(path.join(REPO_ROOT, 'src/lib/logger.ts'))};`,
      `import { createProvisioner } from ${JSON.stringify(path.join(REPO_ROOT, 'src/provisioning/provisioner.ts'))};`,
      `const p = createProvisioner(loadConfig({ AGENTPLANE_DATA_DIR: ${JSON.stringify(dataDir)} }), createSecretBox(Buffer.from(${JSON.stringify(key)}, 'hex')));`,
      `await p.stacks.up(${JSON.stringify(program)}, ${JSON.stringify(config)}, { log: createLogger({ level: 'silent' }), fresh: true });`,
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { detached: true, stdio: 'ignore' });
    try {
      await waitFor("the program's create to run", async () => existsSync(mark), TIMEOUT_MS, 50);
    } finally {
      // Its session (detached: a session of its own): the CLI, and the plugins in process groups of their own.
      await killSession(child.pid!);
    }
    const log = createLogger({ level: 'silent' });
    await provisioner.stacks.destroy(program, config, { log });
    expect(existsSync(mark)).toBe(false);
    expect(existsSync(path.join(dataDir, 'pulumi', 'state', '.pulumi', 'stacks', 'agentplane-computers', `${computerId}.json`))).toBe(false);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${mark}.once`, { force: true });
  });
});
