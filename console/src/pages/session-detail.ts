import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, must } from '../api.ts';
import { Badge, ErrorBox, LiveIndicator, Loading, PageHeader, submitted } from '../components/ui.ts';
import { dateTime, number } from '../format.ts';
import { html } from '../html.ts';
import { follow, type LiveMode } from '../live.ts';
import { useNames } from '../names.ts';
import { href } from '../router.ts';
import { useAction, useResource } from '../resource.ts';

type Message = components['schemas']['Message'];
type Session = components['schemas']['Session'];
type Pending = components['schemas']['PendingApproval'];
type Autonomy = NonNullable<components['schemas']['SessionSettingsInput']['autonomyLevel']>;

/** Autonomy levels as people read them: what runs without asking (the rest asks in the transcript). */
export const AUTONOMY_CHOICES: [Autonomy, string][] = [
  ['off', 'off — reads only; asks before writing or running'],
  ['low', 'low — also edits files; asks before commands'],
  ['medium', 'medium — also runs commands'],
  ['high', 'high — runs everything'],
];

type Block = components['schemas']['ContentBlock'];
type ToolResult = Extract<Block, { type: 'tool_result' }>;

/** A running tool call's output as `session.tool_output` events bring it, until its result replaces it. */
interface LiveOutput {
  text: string;
  /** Characters of each stream received so far: a chunk starting elsewhere means some were missed. */
  received: Record<string, number>;
  truncated: boolean;
}
type LiveOutputs = Record<string, LiveOutput>;

/** Adds one `session.tool_output` chunk to the call's live output (docs/api-decisions.md has its shape). */
function addOutput(outputs: LiveOutputs, d: Record<string, unknown>): LiveOutputs {
  const id = d.toolUseId as string;
  const stream = d.stream === 'stderr' ? 'stderr' : 'stdout';
  const prev = outputs[id] ?? { text: '', received: {}, truncated: false };
  const offset = typeof d.offset === 'number' ? d.offset : 0;
  const gap = offset !== (prev.received[stream] ?? 0) ? '[…]\n' : '';
  const text = d.text as string;
  return {
    ...outputs,
    [id]: { text: prev.text + gap + text, received: { ...prev.received, [stream]: offset + text.length }, truncated: prev.truncated || d.truncated === true },
  };
}

/** Pages of the transcript read at most (newest first, 100 each): a very long session shows its latest 1,000 messages. */
const MAX_PAGES = 10;

async function allMessages(sessionId: string): Promise<Message[]> {
  const out: Message[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await must(
      api.GET('/api/v0/sessions/{sessionId}/messages', { params: { path: { sessionId }, query: { limit: '100', ...(cursor ? { cursor } : {}) } } }),
    );
    out.push(...page.messages);
    cursor = page.pagination.nextCursor ?? undefined;
  } while (cursor && ++pages < MAX_PAGES);
  return out.sort(order);
}

function order(a: Message, b: Message) {
  return (a.seq ?? 0) - (b.seq ?? 0) || a.createdAt - b.createdAt;
}

