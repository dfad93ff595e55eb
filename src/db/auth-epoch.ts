import type { PGlite } from '@electric-sql/pglite';
import type { ReadRows, Statement } from './reads.ts';

/**
 * The `auth_epoch` counter, which database triggers advance in the same transaction as every
 * change to what a credential may do or to an organization's service-account list (see the
 * migrations `auth_epoch` and `auth_epoch_service_account_lists`, and src/db/fenced-cache.ts).
 * An `AuthEpoch` answers its value as of a moment after the call: every such change that
 * committed before the call is counted.
 */
export type AuthEpoch = () => Promise<bigint>;

const AUTH_EPOCH: Statement = {
  name: 'agentplane_auth_epoch',
  text: `SELECT epoch::text AS epoch FROM auth_epoch WHERE id = 1`,
};

/** Where the triggers announce each new value (read by the embedded database's own process). */
const CHANNEL = 'agentplane_auth_epoch';

async function readEpoch(reads: ReadRows): Promise<bigint> {
  const [row] = await reads<{ epoch: string }>(AUTH_EPOCH, []);
  if (!row) throw new Error('auth_epoch has no row: the database was not set up by agentplane migrate');
  return BigInt(row.epoch);
}

/**
 * For a database other processes write too (PostgreSQL): a read that starts after the call. The
 * read is shared by every call made while the one before it is in flight, so under load one small
 * read serves many requests.
 */
export function fencedEpochReads(reads: ReadRows): AuthEpoch {
  let running: Promise<bigint> | undefined;
  let next: Promise<bigint> | undefined;

  function startRead(): Promise<bigint> {
    const read = readEpoch(reads);
    running = read;
    const done = () => {
      if (running === read) running = undefined;
    };
    read.then(done, done);
    return read;
  }

  return () => {
    if (!running) return startRead();
    // The read in flight may have started before this call: share the one that starts after it.
    const startNext = () => {
      next = undefined;
      return startRead();
    };
    next ??= running.then(startNext, startNext);
    return next;
  };
}

/**
 * For the embedded database, which only this process writes: the value the triggers announced,
 * with no read per call. PGlite hands a notification to its listeners (as microtasks) while it
 * processes the COMMIT that sends it, before the committing caller resumes, so a change that
 * committed before a call has always been heard by then. Listening starts on first use, when
 * the migrations have made the table; the first value is read once, after listening began.
 */
export function notifiedEpoch(pglite: PGlite, reads: ReadRows): AuthEpoch {
  let heard = -1n;
  let ready: Promise<unknown> | undefined;
  const hear = (value: bigint) => {
    if (value > heard) heard = value;
  };
  return async () => {
    ready ??= pglite
      .listen(CHANNEL, (payload) => hear(BigInt(payload)))
      .then(async () => hear(await readEpoch(reads)))
      .catch((err: unknown) => {
        ready = undefined;
        throw err;
      });
    await ready;
    return heard;
  };
}

/**
 * One request's fence: the epoch read at most once, on first use, after the request arrived. The
 * credential and everything else the request reads through a fenced cache share it, so the
 * request waits for one epoch read at most (src/db/fenced-cache.ts).
 */
export function requestFence(authEpoch: AuthEpoch): AuthEpoch {
  let epoch: Promise<bigint> | undefined;
  return () => (epoch ??= authEpoch());
}
