import net, { type AddressInfo } from 'node:net';
import { splice } from '../lib/splice.ts';
import { onStopRequest } from '../lib/stop-request.ts';
import { credentialsFrom } from './computer.ts';
import { openRelaySession } from './relay-session.ts';

export interface PortForwardOptions {
  url?: string;
  apiKey?: string;
  /** Local address to listen on. Default 127.0.0.1: the forwarded port is not offered to the network. */
  address?: string;
}

/** `3000` or `8080:3000` (local:remote); a local 0 picks a free port. */
function parsePortSpec(spec: string): { local: number; remote: number } {
  const m = /^(\d{1,5})(?::(\d{1,5}))?$/.exec(spec);
  const local = Number(m?.[1]);
  const remote = Number(m?.[2] ?? m?.[1]);
  if (!m || local > 65535 || remote < 1 || remote > 65535) {
    throw new Error(`${JSON.stringify(spec)} is not a port to forward: give PORT or LOCAL_PORT:REMOTE_PORT, e.g. 3000 or 8080:3000`);
  }
  return { local, remote };
}

/**
 * `agentplane port-forward <computer> LOCAL[:REMOTE]`: every connection to the local port is
 * carried through the relay to REMOTE on the computer's loopback (a dev server's preview). Runs
 * until asked to stop (SIGINT, SIGTERM, its launcher gone: exit 0) or until the relay session ends
 * (exit 255, with the reason).
 */
export async function runPortForward(nameOrId: string, spec: string, opts: PortForwardOptions): Promise<number> {
  const ports = parsePortSpec(spec);
  const session = await openRelaySession(credentialsFrom(opts), nameOrId);
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => {});
    session.client.forwardOut(socket.remoteAddress ?? '127.0.0.1', socket.remotePort ?? 0, '127.0.0.1', ports.remote, (err, channel) => {
      if (err) {
        process.stderr.write(`agentplane: ${session.computer.name} refused a connection to port ${ports.remote}: ${err.message}\n`);
        return socket.destroy();
      }
      splice(socket, channel);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${opts.address ?? '127.0.0.1'}:${ports.local}: ${err.message}`)));
    server.listen(ports.local, opts.address ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  process.stderr.write(`agentplane: forwarding ${address}:${port} -> ${session.computer.name}:${ports.remote} (Ctrl-C to stop)\n`);

  const stopped = new Promise<string | undefined>((resolve) => onStopRequest(() => resolve(undefined)));
  const reason = await Promise.race([stopped, session.ended]);
  server.close();
  session.client.end();
  if (reason === undefined) return 0;
  process.stderr.write(`agentplane: ${session.computer.name}: ${reason}\n`);
  return 255;
}
