import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { errorBody, statusTitle } from '../http/errors.ts';
import { AppError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { AGENT_RELAY_PATH, AGENT_RETURN_PATH, CLIENT_RELAY_PATTERN } from './protocol.ts';

/** What serves each kind of relay connection once its WebSocket is open. */
export interface RelayEndpoints {
  /** An agent's tunnel; the agent authenticates inside, with its SSH key. */
  agent(ws: WebSocket, remote: string): void;
  /** An agent's connection back for a person's session, named by its token (404 when nobody waits for it). */
  agentReturn(req: IncomingMessage): Promise<AcceptedUpgrade>;
  /**
   * A person's session: checks the request's credential and access to the computer before the
   * upgrade is accepted (throwing an AppError answers its status), then serves the WebSocket.
   */
  client(req: IncomingMessage, computerId: string): Promise<AcceptedUpgrade>;
}

/** A checked upgrade request: serve its WebSocket, or cancel if the caller went away meanwhile. */
export interface AcceptedUpgrade {
  serve(ws: WebSocket): void;
  cancel(): void;
}

/**
 * Serves the relay's WebSocket upgrades on the API server's own port, so agents and people reach
 * it through the same address, TLS, Ingress and load balancer as the API.
 */
export function attachRelay(server: Server, endpoints: RelayEndpoints, log: Logger): void {
  // SSH packets are encrypted, so compressing them only costs CPU.
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    const path = (req.url ?? '').split('?')[0]!;
    const remote = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    if (path === AGENT_RELAY_PATH) {
      wss.handleUpgrade(req, socket, head, (ws) => endpoints.agent(ws, remote));
      return;
    }
    const match = CLIENT_RELAY_PATTERN.exec(path);
    const checked = match ? endpoints.client(req, decodeURIComponent(match[1]!)) : path === AGENT_RETURN_PATH ? endpoints.agentReturn(req) : undefined;
    if (!checked) return refuse(socket, new AppError(404, `No WebSocket endpoint at ${path}; agents use ${AGENT_RELAY_PATH}`));
    checked.then(
      (accepted) => {
        if (socket.destroyed) return accepted.cancel();
        wss.handleUpgrade(req, socket, head, accepted.serve);
      },
      (err: unknown) => {
        if (!(err instanceof AppError)) log.error({ err, path }, 'relay upgrade failed');
        refuse(socket, err instanceof AppError ? err : new AppError(500, 'Internal error while opening the relay session'));
      },
    );
  });
}

/** Answers an upgrade request with the API's error body, then closes the connection. */
function refuse(socket: Duplex, err: AppError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(errorBody(err.status, err.message, err.metadata));
  socket.end(
    `HTTP/1.1 ${err.status} ${statusTitle(err.status)}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