/** A session: its transcript as it happens, a message box, interrupt, and its usage and credits. */
export function SessionDetail({ id }: { id: string }) {
  const session = useResource(() => must(api.GET('/api/v0/sessions/{sessionId}', { params: { path: { sessionId: id } } })), [id]);
  const names = useNames(['computers']);
  const messages = useResource(() => allMessages(id), [id]);
  const [streaming, setStreaming] = useState<{ text: string; thinking: string }>({ text: '', thinking: '' });
  const [outputs, setOutputs] = useState<LiveOutputs>({});
  const [mode, setMode] = useState<LiveMode>('connecting');
  const status = session.data?.status;
  const statusRef = useRef(status);
  statusRef.current = status;

  useEffect(
    () =>
      follow({
        path: `/api/v0/sessions/${encodeURIComponent(id)}/events`,
        refresh: () => Promise.all([session.reload(), messages.reload()]),
        pollEvery: () => (statusRef.current === 'idle' ? 4000 : 800),
        onMode: setMode,
        onEvent(event) {
          const d = event.data;
          if (event.type === 'session.delta' && typeof d.text === 'string') {
            const key = d.type === 'thinking' ? 'thinking' : 'text';
            setStreaming((s) => ({ ...s, [key]: s[key] + (d.text as string) }));
          } else if (event.type === 'session.tool_output' && typeof d.toolUseId === 'string' && typeof d.text === 'string') {
            setOutputs((o) => addOutput(o, d));
          } else if ((event.type === 'session.message.created' || event.type === 'session.message.updated') && d.message) {
            const message = d.message as Message;
            if (message.role === 'assistant') setStreaming({ text: '', thinking: '' });
            // A result replaces the call's live output.
            if (message.role === 'tool') {
              const done = message.content.flatMap((b) => (b.type === 'tool_result' ? [b.toolUseId] : []));
              setOutputs((o) => Object.fromEntries(Object.entries(o).filter(([k]) => !done.includes(k))));
            }
            messages.set((list) => [...(list ?? []).filter((m) => m.id !== message.id), message].sort(order));
          } else if (event.type === 'session.status' && typeof d.status === 'string') {
            session.set((s) => (s ? { ...s, status: d.status as typeof s.status } : s));
            if (d.status === 'idle') {
              setStreaming({ text: '', thinking: '' });
              setOutputs({});
            }
          } else {
            void session.reload();
          }
        },
      }),
    [id],
  );

  const [text, setText] = useState('');
  const send = useAction(async () => {
    const body = text.trim();
    if (!body) return;
    const res = await must(api.POST('/api/v0/sessions/{sessionId}/messages', { params: { path: { sessionId: id } }, body: { text: body } }));
    setText('');
    session.set((s) => (s ? { ...s, status: res.status } : s));
    await messages.reload();
  });
  const interrupt = useAction(async () => {
    const res = await must(api.POST('/api/v0/sessions/{sessionId}/interrupt', { params: { path: { sessionId: id } } }));
    session.set((s) => (s ? { ...s, status: res.status } : s));
  });

  const s = session.data;
  if (!s) return session.error ? html`<${PageHeader} title="Session" /><${ErrorBox} error=${session.error} />` : html`<${Loading} />`;
  const usage = s.sessionSettings?.tokenUsage;
  const busy = s.status !== 'idle';
  return html`
    <${PageHeader} title=${s.title || 'Session'}>
      <${LiveIndicator} mode=${mode} />
      <${Badge} value=${s.status} />
      ${busy ? html`<button type="button" class="danger" disabled=${interrupt.busy} onClick=${() => interrupt.run()}>Interrupt</button>` : null}
    <//>
    <${ErrorBox} error=${session.error} />
    <${ErrorBox} error=${interrupt.error} what="Not interrupted" />
    <${SessionSettingsForm} session=${s} onChange=${(next: Session) => session.set(() => next)} />
    <dl class="fields compact">
      <dt>Computer</dt><dd>${s.computerId ? html`<a href=${href('computers', s.computerId)}>${names.of('computers', s.computerId)}</a>` : '—'}</dd>
      <dt>Credits</dt><dd data-testid="credits">${number(s.serviceCredits)}</dd>
      <dt>Tokens in / out</dt><dd>${number(usage?.inputTokens)} / ${number(usage?.outputTokens)}</dd>
      <dt>Cache read / written</dt><dd>${number(usage?.cacheReadTokens)} / ${number(usage?.cacheCreationTokens)}</dd>
      <dt>Started</dt><dd>${dateTime(s.createdAt)}</dd>
    </dl>
    <section aria-labelledby="transcript-title">
      <h2 id="transcript-title">Transcript</h2>
      <${ErrorBox} error=${messages.error} />
      <${Transcript}
        messages=${messages.data ?? []}
        streaming=${streaming}
        outputs=${outputs}
        running=${busy && !s.pendingApprovals?.length}
        approvals=${approvalsOf(id, s.pendingApprovals ?? [], () => Promise.all([session.reload(), messages.reload()]))}
      />
    </section>
    <form
      class="composer"
      onSubmit=${submitted(() => send.run())}
    >
      <label for="message">Message</label>
      <textarea
        id="message"
        rows="3"
        value=${text}
        placeholder="Ask the agent… (Ctrl+Enter sends)"
        onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown=${(e: KeyboardEvent) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            void send.run();
          }
        }}
      ></textarea>
      <${ErrorBox} error=${send.error} what="Not sent" />
      <button type="submit" class="primary" disabled=${send.busy || !text.trim()}>${send.busy ? 'Sending…' : busy ? 'Queue message' : 'Send'}</button>
    </form>
  `;
}

