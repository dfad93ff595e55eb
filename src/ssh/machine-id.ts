import { createHash } from 'node:crypto';
import type { ConnectionPool } from './pool.ts';
import { exec, type RemoteKill } from './exec.ts';
import type { SshTarget } from './target.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * 32 hex digits as an RFC 9562 UUID. systemd machine ids already are version-4 UUIDs and keep
 * their value; anything else gets the version-8 and variant bits set, so the mapping is stable.
 */
export function hexToUuid(hex: string): string {
  const h = hex.toLowerCase();
  const dashed = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
  if (UUID.test(dashed)) return dashed;
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * A stable id for the machine behind `target`, as a UUID: its /etc/machine-id (or the D-Bus copy),
 * else a hash of the host key the machine presents, which also survives reboots.
 */
export async function machineId(pool: ConnectionPool, remoteKill: RemoteKill, target: SshTarget, opts: { signal?: AbortSignal } = {}): Promise<string> {
  const out = await exec(pool, remoteKill, target, 'cat /etc/machine-id 2>/dev/null || cat /var/lib/dbus/machine-id 2>/dev/null', {
    signal: opts.signal,
    timeoutMs: 15_000,
  });
  const id = out.stdout.trim().toLowerCase();
  if (out.exitCode === 0 && /^[0-9a-f]{32}$/.test(id)) return hexToUuid(id);
  const fingerprint = await pool.session(target, opts.signal, async (conn) => conn.hostKey.fingerprint);
  const hash = createHash('sha256').update(`agentplane host key ${fingerprint}`).digest('hex');
  return hexToUuid(hash.slice(0, 32));
}
