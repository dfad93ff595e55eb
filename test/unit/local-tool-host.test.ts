import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localToolHost } from '../../src/agent/local-tool-host.ts';
import { ExecTimedOut, type ToolHost } from '../../src/agent/tool-host.ts';
import { globTool, listDirectoryTool, readFileTool, searchTextTool, writeFileTool } from '../../src/agent/tools.ts';
import { readOnlyTools } from '../../src/modules/wiki/generate/read-only-tools.ts';

describe('the local tool host: a workspace directory on the control plane', () => {
  let scratch: string;
  let root: string;
  let outside: string;
  let host: ToolHost;

  beforeAll(async () => {
    scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'local-tool-host-'));
    root = path.join(scratch, 'workspace');
    outside = path.join(scratch, 'secret.txt');
    await fs.mkdir(path.join(root, 'src'), { recursive: true });
    await fs.writeFile(path.join(root, 'src', 'a.ts'), 'export const needle = 1;\n');
    await fs.writeFile(outside, 'not for the agent\n');
    await fs.symlink(scratch, path.join(root, 'escape'));
    host = localToolHost(root);
  });

  afterAll(async () => {
    await fs.rm(scratch, { recursive: true, force: true });
  });

  it('works in the workspace: cwd, exec there, read, write (creating parents), stat and list', async () => {
    expect(host.cwd).toBe(root);
    const pwd = await host.exec('pwd; echo oops >&2; exit 3');
    expect(pwd).toEqual({ exitCode: 3, signal: null, stdout: `${await fs.realpath(root)}\n`, stderr: 'oops\n', truncated: false });
    expect((await host.exec('pwd', { cwd: 'src' })).stdout).toBe(`${await fs.realpath(path.join(root, 'src'))}\n`);

    await host.writeFile(path.join(root, 'new/deep/b.txt'), 'hello\n');
    expect(await fs.readFile(path.join(root, 'new/deep/b.txt'), 'utf8')).toBe('hello\n');
    expect((await host.readFile(path.join(root, 'new/deep/b.txt'))).toString()).toBe('hello\n');
    expect(await host.stat(path.join(root, 'new/deep/b.txt'))).toEqual({ size: 6, isFile: true, isDirectory: false });
    expect(await host.stat(path.join(root, 'new'))).toEqual({ size: expect.any(Number), isFile: false, isDirectory: true });
    expect(await host.stat(path.join(root, 'missing.txt'))).toBeNull();

    const listing = await host.list(path.join(root, 'src'));
    expect(listing).toMatch(/^total /);
    expect(listing).toMatch(/ a\.ts$/);
    await expect(host.list(path.join(root, 'missing'))).rejects.toThrow(/missing/);
  });

  it('refuses paths outside the workspace, by .. or through a symlink, and changes nothing', async () => {
    const refused = /is outside the workspace; use paths under .*workspace$/;
    await expect(host.readFile(outside)).rejects.toThrow(refused);
    await expect(host.readFile(path.join(root, '../secret.txt'))).rejects.toThrow(refused);
    await expect(host.readFile(path.join(root, 'escape/secret.txt'))).rejects.toThrow(refused);
    await expect(host.stat('/etc/passwd')).rejects.toThrow(refused);
    await expect(host.list(scratch)).rejects.toThrow(refused);
    await expect(host.list(path.join(root, 'escape'))).rejects.toThrow(refused);
    await expect(host.exec('pwd', { cwd: '..' })).rejects.toThrow(refused);
    await expect(host.exec('pwd', { cwd: 'escape' })).rejects.toThrow(refused);
    await expect(host.writeFile(path.join(scratch, 'planted.txt'), 'x')).rejects.toThrow(refused);
    await expect(host.writeFile(path.join(root, 'escape/planted/deeper.txt'), 'x')).rejects.toThrow(refused);
    expect(await fs.readdir(scratch)).toEqual(['secret.txt', 'workspace']);
  });

  it('streams output, keeps the end of long output, and kills a command on timeout or abort', async () => {
    const chunks: string[] = [];
    const res = await host.exec('seq 1 20000', { maxOutputBytes: 100, onStdout: (c) => chunks.push(c.toString()) });
    expect(res.truncated).toBe(true);
    expect(res.stdout.endsWith('19999\n20000\n')).toBe(true);
    expect(res.stdout.length).toBeLessThanOrEqual(100);
    expect(chunks.join('')).toMatch(/^1\n2\n[\s\S]*\n20000\n$/);

    const started = Date.now();
    await expect(host.exec('sleep 30', { timeoutMs: 200 })).rejects.toBeInstanceOf(ExecTimedOut);
    const ac = new AbortController();
    const running = host.exec('sleep 30', { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await expect(running).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('runs the tools: paths from the model resolve against cwd, and the host refuses the rest', async () => {
    expect(await readFileTool.run(host, { path: 'src/a.ts' })).toEqual({ isError: false, output: 'export const needle = 1;\n' });
    expect(await readFileTool.run(host, { path: '../secret.txt' })).toEqual({
      isError: true,
      output: `${outside} is outside the workspace; use paths under ${root}`,
    });
    expect((await listDirectoryTool.run(host, { path: 'src' })).output).toMatch(/ a\.ts$/);
    expect((await listDirectoryTool.run(host, { path: '/' })).isError).toBe(true);
    expect(await writeFileTool.run(host, { path: 'src/c.ts', content: 'x\n' })).toEqual({
      isError: false,
      output: `Wrote 2 bytes to ${root}/src/c.ts`,
      effects: { filesCreated: [`${root}/src/c.ts`] },
    });
    expect(await globTool.run(host, { pattern: 'src/*.ts' })).toEqual({ isError: false, output: 'src/a.ts\nsrc/c.ts' });
    expect(await searchTextTool.run(host, { pattern: 'needle', path: 'src' })).toEqual({
      isError: false,
      output: `${root}/src/a.ts:1:export const needle = 1;`,
    });
  });

  it("the wiki's read-only tools keep glob and search_text inside the workspace too", async () => {
    const tools = new Map(readOnlyTools().map((t) => [t.name, t]));
    expect([...tools.keys()]).toEqual(['read_file', 'list_directory', 'glob', 'search_text']);
    expect(await tools.get('search_text')!.run(host, { pattern: 'agent', path: '..' })).toEqual({
      isError: true,
      output: `${scratch} is outside the workspace; use paths under ${root}`,
    });
    expect((await tools.get('search_text')!.run(host, { pattern: 'agent', path: 'escape' })).isError).toBe(true);
    expect((await tools.get('glob')!.run(host, { pattern: '*', path: '/etc' })).isError).toBe(true);
    expect(await tools.get('glob')!.run(host, { pattern: '../*' })).toEqual({
      isError: true,
      output: 'glob patterns are relative to the repository and may not climb out of it with ..',
    });
    expect(await tools.get('glob')!.run(host, { pattern: '**/a.ts' })).toEqual({ isError: false, output: 'src/a.ts' });
  });
});
