import { binary, packageJson } from './evidence.ts';
import type { Criterion } from './types.ts';

const HOOK_FILE =
  /^(\.pre-commit-config\.ya?ml|\.husky\/(pre-commit|pre-push|commit-msg)|lefthook\.ya?ml|\.lefthook\.ya?ml|\.githooks\/[^/]+|\.overcommit\.yml)$/;
const PACKAGE_KEYS = ['simple-git-hooks', 'lint-staged', 'husky'];

/** Git hooks that check a commit before it is made, so agents get feedback before CI. */
export const preCommitHooks: Criterion = {
  id: 'pre_commit_hooks',
  level: 4,
  title: 'Pre-commit hooks',
  async evaluate(ctx) {
    const file = ctx.files.find((f) => HOOK_FILE.test(f));
    if (file) return binary(true, `commit hooks configured in ${file}`);
    const pkg = await packageJson(ctx, '.');
    const key = PACKAGE_KEYS.find((k) => pkg?.[k] !== undefined);
    if (key) return binary(true, `commit hooks configured through "${key}" in package.json`);
    return binary(false, 'No commit hooks (.pre-commit-config.yaml, .husky/, lefthook.yml, .githooks/)');
  },
};
