// Generates the Prisma client offline. `prisma generate` needs no schema engine, but the CLI
// checks that one exists and would try to download it; any existing file satisfies the check.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const placeholder = path.join(os.tmpdir(), 'agentplane-no-schema-engine');
  if (!existsSync(placeholder)) writeFileSync(placeholder, '');
  env.PRISMA_SCHEMA_ENGINE_BINARY = placeholder;
}
const prisma = path.resolve(import.meta.dirname, '../node_modules/prisma/build/index.js');
const result = spawnSync(process.execPath, [prisma, 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
