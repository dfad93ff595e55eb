import type { RuntimeMessage } from './content.ts';
import { contextLimits, inputBudget } from './context-limits.ts';
import { dropOldest, OLD_OUTPUT_MAX_CHARS, trimToolOutputs } from './context-trim.ts';
import type { ModelClient, ToolSpec, Usage } from './model-client.ts';
import type { TokenEstimator } from './token-estimate.ts';

/** Opens every compaction summary: the model reads it as the start of the conversation. */
export const SUMMARY_HEADING =
  '[Compacted history] The earlier part of this session was summarised to fit the model context window; the full history stays readable in the session. Summary:';

/**
 * Asked after the messages to summarise, with the same system prompt and tools, so a compaction
 * by the session's own model reads the conversation's cached prefix.
 */
export const COMPACTION_INSTRUCTION = [
  'The context window is full: the messages above will be replaced by a summary you write now, for your own later use.',
  "Keep what the work needs: the user's goals and requests, decisions made and why, files read, created or changed (with paths),",
  'commands run and what they showed, errors and open problems, and the tool results that still matter. If an earlier summary',
  'opens the conversation, carry its content forward. Write concise notes, not a reply to the user, and do not call tools.',
].join(' ');

export function summaryMessage(summary: string, covers?: RuntimeMessage['covers']): RuntimeMessage {
  return { role: 'user', content: [{ type: 'text', text: `${SUMMARY_HEADING}\n\n${summary}` }], ...(covers ? { covers } : {}) };
}

export function isSummary(m: RuntimeMessage | undefined): boolean {
  const first = m?.content[0];
  return m?.role === 'user' && first?.type === 'text' && first.text.startsWith(SUMMARY_HEADING);
}

export class CompactionFailed extends Error {
  readonly usage: Usage | undefined;
  constructor(message: string, usage?: Usage) {
    super(message);
    this.name = 'CompactionFailed';
    this.usage = usage;
  }
}

/**
 * The summary of `messages` by `client`: the messages (old tool outputs cut, the oldest dropped
 * when they exceed the compaction model's own window) and the instruction. Throws
 * CompactionFailed, with the usage of a call that answered without text.
 */
export async function summarise(opts: {
  client: ModelClient;
  estimator: TokenEstimator;
  system: string;
  tools: readonly ToolSpec[];
  messages: readonly RuntimeMessage[];
  maxOutputTokens: number;
  signal?: AbortSignal;
}): Promise<{ text: string; usage: Usage }> {
  const limits = contextLimits(opts.client.model);
  const maxOutputTokens = Math.min(opts.maxOutputTokens, limits.maxOutputTokens);
  const budget = inputBudget({ ...limits, maxOutputTokens });
  const instruction: RuntimeMessage = { role: 'user', content: [{ type: 'text', text: COMPACTION_INSTRUCTION }] };
  let input: RuntimeMessage[] | undefined = [...trimToolOutputs(opts.messages, OLD_OUTPUT_MAX_CHARS), instruction];
  const size = (messages: RuntimeMessage[]) => opts.estimator.tokens(opts.estimator.measure({ system: opts.system, tools: opts.tools, messages }));
  while (input && size(input) > budget) input = dropOldest(input);
  if (!input) throw new CompactionFailed(`the messages to summarise do not fit ${opts.client.model.id}'s context window`);
  let completion;
  try {
    completion = await opts.client.complete({ system: opts.system, messages: input, tools: [...opts.tools], maxOutputTokens, signal: opts.signal });
  } catch (err) {
    throw new CompactionFailed(err instanceof Error ? err.message : String(err));
  }
  opts.estimator.observe(opts.estimator.measure({ system: opts.system, tools: opts.tools, messages: input }), completion.usage);
  const text = completion.content
    .flatMap((b) => (b.type === 'text' ? [b.text] : []))
    .join('')
    .trim();
  if (completion.interrupted) throw new CompactionFailed('interrupted', completion.usage);
  if (!text) throw new CompactionFailed(`${opts.client.model.id} answered without a summary`, completion.usage);
  return { text, usage: completion.usage };
}
