import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/on-machine/machine-agent/agent.ts';
import { openStateDir, type AgentStateDir } from '../../src/on-machine/machine-agent/state.ts';
import { TunnelRefused } from '../../src/on-machine/machine-agent/tunnel.ts';
import { AppError } from '../../src/lib/errors.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSshGateway, type SshGateway } from '../../src/relay/gateway/index.ts';
import { webSocketDuplex } from '../../src/relay/gateway/websocket-stream.ts';
import { createSshClient, generateKeyPair, type SshTarget } from '../../src/ssh/index.ts';
import { attachRelay } from '../../src/relay/upgrade.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The agent's tunnel over a WebSocket upgrade on an HTTP server (the API port's relay endpoint,
 * src/relay/upgrade.ts), in this process over real TCP: commands through it, an agent presenting
 * another computer's key, and a connection that stalls without closing (a NAT or proxy dropping
 * it silently), which the SSH keepalives of both ends detect.
 */

const log = createLogger({ level: 'silent' });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-relay-ws-'));
const hostKey = generateKeyPair('relay');
const registered = new Map<string, string>();
let gateway: SshGateway;
let server: http.Server;
let apiPort: number;
const stops: Array<() => Promise<void>> = [];

/** A TCP proxy in front of the API port that can freeze every connection it carries. */
async function stallingProxy(targetPort: number) {
  const pairs: Array<[net.Socket, net.Socket]> = [];
  let frozen = false;
  const proxy = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    pairs.push([client, upstream]);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on('data', (d: Buffer) => {
        if (!frozen) b.write(d);
      });
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (proxy.address() as net.AddressInfo).port,
    /** From now on the connections open so far carry nothing, yet stay open; new ones work. */
    freeze() {
      frozen = true;
      const stalled = pairs.splice(0);
      frozen = false;
      for (const [a, b] of stalled) {
        a.removeAllListeners('data');
        b.removeAllListeners('data');
      }
    },
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

async function startAgent(computerId: string, state: AgentStateDir, url: string, keepalive?: { keepaliveIntervalMs: number; keepaliveCountMax: number }) {
  const stop = new AbortController();
  const logs: string[] = [];
  let connections = 0;
  const done = runAgent(
    {
      url: 'http://control-plane.invalid',
      name: computerId,
      stateDir: state.dir,
      gateway: url,
      log: (line) => logs.push(line),
      tunnel: { backoff: { initialMs: 100, maxMs: 500 }, onConnected: () => connections++, ...keepalive },
    },
    stop.signal,
  );
  done.catch(() => {});
  const stopAgent = async () => {
    stop.abort();
    await done.catch(() => {});
  };
  stops.push(stopAgent);
  return { done, logs, connections: () => connections, stop: stopAgent };
}

async function stateFor(computerId: string): Promise<AgentStateDir> {
  const state = await openStateDir(fs.mkdtempSync(path.join(tmp, 'state-')));
  await state.update({ computerId, url: 'http://control-plane.invalid' });
  return state;
}

const wsUrl = (port: number) => `ws://127.0.0.1:${port}/api/v0/relay/agent`;

beforeAll(async () => {
  gateway = await createSshGateway({
    hostKey: hostKey.privateKey,
    authorize: async (computerId, key) => registered.get(computerId) === key.fingerprint,
    log,
    keepaliveIntervalMs: 300,
    keepaliveCountMax: 2,
  });
  server = http.createServer((_req, res) => res.writeHead(404).end());
  attachRelay(
    server,
    {
      agent: (ws, remote) => gateway.accept(webSocketDuplex(ws), remote),
      agentReturn: async () => {
        throw new AppError(404, 'no people here');
      },
      client: async () => {
        throw new AppError(404, 'no people here');
      },
    },
    log,
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  apiPort = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await Promise.all(stops.map((s) => s()));
  await gateway?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the agent tunnel over a WebSocket on the API port', () => {
  it('carries commands to the agent, as the gateway port does', async () => {
    const state = await stateFor('cmp_ws');
    registered.set('cmp_ws', state.keys.client.fingerprint);
    const agent = await startAgent('cmp_ws', state, wsUrl(apiPort));
    await waitFor(
      () => `the agent to connect: ${agent.logs.join('\n')}`,
      () =>
        gateway.isConnected('cmp_ws') &&
        // The gateway can see the session before the agent's log line reaches us.
        agent.logs.join('\n').includes(`connected to the relay at ${wsUrl(apiPort)} as computer cmp_ws`),
    );
    const ssh = createSshClient();
    try {
      const target: SshTarget = {
        host: 'cmp_ws',
        username: os.userInfo().username,
        privateKey: hostKey.privateKey,
        hostKeyFingerprint: state.keys.host.fingerprint,
        dial: (signal) => gateway.dial('cmp_ws', signal),
      };
      const res = await ssh.exec(target, 'echo over-websocket; exit 4');
      expect(res).toMatchObject({ stdout: 'over-websocket\n', exitCode: 4 });
    } finally {
      await ssh.close();
      await agent.stop();
    }
  });

  it("refuses an agent presenting another computer's key, and the agent stops", async () => {
    const other = await stateFor('cmp_other');
    registered.set('cmp_other', other.keys.client.fingerprint);
    registered.set('cmp_victim', (await stateFor('cmp_victim')).keys.client.fingerprint);
    // cmp_other's own, registered key, used to claim cmp_victim.
    await other.update({ computerId: 'cmp_victim' });
    const agent = await startAgent('cmp_victim', other, wsUrl(apiPort));
    const err = await agent.done.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TunnelRefused);
    expect((err as Error).message).toMatch(/refused this agent's key for computer cmp_victim/);
    expect(gateway.isConnected('cmp_victim')).toBe(false);
    expect(gateway.isConnected('cmp_other')).toBe(false);
  });

  it('answers a WebSocket upgrade elsewhere with the API error body', async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: apiPort, path: '/api/v0/somewhere', headers: { connection: 'Upgrade', upgrade: 'websocket' } });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (d: Buffer) => (body += d.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.end();
    });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, detail: expect.stringContaining('/api/v0/relay/agent') });
  });

  it('a WebSocket that stalls without closing is ended by the keepalives of both ends; the agent reconnects', async () => {
    const proxy = await stallingProxy(apiPort);
    const state = await stateFor('cmp_stall');
    registered.set('cmp_stall', state.keys.client.fingerprint);
    const agent = await startAgent('cmp_stall', state, wsUrl(proxy.port), { keepaliveIntervalMs: 300, keepaliveCountMax: 2 });
    try {
      await waitFor('the agent to connect', () => agent.connections() === 1);
      proxy.freeze();
      const frozenAt = Date.now();
      await waitFor('the gateway to drop the stalled agent', () => !gateway.isConnected('cmp_stall'), 5_000, 20);
      await waitFor(
        () => `the agent to notice: ${agent.logs.join('\n')}`,
        () => agent.logs.some((l) => /lost the connection to the relay .*[Kk]eepalive/.test(l)),
        5_000,
        20,
      );
      expect(Date.now() - frozenAt).toBeLessThan(4_000);
      await waitFor('the agent to reconnect', () => agent.connections() === 2 && gateway.isConnected('cmp_stall'), 10_000);
    } finally {
      await agent.stop();
      await proxy.close();
    }
  });
});
