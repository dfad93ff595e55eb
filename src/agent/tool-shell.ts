import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { defineTool, type OutputStream } from './tool-definition.ts';

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 600_000;
/** Per stream; exec keeps the last bytes, where errors and summaries usually are. */
const MAX_STREAM_BYTES = 14_000;

export const runCommandTool = defineTool({
  name: 'run_command',
  description:
    'Run a shell command on the computer in the session working directory and return its stdout, stderr and exit code. ' +
    'Long output keeps its last bytes. The command is killed when it times out or the user interrupts.',
  kind: 'shell',
  input: z.object({
    command: z.string().min(1).describe('The shell command line (POSIX sh syntax).'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(MAX_TIMEOUT_MS)
      .optional()
      .describe(`Kill the command after this many milliseconds (default ${DEFAULT_TIMEOUT_MS}).`),
  }),
  async execute({ host, signal, onOutput }, input) {
    // Live output is decoded per stream, so a character split across two chunks (SSH packets) stays whole.
    const live = onOutput && { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    const forward = (stream: OutputStream) => (live ? (chunk: Buffer) => onOutput!(stream, live[stream].write(chunk)) : undefined);
    let res;
    try {
      res = await host.exec(input.command, {
        timeoutMs: input.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        signal,
        maxOutputBytes: MAX_STREAM_BYTES,
        onStdout: forward('stdout'),
        onStderr: forward('stderr'),
      });
    } finally {
      if (live) for (const stream of ['stdout', 'stderr'] as const) onOutput!(stream, live[stream].end());
    }
    const parts: string[] = [];
    if (res.stdout) parts.push(res.stdout.replace(/\n$/, ''));
    if (res.stderr) parts.push(`[stderr]\n${res.stderr.replace(/\n$/, '')}`);
    if (res.truncated) parts.push(`[output truncated: only the last ${MAX_STREAM_BYTES} bytes of each stream are shown]`);
    parts.push(res.exitCode === null ? `[killed by ${res.signal ?? 'a signal'}]` : `[exit code ${res.exitCode}]`);
    return { isError: res.exitCode !== 0, output: parts.join('\n') };
  },
});
