import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './http.ts';

/**
 * Real OpenSSH servers for tests: each runs from its own temp directory with its own config,
 * host key and authorized_keys, in the foreground (`-D -e`) as a child of the test process. As
 * root, a server can also run as a second machine in a network namespace with its own 10.x
 * address, reachable only through a veth pair on this machine.
 */

const SSHD = '/usr/sbin/sshd';
const SFTP_SERVER = '/usr/lib/openssh/sftp-server';

export const isRoot = process.getuid?.() === 0;

/** Why sshd cannot run here, or undefined when it can. */
export function sshdMissing(): string | undefined {
  if (!fs.existsSync(SSHD)) return `${SSHD} not found (install openssh-server)`;
  if (!fs.existsSync(SFTP_SERVER)) return `${SFTP_SERVER} not found (install openssh-sftp-server)`;
  if (spawnSync('ssh-keygen', ['-?']).error) return 'ssh-keygen not found (install openssh-client)';
  return undefined;
}

/** Network namespaces need root and iproute2. */
export function netnsMissing(): string | undefined {
  if (!isRoot) return 'network namespaces need root';
  if (spawnSync('ip', ['-V']).error) return 'ip (iproute2) not found';
  return undefined;
}

/**
 * As root, tests log in as a dedicated user with an empty home rather than as root, whose shell
 * start-up files (sourced by bash for every SSH command) would be measured along with SSH.
 */
export const TEST_USER = 'agentplane-ssh';

function ensureTestUser(name = TEST_USER): string {
  if (!isRoot) return os.userInfo().username;
  if (spawnSync('id', ['-u', name]).status !== 0) {
    const res = spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', '--password', '*', name], { encoding: 'utf8' });
    // 9: created meanwhile by a parallel test file.
    if (res.status !== 0 && res.status !== 9) throw new Error(`useradd ${name} failed: ${res.stderr}`);
  }
  // A locked password ("!") makes sshd refuse even key logins when PAM is off; "*" is merely none.
  spawnSync('usermod', ['--password', '*', name]);
  return name;
}

export interface SshdOptions {
  /** sshd's MaxSessions (sessions per connection). Default 10, as on a stock server. */
  maxSessions?: number;
  /** Run as a separate machine in a fresh network namespace (root only). */
  netns?: boolean;
  /**
   * Log in as this user instead of the shared TEST_USER (root only; created on first use), for a
   * test file that changes files in the user's home which other files, running at the same time,
   * rely on.
   */
  user?: string;
}

export interface TestSshd {
  host: string;
  port: number;
  username: string;
  /** OpenSSH private key whose public half is in the server's authorized_keys. */
  privateKey: string;
  /** `SHA256:...` of the current host key, from `ssh-keygen -l`. */
  hostKeyFingerprint: string;
  /** The listener's pid. */
  pid: number;
  /** /etc/machine-id as the machine sees it, 32 hex digits. */
  machineId: string;
  /** Network namespace machines only: an address on the same link that silently drops packets. */
  blackHoleAddress?: string;
  /** Appends an OpenSSH public key line to the server's authorized_keys. */
  authorizeKey(publicKey: string): void;
  /** Stops the listener and every connection and process it started. */
  stop(): Promise<void>;
  /** Stops only the listener and starts it again on the same port; connections survive, as on a real restart. */
  restart(opts?: { newHostKey?: boolean }): Promise<void>;
  /** Kills every per-connection sshd process (and what runs under it): clients see the connection drop. */
  dropConnections(): void;
  /** Network namespace machines only: packets to the machine vanish until `restoreNetwork`. */
  cutNetwork(): void;
  restoreNetwork(): void;
}

function keygen(file: string, comment: string): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
}

