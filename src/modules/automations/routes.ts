import type { Guard } from '../../auth/guards.ts';
import { roleAtLeast } from '../../auth/principal.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { Forbidden } from '../../lib/errors.ts';
import {
  CiJobSchema,
  EditBody,
  EditResponse,
  JobIdParams,
  JobsQuery,
  JobsResponse,
  OwnersResponse,
  RepositoriesQuery,
  RepositoriesResponse,
  RunCompleteBody,
  RunStartBody,
  RunStartResponse,
  RunsQuery,
  RunsResponse,
  ScanQuery,
  ScanResponse,
} from './schemas.ts';
import type { AutomationsService } from './service.ts';

const BASE = '/api/v0/automations/ci';
const tags = ['CI Automations'];

/** Opening pull requests on the organization's repositories is not for guests. */
const notGuest: Guard = (p) => {
  if (!roleAtLeast(p.role, 'user')) throw new Forbidden('Guests can read CI automations but not change them; ask a manager for the user role');
};

/** Spec 4.7, and the two calls `agentplane ci run` makes from CI (agentplane extensions). */
export function automationRoutes(service: AutomationsService): RouteSpec[] {
  return [
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/repository-owners`,
      operationId: 'listCiRepositoryOwners',
      summary: 'List CI repository owners: the connected account and its organizations',
      responses: { 200: { description: 'Owners', schema: OwnersResponse } },
      errors: [401, 500, 502],
      handler: async ({ principal }) => ({ status: 200, body: await service.owners(principal) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/repositories`,
      operationId: 'listCiRepositories',
      summary: 'List CI-eligible repositories (not archived, writable by the connection)',
      query: RepositoriesQuery,
      responses: { 200: { description: 'Repositories', schema: RepositoriesResponse } },
      errors: [400, 401, 500, 502],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.repositories(principal, query.owner) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/scan`,
      operationId: 'scanCiWorkflows',
      summary: 'Scan repositories for CI workflows (cached 30 minutes per organization)',
      query: ScanQuery,
      responses: { 200: { description: 'Workflows found', schema: ScanResponse } },
      errors: [400, 401, 500, 502],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.scan(principal, query.forceRefresh === 'true') }),
    }),
    defineRoute({
      tags,
      method: 'post',
      path: `${BASE}/edit`,
      operationId: 'editCiWorkflow',
      summary: 'Open a CI workflow pull request (create, edit or delete a workflow) in each repository',
      guards: [notGuest],
      body: EditBody,
      responses: { 200: { description: 'What happened in each repository', schema: EditResponse } },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.edit(principal, body) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/jobs`,
      operationId: 'listCiJobs',
      summary: 'List CI automation jobs: every edit request and automation run, newest first',
      query: JobsQuery,
      responses: { 200: { description: 'Jobs', schema: JobsResponse } },
      errors: [400, 401, 500],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.jobs(principal, query) }),
    }),
    defineRoute({
      tags,
      method: 'get',
      path: `${BASE}/runs`,
      operationId: 'listCiRuns',
      summary: "List the forge's workflow runs of the automations' workflows, newest first",
      query: RunsQuery,
      responses: { 200: { description: 'Runs', schema: RunsResponse } },
      errors: [400, 401, 500, 502],
      handler: async ({ principal, query }) => ({ status: 200, body: await service.runs(principal, query) }),
    }),
    defineRoute({
      tags,
      method: 'post',
      path: `${BASE}/jobs`,
      operationId: 'startCiAutomationRun',
      summary: 'A workflow run of an automation begins (called by `agentplane ci run`)',
      guards: [notGuest],
      body: RunStartBody,
      responses: { 200: { description: 'The run, or why it does not run (paused, skipped)', schema: RunStartResponse } },
      errors: [400, 401, 403, 404, 500, 502],
      handler: async ({ principal, body }) => ({ status: 200, body: await service.startRun(principal, body) }),
    }),
    defineRoute({
      tags,
      method: 'post',
      path: `${BASE}/jobs/{jobId}/complete`,
      operationId: 'completeCiAutomationRun',
      summary: 'A workflow run of an automation ends; its result is posted to the pull request',
      guards: [notGuest],
      params: JobIdParams,
      body: RunCompleteBody,
      responses: { 200: { description: 'The finished job', schema: CiJobSchema } },
      errors: [400, 401, 403, 404, 409, 500],
      handler: async ({ principal, params, body }) => ({ status: 200, body: await service.completeRun(principal, params.jobId, body) }),
    }),
  ];
}
