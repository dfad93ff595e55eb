import { createHash } from 'node:crypto';
import type { PrismaClient } from '../../db/client.ts';
import { NotFound, BadRequest } from '../../lib/errors.ts';
import { ANALYTICS_EPOCH, addDays, dayStart, daysBetween } from './dates.ts';
import { insertEventRows } from './events.ts';
import { billableTokens, type AutonomyLevel, type Client, type ModelTier } from './metrics.ts';
import { rollupDays } from './rollup.ts';

/** Deterministic pseudo-random numbers (mulberry32): the same seed writes the same events. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    weighted: <T>(items: readonly (readonly [T, number])[]): T => {
      let r = next() * items.reduce((s, [, w]) => s + w, 0);
      for (const [item, w] of items) if ((r -= w) < 0) return item;
      return items[items.length - 1]![0];
    },
  };
}
type Rng = ReturnType<typeof prng>;

const MODELS: readonly (readonly [[string, ModelTier], number])[] = [
  [['claude-sonnet-4-5', 'standard'], 5],
  [['claude-opus-4-1', 'thinking'], 2],
  [['gpt-5-codex', 'standard'], 3],
  [['gpt-5', 'thinking'], 1],
  [['gemini-2.5-pro', 'standard'], 1],
];
const CLIENT_WEIGHTS: readonly (readonly [Client, number])[] = [
  ['terminal-ui', 6],
  ['web', 3],
  ['non-interactive-cli', 1],
];
const LANGUAGES: readonly (readonly [[string, string], number])[] = [
  [['TypeScript', 'ts'], 6],
  [['Python', 'py'], 4],
  [['Go', 'go'], 2],
  [['Rust', 'rs'], 1],
  [['Java', 'java'], 1],
  [['Markdown', 'md'], 2],
  [['SQL', 'sql'], 1],
  [['YAML', 'yaml'], 1],
];
const TOOLS: readonly (readonly [string, number])[] = [
  ['Read', 10],
  ['Grep', 5],
  ['Glob', 3],
  ['LS', 2],
  ['Edit', 8],
  ['Create', 2],
  ['Execute', 6],
  ['TodoWrite', 2],
  ['WebSearch', 1],
];
const MCP_TOOLS: readonly (readonly [string, string])[] = [
  ['linear', 'linear___create_issue'],
  ['linear', 'linear___search_issues'],
  ['github', 'github___get_pull_request'],
  ['sentry', 'sentry___get_issue'],
];
const LEVELS: readonly (readonly [AutonomyLevel, number])[] = [
  ['auto-high', 3],
  ['auto-medium', 4],
  ['auto-low', 3],
  ['spec', 1],
  ['manual', 1],
];
const SKILLS = ['frontend-design', 'db-migrations', 'release-notes'];
const SLASH = ['/review', '/compress', '/model', '/mcp', '/settings'];
const HOOKS = [
  ['PreToolUse', 'Execute', './scripts/check-command.sh'],
  ['PostToolUse', 'Edit|Create', 'npx prettier --write'],
  ['SessionStart', '', 'git fetch --quiet'],
] as const;

interface Profile {
  userId: string;
  /** Chance of working on a weekday; weekends are a fifth of it. */
  activity: number;
  clients: Client[];
  model: readonly [string, ModelTier];
  level: AutonomyLevel;
  languages: (readonly [string, string])[];
  usesMcp: boolean;
}

function profile(r: Rng, userId: string): Profile {
  const first = r.weighted(CLIENT_WEIGHTS);
  const second = r.chance(0.3) ? r.weighted(CLIENT_WEIGHTS) : first;
  const languages = [r.weighted(LANGUAGES)];
  if (r.chance(0.5)) languages.push(r.weighted(LANGUAGES));
  return {
    userId,
    activity: 0.5 + r.next() * 0.45,
    clients: [...new Set([first, second])],
    model: r.weighted(MODELS),
    level: r.weighted(LEVELS),
    languages,
    usesMcp: r.chance(0.35),
  };
}

