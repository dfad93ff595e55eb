import { z } from 'zod';
import { shellQuote } from '../ssh/index.ts';
import { defineTool, resolvePath } from './tool-definition.ts';

const MAX_GLOB_RESULTS = 1_000;
const MAX_SEARCH_LINES = 500;
const LISTING_TIMEOUT_MS = 60_000;

export const listDirectoryTool = defineTool({
  name: 'list_directory',
  description: 'List a directory (ls -lA): names, sizes, permissions and modification times, hidden entries included.',
  kind: 'read',
  concurrent: true,
  input: z.object({
    path: z.string().min(1).optional().describe('Directory, relative to the working directory or absolute (default: the working directory).'),
  }),
  async execute({ host, signal }, input) {
    return { isError: false, output: await host.list(resolvePath(host.cwd, input.path ?? '.'), { signal }) };
  },
});

export const globTool = defineTool({
  name: 'glob',
  description: `Find files by glob pattern (bash globstar: ** matches any depth), e.g. "src/**/*.ts". Paths are relative to the search directory; at most ${MAX_GLOB_RESULTS} are returned.`,
  kind: 'read',
  concurrent: true,
  input: z.object({
    pattern: z.string().min(1).describe('Glob pattern.'),
    path: z.string().min(1).optional().describe('Directory to search from (default: the working directory).'),
  }),
  async execute({ host, signal }, input) {
    const dir = resolvePath(host.cwd, input.path ?? '.');
    // The pattern reaches bash as "$1", expanded unquoted with IFS empty: globbing without word splitting or code execution.
    const script = `cd -- "$2" && IFS= && for f in $1; do { [ -e "$f" ] || [ -L "$f" ]; } && printf '%s\\n' "$f"; done; true`;
    const command = `bash -O globstar -O nullglob -O dotglob -c ${shellQuote(script)} glob ${shellQuote(input.pattern)} ${shellQuote(dir)} | head -n ${MAX_GLOB_RESULTS + 1}`;
    const res = await host.exec(command, { signal, timeoutMs: LISTING_TIMEOUT_MS });
    if (res.stderr.trim()) return { isError: true, output: res.stderr.trim() };
    const lines = res.stdout.split('\n').filter(Boolean);
    if (lines.length === 0) return { isError: false, output: 'No files match.' };
    const shown = lines.slice(0, MAX_GLOB_RESULTS);
    return {
      isError: false,
      output: shown.join('\n') + (lines.length > MAX_GLOB_RESULTS ? `\n[more than ${MAX_GLOB_RESULTS} matches; narrow the pattern]` : ''),
    };
  },
});

export const searchTextTool = defineTool({
  name: 'search_text',
  description: `Search file contents with grep -rn (extended regular expressions), skipping binary files and .git. Returns file:line:text, at most ${MAX_SEARCH_LINES} lines.`,
  kind: 'read',
  concurrent: true,
  input: z.object({
    pattern: z.string().min(1).describe('Extended regular expression (or a literal string with fixedStrings).'),
    path: z.string().min(1).optional().describe('File or directory to search (default: the working directory).'),
    include: z.string().min(1).optional().describe('Only files whose name matches this glob, e.g. "*.ts".'),
    ignoreCase: z.boolean().optional(),
    fixedStrings: z.boolean().optional(),
  }),
  async execute({ host, signal }, input) {
    const where = resolvePath(host.cwd, input.path ?? '.');
    const flags = ['-rnI', '--exclude-dir=.git', input.fixedStrings ? '-F' : '-E'];
    if (input.ignoreCase) flags.push('-i');
    if (input.include) flags.push(`--include=${shellQuote(input.include)}`);
    // grep's status goes to stderr (the pipe to head hides it); 141 is grep stopped by head (SIGPIPE).
    const command = `{ grep ${flags.join(' ')} -e ${shellQuote(input.pattern)} -- ${shellQuote(where)}; echo "__status=$?" >&2; } | head -n ${MAX_SEARCH_LINES + 1}`;
    const res = await host.exec(command, { signal, timeoutMs: LISTING_TIMEOUT_MS });
    const status = Number(/__status=(\d+)/.exec(res.stderr)?.[1] ?? '2');
    const stderr = res.stderr.replace(/__status=\d+\n?/, '').trim();
    if (status === 1) return { isError: false, output: 'No matches.' };
    if (status !== 0 && status !== 141) return { isError: true, output: stderr || `grep exited with ${status}` };
    const lines = res.stdout.split('\n').filter(Boolean);
    const shown = lines.slice(0, MAX_SEARCH_LINES);
    return {
      isError: false,
      output: shown.join('\n') + (lines.length > MAX_SEARCH_LINES ? `\n[more than ${MAX_SEARCH_LINES} matching lines; narrow the search]` : ''),
    };
  },
});
