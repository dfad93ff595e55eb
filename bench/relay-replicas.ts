/**
 * The replica part of bench/gateway.ts: two real `agentplane serve` processes on one PostgreSQL
 * behind a TCP balancer, an `agentplane agent` connected through it. Prints the reconnect time
 * after a SIGKILL of the replica holding the tunnel, the throughput of a 100 MB copy through
 * `agentplane ssh --stdio` (OpenSSH's ProxyCommand) against OpenSSH to the real sshd directly (with
 * the CPU time the serving replica and the agent spent on it, which a busy machine does not skew),
 * and the whole `agentplane ssh <computer> -- true` command against `ssh host true` directly.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { agentUser, startAgentProcess } from '../test/support/agent-cli.ts';
import { startPostgres } from '../test/support/postgres-server.ts';
import { CLI, startServerProcess, type ServerProcess } from '../test/support/server-process.ts';
import type { TestSshd } from '../test/support/sshd.ts';
import { startTcpBalancer } from '../test/support/tcp-balancer.ts';
import { waitFor } from '../test/support/wait.ts';
import { machineBusyMs, processCpuMs as cpuMs, processMemoryMiB } from './machine-cpu.ts';

const COPY_MB = 100;
const COMMANDS_PER_RUN = 10;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export async function replicaFailover(opts: { sshd: TestSshd; runs: number; tmp: string }): Promise<void> {
  const postgres = await startPostgres();
  if (!postgres) {
    console.log('\nPostgreSQL not found (/usr/lib/postgresql): replica figures skipped');
    return;
  }
  const dir = path.join(opts.tmp, 'replicas');
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(opts.tmp, 0o755);
  const servers: ServerProcess[] = [];
  /** Preference order of the balancer: the first live one takes every new connection. */
  const order: ServerProcess[] = [];
  const balancer = await startTcpBalancer(() => order.map((s) => ({ host: '127.0.0.1', port: Number(new URL(s.url).port) })));
  const env = {
    DATABASE_URL: postgres.url,
    AGENTPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    AGENTPLANE_PUBLIC_URL: balancer.url,
    AGENTPLANE_LOCAL_PROVIDER: 'false',
  };
  let started = 0;
  const start = async () => {
    const s = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(dir, `server-${started++}`) });
    servers.push(s);
    order.push(s);
    return s;
  };
  const db = new pg.Client({ connectionString: postgres.url });
  const first = await start();
  const key = first.firstStartKey!;
  await start();
  await db.connect();
  const agent = startAgentProcess({ url: balancer.url, apiKey: key, name: 'bench-box', stateDir: path.join(dir, 'agent') });
  try {
    const computerId = await waitFor(
      () => `the registration:\n${agent.stderr()}`,
      async () => (await db.query<{ id: string }>(`SELECT id FROM computers WHERE name = 'bench-box' AND deleted_at IS NULL`)).rows[0]?.id,
      30_000,
    );
    const peerPort = (s: ServerProcess) => Number(/"port":(\d+),"msg":"relay peer listener/.exec(s.output())?.[1]);
    const holderPort = async () => {
      const { rows } = await db.query<{ peer_url: string }>(
        `SELECT r.peer_url FROM relay_tunnels t JOIN relay_replicas r ON r.id = t.replica_id WHERE t.computer_id = $1 AND r.expires_at > now()`,
        [computerId],
      );
      return rows[0] ? Number(new URL(rows[0].peer_url).port) : undefined;
    };
    const metricsOk = async (s: ServerProcess) =>
      (await fetch(`${s.url}/api/v0/computers/${computerId}/metrics`, { headers: { authorization: `Bearer ${key}` } }).catch(() => undefined))?.status === 200;
    await waitFor('the first tunnel', async () => (await holderPort()) === peerPort(order[0]!), 30_000);
    await waitFor('metrics through the tunnel', () => metricsOk(order[1]!), 30_000, 100);

    const tunnelMs: number[] = [];
    const serviceMs: number[] = [];
    for (let run = 1; run <= opts.runs; run++) {
      // The agent backs off longer after a tunnel that lasted under 10 s: measure a settled one.
      await sleep(10_500);
      const holder = order[0]!;
      const survivor = order[1]!;
      const killedAt = performance.now();
      await holder.stop('SIGKILL');
      order.shift();
      await waitFor('the tunnel on the survivor', async () => (await holderPort()) === peerPort(survivor), 30_000, 10);
      tunnelMs.push(performance.now() - killedAt);
      await waitFor('metrics after the failover', () => metricsOk(survivor), 30_000, 10);
      serviceMs.push(performance.now() - killedAt);
      console.log(`failover ${run}/${opts.runs}: tunnel back after ${tunnelMs.at(-1)!.toFixed(0)} ms, metrics after ${serviceMs.at(-1)!.toFixed(0)} ms`);
      await start();
    }

    const file = path.join(opts.tmp, 'copy.bin');
    fs.writeFileSync(file, randomBytes(COPY_MB * 1024 * 1024));
    const keyFile = path.join(opts.tmp, 'sshd_key');
    fs.writeFileSync(keyFile, opts.sshd.privateKey, { mode: 0o600 });
    const common = ['-F', '/dev/null', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR'];
    // Asynchronous: the balancer runs in this process.
    const relayEnv = { AGENTPLANE_URL: balancer.url, AGENTPLANE_API_KEY: key };
    const run = async (command: string, args: string[], extraEnv: Record<string, string> = {}, input?: string) => {
      const t0 = performance.now();
      const child = spawn(command, args, { env: { ...process.env, ...extraEnv }, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      // A command that fails early closes its stdin: its exit status says why, not an EPIPE that
      // would end this process before its servers and PostgreSQL are stopped.
      child.stdin?.on('error', () => {});
      if (input) fs.createReadStream(input).pipe(child.stdin!);
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}): ${stderr}`);
      return performance.now() - t0;
    };
    const copy = (args: string[], extraEnv: Record<string, string> = {}) => run('ssh', [...common, ...args, 'cat > /dev/null'], extraEnv, file);
    const viaRelay = (env = relayEnv) => copy(['-o', `ProxyCommand=${process.execPath} ${CLI} ssh --stdio ${computerId}`, 'bench-box'], env);
    const directArgs = ['-i', keyFile, '-p', String(opts.sshd.port), `${opts.sshd.username}@${opts.sshd.host}`];
    const direct = () => copy(directArgs);
    // The replica serving the relay session: the balancer's first live one.
    const serving = order[0]!.child.pid!;
    // The same replica at its own address: this process's balancer, a userspace copy of every
    // byte that a Kubernetes Service or cloud balancer does not spend on these cores, is left out.
    const replicaEnv = { ...relayEnv, AGENTPLANE_URL: order[0]!.url };
    const relayMs: number[] = [];
    const unbalancedMs: number[] = [];
    const directMs: number[] = [];
    const replicaCpuMs: number[] = [];
    const agentCpuMs: number[] = [];
    const machineCpuMs: number[] = [];
    const balancerCpuMs: number[] = [];
    for (let i = 0; i < opts.runs; i++) {
      directMs.push(await direct());
      const [replica0, agent0, machine0, balancer0] = [cpuMs(serving), cpuMs(agent.child.pid!), machineBusyMs(), cpuMs(process.pid)];
      relayMs.push(await viaRelay());
      replicaCpuMs.push(cpuMs(serving) - replica0);
      agentCpuMs.push(cpuMs(agent.child.pid!) - agent0);
      machineCpuMs.push(machineBusyMs() - machine0);
      balancerCpuMs.push(cpuMs(process.pid) - balancer0);
      unbalancedMs.push(await viaRelay(replicaEnv));
    }

    // The whole command, as a person types it: start-up, the API lookup, the relay and the command.
    const commandMs: number[] = [];
    const directCommandMs: number[] = [];
    for (let i = 0; i < opts.runs * COMMANDS_PER_RUN; i++) {
      directCommandMs.push(await run('ssh', [...common, ...directArgs, 'true']));
      commandMs.push(await run(process.execPath, [CLI, 'ssh', computerId, '--', 'true'], relayEnv));
    }
    const memory = processMemoryMiB(serving);
    const rate = (msList: number[]) => `${((COPY_MB / median(msList)) * 1000).toFixed(1)} MB/s (${median(msList).toFixed(0)} ms)`;
    console.log(`\nreplicas on PostgreSQL behind a balancer, median of ${opts.runs} runs (agent as ${agentUser().username}):`);
    console.log(`  ${'SIGKILL of the holder -> tunnel on the other replica (goal < 5 s)'.padEnd(66)} ${median(tunnelMs).toFixed(0)} ms`);
    console.log(`  ${'SIGKILL of the holder -> metrics through it answer 200'.padEnd(66)} ${median(serviceMs).toFixed(0)} ms`);
    console.log(`  ${`${COPY_MB} MB copy, OpenSSH directly to sshd`.padEnd(66)} ${rate(directMs)}`);
    console.log(`  ${`${COPY_MB} MB copy, OpenSSH through agentplane ssh --stdio (relay + agent)`.padEnd(66)} ${rate(relayMs)}`);
    console.log(`  ${'  relay copy / direct copy (goal >= 0.5x)'.padEnd(66)} ${(median(directMs) / median(relayMs)).toFixed(2)}x`);
    console.log(`  ${`${COPY_MB} MB copy, the same to the replica's own address (no balancer)`.padEnd(66)} ${rate(unbalancedMs)}`);
    console.log(`  ${'  that copy / direct copy (goal >= 0.5x)'.padEnd(66)} ${(median(directMs) / median(unbalancedMs)).toFixed(2)}x`);
    console.log(
      `  ${'  CPU spent on the relay copy: serving replica, agent'.padEnd(66)} ${median(replicaCpuMs).toFixed(0)} ms, ${median(agentCpuMs).toFixed(0)} ms`,
    );
    // The rest: OpenSSH, `agentplane ssh --stdio`, cat and the kernel.
    const cores = os.availableParallelism();
    console.log(
      `  ${`  the whole machine during it (${cores} cores busy for ${((median(machineCpuMs) / cores / median(relayMs)) * 100).toFixed(0)}% of it)`.padEnd(66)} ${median(machineCpuMs).toFixed(0)} ms`,
    );
    console.log(`  ${'  of which the balancer in this process'.padEnd(66)} ${median(balancerCpuMs).toFixed(0)} ms`);
    console.log(
      `  ${"  the serving replica's resident memory after them, and its peak".padEnd(66)} ${memory.rss.toFixed(0)} MiB, ${memory.peak.toFixed(0)} MiB`,
    );
    const ms = (x: number[]) => `${median(x).toFixed(0)} ms`;
    console.log(`  ${'`ssh host true`, OpenSSH directly to sshd, whole command'.padEnd(66)} ${ms(directCommandMs)}`);
    console.log(`  ${'`agentplane ssh <computer> -- true`, whole command (goal < 400 ms)'.padEnd(66)} ${ms(commandMs)}`);
  } finally {
    await agent.stop();
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await balancer.close();
    await db.end().catch(() => {});
    postgres.stop();
  }
}
