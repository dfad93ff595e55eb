import { binary, packageJson } from './evidence.ts';
import type { Criterion } from './types.ts';

const CONFIG = /^(\.github\/dependabot\.ya?ml|(\.github\/|\.gitlab\/)?renovate\.json5?|\.renovaterc(\.json5?)?)$/;

/** Automated dependency update pull requests (Dependabot, Renovate). */
export const dependencyUpdates: Criterion = {
  id: 'dependency_updates',
  level: 5,
  title: 'Dependency update automation',
  async evaluate(ctx) {
    const file = ctx.files.find((f) => CONFIG.test(f));
    if (file) return binary(true, `dependency updates automated by ${file.includes('dependabot') ? 'Dependabot' : 'Renovate'} (${file})`);
    if ((await packageJson(ctx, '.'))?.renovate !== undefined) return binary(true, 'dependency updates automated by Renovate ("renovate" in package.json)');
    return binary(false, 'No Dependabot or Renovate configuration');
  },
};
