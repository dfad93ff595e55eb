import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/db/migrate.ts';
import { MIGRATIONS_DIR } from '../../src/db/migrations.ts';
import { fromPglite, type SqlConnection } from '../../src/db/sql.ts';

const MIGRATION = '20261123191842_analytics_serving';

/** Days rolled up before the migration: /users rows only in columns, by_user with every user. */
describe(`migration ${MIGRATION}`, () => {
  let db: PGlite;
  let conn: SqlConnection;
  let before: string;

  beforeAll(async () => {
    db = new PGlite();
    conn = fromPglite(db);
    before = await mkdtemp(path.join(tmpdir(), 'agentplane-migrations-'));
    await cp(MIGRATIONS_DIR, before, { recursive: true, filter: (src) => !src.includes(MIGRATION) });
    await applyMigrations(conn, { migrationsDir: before });
    await conn.query(`INSERT INTO organizations (id, name, updated_at) VALUES ('org_1', 'one', now())`);
    await conn.query(
      `INSERT INTO analytics_user_days (organization_id, day, user_id, tool_calls, mcp_calls, skill_calls, slash_commands, hooks,
         user_turns, sessions, user_messages, assistant_messages, files_created, files_edited, git_commits, git_prs_created,
         billable_tokens, primary_model, primary_model_tier, autonomy_ratio, delegation_level, languages, clients)
       VALUES ('org_1', '2026-02-27', 'usr_1', 5, 1, 1, 1, 2, 2, 2, 3, 3, 1, 2, 1, 0, 2950, 'claude-sonnet-4-5', 'standard', 2.5,
               'auto-high', '{TypeScript,Python}', '{terminal-ui,web}'),
              ('org_1', '2026-02-27', 'usr_2', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, '', 'standard', 0, 'manual', NULL, '{}')`,
    );
    const byUser = Array.from({ length: 12 }, (_, i) => ({ user_id: `usr_${i}`, billable_tokens: 1200 - i * 100, by_model: [] }));
    await conn.query(
      `INSERT INTO analytics_org_days (organization_id, day, daily_active_users, tokens, tokens_by_user, tools, activity, productivity)
       VALUES ('org_1', '2026-02-27', 12, '{}', $1::jsonb, '{}', '{}', '{}'), ('org_1', '2026-02-28', 2, '{}', $2::jsonb, '{}', '{}', '{}')`,
      [JSON.stringify(byUser), JSON.stringify(byUser.slice(0, 2))],
    );
    expect(await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual({ applied: [MIGRATION] });
  }, 60_000);

  afterAll(async () => {
    await db?.close();
    if (before) await rm(before, { recursive: true, force: true });
  });

  it('renders each user-day as the roll-up renders its /users row: compact, in the same key order', async () => {
    const { rows } = await conn.query<{ users_row: string }>(`SELECT users_row::text AS users_row FROM analytics_user_days ORDER BY user_id`);
    expect(rows.map((r) => r.users_row)).toEqual([
      JSON.stringify({
        user_id: 'usr_1',
        date: '2026-02-27',
        tool_calls: 5,
        billable_tokens: 2950,
        primary_model: 'claude-sonnet-4-5',
        primary_model_tier: 'standard',
        files_created: 1,
        files_edited: 2,
        git_commits: 1,
        git_prs_created: 0,
        mcp_calls: 1,
        skill_calls: 1,
        slash_commands: 1,
        hooks: 2,
        sessions: 2,
        messages: 6,
        user_messages: 3,
        assistant_messages: 3,
        autonomy_ratio: 2.5,
        delegation_level: 'auto-high',
        languages: ['TypeScript', 'Python'],
      }),
      JSON.stringify({
        user_id: 'usr_2',
        date: '2026-02-27',
        tool_calls: 0,
        billable_tokens: 0,
        primary_model: '',
        primary_model_tier: 'standard',
        files_created: 0,
        files_edited: 0,
        git_commits: 1,
        git_prs_created: 0,
        mcp_calls: 0,
        skill_calls: 0,
        slash_commands: 0,
        hooks: 0,
        sessions: 0,
        messages: 0,
        user_messages: 0,
        assistant_messages: 0,
        autonomy_ratio: 0,
        delegation_level: 'manual',
        languages: [],
      }),
    ]);
  });

  it("keeps each day's first 10 by_user entries, the largest, in order", async () => {
    const { rows } = await conn.query<{ ids: string[] }>(
      `SELECT ARRAY(SELECT e->>'user_id' FROM jsonb_array_elements(tokens_by_user) AS e) AS ids FROM analytics_org_days ORDER BY day`,
    );
    expect(rows.map((r) => r.ids)).toEqual([Array.from({ length: 10 }, (_, i) => `usr_${i}`), ['usr_0', 'usr_1']]);
  });
});
