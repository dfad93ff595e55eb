import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { purgeExpiredEvents } from '../../src/modules/events/retention.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { GIT_COMMIT, skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { connectSse, type ReceivedEvent, type SseClient } from '../support/sse.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

if (skipMachineTests) console.warn('skipping the session event stream tests: sshd is missing');

const TURN_END = new Set(['session.idle', 'session.failed', 'session.interrupted']);
const durableIds = (events: ReceivedEvent[]) => events.filter((e) => e.id !== undefined).map((e) => e.id!);

/**
 * Session event streams through real HTTP: turns run by the server's worker against a scripted
 * model and a real sshd machine; on PostgreSQL the client watches from a second replica.
 */
describe.skipIf(skipMachineTests).each(BACKENDS)('session event streams on %s', (backend) => {
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let computerId: string;
  let repo: string;
  let user: string;
  /** Where clients connect: a second replica on PostgreSQL, the only server on PGlite. */
  let watchUrl: string;
  let replica: { url: string; close(): Promise<void> } | undefined;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi(backend, { worker: true, env: { ...ALLOW_LOOPBACK, AGENTPLANE_EVENTS_HEARTBEAT_SECONDS: '1' } });
    if (backend === 'postgres') replica = await api.replica();
    watchUrl = replica?.url ?? api.url;
    user = api.acme.members.user.apiKey;
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: user })).body.publicKey);
    const res = await api.call('POST', '/api/v0/computers', {
      as: user,
      body: { name: 'events-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(res.status, res.body.detail).toBe(201);
    computerId = res.body.id;
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await replica?.close();
    await api?.close();
    await model?.close();
    await machine?.stop();
    models?.dispose();
  });

  beforeEach(async () => {
    model.reset();
    repo = `${machine.scratch}/repo-${Math.random().toString(36).slice(2, 8)}`;
    await machine.sh(`mkdir -p ${repo} && cd ${repo} && git init -q && echo '# demo' > README.md && git add -A && ${GIT_COMMIT} -m init`);
  });

  const newSession = async () => {
    const res = await api.call('POST', '/api/v0/sessions', {
      as: user,
      body: { computerId, cwd: repo, sessionSettings: { model: 'coder', autonomyLevel: 'high' } },
    });
    expect(res.status, res.body.detail).toBe(201);
    return res.body.sessionId as string;
  };
  const watch = async (path: string, opts: { token?: string; lastEventId?: string; url?: string } = {}) => {
    const client = await connectSse(`${opts.url ?? watchUrl}${path}`, { token: opts.token ?? user, lastEventId: opts.lastEventId });
    clients.push(client);
    return client;
  };
  const send = (sessionId: string, text: string) => api.call('POST', `/api/v0/sessions/${sessionId}/messages`, { as: user, body: { text } });
  /** Every stored event of a session, read back through the API (a replay from 0). */
  const stored = async (sessionId: string) => {
    const all = await watch(`/api/v0/sessions/${sessionId}/events`, { lastEventId: '0' });
    await all.waitFor((e) => TURN_END.has(e.event), 5_000, 'the turn end');
    await new Promise((r) => setTimeout(r, 300));
    all.close();
    return all.events;
  };

  it('streams a turn as it runs: messages, model text as it streams, the tool call and its result, status, usage, then session.idle', async () => {
    const id = await newSession();
    const stream = await watch(`/api/v0/sessions/${id}/events`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    model.enqueue(
      { text: 'Listing files.', toolCalls: [{ id: 'call_ls', name: 'run_command', arguments: { command: 'ls' } }] },
      { text: 'The repository holds a README and nothing else, as far as I can see.', chunkSize: 4, chunkDelayMs: 15 },
    );
    expect((await send(id, 'What is in the repository?')).status).toBe(200);
    await stream.waitFor((e) => e.event === 'session.idle', 20_000, 'session.idle');

    const types = stream.events.map((e) => e.event);
    const ids = durableIds(stream.events).map(BigInt);
    expect(ids.length).toBeGreaterThan(5);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    // Every event is JSON with its own id and type; ids are the SSE ids.
    for (const e of stream.events) {
      expect(e.data.type).toBe(e.event);
      expect(e.data.id).toBe(e.id);
    }
    const created = stream.events.filter((e) => e.event === 'session.message.created').map((e) => e.data.data.message);
    expect(created.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(created[1].content).toContainEqual(expect.objectContaining({ type: 'tool_use', name: 'run_command' }));
    expect(created[2].content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'call_ls' });
    expect(created[2].content[0].content).toContain('README.md');
    // The message to an idle session began its turn: nothing waited, so nothing was moved.
    expect(types).not.toContain('session.message.updated');
    const statuses = stream.events.filter((e) => e.event === 'session.status').map((e) => e.data.data.status);
    expect(statuses).toEqual(['running', 'idle']);
    expect(types.filter((t) => t === 'session.usage')).toHaveLength(2);
    expect(stream.events.find((e) => e.event === 'session.usage')!.data.data.usage).toMatchObject({ inputTokens: 100, outputTokens: 10 });

    // The final answer streamed as transient deltas (no id), before the stored message that carries it whole.
    const finalText = created[3].content.find((b: { type: string }) => b.type === 'text').text;
    const streamedText = stream.events
      .slice(stream.events.findIndex((e) => e.event === 'session.message.created' && e.data.data.message.role === 'tool') + 1)
      .filter((e) => e.event === 'session.delta')
      .map((e) => e.data.data.text)
      .join('');
    expect(streamedText).toBe(finalText);
    for (const d of stream.events.filter((e) => e.event === 'session.delta')) expect(d.id).toBeUndefined();
    expect(stream.events.filter((e) => e.event === 'session.delta').length).toBeGreaterThan(1);
    expect(types.indexOf('session.idle')).toBe(types.length - 1);
  });

  it('queues a message sent while a turn runs; the next turn takes it and moves it to the end of the history', async () => {
    const id = await newSession();
    const stream = await watch(`/api/v0/sessions/${id}/events`);
    model.enqueue(
      { toolCalls: [{ id: 'call_wait', name: 'run_command', arguments: { command: 'sleep 1' } }] },
      { text: 'First done.' },
      { text: 'Second done.' },
    );
    expect((await send(id, 'First')).body.status).toBe('running');
    await stream.waitFor((e) => e.event === 'session.message.created' && e.data.data.message.role === 'assistant', 15_000, 'the tool call');
    const second = await send(id, 'Second');
    expect(second.body.status).toBe('running');
    await stream.waitFor((e) => e.event === 'session.idle', 20_000, 'session.idle');

    const statuses = stream.events.filter((e) => e.event === 'session.status').map((e) => e.data.data.status);
    expect(statuses).toEqual(['running', 'pending', 'running', 'idle']);
    const queued = stream.events.find((e) => e.event === 'session.message.created' && e.data.data.message.id === second.body.messageId)!.data.data.message;
    const taken = stream.events.find((e) => e.event === 'session.message.updated')!.data.data.message;
    expect(taken.id).toBe(second.body.messageId);
    // Queued while the tool ran, it is read after the first turn's answer: it moves past it.
    const firstAnswer = stream.events.find((e) => e.event === 'session.message.created' && e.data.data.message.content[0]?.text === 'First done.')!;
    expect(taken.seq).toBeGreaterThan(firstAnswer.data.data.message.seq);
    expect(queued.seq).toBeLessThan(firstAnswer.data.data.message.seq);
    expect(stream.events.filter((e) => e.event === 'session.idle')).toHaveLength(1);
  });

  it('resumes with Last-Event-ID after a dropped connection: nothing lost, nothing twice', async () => {
    const id = await newSession();
    const first = await watch(`/api/v0/sessions/${id}/events`);
    model.enqueue({ toolCalls: [{ id: 'call_sleep', name: 'run_command', arguments: { command: 'sleep 1; echo slept' } }] }, { text: 'Done sleeping.' });
    await send(id, 'Sleep a second.');
    await first.waitFor((e) => e.event === 'session.message.created' && e.data.data.message.role === 'assistant', 15_000, 'the tool call');
    first.close();
    const resumeFrom = first.lastEventId()!;
    const seenFirst = durableIds(first.events);
    // The tool runs for a second: the turn goes on while nobody watches.
    await waitFor('the turn to end', async () => (await api.call('GET', `/api/v0/sessions/${id}`, { as: user })).body.status === 'idle', 20_000, 100);

    const second = await watch(`/api/v0/sessions/${id}/events`, { lastEventId: resumeFrom });
    await second.waitFor((e) => e.event === 'session.idle', 10_000, 'session.idle after resuming');
    const seenSecond = durableIds(second.events);
    expect(seenSecond.length).toBeGreaterThan(2);
    expect(seenSecond.every((s) => BigInt(s) > BigInt(resumeFrom))).toBe(true);

    const all = durableIds(await stored(id));
    expect([...seenFirst, ...seenSecond]).toEqual(all.slice(all.indexOf(seenFirst[0]!)));
    expect(new Set([...seenFirst, ...seenSecond]).size).toBe(seenFirst.length + seenSecond.length);
    expect(second.events.some((e) => e.event === 'session.message.created' && e.data.data.message.role === 'tool')).toBe(true);
  });

  it('a client connecting mid-turn first receives the turn so far; one connecting when idle receives only what comes', async () => {
    const id = await newSession();
    model.enqueue({ toolCalls: [{ id: 'call_s', name: 'run_command', arguments: { command: 'sleep 2' } }] }, { text: 'Slept.' });
    await send(id, 'Sleep two seconds.');
    await waitFor(
      'the tool call to start',
      async () => (await api.call('GET', `/api/v0/sessions/${id}/messages`, { as: user })).body.messages.length >= 2,
      15_000,
      50,
    );
    const late = await watch(`/api/v0/sessions/${id}/events`);
    await late.waitFor((e) => e.event === 'session.idle', 15_000, 'session.idle');
    const roles = late.events.filter((e) => e.event === 'session.message.created').map((e) => e.data.data.message.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);

    const idle = await watch(`/api/v0/sessions/${id}/events`);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(idle.events).toEqual([]);
    // Heartbeats (every second here) keep the idle stream open.
    expect(idle.comments).toContain('heartbeat');
  });

  it('keeps to the session access rules: another member and another organization get 404, as on the session itself', async () => {
    const id = await newSession();
    for (const token of [api.acme.members.manager.apiKey, api.globex.members.owner.apiKey]) {
      const res = await watch(`/api/v0/sessions/${id}/events`, { token });
      expect(res.status).toBe(404);
      expect((res as { body?: any }).body.detail).toContain(id);
    }
    const bad = await watch(`/api/v0/sessions/${id}/events`, { lastEventId: 'abc' });
    expect(bad.status).toBe(400);
    expect((bad as { body?: any }).body.detail).toMatch(/Last-Event-ID/);
  });

  it('streams the organization events to managers, filtered by type; plain members get 403', async () => {
    const denied = await watch('/api/v0/events', { token: user });
    expect(denied.status).toBe(403);
    const unknown = await watch('/api/v0/events?types=session.nope', { token: api.acme.members.owner.apiKey });
    expect(unknown.status).toBe(400);
    const org = await watch('/api/v0/events?types=session.idle', { token: api.acme.members.manager.apiKey });
    const other = await watch('/api/v0/events', { token: api.globex.members.owner.apiKey });
    const id = await newSession();
    model.enqueue({ text: 'Hello.' });
    await send(id, 'Say hello.');
    const idle = await org.waitFor((e) => e.event === 'session.idle', 15_000, 'session.idle');
    expect(idle.data).toMatchObject({ type: 'session.idle', organizationId: api.acme.id, sessionId: id, data: { sessionId: id, status: 'idle' } });
    expect(org.events.every((e) => e.event === 'session.idle')).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(other.events).toEqual([]);
  });

  it('ends a stream at the next heartbeat once its caller loses access; the removal revokes their keys, which the organization hears', async () => {
    const globex = api.globex.members;
    const removed = await watch('/api/v0/events', { token: globex.manager.apiKey });
    const owner = await watch('/api/v0/events?types=apikey.revoked', { token: globex.owner.apiKey });
    expect(removed.status).toBe(200);
    const res = await api.call('DELETE', `/api/v0/organization/users?email=${encodeURIComponent(globex.manager.email)}`, { as: globex.owner.apiKey });
    expect(res.status).toBe(204);
    const revoked = await owner.waitFor((e) => e.event === 'apikey.revoked', 5_000, 'apikey.revoked');
    expect(revoked.data.data).toMatchObject({ reason: 'member_removed', userId: globex.manager.userId });
    expect(JSON.stringify(revoked.data)).not.toContain(globex.manager.apiKey);
    // Heartbeats are a second apart here: the next one finds the credential dead and ends the stream.
    await Promise.race([removed.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream stayed open')), 5_000))]);
  });

  it('answers a Last-Event-ID older than the retention window with stream.events_dropped, then goes on', async () => {
    const id = await newSession();
    model.enqueue({ text: 'One.' });
    await send(id, 'Count.');
    const before = await stored(id);
    const oldest = before[0]!.id!;
    await purgeExpiredEvents(api.db.prisma, new Date(Date.now() + 60_000));
    const resumed = await watch(`/api/v0/sessions/${id}/events`, { lastEventId: oldest });
    const dropped = await resumed.waitFor((e) => e.event === 'stream.events_dropped', 5_000, 'stream.events_dropped');
    expect(dropped.id).toBeUndefined();
    expect(dropped.data.data.lastEventId).toBe(oldest);
    expect(dropped.data.data.detail).toMatch(/re-read/);
    model.enqueue({ text: 'Two.' });
    await send(id, 'Again.');
    await resumed.waitFor((e) => e.event === 'session.idle', 15_000, 'session.idle after the drop');
    expect(resumed.events[0]!.event).toBe('stream.events_dropped');
  });
});
