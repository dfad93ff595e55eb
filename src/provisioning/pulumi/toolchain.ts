import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

/** The Pulumi CLI and plugins that scripts/pulumi-toolchain.sh provides. */
export interface PulumiToolchain {
  pulumiBin: string;
  /** The directory to put first on PATH. */
  binDir: string;
  /** The PULUMI_HOME holding the plugins, so the engine never downloads one. */
  pulumiHome: string;
  /** The CLI version, always that of the @pulumi/pulumi dependency. */
  version: string;
  /** Whether the CLI and the pulumi-resource-command plugin are both there. */
  available: boolean;
}

const require = createRequire(import.meta.url);

function packageVersion(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version;
}

/**
 * Locates the toolchain where the script puts it:
 * `${AGENTPLANE_PULUMI_HOME:-~/.cache/agentplane/pulumi}/<@pulumi/pulumi version>/{bin,home}`.
 */
export function locatePulumiToolchain(env: NodeJS.ProcessEnv = process.env): PulumiToolchain {
  const version = packageVersion('@pulumi/pulumi');
  const cache = path.join(env.AGENTPLANE_PULUMI_HOME || path.join(os.homedir(), '.cache', 'agentplane', 'pulumi'), version);
  const binDir = path.join(cache, 'bin');
  const pulumiBin = path.join(binDir, 'pulumi');
  const pulumiHome = path.join(cache, 'home');
  const commandPlugin = path.join(pulumiHome, 'plugins', `resource-command-v${packageVersion('@pulumi/command')}`, 'pulumi-resource-command');
  const available = existsSync(pulumiBin) && existsSync(commandPlugin);
  return { pulumiBin, binDir, pulumiHome, version, available };
}
