import fs from 'node:fs';
import net, { type Socket } from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import ssh2, { type AuthContext, type Connection, type PseudoTtyInfo, type ServerChannel, type Session } from 'ssh2';
import { splice } from '../../lib/splice.ts';
import { AGENT_SERVER_SOFTWARE, type SessionUse } from '../../relay/gateway/protocol.ts';
import { shellQuote } from '../../ssh/command.ts';
import { runExecRequest, type RunningCommand } from './exec-request.ts';
import { serveSftp } from './sftp-server.ts';
import { loginShell, onTerminal } from './terminal.ts';

export interface SessionServerOptions {
  /** Private host key; the control plane pins its public half from registration. */
  hostKey: string;
  /** The only user name accepted: the user the agent runs as (the computer's remoteUser). */
  username: string;
  /** Environment of every command, before the session's `env` requests. */
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

export interface SessionServer {
  /** Runs an SSH server session over `stream`, one tunnelled connection of the control plane or of a person. */
  serve(stream: Duplex, use: SessionUse): void;
}

/** Keepalive towards a person, whose end may vanish (a closed laptop): given up after 3 unanswered. */
const PERSON_KEEPALIVE_MS = 15_000;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The agent's in-process SSH server: what sshd is for a directly registered machine, reached only
 * through the relay tunnel. It offers `exec`, `shell` (on a terminal when asked, see terminal.ts),
 * the `sftp` subsystem and direct-tcpip channels (port forwarding from `agentplane port-forward`),
 * as the agent's own user.
 *
 * Authentication: any method (ssh2 clients try `none` first). The stream only ever comes from a
 * `forwarded-tcpip` channel that the gateway opened over the agent's own outbound connection, and
 * the agent accepted that connection only after the gateway proved the host key pinned in the
 * state directory; so whoever speaks here was let through by the control plane, already
 * authenticated. A second credential would be handed out by that same control plane and add
 * nothing against it.
 * - The control plane's own connections must name the agent's user: that catches a control
 *   plane that believes the machine runs as someone else. The control plane pins this server's
 *   host key (registered by the agent), so a session routed to the wrong machine fails there.
 * - A person's connection (on the people's forwarding) was allowed by the relay for the person's
 *   API key, as `GET /computers/{id}`; any user name is this user, as through the relay before.
 *   The person's client sees this server's host key: the machine's own, end to end.
 */
export function createSessionServer(opts: SessionServerOptions): SessionServer {
  const servers = {
    'control-plane': new ssh2.Server({ hostKeys: [opts.hostKey], ident: AGENT_SERVER_SOFTWARE }, (client) => serveClient(client, 'control-plane', opts)),
    person: new ssh2.Server(
      {
        hostKeys: [opts.hostKey],
        ident: AGENT_SERVER_SOFTWARE,
        keepaliveInterval: PERSON_KEEPALIVE_MS,
        keepaliveCountMax: 3,
        algorithms: { cipher: ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com'] },
      },
      (client) => serveClient(client, 'person', opts),
    ),
  };
  return {
    serve(stream, use) {
      // ssh2 only reads, writes, pauses and ends the socket it is given; a channel stream does that.
      servers[use].injectSocket(stream as unknown as Socket);
    },
  };
}

function serveClient(client: Connection, use: SessionUse, opts: SessionServerOptions): void {
  client.on('error', () => {});
  client.on('authentication', (ctx: AuthContext) => {
    if (use === 'control-plane' && ctx.username !== opts.username) {
      opts.log(`refused a session for user "${ctx.username}": this agent runs as "${opts.username}"`);
      return ctx.reject([]);
    }
    ctx.accept();
  });
  client.on('ready', () => {
    client.on('session', (accept) => handleSession(accept(), opts));
    client.on('tcpip', (accept, reject, info) => {
      const socket = net.connect({ host: info.destIP, port: info.destPort, noDelay: true });
      socket.once('error', () => reject());
      socket.once('connect', () => {
        socket.removeAllListeners('error');
        splice(accept(), socket);
      });
    });
  });
}

/** The user's home directory from the password database; `/` if it does not exist, as with sshd. */
function homeDirectory(): string {
  const home = os.userInfo().homedir;
  return fs.existsSync(home) ? home : '/';
}

function handleSession(session: Session, opts: SessionServerOptions): void {
  const env: NodeJS.ProcessEnv = { ...opts.env };
  const home = homeDirectory();
  let running: RunningCommand | undefined;
  let pty: PseudoTtyInfo | undefined;

  const run = (accept: () => ServerChannel | undefined, command: string | undefined) => {
    const channel = accept();
    if (!channel) return;
    if (pty) {
      const terminal = onTerminal(command, pty);
      running = runExecRequest(channel, command ?? '', { ...env, ...terminal.env }, home, terminal.argv);
    } else {
      running = runExecRequest(channel, command ?? `exec ${shellQuote(loginShell())}`, env, home);
    }
  };

  session.on('env', (accept, reject, info) => {
    if (!ENV_NAME.test(info.key)) return reject?.();
    env[info.key] = info.val;
    accept?.();
  });
  session.on('pty', (accept, _reject, info) => {
    pty = info;
    accept?.();
  });
  // The terminal's size is fixed at start (see terminal.ts); the request is answered so clients carry on.
  session.on('window-change', (accept) => accept?.());
  session.on('shell', (accept) => run(accept, undefined));
  session.on('exec', (accept, _reject, info) => run(accept, info.command));
  session.on('signal', (accept, _reject, info) => {
    running?.kill(info.name);
    accept?.();
  });
  session.on('sftp', (accept) => {
    const sftp = accept();
    if (!sftp) return;
    serveSftp(sftp, home);
    // At the client's EOF, answer as sshd does once sftp-server exits: status 0, then close.
    // OpenSSH's scp and sftp count a session without an exit status as failed. ssh2 (pinned
    // 1.17.0) offers no exit() on its SFTP server object, hence its protocol handle; and it closes
    // the channel in an 'end' listener of its own, so this one goes first.
    sftp.prependOnceListener('end', () => {
      const channel = sftp as unknown as { _protocol: { exitStatus(id: number, status: number): void }; outgoing: { id: number; state: string } };
      if (channel.outgoing.state === 'open') channel._protocol.exitStatus(channel.outgoing.id, 0);
    });
  });
}
