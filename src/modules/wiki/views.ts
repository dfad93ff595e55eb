import type { WikiRun as WikiRunRow } from '../../generated/prisma/client.ts';
import type { WikiRun } from './schemas.ts';

const ms = (d: Date | null) => (d ? d.getTime() : null);

/** The public link of a run, relative to the API's base address. */
const publicUrlOf = (row: Pick<WikiRunRow, 'id' | 'privacy' | 'publicToken'>) =>
  row.privacy === 'public' && row.publicToken ? `/api/v0/wiki/${row.id}?publicToken=${row.publicToken}` : null;

export function toWikiRun(row: WikiRunRow): WikiRun {
  const usage = row.tokenUsage as Record<string, number> | null;
  return {
    wikiRunId: row.id,
    repoUrl: row.repoUrl,
    branch: row.branch,
    commitHash: row.commitHash,
    hasLocalChanges: row.hasLocalChanges,
    agentVersion: row.agentVersion,
    source: row.source as WikiRun['source'],
    status: row.status as WikiRun['status'],
    error: row.error,
    computerId: row.computerId,
    model: row.model,
    privacy: row.privacy as WikiRun['privacy'],
    publicUrl: publicUrlOf(row),
    pageCount: row.pageCount,
    pagesReused: row.pagesReused,
    pagesGenerated: row.pagesGenerated,
    baseRunId: row.baseRunId,
    tokenUsage: usage && 'inputTokens' in usage ? (usage as WikiRun['tokenUsage']) : null,
    hasVideo: row.videoKey !== null,
    createdBy: { kind: row.creatorKind as 'user' | 'service_account', id: row.creatorId },
    createdAt: row.createdAt.getTime(),
    startedAt: ms(row.startedAt),
    completedAt: ms(row.completedAt),
  };
}
