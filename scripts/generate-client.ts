// Regenerates clients/typescript/src/schema.ts from the OpenAPI document the app serves.
// `node scripts/generate-client.ts` builds the document in-process (no database needed);
// `node scripts/generate-client.ts http://host:port` reads it from a running server instead.
import fs from 'node:fs';
import path from 'node:path';
import { schemaSource } from '../clients/typescript/generate.ts';
import { appWithoutDatabase } from '../test/support/route-table.ts';
import { buildOpenApiDocument } from '../src/http/openapi.ts';

const url = process.argv[2];
const document = url ? await (await fetch(new URL('/api/v0/openapi.json', url))).json() : buildOpenApiDocument((await appWithoutDatabase()).routes);
const target = path.resolve(import.meta.dirname, '../clients/typescript/src/schema.ts');
fs.writeFileSync(target, await schemaSource(document));
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
