import { packageJson } from './evidence.ts';
import type { Criterion } from './types.ts';

const PINNED =
  /(^|\/)(\.nvmrc|\.node-version|\.python-version|\.ruby-version|\.go-version|\.java-version|\.tool-versions|\.mise\.toml|mise\.toml|rust-toolchain(\.toml)?|\.sdkmanrc)$/;
const ENVIRONMENT =
  /^(\.devcontainer\/([^/]+\/)?devcontainer\.json|\.devcontainer\.json|flake\.nix|shell\.nix|default\.nix|devbox\.json|\.gitpod\.yml|Vagrantfile|(docker-)?compose\.ya?ml|docker-compose\.ya?ml)$/;

/**
 * A reproducible environment: pinned toolchain versions, and a dev container, Nix, Devbox or
 * Compose definition that brings up what the project needs.
 */
export const devEnvironment: Criterion = {
  id: 'dev_environment',
  level: 5,
  title: 'Reproducible environment',
  async evaluate(ctx) {
    const parts: string[] = [];
    let numerator = 0;
    const pinned = ctx.files.find((f) => PINNED.test(f) && !/(^|\/)node_modules\//.test(f));
    const engines = !pinned && (await packageJson(ctx, '.'))?.engines;
    if (pinned) {
      numerator++;
      parts.push(`toolchain versions pinned in ${pinned}`);
    } else if (engines && Object.keys(engines).length) {
      numerator++;
      parts.push(`toolchain versions pinned by "engines" in package.json`);
    } else {
      parts.push('no pinned toolchain versions (.tool-versions, .nvmrc, rust-toolchain.toml, ...)');
    }
    const env = ctx.files.find((f) => ENVIRONMENT.test(f));
    if (env) {
      numerator++;
      parts.push(`environment defined in ${env}`);
    } else {
      parts.push('no dev container, Nix, Devbox or Compose environment');
    }
    return { numerator, denominator: 2, rationale: parts.join('; ') };
  },
};
