import type { Db } from '../db/client.ts';

/** The replica holding a computer's agent tunnel, and where other replicas reach it. */
export interface TunnelHolder {
  replicaId: string;
  peerUrl: string;
}

/**
 * Who holds the computer's tunnel, if a live replica does: one whose lease has not run out by
 * the database's clock (the replicas' own clocks may disagree).
 */
export async function findTunnelHolder(db: Db, computerId: string): Promise<TunnelHolder | undefined> {
  const [row] = await db.$queryRaw<{ replica_id: string; peer_url: string }[]>`
    SELECT r.id AS replica_id, r.peer_url
    FROM relay_tunnels t JOIN relay_replicas r ON r.id = t.replica_id
    WHERE t.computer_id = ${computerId} AND r.expires_at > now()`;
  return row ? { replicaId: row.replica_id, peerUrl: row.peer_url } : undefined;
}

/** Where other replicas reach a live replica (its lease not run out), if it is one. */
export async function findReplicaPeer(db: Db, replicaId: string): Promise<string | undefined> {
  const [row] = await db.$queryRaw<{ peer_url: string }[]>`SELECT peer_url FROM relay_replicas WHERE id = ${replicaId} AND expires_at > now()`;
  return row?.peer_url;
}
