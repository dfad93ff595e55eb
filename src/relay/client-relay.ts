import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import ssh2, { type Connection as PersonConnection } from 'ssh2';
import type { WebSocket } from 'ws';
import type { Authenticate } from '../auth/authenticate.ts';
import type { Principal } from '../auth/principal.ts';
import { requestFence, type AuthEpoch } from '../db/auth-epoch.ts';
import type { Db } from '../db/client.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import type { Logger } from '../lib/logger.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../modules/audit/record.ts';
import { reachableComputer } from '../modules/computers/access.ts';
import { machineUnavailable, passThroughFor, targetFor, type MachineDeps } from '../modules/computers/machines.ts';
import { webSocketDuplex } from './gateway/websocket-stream.ts';
import { connect, type Connection as MachineConnection } from '../ssh/connection.ts';
import type { PassedThrough } from './agent-dialer.ts';
import { bridgeChannels } from './client-channels.ts';
import { RELAY_ENDED_CODE, RELAY_SOFTWARE } from './protocol.ts';
import type { AcceptedUpgrade } from './upgrade.ts';
import { sampleGauge } from '../observability/metrics.ts';
import { useSsh2KeyObjects } from './ssh2-key-objects.ts';
import { passMessages } from './websocket-messages.ts';

export interface ClientRelayOptions {
  db: Db;
  authenticate: Authenticate;
  authEpoch: AuthEpoch;
  machines: MachineDeps;
  /** The relay's SSH host key (the gateway's, the same on every replica). */
  hostKey: string;
  clock: Clock;
  log: Logger;
  /** How often open sessions re-check their credential and computer. Default 5 s. */
  recheckMs?: number;
  /** SSH keepalive towards both the person and the machine. Default 15 s x 3. */
  keepaliveIntervalMs?: number;
}

export interface ClientRelay {
  /** Checks the upgrade request (401, 403, 404, 503) and connects to the machine; then serves the WebSocket. */
  open(req: IncomingMessage, computerId: string): Promise<AcceptedUpgrade>;
  /** Ends every open session (the server is stopping). */
  close(): void;
}

interface OpenSession {
  principal: Principal;
  authorization: string;
  computerId: string;
  end(reason: string): void;
}

/** How a session reaches its machine: a person's connection passed through to the agent, or bridged by the relay. */
type MachineSide = PassedThrough | { carried: 'bridged'; connection: MachineConnection };

/**
 * People's sessions on their computers through the relay (`agentplane ssh`, `port-forward`, and
 * OpenSSH through `agentplane ssh --stdio`). The WebSocket upgrade carries the caller's API key or
 * JWT and is allowed exactly when `GET /computers/{id}` would be. The person needs no key of the
 * machine's. Then:
 * - a computer whose agent takes people's connections gets the person's SSH connection passed
 *   through whole, on the agent's own connection back to this replica (or, where it cannot make
 *   one, a channel of its tunnel); the agent's server ends it with the machine's own host key, and
 *   the relay decrypts nothing;
 * - any other computer (managed, reached directly, or an older agent) is connected to the way the
 *   control plane always does (its own key, the machine's pinned host key), and the relay serves
 *   the person an SSH server of its own over the WebSocket, passing each channel on.
 *
 * Each session is audited when it opens and when it closes (with its duration). Every `recheckMs`
 * each open session's credential and computer are checked again, so a revoked key, a lost role or
 * a deleted computer ends it on whichever replica it runs.
 */
