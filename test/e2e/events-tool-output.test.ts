import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { organizationEventTypes } from '../../src/modules/events/types.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { connectSse, type ReceivedEvent, type SseClient } from '../support/sse.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

if (skipMachineTests) console.warn('skipping the tool output stream tests: sshd is missing');

/** The bounds docs/api-decisions.md states for `session.tool_output`. */
const CHUNK_CHARS = 1_000;
const LIVE_MAX_CHARS = 30_000;

const outputs = (events: ReceivedEvent[], toolUseId?: string) =>
  events.filter((e) => e.event === 'session.tool_output' && (toolUseId === undefined || e.data.data.toolUseId === toolUseId));
const textOf = (events: ReceivedEvent[], stream: 'stdout' | 'stderr') =>
  events
    .filter((e) => e.data.data.stream === stream)
    .map((e) => e.data.data.text)
    .join('');

/** Every chunk of one call: no id, seq 0, 1, 2, … over both streams, each stream's offsets contiguous, each within the bound. */
function expectWellFormed(chunks: ReceivedEvent[], toolUseId: string) {
  const received = { stdout: 0, stderr: 0 };
  chunks.forEach((e, i) => {
    expect(e.id).toBeUndefined();
    expect(e.data.type).toBe('session.tool_output');
    const d = e.data.data;
    expect(Object.keys(d).sort()).toEqual(['offset', 'seq', 'stream', 'text', 'toolUseId', 'truncated']);
    expect(d.toolUseId).toBe(toolUseId);
    expect(d.seq).toBe(i);
    expect(d.offset).toBe(received[d.stream as 'stdout' | 'stderr']);
    expect(d.text.length).toBeLessThanOrEqual(CHUNK_CHARS);
    received[d.stream as 'stdout' | 'stderr'] += d.text.length;
  });
}

/**
 * A running command's output on the session event stream, through real HTTP: turns run by the
 * server's worker against the scripted model and a real sshd; on PostgreSQL the client watches
 * from a second replica, so the chunks travel through NOTIFY between processes' hubs.
 */
