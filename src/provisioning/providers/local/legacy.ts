import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../../../lib/logger.ts';
import { localNames } from './names.ts';
import { SCRIPTS, scriptEnvironment, withLib } from './scripts.ts';

const run = promisify(execFile);

/** The computer's address in its namespace, or undefined when the namespace is gone. */
async function computerAddress(netns: string, veth: string): Promise<string | undefined> {
  const { stdout } = await run('ip', ['-n', netns, '-4', '-o', 'addr', 'show', 'dev', veth]).catch(() => ({ stdout: '' }));
  return /inet ([\d.]+)\//.exec(stdout)?.[1];
}

const script = (text: string, env: Record<string, string>) => run('/bin/sh', ['-c', text], { env: { ...process.env, ...env }, timeout: 60_000 });

/**
 * Computers made before sandboxes live in `<data dir>/computers` with an sshd started without
 * bubblewrap (its pid file, `sshd/sshd.pid`, marks it). They stay where they are (the provider
 * finds them there), but once the data directory is private their users cannot reach their homes
 * through the host's paths, so at start each is moved into its sandbox: the user resource's script
 * writes the sandbox's /etc, the sshd resource's script replaces the old sshd by the sandbox (a
 * paused one is thawed for that moment and frozen again). The next stack operation finds both as
 * it would have made them. Returns the ids moved; a failure is logged and leaves the others going.
 */
export async function sandboxLegacyComputers(legacyRoot: string, log: Logger): Promise<string[]> {
  const ids = existsSync(legacyRoot) ? readdirSync(legacyRoot).filter((d) => d.startsWith('cmp_')) : [];
  const moved: string[] = [];
  for (const id of ids) {
    const n = localNames(legacyRoot, id);
    if (!existsSync(path.join(n.dir, 'sshd', 'sshd.pid'))) continue;
    try {
      const host = await computerAddress(n.netns, n.vethGuest);
      if (!host) continue;
      const env = {
        ...scriptEnvironment(legacyRoot, id),
        HOST: host,
        AUTHORIZED_KEY: readFileSync(path.join(n.home, '.ssh', 'authorized_keys'), 'utf8').trim(),
        DISK_BYTES: readFileSync(path.join(n.dir, 'disk-bytes'), 'utf8').trim(),
      };
      const paused = (await script(withLib('cgroup_frozen && echo frozen || true'), env)).stdout.includes('frozen');
      if (paused) await script(SCRIPTS.power.update, { ...env, RUNNING: 'true' });
      await script(SCRIPTS.user.update, env);
      await script(SCRIPTS.sshd.update, env);
      if (paused) await script(SCRIPTS.power.update, { ...env, RUNNING: 'false' });
      moved.push(id);
      log.info({ computerId: id, dir: n.dir }, 'local computer made before sandboxes now runs in its sandbox (its directory stays where it is)');
    } catch (err) {
      log.error({ computerId: id, err }, 'could not move a local computer made before sandboxes into its sandbox; restart it (POST .../restart) or delete it');
    }
  }
  return moved;
}
