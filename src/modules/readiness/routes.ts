import { roleAtLeast } from '../../auth/principal.ts';
import type { Guard } from '../../auth/guards.ts';
import { defineRoute } from '../../http/route.ts';
import { Forbidden } from '../../lib/errors.ts';
import { EvaluateBodySchema, EvaluationParamsSchema, EvaluationSchema, ListQuerySchema, ReportInputSchema, ReportListSchema, ReportSchema } from './schemas.ts';
import type { ReadinessService } from './service.ts';

const BASE = '/api/organization/agent-readiness-reports';
/** The path before the rename; same shape (wire reference 6). */
const LEGACY = '/api/organization/maturity-level-reports';
const TAGS = ['Readiness Reports'];

/** Reading reports is open to every member; writing them is not for guests. */
const notGuest: Guard = (p) => {
  if (!roleAtLeast(p.role, 'user')) throw new Forbidden('Guests can read readiness reports but not create them; ask a manager for the user role');
};

export function readinessRoutes(service: ReadinessService, opts: { appUrl?: string } = {}) {
  const list = (path: string, operationId: string, summary: string) =>
    defineRoute({
      method: 'get',
      path,
      operationId,
      summary,
      tags: TAGS,
      query: ListQuerySchema,
      responses: { 200: { description: 'Reports, newest first', schema: ReportListSchema } },
      errors: [400, 401, 500],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.list(principal, query) }),
    });
  return [
    list(BASE, 'listAgentReadinessReports', 'List agent-readiness reports of the organization'),
    list(LEGACY, 'listReadinessReports', 'List readiness reports (the earlier path of listAgentReadinessReports)'),
    defineRoute({
      method: 'post',
      path: BASE,
      operationId: 'createReadinessReport',
      summary: 'Store a readiness report evaluated elsewhere',
      tags: TAGS,
      guards: [notGuest],
      body: ReportInputSchema,
      responses: { 201: { description: 'The stored report', schema: ReportSchema } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, body }) => ({ status: 201, body: await service.ingest(principal, body) }),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/evaluate`,
      operationId: 'evaluateRepositoryReadiness',
      summary: 'Clone a repository and evaluate it with the built-in criteria, in the background',
      tags: TAGS,
      guards: [notGuest],
      body: EvaluateBodySchema,
      responses: { 202: { description: 'The evaluation, queued; poll its Location', schema: EvaluationSchema } },
      errors: [400, 401, 403, 404, 500, 503],
      handler: async ({ principal, body }) => {
        const evaluation = await service.evaluate(principal, body);
        const location = `${opts.appUrl?.replace(/\/+$/, '') ?? ''}${BASE}/evaluations/${evaluation.evaluationId}`;
        return { status: 202, body: evaluation, headers: { location } };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/evaluations/{evaluationId}`,
      operationId: 'getReadinessEvaluation',
      summary: 'Status of an evaluation, and its report once it succeeded',
      tags: TAGS,
      params: EvaluationParamsSchema,
      responses: { 200: { description: 'The evaluation', schema: EvaluationSchema } },
      errors: [401, 404, 500],
      handler: async ({ principal, params }) => ({ status: 200, body: await service.evaluation(principal, params.evaluationId) }),
    }),
  ];
}
