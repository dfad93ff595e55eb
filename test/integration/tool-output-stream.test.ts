import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { createEventHub, type EventHub } from '../../src/modules/events/hub.ts';
import type { WireEvent } from '../../src/modules/events/wire.ts';
import { CHUNK_CHARS, sessionToolOutput, splitChunks, TOOL_OUTPUT_LIVE_MAX_CHARS } from '../../src/modules/sessions/session-events.ts';
import { openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The bounds of `session.tool_output` at the edges the e2e tests cannot aim at: characters that
 * need long JSON escapes, surrogate pairs at a chunk's end, output that fills the cap exactly.
 * Chunks go through the real NOTIFY channel and the process's hub, as a stream receives them.
 */
describe('command output chunks through NOTIFY (PGlite)', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let hub: EventHub;
  const heard: WireEvent[] = [];
  const session = { id: 'ses_tool_output', organizationId: 'org_tool_output' };

  beforeAll(async () => {
    db = await openTestDatabase('pglite');
    hub = createEventHub({ db: db.prisma, listen: db.listen, log: createLogger({ level: 'silent' }) });
    await hub.start();
    hub.subscribe({ key: `session:${session.id}`, deliver: (e) => heard.push(e), end: () => {} });
  });

  afterAll(async () => {
    await hub?.close();
    await db?.dispose();
  });

  beforeEach(() => {
    heard.length = 0;
  });

  const chunks = (toolUseId: string) =>
    heard.filter((e) => (e.data as { toolUseId: string }).toolUseId === toolUseId).map((e) => e.data as Record<string, any>);
  const until = (toolUseId: string, n: number) => waitFor(`${n} chunks of ${toolUseId}`, () => chunks(toolUseId).length >= n, 5_000, 10);

  it('splits text into chunks of at most 1,000 UTF-16 units without cutting a surrogate pair', () => {
    const text = `${'a'.repeat(CHUNK_CHARS - 1)}😀${'b'.repeat(10)}`;
    const parts = splitChunks(text);
    expect(parts.map((p) => p.length)).toEqual([CHUNK_CHARS - 1, 12]);
    expect(parts.join('')).toBe(text);
    expect(splitChunks('')).toEqual([]);
  });

  it('sends chunks that need six-byte JSON escapes throughout, under the NOTIFY limit', async () => {
    const out = sessionToolOutput(db.prisma, session, 10);
    const control = '\u0001'.repeat(2_500);
    out.push('call_ctrl', 'stdout', control);
    await out.flush();
    await until('call_ctrl', 3);
    expect(chunks('call_ctrl').map((c) => [c.seq, c.offset, c.text.length])).toEqual([
      [0, 0, 1_000],
      [1, 1_000, 1_000],
      [2, 2_000, 500],
    ]);
    expect(
      chunks('call_ctrl')
        .map((c) => c.text)
        .join(''),
    ).toBe(control);
  });

  it('coalesces many small writes into one event per interval, keeping stdout and stderr interleaved', async () => {
    const out = sessionToolOutput(db.prisma, session, 50);
    for (let i = 0; i < 300; i++) out.push('call_many', 'stdout', 'x');
    out.push('call_many', 'stderr', 'warn\n');
    out.push('call_many', 'stdout', 'after\n');
    await until('call_many', 3);
    await new Promise((r) => setTimeout(r, 100));
    expect(chunks('call_many')).toEqual([
      { toolUseId: 'call_many', stream: 'stdout', seq: 0, offset: 0, text: 'x'.repeat(300), truncated: false },
      { toolUseId: 'call_many', stream: 'stderr', seq: 1, offset: 0, text: 'warn\n', truncated: false },
      { toolUseId: 'call_many', stream: 'stdout', seq: 2, offset: 300, text: 'after\n', truncated: false },
    ]);
  });

  it('stops at 30,000 characters per call over both streams; output filling the cap exactly is marked truncated only when more comes', async () => {
    const out = sessionToolOutput(db.prisma, session, 10);
    out.push('call_cap', 'stdout', 'o'.repeat(TOOL_OUTPUT_LIVE_MAX_CHARS - 100));
    out.push('call_cap', 'stderr', 'e'.repeat(100));
    await out.flush();
    await until('call_cap', 31);
    expect(chunks('call_cap').every((c) => c.truncated === false)).toBe(true);
    // The next byte passes the cap: one empty event says so, and nothing more of the call follows.
    out.push('call_cap', 'stdout', 'more');
    out.push('call_cap', 'stderr', 'and more');
    // Another call in the same turn has its own budget.
    out.push('call_next', 'stdout', 'next');
    await out.flush();
    await until('call_next', 1);
    await new Promise((r) => setTimeout(r, 100));
    const cap = chunks('call_cap');
    expect(cap).toHaveLength(32);
    expect(cap.at(-1)).toEqual({ toolUseId: 'call_cap', stream: 'stdout', seq: 31, offset: TOOL_OUTPUT_LIVE_MAX_CHARS - 100, text: '', truncated: true });
    expect(cap.reduce((n, c) => n + c.text.length, 0)).toBe(TOOL_OUTPUT_LIVE_MAX_CHARS);
    expect(chunks('call_next')).toEqual([{ toolUseId: 'call_next', stream: 'stdout', seq: 0, offset: 0, text: 'next', truncated: false }]);
  });

  it('cuts output passing the cap inside a write at the cap, without splitting a surrogate pair', async () => {
    const out = sessionToolOutput(db.prisma, session, 10);
    out.push('call_emoji', 'stdout', `${'a'.repeat(TOOL_OUTPUT_LIVE_MAX_CHARS - 1)}😀tail`);
    await out.flush();
    await until('call_emoji', 30);
    const got = chunks('call_emoji');
    const text = got.map((c) => c.text).join('');
    expect(text).toBe('a'.repeat(TOOL_OUTPUT_LIVE_MAX_CHARS - 1));
    expect(got.at(-1)!.truncated).toBe(true);
    expect(got.slice(0, -1).every((c) => !c.truncated)).toBe(true);
  });
});
