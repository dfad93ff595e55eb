import path from 'node:path';
import type { Prisma, PrismaClient } from '../../db/client.ts';
import type { Session } from '../../generated/prisma/client.ts';
import { newId } from '../../lib/ids.ts';
import { recordEvents, type AnalyticsEvent } from '../analytics/events.ts';
import type { CheckpointsInput } from './schemas.ts';

const LANGUAGES: Record<string, string> = {
  ts: 'TypeScript',
  tsx: 'TypeScript',
  mts: 'TypeScript',
  cts: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  py: 'Python',
  go: 'Go',
  rs: 'Rust',
  java: 'Java',
  kt: 'Kotlin',
  rb: 'Ruby',
  php: 'PHP',
  cs: 'C#',
  c: 'C',
  h: 'C',
  cpp: 'C++',
  cc: 'C++',
  hpp: 'C++',
  swift: 'Swift',
  scala: 'Scala',
  sh: 'Shell',
  bash: 'Shell',
  sql: 'SQL',
  md: 'Markdown',
  json: 'JSON',
  yaml: 'YAML',
  yml: 'YAML',
  toml: 'TOML',
  html: 'HTML',
  css: 'CSS',
  scss: 'SCSS',
  vue: 'Vue',
  svelte: 'Svelte',
  tf: 'HCL',
  prisma: 'Prisma',
};

export function languageOf(file: string): { extension: string; language: string } {
  const extension = path.extname(file).slice(1).toLowerCase().slice(0, 50);
  return { extension, language: LANGUAGES[extension] ?? 'Other' };
}

/** Files a unified diff creates (`new file mode` right after its `diff --git` header). */
function createdFiles(diff: string | undefined): Set<string> {
  const created = new Set<string>();
  if (!diff) return created;
  const re = /^diff --git a\/(.+?) b\/(.+)\n(?:new file mode)/gm;
  for (const m of diff.matchAll(re)) created.add(m[2]!);
  return created;
}

/**
 * Stores the checkpoints of one commit and feeds productivity analytics: one `git_commit` per
 * (session, commit) the first time it is reported, and one `file_created` or `file_edited` per
 * file the checkpoints touch (by extension and language). Returns the new ids in body order.
 */
export async function recordCheckpoints(db: PrismaClient, session: Session, input: CheckpointsInput, now: Date): Promise<string[]> {
  const ids = input.checkpoints.map(() => newId('gcp'));
  await db.$transaction(async (tx) => {
    const seen = await tx.gitAiCheckpoint.count({ where: { sessionId: session.id, commitSha: input.commitSha } });
    await tx.gitAiCheckpoint.createMany({
      data: input.checkpoints.map((c, i) => {
        const { kind, author, timestamp, line_stats: stats, ...rest } = c;
        return {
          id: ids[i]!,
          organizationId: session.organizationId,
          sessionId: session.id,
          commitSha: input.commitSha,
          baseSha: input.baseSha ?? null,
          branch: input.branch ?? null,
          isDefaultBranch: input.isDefaultBranch ?? null,
          repoUrl: input.repoUrl ?? null,
          repoName: input.repoName ?? null,
          agentVersion: input.agentVersion ?? null,
          kind,
          author: author ?? null,
          timestampMs: timestamp === undefined ? null : BigInt(Math.round(timestamp)),
          additions: stats?.additions ?? 0,
          deletions: stats?.deletions ?? 0,
          additionsSloc: stats?.additions_sloc ?? 0,
          deletionsSloc: stats?.deletions_sloc ?? 0,
          body: rest as Prisma.InputJsonObject,
          createdAt: now,
        };
      }),
    });
    const base = { organizationId: session.organizationId, userId: session.ownerId, occurredAt: now, sessionId: session.id };
    const events: AnalyticsEvent[] = seen === 0 ? [{ ...base, kind: 'git_commit' }] : [];
    const files = new Map<string, 'file_created' | 'file_edited'>();
    for (const c of input.checkpoints) {
      const created = createdFiles(c.diff);
      for (const e of c.entries) {
        if (files.get(e.file) !== 'file_created') files.set(e.file, created.has(e.file) ? 'file_created' : 'file_edited');
      }
    }
    for (const [file, kind] of files) events.push({ ...base, kind, ...languageOf(file) });
    await recordEvents(tx, events);
  });
  return ids;
}
