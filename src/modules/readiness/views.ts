import type { ReadinessEvaluation, ReadinessReport } from '../../generated/prisma/client.ts';
import type { Evaluation, EvaluationStatus, Report } from './schemas.ts';

export function toReport(row: ReadinessReport): Report {
  return {
    reportId: row.id,
    createdAt: row.createdAt.getTime(),
    repoUrl: row.repoUrl,
    apps: row.apps as Report['apps'],
    report: row.report as Report['report'],
    commitHash: row.commitHash,
    branch: row.branch,
    hasLocalChanges: row.hasLocalChanges,
    hasNonRemoteCommits: row.hasNonRemoteCommits,
    modelUsed: (row.modelUsed as Report['modelUsed']) ?? null,
    agentVersion: row.agentVersion,
  };
}

export function toEvaluation(row: ReadinessEvaluation, level: number | null): Evaluation {
  return {
    evaluationId: row.id,
    status: row.status as EvaluationStatus,
    repoUrl: row.repoUrl,
    branch: row.branch,
    computerId: row.computerId,
    reportId: row.reportId,
    level,
    error: row.error,
    createdAt: row.createdAt.getTime(),
    startedAt: row.startedAt?.getTime() ?? null,
    completedAt: row.completedAt?.getTime() ?? null,
  };
}
