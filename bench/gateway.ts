/**
 * Agent tunnel benchmark on loopback: the control plane's SSH client reaching a machine through
 * `agentplane agent` (a separate process) over the SSH gateway port and over the relay's
 * WebSocket on an HTTP server, and through another replica's peer listener (the cross-replica
 * path), against a real OpenSSH server reached directly. Run on demand:
 *
 *   node bench/gateway.ts
 *   BENCH_RUNS=3 node bench/gateway.ts
 *   BENCH_ONLY=replicas node bench/gateway.ts     # only the second part
 *
 * Figures (median of the runs): latency of `true` on a pooled connection, direct and through each
 * path (with both ways exec.ts stops remote commands: the stdin watchdog it picks for servers it
 * does not know, and SSH signal requests, which the agent honours), a fresh connection per
 * command through the tunnel, and the wall time of 20 concurrent commands through one tunnel.
 *
 * With PostgreSQL (Debian's, as the tests start it) the second part runs two real `agentplane
 * serve` replicas behind a TCP balancer with an agent connected to the first: the time from a
 * SIGKILL of the replica holding the tunnel until the other one holds it and a metrics call
 * through it succeeds, a 100 MB copy (`cat > /dev/null`) through `agentplane ssh --stdio` as
 * OpenSSH's ProxyCommand against the same copy to the real sshd directly, and the whole
 * `agentplane ssh <computer> -- true` command against `ssh host true` to the sshd.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openStateDir } from '../src/on-machine/machine-agent/state.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createSshGateway } from '../src/relay/gateway/index.ts';
import { webSocketDuplex } from '../src/relay/gateway/websocket-stream.ts';
import { AppError } from '../src/lib/errors.ts';
import { peerTokens } from '../src/relay/peer-auth.ts';
import { dialPeer } from '../src/relay/peer-dial.ts';
import { startPeerServer } from '../src/relay/peer-server.ts';
import { attachRelay } from '../src/relay/upgrade.ts';
import { replicaFailover } from './relay-replicas.ts';
import { createSshClient, generateKeyPair, type RemoteKill, type SshTarget } from '../src/ssh/index.ts';
import { sshdMissing, startSshd, type TestSshd } from '../test/support/sshd.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const POOLED_PER_RUN = 200;
const FRESH_PER_RUN = 30;
const CONCURRENT = 20;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const ms = (x: number): string => `${x.toFixed(2)} ms`;

async function pooled(target: SshTarget, remoteKill: RemoteKill): Promise<number> {
  const ssh = createSshClient({ remoteKill });
  try {
    for (let i = 0; i < 20; i++) await ssh.exec(target, 'true');
    const times: number[] = [];
    for (let i = 0; i < POOLED_PER_RUN; i++) {
      const t0 = performance.now();
      await ssh.exec(target, 'true');
      times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    await ssh.close();
  }
}

async function fresh(target: SshTarget): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < FRESH_PER_RUN; i++) {
    const t0 = performance.now();
    const ssh = createSshClient();
    await ssh.exec(target, 'true');
    times.push(performance.now() - t0);
    await ssh.close();
  }
  return median(times);
}

async function concurrent(target: SshTarget): Promise<number> {
  const ssh = createSshClient();
  try {
    await ssh.exec(target, 'true');
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => ssh.exec(target, 'true')));
    if (results.some((r) => r.exitCode !== 0)) throw new Error('a concurrent command failed');
    return performance.now() - t0;
  } finally {
    await ssh.close();
  }
}

/** `agentplane agent` as its own process for a prepared state directory, through `gateway`. */
async function spawnAgent(tmp: string, computerId: string, gateway: string, agentKeys: Map<string, string>) {
  const state = await openStateDir(path.join(tmp, computerId));
  await state.update({ computerId, url: 'http://unused.invalid' });
  agentKeys.set(computerId, state.keys.client.fingerprint);
  const command = pathToFileURL(path.resolve('src/on-machine/machine-agent/command.ts')).href;
  const options = { url: 'http://unused.invalid', name: computerId, stateDir: state.dir, gateway };
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', `import { runAgentCommand } from ${JSON.stringify(command)}; await runAgentCommand(${JSON.stringify(options)});`],
    {
      stdio: 'ignore',
    },
  );
  return { state, child };
}

