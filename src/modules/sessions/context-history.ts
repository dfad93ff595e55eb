import type { Db } from '../../db/client.ts';
import type { SessionMessage } from '../../generated/prisma/client.ts';
import type { Compaction, ContentBlock, RuntimeMessage } from '../../agent/index.ts';
import type { CompactionMarker } from './schemas.ts';
import { appendMessage } from './store.ts';

type Row = Pick<SessionMessage, 'role' | 'content' | 'seq' | 'extra'>;

function markerOf(row: Row): CompactionMarker | undefined {
  const extra = row.extra as { compaction?: CompactionMarker } | null;
  return row.role === 'system' ? extra?.compaction : undefined;
}

/**
 * Stored messages as the model is sent them: everything, or from the latest compaction on, its
 * summary (as a user turn, which every provider takes) and the messages after the range it
 * replaces. Each message `covers` its own seq, a summary the range it replaces.
 */
export function runtimeHistory(rows: Row[]): RuntimeMessage[] {
  const toRuntime = (r: Row): RuntimeMessage => ({
    role: r.role as RuntimeMessage['role'],
    content: r.content as ContentBlock[],
    covers: { fromSeq: Number(r.seq), toSeq: Number(r.seq) },
  });
  const at = rows.findLastIndex((r) => markerOf(r) !== undefined);
  if (at === -1) return rows.map(toRuntime);
  const marker = markerOf(rows[at]!)!;
  const summary: RuntimeMessage = { role: 'user', content: rows[at]!.content as ContentBlock[], covers: { fromSeq: marker.fromSeq, toSeq: marker.toSeq } };
  return [summary, ...rows.filter((r) => Number(r.seq) > marker.toSeq && markerOf(r) === undefined).map(toRuntime)];
}

/** Stores a compaction as a `system` message of the session, marked with the range it replaces. */
export async function storeCompaction(db: Db, sessionId: string, compaction: Compaction, now: Date): Promise<SessionMessage> {
  const covers = compaction.summary.covers;
  // Every message of a persisted turn covers its seq once stored, so the range is always known here.
  if (!covers) throw new Error('a compaction of messages that were never stored cannot be recorded');
  const marker: CompactionMarker = { ...covers, tokensBefore: compaction.tokensBefore, tokensAfter: compaction.tokensAfter };
  return appendMessage(
    db,
    sessionId,
    { role: 'system', content: compaction.summary.content, modelId: compaction.model.id, extra: { compaction: marker } },
    now,
  );
}
