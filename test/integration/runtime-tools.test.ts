import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSshClient, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import {
  defaultTools,
  editFileTool,
  globTool,
  listDirectoryTool,
  readFileTool,
  runCommandTool,
  searchTextTool,
  toolSpecs,
  writeFileTool,
} from '../../src/agent/tools.ts';
import { sshToolHost } from '../../src/agent/ssh-tool-host.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the runtime tool tests', missing);

function uniqueSleep(): string {
  return `sleep 60.${randomBytes(4).readUInt32BE(0)}`;
}

describe.skipIf(skip)('agent tools on a real sshd computer', () => {
  let sshd: TestSshd;
  let ssh: SshClient;
  let target: SshTarget;
  let cwd: string;

  const pgrep = async (pattern: string) => (await ssh.exec(target, `pgrep -f -- '[${pattern[0]}]${pattern.slice(1)}' || true`)).stdout.trim();
  const remoteText = async (p: string) => (await ssh.readFile(target, p)).toString('utf8');

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    sshd = await startSshd();
    ssh = createSshClient();
    target = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, hostKeyFingerprint: sshd.hostKeyFingerprint };
    cwd = (await ssh.exec(target, 'mktemp -d')).stdout.trim();
  });

  afterAll(async () => {
    await ssh?.close();
    await sshd?.stop();
  });

  it('describes every tool to the model with a JSON schema derived from its zod schema', () => {
    const specs = toolSpecs(defaultTools);
    expect(specs.map((s) => s.name)).toEqual(['run_command', 'read_file', 'write_file', 'edit_file', 'list_directory', 'glob', 'search_text']);
    const edit = specs.find((s) => s.name === 'edit_file')!;
    expect(edit.inputSchema).toMatchObject({ type: 'object', required: ['path', 'oldString', 'newString'] });
    expect(edit.inputSchema).not.toHaveProperty('$schema');
    expect(Object.keys(edit.inputSchema.properties as object)).toEqual(['path', 'oldString', 'newString', 'replaceAll']);
  });

  it('writes a file relative to cwd (creating parents) and reads it back, with line ranges', async () => {
    const w = await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'a/b/c.txt', content: 'one\ntwo\nthree\n' });
    expect(w).toEqual({ isError: false, output: `Wrote 14 bytes to ${cwd}/a/b/c.txt`, effects: { filesCreated: [`${cwd}/a/b/c.txt`] } });
    expect(await remoteText(`${cwd}/a/b/c.txt`)).toBe('one\ntwo\nthree\n');
    const again = await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'a/b/c.txt', content: 'one\ntwo\nthree\n' });
    expect(again.effects).toEqual({ filesEdited: [`${cwd}/a/b/c.txt`] });

    expect(await readFileTool.run(sshToolHost(ssh, target, cwd), { path: 'a/b/c.txt' })).toEqual({ isError: false, output: 'one\ntwo\nthree\n' });
    expect(await readFileTool.run(sshToolHost(ssh, target, `${cwd}/a`), { path: 'b/c.txt', offset: 2, limit: 1 })).toEqual({
      isError: false,
      output: 'two\n[lines 2-2 of 3]',
    });
    expect(await readFileTool.run(sshToolHost(ssh, target, '/'), { path: `${cwd}/a/b/c.txt`, offset: 3 })).toEqual({
      isError: false,
      output: 'three\n[lines 3-3 of 3]',
    });
    expect(await readFileTool.run(sshToolHost(ssh, target, cwd), { path: 'a/b/c.txt', offset: 9 })).toEqual({
      isError: true,
      output: `offset 9 is past the end: ${cwd}/a/b/c.txt has 3 lines`,
    });
  });

  it('turns a missing file, a directory and invalid input into isError results', async () => {
    const gone = await readFileTool.run(sshToolHost(ssh, target, cwd), { path: 'nope.txt' });
    expect(gone.isError).toBe(true);
    expect(gone.output).toContain(`${cwd}/nope.txt: no such file`);
    const dir = await readFileTool.run(sshToolHost(ssh, target, cwd), { path: '.' });
    expect(dir).toEqual({ isError: true, output: `${cwd} is a directory; use list_directory` });
    const bad = await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 42 });
    expect(bad.isError).toBe(true);
    expect(bad.output).toMatch(/^Invalid input for write_file:[\s\S]*path[\s\S]*content/);
  });

  it('edits by exact, unique string replacement and refuses ambiguous or missing strings', async () => {
    await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'edit.txt', content: 'alpha beta\nbeta gamma\n' });
    const ambiguous = await editFileTool.run(sshToolHost(ssh, target, cwd), { path: 'edit.txt', oldString: 'beta', newString: 'BETA' });
    expect(ambiguous).toEqual({
      isError: true,
      output: `oldString appears 2 times in ${cwd}/edit.txt; add surrounding lines to make it unique, or set replaceAll.`,
    });
    expect(await remoteText(`${cwd}/edit.txt`)).toBe('alpha beta\nbeta gamma\n');

    const absent = await editFileTool.run(sshToolHost(ssh, target, cwd), { path: 'edit.txt', oldString: 'delta', newString: 'x' });
    expect(absent.isError).toBe(true);
    expect(absent.output).toContain('was not found');

    expect(await editFileTool.run(sshToolHost(ssh, target, cwd), { path: 'edit.txt', oldString: 'alpha beta', newString: 'alpha $& BETA' })).toEqual({
      isError: false,
      output: `Replaced 1 occurrence in ${cwd}/edit.txt`,
      effects: { filesEdited: [`${cwd}/edit.txt`] },
    });
    expect(await remoteText(`${cwd}/edit.txt`)).toBe('alpha $& BETA\nbeta gamma\n');
    expect(await editFileTool.run(sshToolHost(ssh, target, cwd), { path: 'edit.txt', oldString: 'a', newString: 'A', replaceAll: true })).toEqual({
      isError: false,
      output: `Replaced 5 occurrences in ${cwd}/edit.txt`,
      effects: { filesEdited: [`${cwd}/edit.txt`] },
    });
    expect(await remoteText(`${cwd}/edit.txt`)).toBe('AlphA $& BETA\nbetA gAmmA\n');
  });

  it('runs shell commands in cwd with stdout, stderr and exit code; a failing command is an error', async () => {
    const ok = await runCommandTool.run(sshToolHost(ssh, target, cwd), { command: 'pwd; echo warn >&2' });
    expect(ok).toEqual({ isError: false, output: `${cwd}\n[stderr]\nwarn\n[exit code 0]` });
    const failed = await runCommandTool.run(sshToolHost(ssh, target, cwd), { command: 'echo partial; exit 3' });
    expect(failed).toEqual({ isError: true, output: 'partial\n[exit code 3]' });
  });

  it('caps long command output, keeping its end', async () => {
    const res = await runCommandTool.run(sshToolHost(ssh, target, cwd), { command: 'seq 1 20000' });
    expect(res.isError).toBe(false);
    expect(res.output).toContain('19999\n20000\n[output truncated: only the last 14000 bytes of each stream are shown]\n[exit code 0]');
    expect(res.output).not.toContain('\n100\n');
  });

  it('kills a command on timeout and reports it as an error', async () => {
    const sleep = uniqueSleep();
    const res = await runCommandTool.run(sshToolHost(ssh, target, cwd), { command: sleep, timeoutMs: 500 });
    expect(res.isError).toBe(true);
    expect(res.output).toMatch(/^Timed out/);
    await waitFor('the timed-out sleep to be gone', async () => (await pgrep(sleep)) === '');
  });

  it('kills the running command when the signal aborts', async () => {
    const sleep = uniqueSleep();
    const ac = new AbortController();
    const running = runCommandTool.run(sshToolHost(ssh, target, cwd), { command: sleep }, ac.signal);
    await waitFor('the sleep to start', async () => (await pgrep(sleep)) !== '');
    ac.abort();
    expect(await running).toEqual({ isError: true, output: 'Interrupted: the tool was stopped before it finished.' });
    await waitFor('the aborted sleep to be gone', async () => (await pgrep(sleep)) === '');
  });

  it('lists, globs and searches', async () => {
    await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'src/x.ts', content: 'export const needle = 1;\n' });
    await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'src/deep/y.ts', content: 'const NEEDLE = 2;\n' });
    await writeFileTool.run(sshToolHost(ssh, target, cwd), { path: 'src/deep/z.md', content: 'needle in docs\n' });

    const ls = await listDirectoryTool.run(sshToolHost(ssh, target, cwd), { path: 'src' });
    expect(ls.isError).toBe(false);
    expect(ls.output).toMatch(/^total /);
    expect(ls.output).toMatch(/ deep\n/);
    expect(ls.output).toMatch(/ x\.ts$/);
    expect((await listDirectoryTool.run(sshToolHost(ssh, target, cwd), { path: 'missing' })).isError).toBe(true);

    expect(await globTool.run(sshToolHost(ssh, target, cwd), { pattern: 'src/**/*.ts' })).toEqual({ isError: false, output: 'src/deep/y.ts\nsrc/x.ts' });
    expect(await globTool.run(sshToolHost(ssh, target, cwd), { pattern: '*.md', path: 'src/deep' })).toEqual({ isError: false, output: 'z.md' });
    expect(await globTool.run(sshToolHost(ssh, target, cwd), { pattern: 'nothing-here.txt' })).toEqual({ isError: false, output: 'No files match.' });
    expect(await globTool.run(sshToolHost(ssh, target, cwd), { pattern: '$(touch pwned)*' })).toEqual({ isError: false, output: 'No files match.' });
    expect(await ssh.stat(target, `${cwd}/pwned`)).toBeNull();

    const found = await searchTextTool.run(sshToolHost(ssh, target, cwd), { pattern: 'needle', path: 'src', ignoreCase: true, include: '*.ts' });
    expect(found.isError).toBe(false);
    expect(found.output.split('\n').sort()).toEqual([`${cwd}/src/deep/y.ts:1:const NEEDLE = 2;`, `${cwd}/src/x.ts:1:export const needle = 1;`]);
    expect(await searchTextTool.run(sshToolHost(ssh, target, cwd), { pattern: 'haystack' })).toEqual({ isError: false, output: 'No matches.' });
    const invalid = await searchTextTool.run(sshToolHost(ssh, target, cwd), { pattern: 'a(' });
    expect(invalid.isError).toBe(true);
    expect(invalid.output).toMatch(/grep/i);
  });
});
