import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './http.ts';

/** A private PostgreSQL cluster on a spare loopback port, for tests. */
export interface PostgresServer {
  url: string;
  stop(): Promise<void>;
}

function findBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

/**
 * PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user. Asynchronous,
 * so global setup's other work goes on while initdb runs.
 */
async function run(bin: string, args: string[], owner: string | undefined): Promise<void> {
  const [cmd, argv] = owner ? ['runuser', ['-u', owner, '--', bin, ...args]] : [bin, args];
  try {
    await promisify(execFile)(cmd, argv, { encoding: 'utf8' });
  } catch (err) {
    const { stderr, stdout } = err as { stderr?: string; stdout?: string };
    throw new Error(`${path.basename(bin)} failed: ${stderr || stdout || (err as Error).message}`);
  }
}

/** `settings`: more `-c name=value` server settings (e.g. `shared_preload_libraries=pg_stat_statements`). */
export async function startPostgres(opts: { settings?: string[] } = {}): Promise<PostgresServer | undefined> {
  const bin = findBinDir();
  if (!bin) return undefined;
  const owner = process.getuid?.() === 0 ? 'postgres' : undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-pg-'));
  const data = path.join(dir, 'data');
  if (owner) execFileSync('chown', ['-R', owner, dir]);
  await run(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], owner);
  const port = await freePort();
  const serverOpts = [
    `-p ${port}`,
    `-k ${dir}`,
    `-c listen_addresses=127.0.0.1`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=300',
    ...(opts.settings ?? []).map((s) => `-c ${s}`),
  ].join(' ');
  await run(path.join(bin, 'pg_ctl'), ['-D', data, '-o', serverOpts, '-l', path.join(dir, 'log'), '-w', 'start'], owner);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      try {
        await run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'], owner);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
