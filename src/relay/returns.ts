import { randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import { Unreachable } from '../ssh/errors.ts';

/** A connection back this replica waits for: its token, and the connection once the agent is here. */
interface ExpectedReturn<T> {
  token: string;
  /** Rejects with Unreachable when the agent has not connected back within the time given. */
  arrived: Promise<T>;
  /** Stops waiting (the request could not be sent); a later arrival is refused. */
  cancel(): void;
}

/**
 * Agents' connections back to the relay (see RETURN_BIND_ADDRESS), matched to the people's
 * sessions waiting for them. A token is 24 random bytes after the id of the replica that waits,
 * so whichever replica the balancer hands the agent's connection to knows where it belongs; it is
 * good once, and only while its session waits.
 */
export interface Returns<T = WebSocket> {
  expect(computerId: string, timeoutMs: number): ExpectedReturn<T>;
  /** Whether a session of this replica waits for the token. */
  waitsFor(token: string): boolean;
  /** Hands the agent's connection to the session waiting for it; false (and nothing done) when none does. */
  deliver(token: string, connection: T): boolean;
}

/** The replica a token was issued by; undefined for anything that is not a token. */
export function replicaOfReturn(token: string): string | undefined {
  return /^([a-z]+_[A-Za-z0-9]+)\.[A-Za-z0-9_-]{32}$/.exec(token)?.[1];
}

export function createReturns<T = WebSocket>(replicaId: string): Returns<T> {
  const waiting = new Map<string, (connection: T) => void>();
  return {
    expect(computerId, timeoutMs) {
      const token = `${replicaId}.${randomBytes(24).toString('base64url')}`;
      let cancel = () => {};
      const arrived = new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(token);
          reject(new Unreachable({ host: computerId, port: 22, reason: `the agent did not connect back to the relay within ${timeoutMs} ms` }));
        }, timeoutMs);
        waiting.set(token, (connection) => {
          clearTimeout(timer);
          resolve(connection);
        });
        cancel = () => {
          clearTimeout(timer);
          waiting.delete(token);
        };
      });
      arrived.catch(() => {});
      return { token, arrived, cancel };
    },
    waitsFor: (token) => waiting.has(token),
    deliver(token, connection) {
      const hand = waiting.get(token);
      if (!hand) return false;
      waiting.delete(token);
      hand(connection);
      return true;
    },
  };
}