/** The session's model and autonomy, each changed at once with PATCH (the next turn uses them). */
function SessionSettingsForm({ session, onChange }: { session: Session; onChange: (s: Session) => void }) {
  const models = useResource(async () => (await must(api.GET('/api/v0/models'))).models, []);
  const save = useAction(async (change: { model?: string; autonomyLevel?: Autonomy }) => {
    onChange(await must(api.PATCH('/api/v0/sessions/{sessionId}', { params: { path: { sessionId: session.sessionId } }, body: { sessionSettings: change } })));
  });
  const settings = session.sessionSettings ?? {};
  const current = settings.model ?? '';
  const listed = (models.data ?? []).map((m) => m.id);
  const value = (e: Event) => (e.target as HTMLSelectElement).value;
  return html`<form class="session-settings" aria-label="Session settings" onSubmit=${(e: Event) => e.preventDefault()}>
    <label
      >Model
      <select value=${current} disabled=${save.busy} onChange=${(e: Event) => save.run({ model: value(e) })}>
        ${current && !listed.includes(current) ? html`<option value=${current}>${current}</option>` : null}
        ${listed.map((m) => html`<option key=${m} value=${m}>${m}</option>`)}
      </select>
    </label>
    <label
      >Autonomy
      <select value=${settings.autonomyLevel ?? 'off'} disabled=${save.busy} onChange=${(e: Event) => save.run({ autonomyLevel: value(e) as Autonomy })}>
        ${AUTONOMY_CHOICES.map(([v, label]) => html`<option key=${v} value=${v}>${label}</option>`)}
      </select>
    </label>
    <${ErrorBox} error=${save.error ?? models.error} what="Not changed" />
  </form>`;
}

/** What the transcript needs to show a pending call's Approve / Deny. */
interface Approvals {
  pending: Map<string, Pending>;
  decide(toolUseId: string, decision: 'approve' | 'deny', scope: 'once' | 'session'): Promise<void>;
}

function approvalsOf(sessionId: string, pending: Pending[], reload: () => Promise<unknown>): Approvals {
  return {
    pending: new Map(pending.map((p) => [p.toolUseId, p])),
    async decide(toolUseId, decision, scope) {
      await must(api.POST('/api/v0/sessions/{sessionId}/approvals/{toolUseId}', { params: { path: { sessionId, toolUseId } }, body: { decision, scope } }));
      await reload();
    },
  };
}

/** A tool call waiting for a decision, inline in the transcript: Approve / Deny, once or for calls like it. */
function ApprovalRequest({ request, approvals }: { request: Pending; approvals: Approvals }) {
  const [always, setAlways] = useState(false);
  const decide = useAction((decision: 'approve' | 'deny') => approvals.decide(request.toolUseId, decision, always ? 'session' : 'once'));
  const like = request.toolName === 'run_command' ? 'this exact command' : request.toolName.endsWith('_file') ? 'this file' : 'this exact call';
  return html`<div class="approval" role="group" aria-label=${`Approval for ${request.toolName}`} data-testid="approval">
    <p><strong>The agent asks to run ${request.toolName}.</strong> <span class="muted">Unanswered, it expires at ${dateTime(request.expiresAt)}.</span></p>
    <label class="inline"
      ><input type="checkbox" checked=${always} onChange=${(e: Event) => setAlways((e.target as HTMLInputElement).checked)} /> For the rest of the session
      (${like})</label
    >
    <div class="actions">
      <button type="button" class="primary" disabled=${decide.busy} onClick=${() => decide.run('approve')}>Approve</button>
      <button type="button" class="danger" disabled=${decide.busy} onClick=${() => decide.run('deny')}>Deny</button>
    </div>
    <${ErrorBox} error=${decide.error} what="Not answered" />
  </div>`;
}

