import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/agent-cli.ts';
import { keyedCaller } from '../support/http.ts';
import { hostAddress, hostTraces, killSandbox, localComputerNames, localProviderMissing, removeLocalComputer } from '../support/local-computers.ts';
import { REPO_ROOT, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

const missing = await localProviderMissing();
const skip = skipWithout('the local sandbox e2e tests', missing);

const PROVISION_MS = 90_000;
const OWNER_EMAIL = 'owner@agentplane.local';
const PIDS_MAX = 200;

interface Computer {
  id: string;
  name: string;
  home: string;
  host: string;
  user: string;
}

/**
 * Two `local` computers of a server started the README's way, attacked from a shell on one of them
 * through the product's own door (`agentplane ssh`): every attack of the issue fails, and beside
 * each a control shows the same action working on what is the computer's own, so no check passes
 * because the shell itself is broken.
 */
describe.skipIf(skip)('local computers are sandboxes', { timeout: 240_000 }, () => {
  let server: ServerProcess;
  let dataDir: string;
  let key: string;
  let apiPort: number;
  let listener: net.Server;
  let listenerPort: number;
  const computers: Computer[] = [];
  let elder: Computer;

  // The server is started again midway: the call follows it.
  const call = keyedCaller(
    () => server.url,
    () => key,
  );

  /** Runs a bash script on a computer through `agentplane ssh`, as a person would. */
  const shell = async (c: Computer, script: string) => {
    const run = await runCli(['ssh', c.name, '--', 'bash', '-s'], { env: { AGENTPLANE_URL: server.url, AGENTPLANE_API_KEY: key }, input: script }).done;
    return run;
  };

  /** Each `name=value` line a script printed. */
  const results = (stdout: string) =>
    Object.fromEntries(
      stdout
        .split('\n')
        .filter((l) => /^[a-z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );

  /** Creates a local computer and waits until it is active. */
  const create = async (name: string): Promise<Computer> => {
    const res = await call('POST', '/api/v0/computers', { name, provider: 'local' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id: string = res.body.id;
    const done = await waitFor(
      `computer ${name} to leave provisioning`,
      async () => {
        const got = (await call('GET', `/api/v0/computers/${id}`)).body;
        return got.status !== 'provisioning' && got;
      },
      PROVISION_MS,
      250,
    );
    expect(done.status, JSON.stringify(done.provisioningSteps)).toBe('active');
    const n = localComputerNames(dataDir, id);
    const address = execFileSync('ip', ['-n', n.netns, '-4', '-o', 'addr', 'show', 'dev', n.vethGuest], { encoding: 'utf8' });
    return { id, name, home: n.home, user: n.user, host: /inet ([\d.]+)\//.exec(address)![1]! };
  };

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    // A service on the host listening on every address, as a database or a cache would.
    listener = net.createServer((socket) => socket.end('host-secret\n'));
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
    listenerPort = (listener.address() as net.AddressInfo).port;
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-sandbox-'));
    const env = {
      AGENTPLANE_DATA_DIR: dataDir,
      // The README's default address: computers reach the API through their gateway.
      AGENTPLANE_HOST: '0.0.0.0',
      AGENTPLANE_LOCAL_PROVIDER: 'true',
      AGENTPLANE_COMPUTER_MEMORY_MIB: '256',
      AGENTPLANE_LOCAL_PIDS_MAX: String(PIDS_MAX),
    };

    // A computer made before sandboxes: its directory in <data dir>/computers, its sshd started
    // the old way (no bubblewrap, its pid file in the sshd directory, no sandbox /etc), and the data
    // directory searchable by others, as the README then asked.
    server = await startServerProcess({ ...env, AGENTPLANE_LOCAL_ROOT: path.join(dataDir, 'computers') }, { processGroup: true });
    key = server.firstStartKey!;
    elder = await create('elder');
    await server.stop('SIGTERM');
    const n = localComputerNames(dataDir, elder.id);
    expect(n.dir).toBe(path.join(dataDir, 'computers', elder.id));
    killSandbox(dataDir, elder.id);
    rmSync(path.join(n.dir, 'sshd', 'sandbox.pid'));
    rmSync(path.join(n.dir, 'etc'), { recursive: true });
    const config = path.join(n.dir, 'sshd', 'sshd_config');
    writeFileSync(config, readFileSync(config, 'utf8').replace('PidFile none', `PidFile ${path.join(n.dir, 'sshd', 'sshd.pid')}`));
    await waitFor('the sandbox to end', () => !execFileSync('ip', ['netns', 'pids', n.netns], { encoding: 'utf8' }).trim(), 10_000, 50);
    execFileSync('ip', ['netns', 'exec', n.netns, '/usr/sbin/sshd', '-f', config, '-E', path.join(n.dir, 'sshd', 'sshd.log')]);
    for (const dir of [dataDir, path.join(dataDir, 'computers'), n.dir]) chmodSync(dir, 0o711);

    // Started again the README's way on the same data directory: new computers' homes beside it.
    server = await startServerProcess(env, { processGroup: true });
    apiPort = Number(new URL(server.url).port);
    for (const name of ['alpha', 'beta']) computers.push(await create(name));
  });

  afterAll(async () => {
    const all = elder ? [elder, ...computers] : computers;
    for (const c of all) await call('DELETE', `/api/v0/computers/${c.id}`).catch(() => undefined);
    await waitFor('every teardown', async () => all.every((c) => hostTraces(dataDir, c.id).length === 0), PROVISION_MS, 250).catch((err: unknown) =>
      console.error(err),
    );
    await server?.stop('SIGTERM');
    for (const c of all) if (hostTraces(dataDir, c.id).length > 0) removeLocalComputer(dataDir, c.id);
    listener?.close();
  });

  it('moves a computer made before sandboxes into its sandbox at start; its home stays where it was', async () => {
    const n = localComputerNames(dataDir, elder.id);
    expect(existsSync(path.join(n.dir, 'sshd', 'sshd.pid'))).toBe(false);
    const run = await shell(
      elder,
      'echo "user=$(id -un)"; echo "users=$(cut -d: -f1 /etc/passwd | sort | tr "\\n" " ")"; echo "cp=$(ps -eo args | grep -c "[a]gentplane.js serve")"; echo kept > ~/kept; echo "home=$HOME"',
    );
    expect(results(run.stdout), run.stderr).toEqual({ user: elder.user, users: `${elder.user} nobody root sshd `, cp: '0', home: n.home });
    expect(readFileSync(path.join(n.home, 'kept'), 'utf8')).toBe('kept\n');
  });

  it('keeps the data directory the control plane’s alone, and the homes outside it', () => {
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(dataDir)).toBe(0o700);
    const loose: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isSymbolicLink()) continue;
        // PGlite's files come out 0666 whatever the umask (its WASM file system's own modes); the
        // folders above them, 0700 like every other, are what keeps them private.
        const pglite = p.startsWith(path.join(dataDir, 'pgdata') + path.sep) && !e.isDirectory();
        if (mode(p) & 0o077 && !pglite) loose.push(`${p} ${mode(p).toString(8)}`);
        // The folder of computers made before sandboxes: what is in it belongs to their users.
        if (e.isDirectory() && p !== path.join(dataDir, 'computers')) walk(p);
      }
    };
    walk(dataDir);
    expect(loose).toEqual([]);
    for (const c of computers) expect(c.home.startsWith(dataDir + path.sep)).toBe(false);
  });

  it('shows a computer nothing of the control plane, the host or the other computer; its own things work', async () => {
    const [alpha, beta] = computers as [Computer, Computer];
    // The other computer leaves a file in its /tmp and its home, and a process running.
    const planted = await shell(
      beta,
      'echo beta-tmp > /tmp/beta-secret; echo beta-home > ~/beta-secret; setsid nohup sleep 3001 >/dev/null 2>&1 < /dev/null & echo planted=yes',
    );
    expect(planted.stdout, planted.stderr).toContain('planted=yes');

    const gateway = execFileSync('ip', ['-n', localComputerNames(dataDir, alpha.id).netns, 'route', 'show', 'default'], { encoding: 'utf8' }).split(' ')[2]!;
    const probe = (name: string, addr: string, port: number) =>
      `echo "${name}=$(timeout 5 bash -c 'exec 3<>/dev/tcp/${addr}/${port}; printf "GET /api/v0/openapi.json HTTP/1.0\\r\\n\\r\\n" >&3; head -c 15 <&3' 2>/dev/null | head -n 1 | tr -d '\\r' || true)"`;
    const script = [
      // Its own files, /tmp and processes: the controls.
      'echo own > ~/own-file; echo "own_home=$(cat ~/own-file)"',
      'echo own-tmp > /tmp/own; echo "own_tmp=$(cat /tmp/own)"',
      'setsid nohup sleep 3002 >/dev/null 2>&1 < /dev/null &',
      'sleep 0.2',
      'echo "own_process=$(ps -eo args | grep -c "^sleep 3002")"',
      // The other computer's /tmp, home and processes.
      '[ -e /tmp/beta-secret ] && echo other_tmp=visible || echo other_tmp=absent',
      `[ -e ${beta.home} ] && echo other_home=visible || echo other_home=absent`,
      'echo "other_process=$(ps -eo args | grep -c "^sleep 3001")"',
      // The control plane: its process, environment and data directory (database, Pulumi state, keys).
      'echo "control_plane_process=$(ps -eo args | grep -c "[a]gentplane.js serve")"',
      'echo "environ=$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c "^AGENTPLANE_\\|^DATABASE_URL")"',
      `[ -e ${dataDir} ] && echo data_dir=visible || echo data_dir=absent`,
      `echo "database=$(grep -rl ${OWNER_EMAIL} / --exclude-dir=proc --exclude-dir=usr --exclude-dir=sys 2>/dev/null | grep -v "^$HOME" | head -n 1)"`,
      `echo "pg_files=$(find / \\( -path /proc -o -path /usr \\) -prune -o -name PG_VERSION -print 2>/dev/null | head -n 1)"`,
      // The host's files and users.
      `[ -e ${REPO_ROOT}/package.json ] && echo checkout=visible || echo checkout=absent`,
      'ls -A /root >/dev/null 2>&1 && echo root_home=visible || echo root_home=absent',
      'echo "home_dir=$(ls -A /home 2>/dev/null | wc -l)"',
      'echo "users=$(cut -d: -f1 /etc/passwd | sort | tr "\\n" " ")"',
      'echo "user=$(id -un)"',
      'cat /etc/shadow >/dev/null 2>&1 && echo shadow=readable || echo shadow=unreadable',
      'echo "host_keys=$(ls /etc/ssh | grep -c _key)"',
      'echo "no_new_privs=$(grep NoNewPrivs /proc/self/status | cut -f2)"',
      'echo "sys=$(ls /sys 2>/dev/null | wc -l)"',
      // The network: the API port of the host passes; a host listener on every address, through
      // the gateway and through the host's own address, and the other computer's sshd do not.
      probe('api', gateway, apiPort),
      probe('host_listener_gateway', gateway, listenerPort),
      probe('host_listener_address', hostAddress(), listenerPort),
      `timeout 5 bash -c '</dev/tcp/${beta.host}/22' 2>/dev/null && echo other_sshd=open || echo other_sshd=closed`,
    ].join('\n');
    const run = await shell(alpha, script);
    expect(run.code, run.stderr).toBe(0);
    const r = results(run.stdout);
    expect(r).toMatchObject({
      own_home: 'own',
      own_tmp: 'own-tmp',
      own_process: '1',
      other_tmp: 'absent',
      other_home: 'absent',
      other_process: '0',
      control_plane_process: '0',
      environ: '0',
      data_dir: 'absent',
      database: '',
      pg_files: '',
      checkout: 'absent',
      root_home: 'absent',
      home_dir: '0',
      users: `${alpha.user} nobody root sshd `,
      user: alpha.user,
      shadow: 'unreadable',
      host_keys: '0',
      no_new_privs: '1',
      sys: '0',
      api: 'HTTP/1.1 200 OK',
      host_listener_gateway: '',
      host_listener_address: '',
      other_sshd: 'closed',
    });
    // The same listener answers the host itself: the refusal above is the sandbox's.
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(listenerPort, hostAddress(), () => s.once('data', (d) => resolve(d.toString())));
      s.on('error', reject);
    });
    expect(answer).toBe('host-secret\n');
    // What beta planted is still there, for beta.
    const own = await shell(beta, 'cat /tmp/beta-secret ~/beta-secret; ps -eo args | grep -c "^sleep 3001"');
    expect(own.stdout.split('\n').slice(0, 3)).toEqual(['beta-tmp', 'beta-home', '1']);
  });

  it('bounds a fork loop at the process limit, and the computer still answers afterwards', async () => {
    const [alpha] = computers as [Computer];
    // dash does not retry a failed fork as bash does: the loop ends in seconds.
    const run = await shell(
      alpha,
      [
        `sh -c 'i=0; while [ $i -lt ${PIDS_MAX + 100} ]; do sleep 60 & i=$((i + 1)); done; wait' >/dev/null 2>&1 &`,
        'sleep 3',
        'echo "sleeping=$(ps -eo args | grep -c "^sleep 60")"',
        'pkill -x sleep; sleep 0.5',
        'echo "after=$(ps -eo args | grep -c "^sleep 60")"',
      ].join('\n'),
    );
    const r = results(run.stdout);
    const sleeping = Number(r.sleeping);
    // Many forks succeed (a working shell), but never more than the limit allows.
    expect(sleeping, run.stderr).toBeGreaterThan(PIDS_MAX / 2);
    expect(sleeping).toBeLessThan(PIDS_MAX);
    expect(r.after).toBe('0');
    const again = await shell(alpha, 'echo alive=yes');
    expect(results(again.stdout).alive).toBe('yes');
  });
});
