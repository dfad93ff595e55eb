import { runAgent } from './agent.ts';

/** The options of `agentplane agent`, as commander hands them over. */
export interface AgentCommandOptions {
  url: string;
  apiKey?: string;
  name: string;
  stateDir?: string;
  gatewayHostKey?: string;
  gateway?: string;
}

/**
 * `agentplane agent`: runs until SIGTERM or SIGINT, then closes the tunnel (which stops the
 * commands the control plane is running here) and returns. Throws, for a non-zero exit, when
 * registration is refused (409: name taken) or the gateway refuses this agent or its host key.
 */
export async function runAgentCommand(opts: AgentCommandOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} agentplane agent: ${line}\n`);
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    stop.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await runAgent({ ...opts, apiKey: opts.apiKey ?? process.env.AGENTPLANE_API_KEY, log }, stop.signal);
  } finally {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  }
}