function Transcript({
  messages,
  streaming,
  outputs,
  running,
  approvals,
}: {
  messages: Message[];
  streaming: { text: string; thinking: string };
  outputs: LiveOutputs;
  running: boolean;
  approvals: Approvals;
}) {
  const results = new Map<string, ToolResult>();
  for (const m of messages) for (const b of m.content) if (b.type === 'tool_result') results.set(b.toolUseId, b);
  const shown = messages.filter((m) => m.role !== 'tool' && m.visibility !== 'llm_only');
  if (!shown.length && !streaming.text && !streaming.thinking) {
    return html`<p class="empty">No messages yet: write the first one below.</p>`;
  }
  return html`<ol class="transcript" aria-live="polite" aria-relevant="additions">
    ${shown.map(
      (m) => html`<li key=${m.id} class=${`message message-${m.role}${m.isError ? ' message-error' : ''}`} data-role=${m.role}>
        <div class="message-meta"><span>${m.role === 'user' ? 'You' : m.role === 'assistant' ? 'Agent' : m.role}</span> <time>${dateTime(m.createdAt)}</time></div>
        ${m.compaction ? html`<p class="muted">Earlier messages were summarised to fit the model's context.</p>` : null}
        ${m.content.map((b, i) => html`<${BlockView} key=${i} block=${b} results=${results} outputs=${outputs} approvals=${approvals} />`)}
      </li>`,
    )}
    ${
      streaming.text || streaming.thinking
        ? html`<li class="message message-assistant streaming" data-role="assistant-streaming">
          <div class="message-meta"><span>Agent</span> <span class="muted">writing…</span></div>
          ${streaming.thinking ? html`<details><summary>Thinking</summary><pre>${streaming.thinking}</pre></details>` : null}
          <div class="text">${streaming.text}</div>
        </li>`
        : running
          ? html`<li class="message message-assistant pending"><span class="spinner" aria-hidden="true"></span> <span class="muted">The agent is working…</span></li>`
          : null
    }
  </ol>`;
}

function resultText(r: ToolResult): string {
  if (typeof r.content === 'string') return r.content;
  return (r.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
}

function BlockView({ block, results, outputs, approvals }: { block: Block; results: Map<string, ToolResult>; outputs: LiveOutputs; approvals: Approvals }) {
  switch (block.type) {
    case 'text':
      return html`<div class="text">${block.text}</div>`;
    case 'thinking':
      return html`<details class="thinking"><summary>Thinking</summary><pre>${block.thinking}</pre></details>`;
    case 'redacted_thinking':
      return html`<p class="muted">(redacted thinking)</p>`;
    case 'tool_use': {
      const result = results.get(block.id);
      const live = result ? undefined : outputs[block.id];
      const request = result ? undefined : approvals.pending.get(block.id);
      const badge = result ? (result.isError ? 'failed' : 'completed') : request ? 'needs approval' : 'running';
      return html`<details class=${`tool${result?.isError ? ' tool-error' : ''}`} data-tool=${block.name} open=${live || request ? true : undefined}>
        <summary>
          <span class="tool-name">${block.name}</span>
          <${Badge} value=${badge} />
        </summary>
        <h3 class="sr-only">Input</h3>
        <pre>${JSON.stringify(block.input, null, 2)}</pre>
        ${request ? html`<${ApprovalRequest} request=${request} approvals=${approvals} />` : null}
        ${
          result
            ? html`<h3 class="sr-only">Output</h3><pre class="tool-output">${resultText(result)}</pre>`
            : live
              ? html`<h3 class="sr-only">Output so far</h3><pre class="tool-output live" data-testid="tool-output-live">${live.text}${
                  live.truncated ? html`<span class="muted">\n[live output stops here; the result will show how it ends]</span>` : null
                }</pre>`
              : null
        }
      </details>`;
    }
    case 'tool_result':
      return html`<pre class="tool-output">${resultText(block)}</pre>`;
    case 'image':
      return html`<img alt="Image attached to the message" src=${`data:${block.source.mediaType};base64,${block.source.data}`} />`;
    case 'document':
      return html`<p class="muted">Attached document ${block.source.name ?? ''}</p>`;
    default:
      return null;
  }
}