/** One user's events of one day, appended to `rows` in insertEventRows' column order. */
function userDay(r: Rng, org: string, p: Profile, day: string, rows: unknown[][]): void {
  const base = dayStart(day).getTime();
  for (let s = 0, sessions = r.int(1, 2); s < sessions; s++) {
    const client = r.pick(p.clients);
    const sessionId = `seed-${p.userId}-${day}-${s}`;
    // Sessions start between 07:00 and 19:00 UTC and stay inside the day.
    let t = base + (7 + s * 6) * 3_600_000 + r.int(0, 5 * 3_600_000);
    const at = () => new Date((t += r.int(1_000, 60_000))).toISOString();
    const ev = (kind: string, f: Partial<Record<string, unknown>> = {}) =>
      rows.push([
        org,
        p.userId,
        at(),
        kind,
        sessionId,
        client,
        f.model ?? null,
        f.tier ?? null,
        f.input ?? 0,
        f.output ?? 0,
        f.cacheRead ?? 0,
        f.cacheWrite ?? 0,
        f.tool ?? null,
        f.mcp ?? null,
        f.level ?? null,
        f.name ?? null,
        f.hookEvent ?? null,
        f.hookMatcher ?? null,
        f.hookCommand ?? null,
        f.role ?? null,
        f.extension ?? null,
        f.language ?? null,
        f.credits ?? 0,
      ]);
    ev('session_started');
    if (r.chance(0.3)) ev('hook', { hookEvent: HOOKS[2][0], hookMatcher: HOOKS[2][1], hookCommand: HOOKS[2][2] });
    if (r.chance(0.15)) ev('slash_command', { name: r.pick(SLASH) });
    for (let turn = 0, turns = r.int(1, 5); turn < turns; turn++) {
      ev('user_turn');
      ev('message', { role: 'user' });
      if (r.chance(0.05)) ev('skill', { name: r.pick(SKILLS) });
      for (let c = 0, calls = r.int(0, 6); c < calls; c++) {
        const level = r.chance(0.8) ? p.level : r.weighted(LEVELS);
        if (p.usesMcp && r.chance(0.15)) {
          const [mcp, tool] = r.pick(MCP_TOOLS);
          ev('tool_call', { tool, mcp, level });
          continue;
        }
        const tool = r.weighted(TOOLS);
        ev('tool_call', { tool, level });
        if (tool === 'Edit' || tool === 'Create') {
          const [language, extension] = r.pick(p.languages);
          ev(tool === 'Edit' ? 'file_edited' : 'file_created', { language, extension });
          if (r.chance(0.2)) ev('hook', { hookEvent: HOOKS[1][0], hookMatcher: HOOKS[1][1], hookCommand: HOOKS[1][2] });
        } else if (tool === 'Execute' && r.chance(0.3)) {
          ev('hook', { hookEvent: HOOKS[0][0], hookMatcher: HOOKS[0][1], hookCommand: HOOKS[0][2] });
        }
      }
      const [model, tier] = r.chance(0.85) ? p.model : r.weighted(MODELS);
      const tokens = { input: r.int(500, 20_000), output: r.int(200, 6_000), cacheRead: r.int(0, 80_000), cacheWrite: r.int(0, 8_000) };
      ev('token_usage', { model, tier, ...tokens, credits: billableTokens(tokens) });
      ev('message', { role: 'assistant' });
    }
    if (r.chance(0.4)) ev('git_commit');
    if (r.chance(0.08)) ev('pull_request_created');
  }
}

export interface SeedOptions {
  organizationId: string;
  users: number;
  days: number;
  /** The last seeded day (UTC); the first is `days - 1` days before it. */
  endDay: string;
  seed: number;
  /** Called after each seeded day, for progress output. */
  onDay?: (day: string, events: number) => void;
}

/** Rows buffered before a flush: bounds memory while keeping INSERTs large. */
const FLUSH_ROWS = 20_000;

/**
 * Writes synthetic events for demos and benchmarks: `users` members of the organization (created
 * if missing) with a weekday/weekend rhythm over `days` days, then rolls those days up. Seeded
 * events carry `seed-` session ids; seeding the same days again replaces them, so re-running with
 * the same seed gives the same data.
 */
export async function seedAnalytics(prisma: PrismaClient, opts: SeedOptions): Promise<{ events: number; days: string[]; userIds: string[] }> {
  const org = await prisma.organization.findUnique({ where: { id: opts.organizationId } });
  if (!org) throw new NotFound(`No organization with id ${opts.organizationId}; see \`agentplane bootstrap --json\` for its id`);
  const startDay = addDays(opts.endDay, -(opts.days - 1));
  if (startDay < ANALYTICS_EPOCH) {
    throw new BadRequest(`--days ${opts.days} reaches back to ${startDay}, before analytics history starts (${ANALYTICS_EPOCH}); use fewer days`);
  }
  const tag = createHash('sha256').update(org.id).digest('hex').slice(0, 8);
  const userIds = Array.from({ length: opts.users }, (_, i) => `usr_seed${tag}_${String(i + 1).padStart(5, '0')}`);
  await prisma.user.createMany({
    data: userIds.map((id, i) => ({ id, email: `seed-user-${i + 1}@${tag}.seed.invalid`, firstName: 'Seed', lastName: `User ${i + 1}` })),
    skipDuplicates: true,
  });
  await prisma.membership.createMany({
    data: userIds.map((userId) => ({ id: `mem_${userId.slice(4)}`, organizationId: org.id, userId, role: 'user' as const })),
    skipDuplicates: true,
  });
  await prisma.$executeRawUnsafe(
    `DELETE FROM analytics_events WHERE organization_id = $1 AND session_id LIKE 'seed-%'
        AND occurred_at >= $2::timestamptz AND occurred_at < $3::timestamptz`,
    org.id,
    dayStart(startDay).toISOString(),
    dayStart(addDays(opts.endDay, 1)).toISOString(),
  );

  const r = prng(opts.seed);
  const profiles = userIds.map((id) => profile(r, id));
  const days = daysBetween(startDay, opts.endDay);
  let rows: unknown[][] = [];
  let events = 0;
  for (const day of days) {
    const weekday = ![0, 6].includes(dayStart(day).getUTCDay());
    const before = events + rows.length;
    for (const p of profiles) if (r.chance(weekday ? p.activity : p.activity / 5)) userDay(r, org.id, p, day, rows);
    if (rows.length >= FLUSH_ROWS) {
      await insertEventRows(prisma, rows);
      events += rows.length;
      rows = [];
    }
    opts.onDay?.(day, events + rows.length - before);
  }
  await insertEventRows(prisma, rows);
  events += rows.length;
  await rollupDays(prisma, org.id, days);
  return { events, days, userIds };
}
