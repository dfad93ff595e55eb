import type { Db } from '../../db/client.ts';

export function createSystemService(deps: { db: Db; pendingMigrations: () => Promise<string[]> }) {
  return {
    /** Ready = the database answers and its schema is current; either failing takes the replica out. */
    async readiness() {
      const database = await deps.db.$queryRaw`SELECT 1`.then(
        () => true,
        () => false,
      );
      const migrations =
        database &&
        (await deps.pendingMigrations().then(
          (p) => p.length === 0,
          () => false,
        ));
      return { status: database && migrations ? ('ready' as const) : ('not_ready' as const), checks: { database, migrations } };
    },
  };
}
export type SystemService = ReturnType<typeof createSystemService>;
