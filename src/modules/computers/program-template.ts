import type { Db } from '../../db/client.ts';
import type { ComputerTemplate, ComputerTemplateVersion } from '../../generated/prisma/client.ts';
import { Conflict } from '../../lib/errors.ts';

export { PROGRAM_PROVIDER } from '../../provisioning/programs/provider.ts';

/** A version whose preview passed: the only kind a computer is made from, updated to or claimed at. */
export const READY_VERSION = 'ready';

/** Whether the template names a program (environments as code) rather than a built-in provider. */
export const isProgramTemplate = (t: Pick<ComputerTemplate, 'programRepository'> | null | undefined): boolean => !!t?.programRepository;

/**
 * The version new computers of a program template get: its current one, which must have passed
 * its preview. 409 otherwise, saying why when the template knows (programError).
 */
export async function readyCurrentVersion(db: Db, template: ComputerTemplate): Promise<ComputerTemplateVersion> {
  const version = template.currentVersionId
    ? await db.computerTemplateVersion.findFirst({ where: { id: template.currentVersionId, templateId: template.id, status: READY_VERSION } })
    : null;
  if (version) return version;
  const why = template.programError ? `: ${template.programError}` : '; its preview is still running or the ref was not resolved yet';
  throw new Conflict(`Computer template "${template.name}" runs a program that has no version whose preview passed yet${why}`);
}
