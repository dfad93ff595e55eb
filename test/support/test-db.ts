import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { createTestDatabase, postgresMissing } from './databases.ts';
import { skipWithout } from './parts.ts';
import { seedDataDir } from './pglite-template.ts';

export type Backend = 'pglite' | 'postgres';

/** Both databases agentplane runs on; PostgreSQL only where it is here (see parts.ts). */
export const BACKENDS: Backend[] = skipWithout('the tests on PostgreSQL', postgresMissing()) ? ['pglite'] : ['pglite', 'postgres'];

/** A fresh, migrated database of the given kind, with a `dispose` that removes it. */
export async function openTestDatabase(kind: Backend): Promise<Database & { dispose(): Promise<void> }> {
  if (kind === 'postgres') {
    const created = await createTestDatabase();
    const db = await openDatabase({ databaseUrl: created.url, dataDir: os.tmpdir() });
    return Object.assign(db, {
      dispose: async () => {
        await db.close();
        await created.drop();
      },
    });
  }
  const dir = seedDataDir(fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-db-')));
  const db = await openDatabase({ dataDir: dir });
  return Object.assign(db, {
    dispose: async () => {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
}
