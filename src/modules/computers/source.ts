import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { AppError, BadRequest, NotFound } from '../../lib/errors.ts';
import { liveTemplate } from '../computer-templates/deps.ts';
import { reachableComputer } from './access.ts';
import type { CreateComputerInput } from './schemas.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import { isProgramTemplate, PROGRAM_PROVIDER, readyCurrentVersion } from './program-template.ts';

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
  /** A program template's computer: the version (its current one, preview passed) its stack runs. */
  templateVersionId?: string;
}

/**
 * Applies a create request's `source`. A template (`template` and `execution-template` alike: the
 * spec tells them apart by name only) fills in what the request leaves out. A `computer` source
 * must be an active computer the caller can reach; its workspace is copied during provisioning.
 * A source that does not qualify is 400: the body is wrong.
 */
export async function applySource(db: Db, principal: Principal, input: CreateComputerInput): Promise<SourcedInput> {
  const plain = { provider: input.provider, repos: input.repos ?? [], autoInstallDeps: input.autoInstallDeps ?? false, isListed: true };
  const source: Source | undefined = input.source;
  if (!source) return plain;
  if (source.kind === 'computer') {
    const from = await reachableComputer(db, principal, source.sourceComputerId).catch((err: unknown) => {
      throw err instanceof AppError ? new BadRequest(`source.sourceComputerId: ${err.message}`) : err;
    });
    if (from.status !== 'active') throw new BadRequest(`source computer "${from.name}" is ${from.status}; its workspace is copied from an active computer`);
    return { ...plain, source: { kind: 'computer', sourceComputerId: from.id } };
  }
  const template = await liveTemplate(db, principal.organizationId, source.templateId).catch((err: unknown) => {
    throw err instanceof NotFound ? new BadRequest(`source.templateId ${source.templateId} is not a computer template of this organization`) : err;
  });
  const program = isProgramTemplate(template) ? await programOf(db, template, input.provider) : {};
  return {
    provider: input.provider ?? template.provider ?? undefined,
    ...program,
    repos: input.repos ?? template.repos,
    autoInstallDeps: input.autoInstallDeps ?? template.autoInstallDeps,
    isListed: source.isListed,
    source: { kind: source.kind, templateId: template.id, ...(template.setupScript ? { setupScript: template.setupScript } : {}) },
  };
}

/**
 * A program template makes `program` computers at its current version: 409 when no version has
 * passed its preview yet, 400 when the request names another provider.
 */
async function programOf(db: Db, template: ComputerTemplate, provider: string | undefined) {
  if (provider !== undefined && provider !== PROGRAM_PROVIDER) {
    throw new BadRequest(`Computer template "${template.name}" runs a program; its computers' provider is ${PROGRAM_PROVIDER}, not ${provider}`);
  }
  const version = await readyCurrentVersion(db, template);
  return { provider: PROGRAM_PROVIDER, templateVersionId: version.id };
}

/** The computer whose workspace this one starts with, if any. */
export function sourceComputerOf(source: unknown): string | undefined {
  const s = source as StoredSource | null;
  return s?.kind === 'computer' ? s.sourceComputerId : undefined;
}

/** The setup script a computer was made with, if any. */
export function setupScriptOf(source: unknown): string | undefined {
  const s = source as StoredSource | null;
  return s && s.kind !== 'computer' ? s.setupScript : undefined;
}
