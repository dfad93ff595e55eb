import type { ComputerStacks } from '../provisioning/pulumi/computer-stacks.ts';
import { recordModelCall, recordPulumi, recordStep, recordToolCall } from './metrics.ts';
import { inSpan } from './tracing.ts';

/**
 * The spans and timings of provisioning and agent turns, each wrapped around the work it times by
 * a one-line call where the work happens. Attributes name providers, steps, models and tools, never
 * what a computer, a message or a tool call holds.
 */

const seconds = (started: number) => (performance.now() - started) / 1000;

/** One provisioning step's run; `run` answers how it ended (completed, failed, skipped, handed-off, lost). */
export function observeStep<T extends string>(provider: string, step: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  return inSpan(`step ${step}`, { 'agentplane.provider': provider, 'agentplane.step': step }, async (set) => {
    try {
      const end = await run();
      set({ 'agentplane.step.outcome': end });
      recordStep(provider, step, end, seconds(started));
      return end;
    } catch (err) {
      // Thrown: the job was aborted or is stopping, and its next run resumes the step.
      recordStep(provider, step, 'interrupted', seconds(started));
      throw err;
    }
  });
}

/** The stacks with every `pulumi up`, `destroy` and `preview` in a span and timed by provider. */
export function observeStacks(stacks: ComputerStacks): ComputerStacks {
  const timed =
    <A extends [{ name: string }, ...unknown[]], R>(operation: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const provider = args[0].name;
      const started = performance.now();
      return inSpan(`pulumi ${operation}`, { 'agentplane.provider': provider, 'agentplane.pulumi.operation': operation }, async () => {
        try {
          const result = await fn(...args);
          recordPulumi(provider, operation, 'ok', seconds(started));
          return result;
        } catch (err) {
          recordPulumi(provider, operation, 'error', seconds(started));
          throw err;
        }
      });
    };
  return {
    up: timed('up', stacks.up),
    destroy: timed('destroy', stacks.destroy),
    preview: timed('preview', stacks.preview),
    whileIdle: (fn) => stacks.whileIdle(fn),
  };
}

/** One model call of a turn. `interrupted` tells an abort from a failure. */
export function observeModelCall<T>(model: string, interrupted: () => boolean, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  return inSpan(`model ${model}`, { 'gen_ai.request.model': model }, async (set) => {
    try {
      const result = await call();
      recordModelCall(model, 'ok', seconds(started));
      const usage = (result as { usage?: { inputTokens: number; outputTokens: number } }).usage;
      if (usage) set({ 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens });
      return result;
    } catch (err) {
      recordModelCall(model, interrupted() ? 'interrupted' : 'error', seconds(started));
      throw err;
    }
  });
}

/** One tool call on the computer; `known` is false for a name the model made up (counted as `unknown`). */
export function observeToolCall<T extends { block: { isError?: boolean } }>(tool: string, known: boolean, call: () => Promise<T>): Promise<T> {
  const name = known ? tool : 'unknown';
  const started = performance.now();
  return inSpan(`tool ${name}`, { 'agentplane.tool': name }, async (set) => {
    const result = await call();
    const outcome = result.block.isError ? 'error' : 'ok';
    set({ 'agentplane.tool.outcome': outcome });
    recordToolCall(name, outcome, seconds(started));
    return result;
  });
}
