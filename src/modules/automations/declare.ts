import type { Principal } from '../../auth/principal.ts';
import type { Db, Prisma, PrismaClient } from '../../db/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId, newUuid } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { ciQueuedEditsJob } from './job-kinds.ts';
import type { ModeId } from './modes.ts';
import type { EditBody } from './schemas.ts';
import type { AutomationSettings } from './settings.ts';

/** An automation as a config document declares it. */
export interface DeclaredAutomation {
  name: string;
  modeId: ModeId;
  repositories: string[];
  settings: AutomationSettings;
}

interface DeclareDeps {
  db: PrismaClient;
  clock: Clock;
  queue: Pick<JobQueue, 'send'>;
}

type RepoFile = { repoFullName: string; filePath?: string };
type Json = Prisma.InputJsonValue;

const EVENT = 'ci_automation_change';

/**
 * Automations declared by config (src/modules/config). A declaration changes the automation's
 * record at once, in the caller's transaction, and queues the forge edits it needs (a CI job in
 * status "queued" each, sent in the same transaction): opening pull requests cannot roll back, so
 * it follows the commit in the `automations.queued-edits` job (queued-edits.ts).
 */
export function automationDeclarations({ db, clock, queue }: DeclareDeps) {
  async function write(principal: Principal, automationId: string, action: string, edits: EditBody[], change: (tx: Db) => Promise<unknown>) {
    await db.$transaction(async (tx) => {
      const now = clock.now();
      await change(tx);
      const row = await tx.ciAutomation.findUniqueOrThrow({ where: { id: automationId } });
      for (const [i, edit] of edits.entries()) {
        await tx.ciJob.create({
          data: {
            id: newId('cijob'),
            organizationId: principal.organizationId,
            kind: 'edit',
            action: edit.action,
            automationId,
            automationName: row.name,
            modeId: row.modeId,
            status: 'queued',
            repos: edit.repos as Json,
            detail: { request: edit, requestedBy: 'config' } as unknown as Json,
            requestedBy: principal as unknown as Json,
            // Queued edits run oldest first.
            createdAt: new Date(now.getTime() + i),
          },
        });
      }
      if (edits.length > 0) await queue.send(ciQueuedEditsJob, { automationId }, { tx });
      await recordAudit(tx, {
        organizationId: principal.organizationId,
        eventType: EVENT,
        source: PUBLIC_API_SOURCE,
        actor: principal,
        target: { automationId },
        after: action === 'delete' ? null : ({ name: row.name, modeId: row.modeId, settings: row.settings, repos: row.repos } as Json),
        payload: { action, queuedEdits: edits.map((e) => e.action) },
        at: now,
      });
    });
  }

  return {
    /** A new automation; its workflow files follow as pull requests. */
    async create(principal: Principal, d: DeclaredAutomation): Promise<string> {
      const id = newUuid();
      const repos: RepoFile[] = d.repositories.map((repoFullName) => ({ repoFullName }));
      const edit: EditBody = { action: 'create', factoryAutomationId: id, modeId: d.modeId, repos };
      await write(principal, id, 'create', [edit], (tx) =>
        tx.ciAutomation.create({
          data: {
            id,
            organizationId: principal.organizationId,
            name: d.name,
            modeId: d.modeId,
            settings: d.settings as Json,
            repos: repos as Json,
            createdAt: clock.now(),
          },
        }),
      );
      return id;
    },

    /**
     * New settings, and repositories added or removed: repositories it keeps get their workflow
     * rewritten (when a setting changed), new ones get one, removed ones lose theirs.
     */
    async update(principal: Principal, automationId: string, d: DeclaredAutomation, changed: string[]): Promise<void> {
      const row = await db.ciAutomation.findFirstOrThrow({ where: { id: automationId, organizationId: principal.organizationId } });
      const previous = row.repos as RepoFile[];
      const declared = new Set(d.repositories);
      const kept = previous.filter((r) => declared.has(r.repoFullName));
      const added = d.repositories.filter((name) => !previous.some((r) => r.repoFullName === name)).map((repoFullName) => ({ repoFullName }));
      // A repository whose workflow was never written (its pull request failed) has nothing to remove.
      const removed = previous.filter((r) => !declared.has(r.repoFullName) && r.filePath);
      const rewrite = changed.some((f) => f !== 'repositories');
      const edits: EditBody[] = [
        ...(added.length ? [{ action: 'create' as const, factoryAutomationId: automationId, modeId: d.modeId, repos: added }] : []),
        ...(rewrite && kept.length
          ? [{ action: 'edit' as const, factoryAutomationId: automationId, repos: kept.map((r) => ({ repoFullName: r.repoFullName })) }]
          : []),
        ...(removed.length ? [{ action: 'delete' as const, factoryAutomationId: automationId, repos: removed }] : []),
      ];
      await write(principal, automationId, 'update', edits, (tx) =>
        tx.ciAutomation.update({
          where: { id: automationId },
          data: { name: d.name, modeId: d.modeId, settings: d.settings as Json, repos: [...kept, ...added] as Json, updatedAt: clock.now() },
        }),
      );
    },

    /** Deleted at once; pull requests remove its workflow files. */
    async remove(principal: Principal, automationId: string): Promise<void> {
      const row = await db.ciAutomation.findFirstOrThrow({ where: { id: automationId, organizationId: principal.organizationId } });
      const written = (row.repos as RepoFile[]).filter((r) => r.filePath);
      const edits: EditBody[] = written.length ? [{ action: 'delete', factoryAutomationId: automationId, repos: written }] : [];
      await write(principal, automationId, 'delete', edits, (tx) =>
        tx.ciAutomation.update({ where: { id: automationId }, data: { status: 'deleted', updatedAt: clock.now() } }),
      );
    },
  };
}
export type AutomationDeclarations = ReturnType<typeof automationDeclarations>;
