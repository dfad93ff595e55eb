import type { Duplex } from 'node:stream';

/**
 * Joins two byte streams both ways, e.g. a WebSocket and an SSH channel. They carry one SSH
 * connection, which has no use for a half-closed stream: when either side closes or fails, both
 * go (an end is passed on by pipe(), after the data written before it).
 */
export function splice(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  for (const s of [a, b]) {
    s.once('close', end);
    s.on('error', end);
  }
}
