import { createHash } from 'node:crypto';

/**
 * A job id (UUID-shaped, as pg-boss wants) derived from `key`: sending a job with it twice enqueues
 * it once, so a key that names one occurrence (a computer's first provisioning, a minute's run)
 * makes every sender of it agree.
 */
export function stableJobId(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
