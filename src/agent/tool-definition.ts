import path from 'node:path/posix';
import { z } from 'zod';
import { ExecTimedOut, type ToolHost } from './tool-host.ts';

/** What autonomy levels gate: reading never changes the computer, writing changes files, shell can do anything. */
export type ToolKind = 'read' | 'write' | 'shell';

/** What a tool changed on the computer, for analytics (absolute paths). */
export interface ToolEffects {
  filesCreated?: string[];
  filesEdited?: string[];
}

export interface ToolResult {
  output: string;
  isError: boolean;
  effects?: ToolEffects;
}

/** Which of a command's output streams a piece of live output came from. */
export type OutputStream = 'stdout' | 'stderr';

/** Output as a tool produces it (a command's stdout and stderr), before its result exists; decoded text, in order per stream. */
type OnToolOutput = (stream: OutputStream, text: string) => void;

export interface ToolContext {
  /** Where the tool acts: the session's computer in its cwd, or the wiki's checkout. */
  host: ToolHost;
  signal?: AbortSignal;
  /** Where a tool that streams (run_command) reports its output as it arrives; the result still carries it. */
  onOutput?: OnToolOutput;
}

export interface AgentTool {
  name: string;
  description: string;
  kind: ToolKind;
  /**
   * Only reads the computer, so calls of it that the model makes together may run at once. Not
   * the same as kind `read` (the autonomy gate): a subagent is gated as a reader but writes.
   */
  concurrent: boolean;
  inputSchema: z.ZodType;
  /** JSON schema of the input for the model, derived from `inputSchema`. */
  jsonSchema: Record<string, unknown>;
  /** Validates `input` and runs the tool; never throws: failures are `isError` results. */
  run(host: ToolHost, input: unknown, signal?: AbortSignal, onOutput?: OnToolOutput): Promise<ToolResult>;
}

/** Longest tool output handed to the model; longer output keeps its head and says so. */
export const MAX_TOOL_OUTPUT_CHARS = 30_000;

function capOutput(text: string, max = MAX_TOOL_OUTPUT_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[output truncated: ${text.length - max} more characters not shown]`;
}

/** Paths from the model are relative to the session's cwd unless absolute. */
export function resolvePath(cwd: string, p: string): string {
  return path.resolve(cwd, p);
}

function describeError(err: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return 'Interrupted: the tool was stopped before it finished.';
  if (err instanceof ExecTimedOut) return `Timed out: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

export function defineTool<S extends z.ZodType>(def: {
  name: string;
  description: string;
  kind: ToolKind;
  /** See AgentTool.concurrent; default false. */
  concurrent?: boolean;
  input: S;
  execute(ctx: ToolContext, input: z.output<S>): Promise<ToolResult>;
}): AgentTool {
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(def.input) as Record<string, unknown>;
  return {
    name: def.name,
    description: def.description,
    kind: def.kind,
    concurrent: def.concurrent ?? false,
    inputSchema: def.input,
    jsonSchema,
    async run(host, input, signal, onOutput) {
      const parsed = def.input.safeParse(input);
      if (!parsed.success) return { isError: true, output: `Invalid input for ${def.name}:\n${z.prettifyError(parsed.error)}` };
      if (signal?.aborted) return { isError: true, output: describeError(undefined, signal) };
      try {
        const result = await def.execute({ host, signal, onOutput }, parsed.data);
        return { ...result, output: capOutput(result.output) };
      } catch (err) {
        return { isError: true, output: describeError(err, signal) };
      }
    },
  };
}
