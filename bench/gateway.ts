/**
 * Agent tunnel benchmark on loopback: the control plane's SSH client reaching a machine through
 * the SSH gateway and `agentplane agent` (a separate process), against a real OpenSSH server
 * reached directly. Run on demand:
 *
 *   node bench/gateway.ts
 *   BENCH_RUNS=3 node bench/gateway.ts
 *
 * Figures (median of the runs): latency of `true` on a pooled connection, direct and through the
 * tunnel (with both ways exec.ts stops remote commands: the stdin watchdog it picks for servers
 * it does not know, and SSH signal requests, which the agent honours), a fresh connection per
 * command through the tunnel, and the wall time of 20 concurrent commands through one tunnel.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openStateDir } from '../src/machine-agent/state.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createSshGateway } from '../src/provisioning/gateway/index.ts';
import { createSshClient, generateKeyPair, type RemoteKill, type SshTarget } from '../src/provisioning/ssh/index.ts';
import { sshdMissing, startSshd } from '../test/support/sshd.ts';

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

async function main(): Promise<void> {
  const missing = sshdMissing();
  if (missing) throw new Error(missing);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-gateway-'));
  const sshd = await startSshd();
  const agentKeys = new Map<string, string>();
  const gateway = await createSshGateway({
    listen: { host: '127.0.0.1', port: 0 },
    hostKey: generateKeyPair().privateKey,
    authorize: async (id, key) => agentKeys.get(id) === key.fingerprint,
    log: createLogger({ level: 'silent' }),
  });
  const port = gateway.address()!.port;
  const state = await openStateDir(path.join(tmp, 'agent'));
  await state.update({ computerId: 'cmp_bench', url: 'http://unused.invalid', relayAgentUrl: `ssh://127.0.0.1:${port}` });
  agentKeys.set('cmp_bench', state.keys.client.fingerprint);
  const command = pathToFileURL(path.resolve('src/machine-agent/command.ts')).href;
  const agent = spawn(
    process.execPath,
    ['--input-type=module', '-e', `import { runAgentCommand } from ${JSON.stringify(command)}; await runAgentCommand(${JSON.stringify({ url: 'http://unused.invalid', name: 'bench', stateDir: state.dir })});`],
    { stdio: 'ignore' },
  );
  try {
    const deadline = Date.now() + 15_000;
    while (!gateway.isConnected('cmp_bench')) {
      if (Date.now() > deadline) throw new Error('the agent did not connect');
      await new Promise((r) => setTimeout(r, 20));
    }
    const direct: SshTarget = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, hostKeyFingerprint: sshd.hostKeyFingerprint };
    const tunnel: SshTarget = {
      host: 'cmp_bench',
      port,
      username: os.userInfo().username,
      privateKey: generateKeyPair().privateKey,
      hostKeyFingerprint: state.keys.host.fingerprint,
      dial: (signal) => gateway.dial('cmp_bench', signal),
    };
    const rows: Record<string, number[]> = {};
    const add = (k: string, v: number) => (rows[k] ??= []).push(v);
    for (let run = 1; run <= RUNS; run++) {
      add('direct sshd, pooled', await pooled(direct, 'auto'));
      add('tunnel, pooled, stdin watchdog (exec.ts auto today)', await pooled(tunnel, 'auto'));
      add('tunnel, pooled, signal requests', await pooled(tunnel, 'signal'));
      add('tunnel, fresh connection per command', await fresh(tunnel));
      add(`tunnel, ${CONCURRENT} concurrent commands: wall`, await concurrent(tunnel));
      console.log(`run ${run}/${RUNS} done`);
    }
    console.log(`\n\`true\` on loopback, median of ${RUNS} runs (${POOLED_PER_RUN} pooled / ${FRESH_PER_RUN} fresh commands each):`);
    for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(55)} ${ms(median(v))}`);
  } finally {
    agent.kill('SIGTERM');
    await gateway.close();
    await sshd.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
