import type { Command } from 'commander';
import type { PortForwardOptions } from './port-forward-command.ts';
import type { SshCommandOptions } from './ssh-command.ts';

/** `agentplane ssh` and `agentplane port-forward`: people's way to their computers through the relay. */
export function registerRelayCommands(program: Command): void {
  program
    .command('ssh')
    .description('open a shell on a computer through the relay, run one command (after --), or carry OpenSSH (--stdio, as ProxyCommand)')
    .argument('<computer>', 'computer name (your own) or id')
    .argument('[command...]', 'command to run instead of a shell; its exit status is returned')
    .option('--url <base_url>', "the control plane's base URL (default: $AGENTPLANE_URL)")
    .option('--api-key <key>', 'your API key (default: $AGENTPLANE_API_KEY)')
    .option('--stdio', 'carry the SSH connection on stdin/stdout: ssh -o ProxyCommand="npx agentplane ssh --stdio %n" <computer>')
    .action(async (computer: string, command: string[], opts: SshCommandOptions) => {
      const { runSshCommand } = await import('./ssh-command.ts');
      process.exit(await runSshCommand(computer, command, opts).catch(failed));
    });

  program
    .command('port-forward')
    .description("forward a local port to a port on a computer's loopback through the relay")
    .argument('<computer>', 'computer name (your own) or id')
    .argument('<ports>', 'PORT or LOCAL_PORT:REMOTE_PORT, e.g. 3000 or 8080:3000 (local 0 picks a free port)')
    .option('--url <base_url>', "the control plane's base URL (default: $AGENTPLANE_URL)")
    .option('--api-key <key>', 'your API key (default: $AGENTPLANE_API_KEY)')
    .option('--address <address>', 'local address to listen on', '127.0.0.1')
    .action(async (computer: string, ports: string, opts: PortForwardOptions) => {
      const { runPortForward } = await import('./port-forward-command.ts');
      process.exit(await runPortForward(computer, ports, opts).catch(failed));
    });
}

/** As `ssh` does, 255 says the connection failed (refused, unreachable, lost), never the remote command. */
function failed(err: unknown): number {
  process.stderr.write(`agentplane: ${err instanceof Error ? err.message : String(err)}\n`);
  return 255;
}
