import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalScratchWorkspace, localWorkspace } from '../../../src/repos/local-workspace.ts';

const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-scratch-test-'));
afterAll(() => fs.rmSync(parent, { recursive: true, force: true }));

describe('local workspace', () => {
  it('runs commands in a scratch directory under the given parent and removes it on dispose', async () => {
    const ws = await createLocalScratchWorkspace(path.join(parent, 'readiness'));
    const pwd = (await ws.exec('pwd')).stdout.trim();
    expect(path.dirname(pwd)).toBe(path.join(parent, 'readiness'));
    await ws.exec('mkdir sub && printf hi > sub/f.txt');
    expect((await ws.readFile('sub/f.txt'))?.toString()).toBe('hi');
    expect(await ws.readFile('sub/missing.txt')).toBeUndefined();
    expect(await ws.readFile('sub')).toBeUndefined();
    expect(await ws.exec('exit 3', { cwd: 'sub' })).toEqual({ exitCode: 3, stdout: '', stderr: '' });
    await ws.dispose();
    expect(fs.existsSync(pwd)).toBe(false);
  });

  it('refuses paths that leave the workspace', async () => {
    const ws = localWorkspace(parent);
    await expect(ws.readFile('../etc/passwd')).rejects.toThrow(/leaves the workspace/);
    await expect(ws.exec('true', { cwd: '/' })).rejects.toThrow(/leaves the workspace/);
  });

  it('kills a command and its children at the timeout', async () => {
    const ws = localWorkspace(parent);
    const started = Date.now();
    await expect(ws.exec('sleep 30 & sleep 30; wait', { timeoutMs: 300 })).rejects.toThrow(/timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
