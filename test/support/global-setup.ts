import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/client.ts';
import { kubeRunDirectory } from './kube-cluster.ts';
import { startPostgres, type PostgresServer } from './postgres-server.ts';
import { skipWithout } from './parts.ts';
import { pgliteTemplate, prepareTemplate } from './pglite-template.ts';

export const TEMPLATE_DB = 'agentplane_template';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the PostgreSQL server for tests; empty when none is available. */
    postgresUrl: string;
  }
}

/**
 * Starts one PostgreSQL server for the whole run (or uses DATABASE_URL) and prepares a template
 * database once (migrations and the job queue's tables, see prepareTemplate); each test copies it
 * with CREATE DATABASE ... TEMPLATE instead of doing that again. Likewise a prepared PGlite
 * directory (kept between runs), which tests copy instead of paying PGlite's initdb each.
 */
export default async function setup(project: TestProject) {
  useCompileCache();
  // Both templates at once: PostgreSQL's initdb runs in its own processes meanwhile.
  const pglite = pgliteTemplate();
  let server: PostgresServer | undefined;
  let url = process.env.DATABASE_URL ?? '';
  if (!url) {
    server = await startPostgres();
    if (!server) skipWithout('the tests on PostgreSQL', 'PostgreSQL is not installed (apt-get install postgresql)');
    url = server?.url ?? '';
  }
  if (url) await preparePostgresTemplate(url);
  project.provide('postgresUrl', url);
  project.provide('pgliteTemplate', await pglite);
  // The Kubernetes test cluster starts only when a test file asks for it (kube-cluster.ts).
  const kube = kubeRunDirectory();
  project.provide('kubeRunDir', kube.dir);
  return async () => {
    kube.teardown();
    await server?.stop();
  };
}

/**
 * Node's compile cache for every test worker and every process the tests start (the CLI, servers,
 * agents): the app's modules are compiled and their types stripped once, not in each of them.
 */
function useCompileCache(): void {
  process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'agentplane-node-compile-cache');
}

async function preparePostgresTemplate(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const db = await openDatabase({ databaseUrl: withDatabase(adminUrl, TEMPLATE_DB), dataDir: os.tmpdir() });
  try {
    await prepareTemplate(db);
  } finally {
    await db.close();
  }
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
