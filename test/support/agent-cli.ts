import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI, REPO_ROOT } from './server-process.ts';
import { isRoot, TEST_USER } from './sshd.ts';

/**
 * Who `agentplane agent` runs as in tests: as root, the unprivileged test user (created if
 * needed), as it would on a developer's machine; otherwise the current user.
 */
export function agentUser(): { uid?: number; gid?: number; home: string; username: string } {
  if (!isRoot) return { home: os.homedir(), username: os.userInfo().username };
  spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', '--password', '*', TEST_USER]);
  const [uid, gid, home] = spawnSync('sh', ['-c', `id -u ${TEST_USER}; id -g ${TEST_USER}; getent passwd ${TEST_USER} | cut -d: -f6`], {
    encoding: 'utf8',
  })
    .stdout.trim()
    .split('\n');
  return { uid: Number(uid), gid: Number(gid), home: home!, username: TEST_USER };
}

export interface AgentProcess {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** `agentplane agent --url URL --name NAME` as a real process, as agentUser(), with its state in `stateDir`. */
export function startAgentProcess(opts: { url: string; apiKey: string; name: string; stateDir: string; env?: Record<string, string> }): AgentProcess {
  const who = agentUser();
  fs.mkdirSync(opts.stateDir, { recursive: true });
  if (who.uid !== undefined) fs.chownSync(opts.stateDir, who.uid, who.gid!);
  const child = spawn(process.execPath, [CLI, 'agent', '--url', opts.url, '--name', opts.name, '--state-dir', path.join(opts.stateDir, 'agent')], {
    uid: who.uid,
    gid: who.gid,
    cwd: '/',
    env: { PATH: process.env.PATH, HOME: who.home, AGENTPLANE_API_KEY: opts.apiKey, ...opts.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stderr: () => stderr,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface CliRun {
  child: ChildProcess;
  output(): { stdout: string; stderr: string };
  /** Exit code and output once the process has exited. */
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** Runs `agentplane <args>` (or another program, `command`) with stdin from `input`, collecting its output. */
export function runCli(args: string[], opts: { env?: Record<string, string>; input?: string; command?: string } = {}): CliRun {
  const [cmd, argv] = opts.command ? [opts.command, args] : [process.execPath, [CLI, ...args]];
  const child = spawn(cmd, argv, { cwd: REPO_ROOT, env: { ...process.env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin!.on('error', () => {});
  if (opts.input !== undefined) child.stdin!.end(opts.input);
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, output: () => ({ stdout, stderr }), done };
}
