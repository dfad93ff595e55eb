import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'vitest';

/**
 * The hosted platform's own published OpenAPI documents (analytics, readiness reports), kept in
 * the shared folder beside the spec. agentplane's answers must validate against them.
 */
const DOCS = ['analytics-api.json', 'readiness-reports-api.json'];
const OFFICIAL_DIR = path.resolve(import.meta.dirname, '../../../shared/spec/official');

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>; components: object };

/** OpenAPI 3.0's `nullable` as JSON Schema: `type: [T, 'null']`. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (k !== 'nullable' && k !== 'example') out[k] = jsonSchema(v);
  const o = node as { nullable?: boolean; type?: string };
  if (o.nullable && typeof o.type === 'string') out.type = [o.type, 'null'];
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s));
ajv.addFormat('email', /^[^@\s]+@[^@\s]+$/);
ajv.addFormat('uri', (s: string) => URL.canParse(s));

const responses = new Map<string, Doc['paths'][string]['get']['responses']>();
for (const file of DOCS) {
  const doc = JSON.parse(fs.readFileSync(path.join(OFFICIAL_DIR, file), 'utf8')) as Doc;
  ajv.addSchema({ components: jsonSchema(doc.components) } as object, file);
  for (const [p, ops] of Object.entries(doc.paths)) {
    for (const res of Object.values(ops.get!.responses)) {
      const schema = res.content?.['application/json']?.schema as { $ref?: string } | undefined;
      if (schema?.$ref) schema.$ref = `${file}${schema.$ref}`;
    }
    responses.set(p, ops.get!.responses);
  }
}
const compiled = new Map<string, ValidateFunction>();

/** The official document's path for one of ours (agent-readiness-reports is the newer name of the same list). */
const officialPath = (p: string) => p.replace('/api/organization/agent-readiness-reports', '/api/organization/maturity-level-reports');

/** The paths the official documents describe (GET each). */
export const OFFICIAL_PATHS = [...responses.keys()];

/**
 * Fails, naming each problem, unless `body` is what the official document says `GET path`
 * answers with `status`. A status the document does not list fails too.
 */
export function expectOfficialResponse(requestPath: string, status: number, body: unknown): void {
  const p = officialPath(requestPath.split('?')[0]!);
  const documented = responses.get(p);
  expect(documented, `${p} is not in the official documents`).toBeDefined();
  const schema = documented![String(status)]?.content?.['application/json']?.schema;
  expect(schema, `the official document lists no ${status} answer for GET ${p}`).toBeDefined();
  const key = `${p} ${status}`;
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = ajv.compile(schema!)));
  const ok = validate(body);
  expect(ok ? [] : validate.errors!.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`), `GET ${requestPath} ${status}`).toEqual(
    [],
  );
}
