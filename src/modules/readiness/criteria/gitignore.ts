import { binary } from './evidence.ts';
import type { Criterion } from './types.ts';

/** A root .gitignore, so build output and local files stay out of commits an agent makes. */
export const gitignore: Criterion = {
  id: 'gitignore',
  level: 1,
  title: 'Ignore file',
  async evaluate(ctx) {
    if (!ctx.has('.gitignore')) return binary(false, 'No .gitignore at the repository root');
    const rules = ((await ctx.read('.gitignore')) ?? '').split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
    if (rules.length === 0) return binary(false, '.gitignore exists but holds no rules');
    return binary(true, `.gitignore at the root with ${rules.length} rule${rules.length === 1 ? '' : 's'}`);
  },
};
