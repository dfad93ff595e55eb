import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { holdWebSocket, passMessages, spliceWebSockets } from '../../src/relay/websocket-messages.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The relay joining two WebSockets message by message (a person's and the agent's connection
 * back), over real sockets on loopback: a relay server in this process takes two clients and
 * joins their WebSockets as client-relay.ts and replica-relay.ts do.
 */
let server: http.Server;
let url: string;
/** The relay's side of each client, by the name in its path. */
const served = new Map<string, WebSocket>();

beforeAll(async () => {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
  server = http.createServer();
  server.on('upgrade', (req, socket, head) => {
    // Held in the upgrade's callback, as the relay holds an agent's connection back.
    wss.handleUpgrade(req, socket, head, (ws) => served.set(req.url!.slice(1), holdWebSocket(ws)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const ws of served.values()) ws.terminate();
  await new Promise((resolve) => server.close(resolve));
});

let names = 0;
/** A client of the relay, open, and the relay's side of it. */
async function connect(): Promise<{ client: WebSocket; relaySide: () => WebSocket }> {
  const name = `c${names++}`;
  const client = new WebSocket(`${url}/${name}`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
  await waitFor(`the relay's side of ${name}`, () => served.has(name), 5_000, 5);
  return { client, relaySide: () => served.get(name)! };
}

const sha = (chunks: Buffer[]) => chunks.reduce((h, c) => h.update(c), createHash('sha256')).digest('hex');

describe('two WebSockets joined message by message', () => {
  it('passes on what arrived while one side waited to be joined, then everything both ways, in order', async () => {
    const agent = await connect();
    // The agent speaks first (its SSH banner) while nobody is joined to it yet.
    agent.client.send(Buffer.from('SSH-2.0-agent\r\n'));
    agent.client.send(Buffer.from('first packet'));
    await sleep(100);
    const person = await connect();
    passMessages(person.relaySide(), agent.relaySide());

    const toPerson: Buffer[] = [];
    const toAgent: Buffer[] = [];
    person.client.on('message', (d: Buffer) => toPerson.push(d));
    agent.client.on('message', (d: Buffer) => toAgent.push(d));
    const sent = Array.from({ length: 50 }, (_, i) => randomBytes(1 + i * 997));
    for (const m of sent) person.client.send(m);
    agent.client.send(Buffer.from('last packet'));
    await waitFor('every message', () => toPerson.length === 3 && toAgent.length === sent.length, 5_000, 5);
    expect(toPerson.map(String)).toEqual(['SSH-2.0-agent\r\n', 'first packet', 'last packet']);
    expect(sha(toAgent)).toBe(sha(sent));
    person.client.terminate();
    agent.client.terminate();
  });

  it('stops reading a side while the other cannot take its messages, and loses nothing', async () => {
    const sender = await connect();
    const reader = await connect();
    passMessages(sender.relaySide(), reader.relaySide());
    // A reader that stopped reading (a slow network, a stalled client).
    reader.client.pause();
    const received: Buffer[] = [];
    reader.client.on('message', (d: Buffer) => received.push(d));
    const sent = Array.from({ length: 320 }, () => randomBytes(64 * 1024));
    for (const m of sent) sender.client.send(m);
    await sleep(1_000);
    // 20 MB sent; the relay read only what the reader's socket buffers and its limit hold.
    const readByRelay = (sender.relaySide() as unknown as { _socket: Socket })._socket.bytesRead;
    expect(readByRelay).toBeLessThan(10 * 1024 * 1024);
    expect(sender.client.bufferedAmount).toBeGreaterThan(5 * 1024 * 1024);
    reader.client.resume();
    await waitFor('all 20 MB', () => received.length === sent.length, 20_000, 10);
    expect(sha(received)).toBe(sha(sent));
    sender.client.terminate();
    reader.client.terminate();
  });

  it("spliced, either side's close closes the other", async () => {
    for (const closing of ['a', 'b'] as const) {
      const a = await connect();
      const b = await connect();
      spliceWebSockets(a.relaySide(), b.relaySide());
      const other = closing === 'a' ? b.client : a.client;
      const closed = new Promise((resolve) => other.once('close', resolve));
      (closing === 'a' ? a.client : b.client).close();
      await closed;
      expect(other.readyState).toBe(WebSocket.CLOSED);
    }
  });
});
