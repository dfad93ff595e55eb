import { createRequire } from 'node:module';
import path from 'node:path';
import type { PulumiCommand } from '@pulumi/pulumi/automation/index.js';
import type { PulumiToolchain } from './toolchain.ts';

export interface EngineEnvOptions {
  /** e.g. `file:///var/lib/agentplane/pulumi`: state never goes to the Pulumi Cloud. */
  backendUrl: string;
  passphrase: string;
  toolchain: PulumiToolchain;
  /** The PATH to extend; defaults to this process's. */
  basePath?: string;
}

const require = createRequire(import.meta.url);

/**
 * The environment for every Pulumi CLI run: offline, with no update check and no plugin
 * downloads, so a missing plugin fails at once instead of waiting on the network. Every run
 * also writes a log file under PULUMI_HOME/logs and first stats every file there (a week's by
 * default: at ~8k files, a fifth of a run's CPU), so a day's and at most 16 MB are kept. The CLI
 * and its plugins are short-lived Go processes whose garbage collector, at Go's default, took a
 * sixth of their CPU: it runs at a quarter of that rate (GOGC=400, unless this process's
 * environment sets GOGC), for a few tens of MB more per run. A stack's secrets provider is
 * named in its settings file, which only the workspace directory of the replica that created the
 * stack holds; elsewhere the one recorded in the stack's state is used, not a new passphrase one.
 */
export function engineEnv(opts: EngineEnvOptions): Record<string, string> {
  // Dynamic providers need pulumi-resource-pulumi-nodejs, which @pulumi/pulumi ships at its root.
  const nodejsProviderDir = path.dirname(require.resolve('@pulumi/pulumi/package.json'));
  const basePath = opts.basePath ?? process.env.PATH ?? '';
  return {
    PULUMI_BACKEND_URL: opts.backendUrl,
    PULUMI_CONFIG_PASSPHRASE: opts.passphrase,
    PULUMI_SKIP_UPDATE_CHECK: 'true',
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
    PULUMI_LOG_ROTATION_MAX_AGE_DAYS: '1',
    PULUMI_LOG_ROTATION_MAX_TOTAL_MB: '16',
    GOGC: process.env.GOGC ?? '400',
    PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: 'true',
    PULUMI_HOME: opts.toolchain.pulumiHome,
    PATH: [opts.toolchain.binDir, nodejsProviderDir, basePath].filter(Boolean).join(path.delimiter),
  };
}

/** The CLI for LocalWorkspace's `pulumiCommand`, checked to be exactly the toolchain's version. */
export async function pulumiCommand(toolchain: PulumiToolchain, skipVersionCheck = false): Promise<PulumiCommand> {
  // Loaded on first use: the Automation API takes most of a second to import, which every CLI command would pay.
  const { PulumiCommand } = await import('@pulumi/pulumi/automation/index.js');
  const cmd = await PulumiCommand.get({ root: path.dirname(toolchain.binDir), skipVersionCheck });
  if (cmd.version?.version !== toolchain.version) {
    throw new Error(`Pulumi CLI ${cmd.version?.version ?? 'of unknown version'} found where ${toolchain.version} is needed: run scripts/pulumi-toolchain.sh`);
  }
  return cmd;
}