export function createClientRelay(opts: ClientRelayOptions): ClientRelay {
  useSsh2KeyObjects();
  const log = opts.log.child({ component: 'client-relay' });
  const sessions = new Set<OpenSession>();
  const unsample = sampleGauge('relaySessions', () => sessions.size);
  const keepaliveInterval = opts.keepaliveIntervalMs ?? 15_000;

  const audit = (principal: Principal, computerId: string, payload: Record<string, string | number>) =>
    recordAudit(opts.db, {
      organizationId: principal.organizationId,
      eventType: 'computer_relay_session',
      source: PUBLIC_API_SOURCE,
      actor: principal,
      target: { computerId },
      payload,
      at: opts.clock.now(),
    });

  async function stillAllowed(session: OpenSession): Promise<string | undefined> {
    try {
      const principal = await opts.authenticate(session.authorization, requestFence(opts.authEpoch));
      await reachableComputer(opts.db, principal, session.computerId);
      return undefined;
    } catch (err) {
      // Only a definite no ends a session; a database hiccup does not.
      if (err instanceof AppError && err.status < 500) return err.message;
      return undefined;
    }
  }

  const recheck = setInterval(() => {
    for (const session of sessions) {
      void stillAllowed(session).then((refusal) => {
        if (refusal) session.end(`access ended: ${refusal}`);
      });
    }
  }, opts.recheckMs ?? 5_000);
  recheck.unref();

  function serve(ws: WebSocket, sessionId: string, principal: Principal, authorization: string, computerId: string, machine: MachineSide): void {
    const started = Date.now();
    let ended = false;
    const session: OpenSession = {
      principal,
      authorization,
      computerId,
      end(reason) {
        if (ended) return;
        ended = true;
        sessions.delete(session);
        if (ws.readyState === ws.OPEN) ws.close(RELAY_ENDED_CODE, reason.slice(0, 120));
        dropMachine(machine, 'end');
        setTimeout(() => ws.terminate(), 2_000).unref();
        log.info({ sessionId, computerId, reason }, 'relay session ended');
        audit(principal, computerId, { action: 'closed', sessionId, durationMs: Date.now() - started, reason }).catch((err: unknown) =>
          log.error({ err, sessionId, computerId }, 'cannot write the audit record of a closed relay session'),
        );
      },
    };
    sessions.add(session);
    log.info({ sessionId, computerId, carried: machine.carried }, 'relay session opened');

    ws.once('close', () => session.end('closed by the client'));
    if (machine.carried === 'returned') {
      passMessages(ws, machine.ws);
      // Closed while it waited for the person, it has no close left to tell.
      if (machine.ws.readyState !== machine.ws.OPEN) return session.end('the connection to the machine ended');
      machine.ws.once('close', () => session.end('the connection to the machine ended'));
      return;
    }
    if (machine.carried === 'tunnelled') return passThrough(ws, machine.stream, session);
    const { connection } = machine;
    connection.onClose((reason) => session.end(`the connection to the machine ended: ${reason}`));

    const server = new ssh2.Server({ hostKeys: [opts.hostKey], ident: RELAY_SOFTWARE, keepaliveInterval, keepaliveCountMax: 3 }, (person: PersonConnection) => {
      person.on('error', (err: Error & { level?: string }) => {
        if (err.level === 'client-timeout') session.end('the client stopped answering keepalives');
      });
      // The WebSocket this SSH connection rides on was opened with the caller's credential,
      // checked above: any SSH authentication method is accepted for it.
      person.on('authentication', (ctx) => ctx.accept());
      person.on('ready', () => bridgeChannels(person, connection.client));
      person.on('close', () => session.end('closed by the client'));
    });
    server.injectSocket(webSocketDuplex(ws) as never);
  }

  return {
    async open(req, computerId) {
      const authorization = req.headers.authorization ?? '';
      const principal = await opts.authenticate(authorization, requestFence(opts.authEpoch));
      const computer = await reachableComputer(opts.db, principal, computerId);
      let machine: MachineSide;
      try {
        machine = (await passThroughFor(opts.machines, computer, AbortSignal.timeout(20_000))) ?? {
          carried: 'bridged',
          connection: await connect(await targetFor(opts.machines, computer), {
            connectTimeoutMs: 20_000,
            keepaliveIntervalMs: keepaliveInterval,
            keepaliveCountMax: 3,
          }),
        };
      } catch (err) {
        throw machineUnavailable(computer, err);
      }
      const drop = () => dropMachine(machine, 'destroy');
      // No session without its audit record: a failed write refuses the session.
      const sessionId = newId('rly');
      try {
        await audit(principal, computer.id, { action: 'opened', sessionId, carried: machine.carried });
      } catch (err) {
        drop();
        throw err;
      }
      return {
        serve: (ws) => serve(ws, sessionId, principal, authorization, computer.id, machine),
        cancel: () => {
          drop();
          audit(principal, computer.id, { action: 'closed', sessionId, durationMs: 0, reason: 'the client went away before the session started' }).catch(
            (err: unknown) => log.error({ err, sessionId }, 'cannot write the audit record of a closed relay session'),
          );
        },
      };
    },
    close() {
      clearInterval(recheck);
      unsample();
      for (const session of sessions) session.end('the control plane is stopping');
    },
  };
}

/** Lets go of the machine's side of a session: a bridged SSH connection is ended politely unless `how` is destroy. */
function dropMachine(machine: MachineSide, how: 'end' | 'destroy'): void {
  if (machine.carried === 'bridged') return how === 'end' ? machine.connection.end() : machine.connection.destroy();
  if (machine.carried === 'returned') return machine.ws.terminate();
  machine.stream.destroy();
}

/**
 * A person's SSH connection passed through to the agent's tunnel channel, both ways. Either end's close
 * ends the session, which closes the WebSocket with its reason before dropping the channel.
 */
function passThrough(ws: WebSocket, machine: Duplex, session: OpenSession): void {
  const person = webSocketDuplex(ws);
  person.pipe(machine);
  // Not ended by the machine's end: the session's end closes the WebSocket with its reason.
  machine.pipe(person, { end: false });
  machine.on('error', () => {});
  machine.once('close', () => session.end('the connection to the machine ended'));
}
