import { z } from 'zod';
import { defineTool, resolvePath, type ToolContext } from './tool-definition.ts';

const DEFAULT_READ_LINES = 2_000;
/** Larger files are refused rather than pulled whole (over SFTP, for a computer). */
const MAX_READ_BYTES = 5 * 1024 * 1024;

async function readText(ctx: ToolContext, file: string): Promise<string> {
  const st = await ctx.host.stat(file, { signal: ctx.signal });
  if (!st) throw new Error(`${file}: no such file`);
  if (st.isDirectory) throw new Error(`${file} is a directory; use list_directory`);
  if (st.size > MAX_READ_BYTES)
    throw new Error(`${file} is ${st.size} bytes, more than the ${MAX_READ_BYTES} this tool reads; use run_command with head, tail or grep`);
  const data = await ctx.host.readFile(file, { signal: ctx.signal });
  if (data.includes(0)) throw new Error(`${file} looks binary (it contains NUL bytes)`);
  return data.toString('utf8');
}

export const readFileTool = defineTool({
  name: 'read_file',
  description: `Read a text file. Returns up to ${DEFAULT_READ_LINES} lines by default; use offset and limit for more.`,
  kind: 'read',
  concurrent: true,
  input: z.object({
    path: z.string().min(1).describe('File path, relative to the working directory or absolute.'),
    offset: z.number().int().min(1).optional().describe('First line to return (1-based).'),
    limit: z.number().int().min(1).optional().describe('Number of lines to return.'),
  }),
  async execute(ctx, input) {
    const file = resolvePath(ctx.host.cwd, input.path);
    const text = await readText(ctx, file);
    if (text === '') return { isError: false, output: '(empty file)' };
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const first = input.offset ?? 1;
    const count = input.limit ?? DEFAULT_READ_LINES;
    if (input.offset === undefined && input.limit === undefined && lines.length <= count) return { isError: false, output: text };
    const shown = lines.slice(first - 1, first - 1 + count);
    if (shown.length === 0) return { isError: true, output: `offset ${first} is past the end: ${file} has ${lines.length} lines` };
    return { isError: false, output: `${shown.join('\n')}\n[lines ${first}-${first - 1 + shown.length} of ${lines.length}]` };
  },
});

export const writeFileTool = defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file with the given content; missing parent directories are created.',
  kind: 'write',
  input: z.object({
    path: z.string().min(1).describe('File path, relative to the working directory or absolute.'),
    content: z.string().describe('The complete new content of the file.'),
  }),
  async execute(ctx, input) {
    const file = resolvePath(ctx.host.cwd, input.path);
    const existed = (await ctx.host.stat(file, { signal: ctx.signal })) !== null;
    await ctx.host.writeFile(file, input.content, { signal: ctx.signal });
    return {
      isError: false,
      output: `Wrote ${Buffer.byteLength(input.content)} bytes to ${file}`,
      effects: existed ? { filesEdited: [file] } : { filesCreated: [file] },
    };
  },
});

function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

export const editFileTool = defineTool({
  name: 'edit_file',
  description: 'Replace an exact string in a file. oldString must appear exactly once unless replaceAll is true; include surrounding lines to make it unique.',
  kind: 'write',
  input: z.object({
    path: z.string().min(1).describe('File path, relative to the working directory or absolute.'),
    oldString: z.string().min(1).describe('The exact text to replace, whitespace included.'),
    newString: z.string().describe('The replacement text.'),
    replaceAll: z.boolean().optional().describe('Replace every occurrence instead of exactly one.'),
  }),
  async execute(ctx, input) {
    if (input.oldString === input.newString) return { isError: true, output: 'oldString and newString are the same; nothing to change.' };
    const file = resolvePath(ctx.host.cwd, input.path);
    const text = await readText(ctx, file);
    const count = occurrences(text, input.oldString);
    if (count === 0) return { isError: true, output: `oldString was not found in ${file}; read the file and copy the text exactly.` };
    if (count > 1 && !input.replaceAll) {
      return { isError: true, output: `oldString appears ${count} times in ${file}; add surrounding lines to make it unique, or set replaceAll.` };
    }
    const next = input.replaceAll ? text.split(input.oldString).join(input.newString) : text.replace(input.oldString, () => input.newString);
    await ctx.host.writeFile(file, next, { signal: ctx.signal });
    return {
      isError: false,
      output: `Replaced ${input.replaceAll ? count : 1} occurrence${count > 1 && input.replaceAll ? 's' : ''} in ${file}`,
      effects: { filesEdited: [file] },
    };
  },
});
