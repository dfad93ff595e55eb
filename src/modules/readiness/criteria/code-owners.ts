import { binary } from './evidence.ts';
import type { Criterion } from './types.ts';

const LOCATIONS = ['CODEOWNERS', '.github/CODEOWNERS', 'docs/CODEOWNERS', '.gitlab/CODEOWNERS'];

/** A CODEOWNERS file with at least one rule, so changes an agent proposes reach a reviewer. */
export const codeOwners: Criterion = {
  id: 'code_owners',
  level: 2,
  title: 'Code owners',
  async evaluate(ctx) {
    const file = LOCATIONS.find((f) => ctx.has(f));
    if (!file) return binary(false, `No CODEOWNERS file (looked in ${LOCATIONS.join(', ')})`);
    const rules = ((await ctx.read(file)) ?? '').split('\n').filter((l) => /^\s*[^#\s]\S*\s+\S/.test(l));
    if (rules.length === 0) return binary(false, `${file} exists but assigns no owners`);
    return binary(true, `${file} assigns owners in ${rules.length} rule${rules.length === 1 ? '' : 's'}`);
  },
};
