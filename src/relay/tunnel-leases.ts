import type { Db } from '../db/client.ts';
import type { Logger } from '../lib/logger.ts';

export interface TunnelLeaseOptions {
  db: Db;
  replicaId: string;
  /** Where other replicas reach this one (the peer listener). */
  peerUrl: string;
  log: Logger;
  /** How long a lease lasts without renewal, and how often it is renewed. Default 15 s and 5 s. */
  leaseMs?: number;
  renewMs?: number;
  /** A tunnel this replica holds belongs to a computer deleted elsewhere: drop it. */
  onComputerGone(computerId: string): void;
}

export interface TunnelLeases {
  /** Records that this replica holds the computer's tunnel (in the background, retried until it is stored). */
  held(computerId: string): void;
  /** Records that it no longer does, unless another replica took the tunnel over meanwhile. */
  released(computerId: string): void;
  /** Resolves once every recorded change is stored (tests and the benchmark wait on it). */
  settled(): Promise<void>;
  /** Gives the lease up: this replica's tunnels stop counting at once. */
  stop(): Promise<void>;
}

/**
 * This replica's entry in the tunnel table: a lease on `relay_replicas`, renewed every few
 * seconds, and a row per agent tunnel it holds. If the replica dies, its lease runs out and its
 * rows stop counting; its agents reconnect to a live replica, which takes their rows over. On each
 * renewal it also drops tunnels of computers deleted through another replica and removes the
 * leases of replicas long dead.
 */
export async function startTunnelLeases(opts: TunnelLeaseOptions): Promise<TunnelLeases> {
  const { db, replicaId } = opts;
  const leaseMs = opts.leaseMs ?? 15_000;
  const renewMs = opts.renewMs ?? 5_000;
  const log = opts.log.child({ component: 'relay-leases', replicaId });
  /** Changes not stored yet, in arrival order per computer (a Map keeps the latest). */
  const pending = new Map<string, 'held' | 'released'>();
  const holding = new Set<string>();
  let flushing: Promise<void> = Promise.resolve();
  let stopped = false;

  const writeLease = () => db.$executeRaw`
    INSERT INTO relay_replicas (id, peer_url, expires_at) VALUES (${replicaId}, ${opts.peerUrl}, now() + ${leaseMs} * interval '1 millisecond')
    ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at, peer_url = EXCLUDED.peer_url`;
  await writeLease();

  async function apply(computerId: string, state: 'held' | 'released'): Promise<void> {
    if (state === 'held') {
      await db.$executeRaw`
        INSERT INTO relay_tunnels (computer_id, replica_id, connected_at) VALUES (${computerId}, ${replicaId}, now())
        ON CONFLICT (computer_id) DO UPDATE SET replica_id = EXCLUDED.replica_id, connected_at = EXCLUDED.connected_at`;
    } else {
      await db.$executeRaw`DELETE FROM relay_tunnels WHERE computer_id = ${computerId} AND replica_id = ${replicaId}`;
    }
  }

  /** Stores pending changes one at a time; a failure leaves the rest for the next renewal. */
  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      for (const [computerId, state] of pending) {
        try {
          await apply(computerId, state);
          if (pending.get(computerId) === state) pending.delete(computerId);
        } catch (err) {
          if (!stopped) log.warn({ err, computerId }, 'cannot record the tunnel; retrying at the next renewal');
          return;
        }
      }
    });
    return flushing;
  }

  async function renew(): Promise<void> {
    const renewed = await db.$executeRaw`
      UPDATE relay_replicas SET expires_at = now() + ${leaseMs} * interval '1 millisecond' WHERE id = ${replicaId}`;
    if (renewed === 0) {
      // The lease ran out (a long pause) and was reaped with its rows: record them again.
      log.warn("the relay lease had run out; recording this replica's tunnels again");
      await writeLease();
      for (const id of holding) if (!pending.has(id)) pending.set(id, 'held');
    }
    await flush();
    const gone = await db.$queryRaw<{ computer_id: string }[]>`
      SELECT t.computer_id FROM relay_tunnels t JOIN computers c ON c.id = t.computer_id
      WHERE t.replica_id = ${replicaId} AND c.deleted_at IS NOT NULL`;
    for (const row of gone) opts.onComputerGone(row.computer_id);
    await db.$executeRaw`DELETE FROM relay_replicas WHERE expires_at < now() - interval '10 minutes'`;
  }

  const timer = setInterval(() => {
    renew().catch((err: unknown) => {
      if (!stopped) log.warn({ err }, 'cannot renew the relay lease');
    });
  }, renewMs);
  timer.unref();

  return {
    held(computerId) {
      holding.add(computerId);
      pending.set(computerId, 'held');
      void flush();
    },
    released(computerId) {
      holding.delete(computerId);
      pending.set(computerId, 'released');
      void flush();
    },
    settled: () => flush(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await flushing;
      // Rows of this replica go with its lease (ON DELETE CASCADE).
      await db.$executeRaw`DELETE FROM relay_replicas WHERE id = ${replicaId}`.catch((err: unknown) => {
        log.warn({ err }, 'cannot give the relay lease up; it runs out by itself');
      });
    },
  };
}
