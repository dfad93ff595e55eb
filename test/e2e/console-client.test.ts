import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaSource } from '../../clients/typescript/generate.ts';
import { createClient } from '../../clients/typescript/src/index.ts';
import { CRITERION_LEVELS, maturityLevel as consoleLevel } from '../../console/src/readiness-levels.ts';
import { CRITERIA } from '../../src/modules/readiness/catalogue.ts';
import { maturityLevel } from '../../src/modules/readiness/levels.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { REPO_ROOT } from '../support/server-process.ts';

/** The typed client in clients/typescript: generated from the document a real server serves. */
describe('the typed client', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('pglite');
  });
  afterAll(() => api?.close());

  it('is what openapi-typescript generates from the served /api/v0/openapi.json (run `node scripts/generate-client.ts` when this fails)', async () => {
    const served = await (await fetch(`${api.url}/api/v0/openapi.json`)).json();
    const committed = fs.readFileSync(path.join(REPO_ROOT, 'clients/typescript/src/schema.ts'), 'utf8');
    expect(committed === (await schemaSource(served)), 'clients/typescript/src/schema.ts differs from the served document').toBe(true);
  });

  it('calls the API with the credential and answers data or the API’s error body', async () => {
    const client = createClient({ baseUrl: api.url, credential: api.acme.members.user.apiKey });
    const ok = await client.GET('/api/v0/computers');
    expect(ok.response.status).toBe(200);
    expect(ok.data?.computers).toEqual([]);
    const denied = await client.GET('/api/v0/service-accounts');
    expect(denied.response.status).toBe(403);
    expect(denied.error?.detail).toMatch(/manager/i);
    const anonymous = await createClient({ baseUrl: api.url, credential: () => undefined }).GET('/api/v0/computers');
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.error?.detail).toMatch(/Authorization/);
  });
});

/** A report carries no level on the wire, so the console computes it; its copy of the rule must match the server's. */
describe("the console's readiness levels", () => {
  it('name every criterion at the level the evaluator gives it', () => {
    expect(CRITERION_LEVELS).toEqual(Object.fromEntries(CRITERIA.map((c) => [c.id, c.level])));
  });

  it('compute the level the server computes, on reports passing any subset of criteria', () => {
    let seed = 1;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let i = 0; i < 500; i++) {
      const report = Object.fromEntries(CRITERIA.filter(() => random() < 0.9).map((c) => [c.id, { numerator: random() < 0.8 ? 2 : 1, denominator: 2 }]));
      expect(consoleLevel(report)).toBe(maturityLevel(report, CRITERIA));
    }
  });
});
