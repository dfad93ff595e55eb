import type { Db } from '../../db/client.ts';
import type { Computer, ProvisioningStep } from '../../generated/prisma/client.ts';
import type { RelayUrls } from '../../relay/urls.ts';
import { POOL_OWNER } from './pool/pools.ts';
import { READY_VERSION } from './program-template.ts';
import type { ComputerView } from './schemas.ts';
import type { StoredSource } from './source.ts';
import { computerView } from './views.ts';

/** The program version a computer runs, and whether its template has a newer one for it. */
export type VersionState = Pick<ComputerView, 'templateVersion' | 'updateAvailable'>;

type Versioned = Pick<Computer, 'id' | 'templateVersionId' | 'source' | 'ownerKind' | 'deletedAt'>;

/** The template a computer was made from, if any. */
export const templateIdOf = (c: Versioned) =>
  (c.source as StoredSource | null)?.kind === 'computer' ? undefined : (c.source as { templateId?: string } | null)?.templateId;

/**
 * Each computer's version state, in two queries for any number of computers. An update is
 * available to an owned, live computer whose version is not its live template's current one (a
 * version whose preview passed): the template's current version is what its computers should run.
 */
export async function versionStates(db: Db, computers: Versioned[]): Promise<Map<string, VersionState>> {
  const out = new Map<string, VersionState>();
  const versioned = computers.filter((c) => c.templateVersionId);
  const versionIds = [...new Set(versioned.map((c) => c.templateVersionId!))];
  const templateIds = [...new Set(versioned.map(templateIdOf).filter((id): id is string => !!id))];
  const [versions, templates] = versionIds.length
    ? await Promise.all([
        db.computerTemplateVersion.findMany({ where: { id: { in: versionIds } }, select: { id: true, commit: true } }),
        db.computerTemplate.findMany({ where: { id: { in: templateIds }, deletedAt: null }, select: { id: true, currentVersionId: true } }),
      ])
    : [[], []];
  const commits = new Map(versions.map((v) => [v.id, v.commit]));
  const current = new Map(templates.map((t) => [t.id, t.currentVersionId]));
  const readyCurrent = new Set(
    (
      await currentReady(
        db,
        [...current.values()].filter((id): id is string => !!id),
      )
    ).map((v) => v.id),
  );
  for (const c of computers) {
    const id = c.templateVersionId;
    if (!id) {
      out.set(c.id, { templateVersion: null, updateAvailable: false });
      continue;
    }
    const target = current.get(templateIdOf(c) ?? '');
    const owned = c.ownerKind !== POOL_OWNER.kind && c.deletedAt === null;
    out.set(c.id, {
      templateVersion: { id, commit: commits.get(id) ?? '' },
      updateAvailable: owned && !!target && target !== id && readyCurrent.has(target),
    });
  }
  return out;
}

const currentReady = (db: Db, ids: string[]) =>
  ids.length ? db.computerTemplateVersion.findMany({ where: { id: { in: ids }, status: READY_VERSION }, select: { id: true } }) : Promise.resolve([]);

/** The wire shape of each computer (computerView), with its version state. */
export async function computerViews(db: Db, computers: (Computer & { provisioningSteps?: ProvisioningStep[] })[], relay?: RelayUrls): Promise<ComputerView[]> {
  const states = await versionStates(db, computers);
  return computers.map((c) => computerView(c, states.get(c.id)!, relay));
}

/** The wire shape of one computer, with its version state. */
export async function viewOfComputer(db: Db, computer: Computer & { provisioningSteps?: ProvisioningStep[] }, relay?: RelayUrls): Promise<ComputerView> {
  const [view] = await computerViews(db, [computer], relay);
  return view!;
}
