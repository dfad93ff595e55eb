import type { Command } from 'commander';
import type { ConfigCommandOptions } from './config-command.ts';

const connection = (c: Command) =>
  c
    .option('--url <base_url>', "the control plane's base URL (default: $AGENTPLANE_URL)")
    .option('--api-key <key>', 'your API key (default: $AGENTPLANE_API_KEY)');

/** `agentplane config diff | apply | export`: platform as code from a directory of YAML documents (loaded when run). */
export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description("the organization's configuration as YAML documents (platform as code)");
  const run = async (what: 'diff' | 'apply' | 'export', opts: ConfigCommandOptions) => {
    const { runConfigCommand } = await import('./config-command.ts');
    process.exit(await runConfigCommand(what, opts));
  };
  connection(
    config
      .command('diff')
      .description('print what applying the documents would change; exit 0: nothing, 2: changes, 1: error (as terraform plan -detailed-exitcode)')
      .requiredOption('-f, --file <path>', 'a YAML file, or a directory of them (searched recursively)')
      .option('--prune', 'also show the deletions of managed objects no document declares any more'),
  ).action((opts: ConfigCommandOptions) => run('diff', opts));
  connection(
    config
      .command('apply')
      .description('apply the documents: validated whole, then applied all or nothing as one revision')
      .requiredOption('-f, --file <path>', 'a YAML file, or a directory of them (searched recursively)')
      .option('--prune', 'delete managed objects no document declares any more'),
  ).action((opts: ConfigCommandOptions) => run('apply', opts));
  connection(
    config
      .command('export')
      .description("write the organization's current configuration as documents (one file per kind); applying them back changes nothing")
      .option('--out <dir>', 'write the files into this directory instead of printing them'),
  ).action((opts: ConfigCommandOptions) => run('export', opts));
}