function fingerprint(pubFile: string): string {
  const out = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubFile], { encoding: 'utf8' });
  const fp = out.split(' ')[1];
  if (!fp?.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -l output: ${out}`);
  return fp;
}

function ppidOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state, ppid, ...
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[1]);
  } catch {
    return undefined;
  }
}

/** Every descendant of `pid`, children before their own children. */
function descendantsOf(pid: number): number[] {
  const all = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
  const parents = new Map(all.map((p) => [p, ppidOf(p)]));
  const out: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = all.filter((p) => frontier.includes(parents.get(p) ?? -1));
    out.push(...next);
    frontier = next;
  }
  return out;
}

function killAll(pids: number[]): void {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

async function waitForBanner(host: string, port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}: ${stderr()}`);
    const banner = await new Promise<boolean>((resolve) => {
      const sock = net.connect({ host, port });
      sock.setTimeout(1_000, () => sock.destroy());
      sock.once('data', (d) => {
        sock.destroy();
        resolve(d.toString().startsWith('SSH-'));
      });
      sock.once('error', () => resolve(false));
      sock.once('close', () => resolve(false));
    });
    if (banner) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd did not answer on ${host}:${port}: ${stderr()}`);
}

interface Netns {
  name: string;
  hostIf: string;
  hostAddress: string;
  machineAddress: string;
  blackHoleAddress: string;
  machineId: string;
  remove(): void;
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function createNetns(): Netns {
  const tag = randomBytes(3).toString('hex');
  const name = `apssh-${tag}`;
  const hostIf = `aps${tag}h`;
  const nsIf = `aps${tag}n`;
  const b = randomBytes(2);
  const prefix = `10.213.${b[0]}`;
  const base = b[1]! & 0xf8 || 8;
  const hostAddress = `${prefix}.${base + 1}`;
  const machineAddress = `${prefix}.${base + 2}`;
  const blackHoleAddress = `${prefix}.${base + 3}`;
  // `ip netns exec` bind-mounts /etc/netns/<name>/* over /etc: the machine gets its own machine-id.
  const etc = path.join('/etc/netns', name);
  const machineId = randomBytes(16).toString('hex');
  const remove = () => {
    spawnSync('ip', ['netns', 'del', name]);
    spawnSync('ip', ['link', 'del', hostIf]);
    fs.rmSync(etc, { recursive: true, force: true });
  };
  try {
    fs.mkdirSync(etc, { recursive: true });
    fs.writeFileSync(path.join(etc, 'machine-id'), `${machineId}\n`);
    ip('netns', 'add', name);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    ip('link', 'set', nsIf, 'netns', name);
    ip('addr', 'add', `${hostAddress}/29`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('-n', name, 'addr', 'add', `${machineAddress}/29`, 'dev', nsIf);
    ip('-n', name, 'link', 'set', nsIf, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
    // A neighbour nobody answers for: frames go out on the link and are silently dropped.
    ip('neigh', 'replace', blackHoleAddress, 'lladdr', '02:00:00:00:de:ad', 'dev', hostIf, 'nud', 'permanent');
  } catch (err) {
    remove();
    throw err;
  }
  return { name, hostIf, hostAddress, machineAddress, blackHoleAddress, machineId, remove };
}

export async function startSshd(opts: SshdOptions = {}): Promise<TestSshd> {
  const missing = sshdMissing() ?? (opts.netns ? netnsMissing() : undefined);
  if (missing) throw new Error(missing);
  // As root, sshd insists on its privilege-separation directory.
  if (isRoot) fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-sshd-'));
  // sshd reads authorized_keys as the logged-in user.
  fs.chmodSync(dir, 0o755);
  const hostKeyFile = path.join(dir, 'ssh_host_ed25519_key');
  const clientKeyFile = path.join(dir, 'client_ed25519');
  keygen(hostKeyFile, 'test-host');
  keygen(clientKeyFile, 'test-client');
  fs.copyFileSync(`${clientKeyFile}.pub`, path.join(dir, 'authorized_keys'));

  const netns = opts.netns ? createNetns() : undefined;
  const host = netns ? netns.machineAddress : '127.0.0.1';
  const port = netns ? 22 : await freePort(host);
  const username = ensureTestUser(opts.user);
  const config = path.join(dir, 'sshd_config');
  fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      `ListenAddress ${host}`,
      `HostKey ${hostKeyFile}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'UseDNS no',
      `MaxSessions ${opts.maxSessions ?? 10}`,
      // Many clients connect at once in parallel tests and benchmarks.
      'MaxStartups 200',
      `LogLevel ${process.env.TEST_SSHD_LOG_LEVEL ?? 'ERROR'}`,
      `Subsystem sftp ${SFTP_SERVER}`,
      '',
    ].join('\n'),
  );

  let child!: ChildProcess;
  let log = '';
  // Connections of a listener that was restarted live on without a parent of ours.
  const strays = new Set<number>();
  const connectionProcesses = () => [...descendantsOf(child.pid!), ...strays];
  const launch = async () => {
    const argv = [SSHD, '-D', '-e', '-f', config];
    child = netns
      ? spawn('ip', ['netns', 'exec', netns.name, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] })
      : spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => {
      log = (log + d.toString()).slice(-4_000);
      if (process.env.TEST_SSHD_LOG_LEVEL) process.stderr.write(d);
    });
    await waitForBanner(host, port, child, () => log);
  };
  const stopListener = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };

  // If the test process dies without stop(), do not leave servers and namespaces behind.
  const onExit = () => {
    killAll([child.pid!, ...connectionProcesses()]);
    netns?.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  try {
    await launch();
  } catch (err) {
    process.removeListener('exit', onExit);
    netns?.remove();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const server: TestSshd = {
    host,
    port,
    username,
    privateKey: fs.readFileSync(clientKeyFile, 'utf8'),
    hostKeyFingerprint: fingerprint(`${hostKeyFile}.pub`),
    get pid() {
      return child.pid!;
    },
    machineId: netns ? netns.machineId : fs.readFileSync('/etc/machine-id', 'utf8').trim(),
    blackHoleAddress: netns?.blackHoleAddress,
    authorizeKey(publicKey) {
      fs.appendFileSync(path.join(dir, 'authorized_keys'), `${publicKey.trim()}\n`);
    },
    async stop() {
      process.removeListener('exit', onExit);
      killAll(connectionProcesses());
      await stopListener();
      netns?.remove();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    async restart({ newHostKey = false } = {}) {
      for (const p of descendantsOf(child.pid!)) strays.add(p);
      await stopListener();
      if (newHostKey) {
        fs.rmSync(hostKeyFile);
        fs.rmSync(`${hostKeyFile}.pub`);
        keygen(hostKeyFile, 'test-host');
        server.hostKeyFingerprint = fingerprint(`${hostKeyFile}.pub`);
      }
      await launch();
    },
    dropConnections() {
      killAll(connectionProcesses());
      strays.clear();
    },
    cutNetwork() {
      if (!netns) throw new Error('cutNetwork needs a network namespace machine');
      ip('neigh', 'replace', netns.machineAddress, 'lladdr', '02:00:00:00:de:ad', 'dev', netns.hostIf, 'nud', 'permanent');
    },
    restoreNetwork() {
      if (!netns) throw new Error('restoreNetwork needs a network namespace machine');
      spawnSync('ip', ['neigh', 'del', netns.machineAddress, 'dev', netns.hostIf]);
    },
  };
  return server;
}
