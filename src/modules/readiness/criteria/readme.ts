import { fileIn } from './evidence.ts';
import type { Criterion } from './types.ts';

const README = /^readme(\.(md|markdown|rst|txt|adoc))?$/i;
/** Prose beyond the title that tells a newcomer something: about three sentences. */
const SUBSTANTIVE_CHARS = 200;

/** A README at the root, with more in it than a title. */
export const readme: Criterion = {
  id: 'readme',
  level: 1,
  title: 'README',
  async evaluate(ctx) {
    const file = fileIn(ctx, '.', [README]);
    if (!file) return { numerator: 0, denominator: 2, rationale: 'No README at the repository root' };
    const text = (await ctx.read(file)) ?? '';
    const prose = text
      .split('\n')
      .filter((l) => !/^\s*(#|=+\s*$|-+\s*$|!\[|\[!\[)/.test(l))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    const substantive = prose.length >= SUBSTANTIVE_CHARS;
    return {
      numerator: substantive ? 2 : 1,
      denominator: 2,
      rationale: substantive
        ? `${file} explains the project (${prose.length} characters of text beyond headings)`
        : `${file} exists but holds only ${prose.length} characters beyond headings (${SUBSTANTIVE_CHARS} expected)`,
    };
  },
};
