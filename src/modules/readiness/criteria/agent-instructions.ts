import type { Criterion } from './types.ts';

/** Instruction files coding agents read: AGENTS.md and the tool-specific ones. */
const INSTRUCTIONS =
  /(^|\/)(AGENTS\.md|AGENT\.md|CLAUDE\.md|GEMINI\.md|\.cursorrules|\.windsurfrules|\.clinerules|\.github\/copilot-instructions\.md|\.cursor\/rules\/[^/]+\.mdc?)$/;
/** A command an agent can run, as instruction files write them. */
const COMMAND =
  /\b(npm|pnpm|yarn|bun|npx|make|just|cargo|go|pytest|python3?|uv|poetry|pip|tox|nox|gradle|gradlew|mvn|bundle|rake|composer|dotnet|docker)\s+[a-z-]+/;

/** Instructions for coding agents that say how to build and test. */
export const agentInstructions: Criterion = {
  id: 'agent_instructions',
  level: 2,
  title: 'Agent instructions',
  async evaluate(ctx) {
    const files = ctx.files.filter((f) => INSTRUCTIONS.test(f) && !/(^|\/)node_modules\//.test(f));
    if (files.length === 0) {
      return { numerator: 0, denominator: 2, rationale: 'No agent instructions (AGENTS.md, CLAUDE.md, .cursorrules, .github/copilot-instructions.md, ...)' };
    }
    for (const file of files) {
      const command = COMMAND.exec((await ctx.read(file)) ?? '');
      if (command) return { numerator: 2, denominator: 2, rationale: `${file} tells agents what to run (e.g. \`${command[0]}\`)` };
    }
    return { numerator: 1, denominator: 2, rationale: `${files.join(', ')} exist but name no build, test or lint command` };
  },
};