async function main(): Promise<void> {
  const missing = sshdMissing();
  if (missing) throw new Error(missing);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-gateway-'));
  const sshd = await startSshd();
  if (process.env.BENCH_ONLY !== 'replicas') await tunnels(tmp, sshd);
  try {
    await replicaFailover({ sshd, runs: Math.max(2, Math.min(RUNS, 3)), tmp });
  } finally {
    await sshd.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The first part: one process's gateway, its agents and peer listener, against sshd directly. */
async function tunnels(tmp: string, sshd: TestSshd): Promise<void> {
  const agentKeys = new Map<string, string>();
  const log = createLogger({ level: 'silent' });
  const gateway = await createSshGateway({
    listen: { host: '127.0.0.1', port: 0 },
    hostKey: generateKeyPair().privateKey,
    authorize: async (id, key) => agentKeys.get(id) === key.fingerprint,
    log,
  });
  const port = gateway.address()!.port;
  // The API port's relay endpoint, as src/server.ts attaches it.
  const api = http.createServer((_req, res) => res.writeHead(404).end());
  const none = async () => Promise.reject(new AppError(404, 'none'));
  attachRelay(api, { agent: (ws, remote) => gateway.accept(webSocketDuplex(ws), remote), agentReturn: none, client: none }, log);
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', () => resolve()));
  const apiPort = (api.address() as AddressInfo).port;
  // This process's peer listener, reached as another replica reaches it.
  const tokens = peerTokens('bench-peer-secret');
  const peer = await startPeerServer({ host: '127.0.0.1', port: 0, tokens, log, dial: (id, signal) => gateway.dial(id, signal) });

  const overSsh = await spawnAgent(tmp, 'cmp_bench', `ssh://127.0.0.1:${port}`, agentKeys);
  const overWs = await spawnAgent(tmp, 'cmp_bench_ws', `ws://127.0.0.1:${apiPort}/api/v0/relay/agent`, agentKeys);
  try {
    const deadline = Date.now() + 15_000;
    while (!gateway.isConnected('cmp_bench') || !gateway.isConnected('cmp_bench_ws')) {
      if (Date.now() > deadline) throw new Error('the agents did not connect');
      await new Promise((r) => setTimeout(r, 20));
    }
    const direct: SshTarget = {
      host: sshd.host,
      port: sshd.port,
      username: sshd.username,
      privateKey: sshd.privateKey,
      hostKeyFingerprint: sshd.hostKeyFingerprint,
    };
    const through = (computerId: string, hostKey: string, dial: SshTarget['dial']): SshTarget => ({
      host: computerId,
      port,
      username: os.userInfo().username,
      privateKey: generateKeyPair().privateKey,
      hostKeyFingerprint: hostKey,
      dial,
    });
    const tunnel = through('cmp_bench', overSsh.state.keys.host.fingerprint, (signal) => gateway.dial('cmp_bench', signal));
    const websocket = through('cmp_bench_ws', overWs.state.keys.host.fingerprint, (signal) => gateway.dial('cmp_bench_ws', signal));
    const crossReplica = through('cmp_bench_ws', overWs.state.keys.host.fingerprint, (signal) =>
      dialPeer(`ws://127.0.0.1:${peer.port}`, 'cmp_bench_ws', tokens, signal),
    );
    const rows: Record<string, number[]> = {};
    const add = (k: string, v: number) => (rows[k] ??= []).push(v);
    for (let run = 1; run <= RUNS; run++) {
      add('direct sshd, pooled', await pooled(direct, 'auto'));
      add('SSH gateway port, pooled, stdin watchdog (exec.ts auto today)', await pooled(tunnel, 'auto'));
      add('SSH gateway port, pooled, signal requests', await pooled(tunnel, 'signal'));
      add('WebSocket on the API port, pooled, signal requests', await pooled(websocket, 'signal'));
      add('WebSocket, other replica through the peer port, pooled', await pooled(crossReplica, 'signal'));
      add('SSH gateway port, fresh connection per command', await fresh(tunnel));
      add('WebSocket, fresh connection per command', await fresh(websocket));
      add('WebSocket, other replica, fresh connection per command', await fresh(crossReplica));
      add(`SSH gateway port, ${CONCURRENT} concurrent commands: wall`, await concurrent(tunnel));
      add(`WebSocket, ${CONCURRENT} concurrent commands: wall`, await concurrent(websocket));
      console.log(`run ${run}/${RUNS} done`);
    }
    console.log(`\n\`true\` on loopback, median of ${RUNS} runs (${POOLED_PER_RUN} pooled / ${FRESH_PER_RUN} fresh commands each):`);
    for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(66)} ${ms(median(v))}`);
    const ratio = median(rows['WebSocket on the API port, pooled, signal requests']!) / median(rows['SSH gateway port, pooled, signal requests']!);
    const extra = median(rows['WebSocket, other replica through the peer port, pooled']!) - median(rows['WebSocket on the API port, pooled, signal requests']!);
    console.log(`  WebSocket / SSH gateway port (goal <= 1.2): ${ratio.toFixed(2)}; other replica - same replica (goal <= 2 ms): ${ms(extra)}`);
  } finally {
    overSsh.child.kill('SIGTERM');
    overWs.child.kill('SIGTERM');
    await peer.close();
    api.closeAllConnections();
    api.close();
    await gateway.close();
  }
}

await main();
