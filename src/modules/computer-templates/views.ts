import type { ComputerTemplate, ComputerTemplateVersion } from '../../generated/prisma/client.ts';
import type { ComputerTemplateView, PoolUpdate, TemplateVersionView } from './schemas.ts';

const webhookPath = (id: string) => `/api/v0/computer-templates/${id}/webhook`;

/** The stored pool roll settings in their wire shape. */
export function poolUpdateOf(t: Pick<ComputerTemplate, 'poolUpdate' | 'poolMaxUnavailable'>): PoolUpdate {
  if (t.poolUpdate === 'RollingUpdate') return { type: 'RollingUpdate', maxUnavailable: t.poolMaxUnavailable };
  return { type: t.poolUpdate === 'Recreate' ? 'Recreate' : 'OnReplenish' };
}

/** The versions a template points at, read with it (ids to commits). */
export type VersionCommits = ReadonlyMap<string, string>;

/**
 * A program template's status, from what its tracking stored: a commit previewing, an error
 * (the ref did not resolve, or the newest commit's preview failed), a current version, or none yet.
 */
function programStatus(t: ComputerTemplate, commits: VersionCommits): Pick<ComputerTemplateView, 'status' | 'statusMessage'> {
  if (!t.programRepository) return {};
  if (t.programError) return { status: 'failed', statusMessage: t.programError };
  if (t.candidateVersionId) return { status: 'previewing', statusMessage: `previewing commit ${commits.get(t.candidateVersionId) ?? ''}`.trim() };
  if (t.currentVersionId) return { status: 'ready' };
  return { status: 'resolving', statusMessage: `resolving ${t.programRef}` };
}

function versionRef(id: string | null, commits: VersionCommits) {
  const commit = id ? commits.get(id) : undefined;
  return id && commit ? { id, commit } : undefined;
}

export function templateView(t: ComputerTemplate, commits: VersionCommits, publicUrl: string | undefined): ComputerTemplateView {
  return {
    id: t.id,
    name: t.name,
    provider: t.programRepository ? 'program' : (t.provider ?? undefined),
    repos: t.repos,
    autoInstallDeps: t.autoInstallDeps,
    setupScript: t.setupScript ?? undefined,
    warmPoolSize: t.warmPoolSize,
    program: t.programRepository ? { repository: t.programRepository, path: t.programPath ?? '', ref: t.programRef ?? '' } : undefined,
    ...programStatus(t, commits),
    currentVersion: versionRef(t.currentVersionId, commits),
    candidateVersion: versionRef(t.candidateVersionId, commits),
    poolUpdate: poolUpdateOf(t),
    registrationTimeoutSeconds: t.registrationTimeoutSeconds,
    webhookUrl: `${publicUrl ?? ''}${webhookPath(t.id)}`,
    createdAt: t.createdAt.getTime(),
    updatedAt: t.updatedAt.getTime(),
  };
}

export interface VersionCounts {
  poolMembers: number;
  owned: number;
}

export function versionView(v: ComputerTemplateVersion, currentVersionId: string | null, computers: VersionCounts): TemplateVersionView {
  return {
    id: v.id,
    commit: v.commit,
    status: v.status === 'ready' || v.status === 'failed' ? v.status : 'previewing',
    current: v.id === currentVersionId,
    preview: (v.preview as TemplateVersionView['preview']) ?? null,
    error: v.error,
    computers,
    createdAt: v.createdAt.getTime(),
    previewedAt: v.previewedAt?.getTime() ?? null,
  };
}
