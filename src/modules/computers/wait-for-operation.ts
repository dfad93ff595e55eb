import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../db/client.ts';
import type { Operation } from './lifecycle.ts';

const POLL_MS = 200;

/** Waits until the computer's `operation` is no longer `operation`; undefined when `timeoutMs` passes first. */
export async function waitForOperation(db: Db, computerId: string, operation: Operation, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const computer = await db.computer.findUnique({ where: { id: computerId } });
    if (!computer || computer.operation !== operation) return computer ?? undefined;
    if (Date.now() > until) return undefined;
    await delay(POLL_MS);
  }
}