describe.skipIf(skipMachineTests).each(BACKENDS)('command output streamed while it runs on %s', (backend) => {
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let receiver: WebhookReceiver;
  let computerId: string;
  /** The same machine registered by the other organization, for a session of its own. */
  let globexComputerId: string;
  let user: string;
  let watchUrl: string;
  let replica: { url: string; close(): Promise<void> } | undefined;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    [machine, model, receiver] = await Promise.all([startMachine(), startModelServer(), startWebhookReceiver()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi(backend, { worker: true, env: ALLOW_LOOPBACK });
    if (backend === 'postgres') replica = await api.replica();
    watchUrl = replica?.url ?? api.url;
    user = api.acme.members.user.apiKey;
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: user })).body.publicKey);
    const res = await api.call('POST', '/api/v0/computers', {
      as: user,
      body: { name: 'output-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(res.status, res.body.detail).toBe(201);
    computerId = res.body.id;
    const globex = api.globex.members.owner.apiKey;
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: globex })).body.publicKey);
    const other = await api.call('POST', '/api/v0/computers', {
      as: globex,
      body: { name: 'globex-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(other.status, other.body.detail).toBe(201);
    globexComputerId = other.body.id;
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await replica?.close();
    await api?.close();
    await model?.close();
    await machine?.stop();
    await receiver?.close();
    models?.dispose();
  });

  beforeEach(() => model.reset());

  const newSession = async (as = user, onComputer = computerId) => {
    const res = await api.call('POST', '/api/v0/sessions', {
      as,
      body: { computerId: onComputer, cwd: machine.scratch, sessionSettings: { model: 'coder', autonomyLevel: 'high' } },
    });
    expect(res.status, res.body.detail).toBe(201);
    return res.body.sessionId as string;
  };
  const watch = async (path: string, token = user) => {
    const client = await connectSse(`${watchUrl}${path}`, { token });
    expect(client.status).toBe(200);
    clients.push(client);
    return client;
  };
  const send = async (sessionId: string, text: string) =>
    expect((await api.call('POST', `/api/v0/sessions/${sessionId}/messages`, { as: user, body: { text } })).status).toBe(200);
  const toolMessages = (sessionId: string) => api.db.prisma.sessionMessage.count({ where: { sessionId, role: 'tool' } });

  // Three lines 0.4 s apart, then on stderr a character whose two UTF-8 bytes are written 0.3 s apart.
  const LINES = "for i in 1 2 3; do echo line$i; sleep 0.4; done; printf 'caf\\303' >&2; sleep 0.3; printf '\\251 finished\\n' >&2";

  it('streams stdout and stderr in order while the command runs, before its result exists, and never stores them', async () => {
    const id = await newSession();
    const other = await newSession();
    const globexOwner = api.globex.members.owner.apiKey;
    const globexSession = await newSession(globexOwner, globexComputerId);
    const stream = await watch(`/api/v0/sessions/${id}/events`);
    const otherStream = await watch(`/api/v0/sessions/${other}/events`);
    const globexStream = await watch(`/api/v0/sessions/${globexSession}/events`, globexOwner);
    model.enqueue({ text: 'Counting.', toolCalls: [{ id: 'call_lines', name: 'run_command', arguments: { command: LINES } }] }, { text: 'Counted to three.' });
    await send(id, 'Count to three slowly.');

    const first = await stream.waitFor((e) => e.event === 'session.tool_output', 20_000, 'the first output chunk');
    // The command still runs: its result is neither stored nor streamed yet.
    expect(first.data.data).toMatchObject({ toolUseId: 'call_lines', stream: 'stdout', seq: 0, offset: 0, truncated: false });
    expect(first.data.data.text).toMatch(/^line1\n/);
    expect(first.data.data.text).not.toContain('line3');
    expect(await toolMessages(id)).toBe(0);
    expect(stream.events.some((e) => e.event === 'session.message.created' && e.data.data.message.role === 'tool')).toBe(false);
    expect((await api.call('GET', `/api/v0/sessions/${id}/messages`, { as: user })).body.messages.map((m: { role: string }) => m.role)).not.toContain('tool');

    await stream.waitFor((e) => e.event === 'session.idle', 20_000, 'session.idle');
    const chunks = outputs(stream.events);
    expectWellFormed(chunks, 'call_lines');
    expect(textOf(chunks, 'stdout')).toBe('line1\nline2\nline3\n');
    // The character whose bytes came in two SSH packets arrives whole (a packet decoded alone would give U+FFFD).
    expect(textOf(chunks, 'stderr')).toBe('café finished\n');
    // 0.4 s between lines and 100 ms of coalescing: the lines arrive as they are printed, not at the end.
    expect(chunks.filter((e) => e.data.data.stream === 'stdout').length).toBeGreaterThanOrEqual(2);
    expect(chunks.every((e) => e.data.sessionId === id && e.data.organizationId === api.acme.id)).toBe(true);
    // All of them before the tool message, whose result carries the same output.
    const types = stream.events.map((e) => e.event);
    const resultAt = stream.events.findIndex((e) => e.event === 'session.message.created' && e.data.data.message.role === 'tool');
    expect(resultAt).toBeGreaterThan(types.lastIndexOf('session.tool_output'));
    const result = stream.events[resultAt]!.data.data.message.content[0];
    expect(result).toMatchObject({ type: 'tool_result', toolUseId: 'call_lines' });
    expect(result.content).toContain('line1\nline2\nline3');
    expect(result.content).toContain('[stderr]\ncafé finished');

    // Transient: nothing stored, so nothing replayed or resumed, and no webhook could be made of them.
    expect(await api.db.prisma.event.count({ where: { type: 'session.tool_output' } })).toBe(0);
    const replay = await watch(`/api/v0/sessions/${id}/events?lastEventId=0`);
    await replay.waitFor((e) => e.event === 'session.idle', 5_000, 'the replay');
    expect(outputs(replay.events)).toEqual([]);
    // Neither another session's stream nor another organization's session on the same machine heard anything of it.
    expect(otherStream.events).toEqual([]);
    expect(globexStream.events).toEqual([]);
  });

  it('bounds a command printing 2 MB: chunks within 1,000 characters, 30,000 in all with the last marked truncated, and the turn barely slower', async () => {
    const command = "head -c 2000000 /dev/zero | tr '\\0' x | fold -w 99";
    // The same command straight over SSH, keeping what the tool keeps: the floor for the tool call.
    const t0 = performance.now();
    const direct = await machine.ssh.exec(machine.target, command, { maxOutputBytes: 14_000, timeoutMs: 60_000 });
    const directMs = performance.now() - t0;
    expect(direct.truncated).toBe(true);

    const id = await newSession();
    const stream = await watch(`/api/v0/sessions/${id}/events`);
    // First the same work with its output thrown away, then the loud one: one turn, the same server path.
    model.enqueue(
      { toolCalls: [{ id: 'call_silent', name: 'run_command', arguments: { command: `${command} > /dev/null` } }] },
      { toolCalls: [{ id: 'call_big', name: 'run_command', arguments: { command } }] },
      { text: 'That was a lot of x.' },
    );
    await send(id, 'Print two megabytes.');
    // Each tool call as a client sees it: from the message that makes it to the message with its result.
    const created = (role: string, block: (b: any) => boolean) => (e: ReceivedEvent) =>
      e.event === 'session.message.created' && e.data.data.message.role === role && e.data.data.message.content.some(block);
    const callMs = async (toolUseId: string) => {
      await stream.waitFor(
        created('assistant', (b) => b.type === 'tool_use' && b.id === toolUseId),
        30_000,
        `the call ${toolUseId}`,
      );
      const started = performance.now();
      await stream.waitFor(
        created('tool', (b) => b.toolUseId === toolUseId),
        60_000,
        `the result of ${toolUseId}`,
      );
      return performance.now() - started;
    };
    const silentMs = await callMs('call_silent');
    const toolMs = await callMs('call_big');
    await stream.waitFor((e) => e.event === 'session.idle', 60_000, 'session.idle');
    expect(outputs(stream.events, 'call_silent')).toEqual([]);

    const chunks = outputs(stream.events, 'call_big');
    expectWellFormed(chunks, 'call_big');
    const text = textOf(chunks, 'stdout');
    expect(text.length).toBe(LIVE_MAX_CHARS);
    expect(text).toBe(`${'x'.repeat(99)}\n`.repeat(300));
    expect(chunks.at(-1)!.data.data.truncated).toBe(true);
    expect(chunks.slice(0, -1).every((e) => e.data.data.truncated === false)).toBe(true);
    // Full chunks, plus a few partial ones where the coalescing interval cut: far from one per SSH packet.
    expect(chunks.length).toBeGreaterThanOrEqual(LIVE_MAX_CHARS / CHUNK_CHARS);
    expect(chunks.length).toBeLessThanOrEqual(LIVE_MAX_CHARS / CHUNK_CHARS + 10);
    // The result keeps the output's end, as it did before streaming.
    const resultMessage = stream.events.find(created('tool', (b) => b.toolUseId === 'call_big'))!.data.data.message;
    expect(resultMessage.content[0].content).toContain('[output truncated');

    console.log(
      `2 MB command: straight over SSH ${directMs.toFixed(0)} ms; tool calls seen by a client: output to /dev/null ${silentMs.toFixed(0)} ms, streamed ${toolMs.toFixed(0)} ms`,
    );
    // Generous for a shared machine: the streamed call costs about what reading the 2 MB over SSH costs.
    expect(toolMs).toBeLessThan(silentMs + directMs * 2 + 1_000);
  });

  it('keeps chunks to the session: not on the organization stream, not in webhooks, and not a type either accepts', async () => {
    const manager = api.acme.members.manager.apiKey;
    const hook = await api.call('POST', '/api/v0/webhooks', { as: manager, body: { url: `${receiver.url}/all`, eventTypes: organizationEventTypes } });
    expect(hook.status, hook.body.detail).toBe(201);
    receiver.secret('/all', hook.body.secret);
    const asType = await api.call('POST', '/api/v0/webhooks', { as: manager, body: { url: `${receiver.url}/chunks`, eventTypes: ['session.tool_output'] } });
    expect(asType.status).toBe(400);
    expect(asType.body.detail).toMatch(/eventTypes\.0: Invalid option: expected one of "session\.idle"/);
    expect((await connectSse(`${watchUrl}/api/v0/events?types=session.tool_output`, { token: manager })).status).toBe(400);

    const acmeOrg = await watch('/api/v0/events', manager);
    const globexOrg = await watch('/api/v0/events', api.globex.members.owner.apiKey);
    const id = await newSession();
    const stream = await watch(`/api/v0/sessions/${id}/events`);
    model.enqueue(
      { toolCalls: [{ id: 'call_chatty', name: 'run_command', arguments: { command: 'for i in $(seq 1 20); do echo chatty-$i; sleep 0.05; done' } }] },
      { text: 'Chatted.' },
    );
    await send(id, 'Chat.');
    await stream.waitFor((e) => e.event === 'session.idle', 20_000, 'session.idle');
    expect(textOf(outputs(stream.events, 'call_chatty'), 'stdout')).toContain('chatty-20');

    // The organization stream and the webhook hear the turn's end, and only that.
    await acmeOrg.waitFor((e) => e.event === 'session.idle' && e.data.sessionId === id, 10_000, 'session.idle on the organization stream');
    const [idle] = await waitFor(
      'the session.idle webhook',
      () => {
        const got = receiver.received.filter((r) => r.path === '/all' && JSON.parse(r.body).data?.sessionId === id);
        return got.length > 0 && got;
      },
      15_000,
    );
    expect(idle!.verified).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(acmeOrg.events.map((e) => e.event)).not.toContain('session.tool_output');
    expect(globexOrg.events).toEqual([]);
    expect(receiver.received.some((r) => r.body.includes('session.tool_output') || r.body.includes('chatty-'))).toBe(false);
    const deliveries = await api.db.prisma.webhookDelivery.findMany({ where: { endpointId: hook.body.id } });
    expect(deliveries.map((d) => d.eventType)).toEqual(['session.idle']);
  });
});
