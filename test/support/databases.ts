import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { TEMPLATE_DB, withDatabase } from './global-setup.ts';

/** The PostgreSQL server for this run, or undefined when the machine has none (never under CI). */
export function postgresUrl(): string | undefined {
  return inject('postgresUrl') || undefined;
}

/** Why the tests on PostgreSQL cannot run here, or undefined when they can. */
export function postgresMissing(): string | undefined {
  return postgresUrl() ? undefined : 'PostgreSQL is not installed (apt-get install postgresql) and DATABASE_URL is not set';
}

/** A fresh, migrated database copied from the template; drop it when done. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = postgresUrl();
  if (!adminUrl) throw new Error('no PostgreSQL server for tests');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminUrl, name),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
