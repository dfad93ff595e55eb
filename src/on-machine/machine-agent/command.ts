import { onStopRequest } from '../../lib/stop-request.ts';
import { runAgent } from './agent.ts';

/** The options of `agentplane agent`, as commander hands them over. */
export interface AgentCommandOptions {
  url: string;
  apiKey?: string;
  registrationToken?: string;
  name: string;
  stateDir?: string;
  gatewayHostKey?: string;
  gateway?: string;
}

/**
 * `agentplane agent`: runs until asked to stop (SIGTERM, SIGINT, its launcher gone), then closes the tunnel (which stops the
 * commands the control plane is running here) and returns. Throws, for a non-zero exit, when
 * registration is refused (409: name taken) or the gateway refuses this agent or its host key.
 */
export async function runAgentCommand(opts: AgentCommandOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} agentplane agent: ${line}\n`);
  const stop = new AbortController();
  const dispose = onStopRequest((reason) => {
    log(`${reason}: stopping`);
    stop.abort();
  });
  try {
    await runAgent(
      {
        ...opts,
        apiKey: opts.apiKey ?? process.env.AGENTPLANE_API_KEY,
        registrationToken: opts.registrationToken ?? process.env.AGENTPLANE_REGISTRATION_TOKEN,
        log,
      },
      stop.signal,
    );
  } finally {
    dispose();
  }
}
