import type { Db } from '../../../db/client.ts';
import { BadRequest } from '../../../lib/errors.ts';
import type { CreateComputerInput } from '../schemas.ts';

type Source = NonNullable<CreateComputerInput['source']>;

/** What a computer is made from, as stored on it: the template's setup script is copied, so later edits do not change it. */
export type StoredSource =
  | { kind: 'template' | 'execution-template'; templateId: string; setupScript?: string }
  | { kind: 'computer'; sourceComputerId: string };

/** A create request with its `source` applied: a template fills in what the request leaves out. */
export interface SourcedInput {
  provider?: string;
  repos: string[];
  autoInstallDeps: boolean;
  isListed: boolean;
  source?: StoredSource;
}

/**
 * Applies a template source (`template` and `execution-template` alike: the spec tells them apart
 * by name only) to a create request. An unknown or deleted template is 400: the body is wrong.
 */
export async function applySource(db: Db, organizationId: string, input: CreateComputerInput): Promise<SourcedInput> {
  const plain = { provider: input.provider, repos: input.repos ?? [], autoInstallDeps: input.autoInstallDeps ?? false, isListed: true };
  const source: Source | undefined = input.source;
  if (!source) return plain;
  if (source.kind === 'computer') {
    throw new BadRequest('source kind "computer" is not supported yet; create the computer from a template or without a source');
  }
  const template = await db.computerTemplate.findFirst({ where: { id: source.templateId, organizationId, deletedAt: null } });
  if (!template) throw new BadRequest(`source.templateId ${source.templateId} is not a computer template of this organization`);
  return {
    provider: input.provider ?? template.provider ?? undefined,
    repos: input.repos ?? template.repos,
    autoInstallDeps: input.autoInstallDeps ?? template.autoInstallDeps,
    isListed: source.isListed,
    source: { kind: source.kind, templateId: template.id, ...(template.setupScript ? { setupScript: template.setupScript } : {}) },
  };
}

/** The setup script a computer was made with, if any. */
export function setupScriptOf(source: unknown): string | undefined {
  const s = source as StoredSource | null;
  return s && s.kind !== 'computer' ? s.setupScript : undefined;
}
