import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface ReceivedWebhook {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
  /** Whether the signature checked out against the secret registered for the path. */
  verified: boolean;
}

/** What a path answers: a status, or `hang` to never answer. */
type Answer = number | 'hang';

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Requests being handled right now, per path, and the most seen at once. */
  maxConcurrent: Map<string, number>;
  /** Answers for a path, in order; the last one repeats. */
  answer(path: string, answers: Answer[], opts?: { delayMs?: number }): void;
  secret(path: string, secret: string): void;
  close(): Promise<void>;
}

/**
 * Standard Webhooks verification written from the specification, not the library the server
 * signs with: HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}` with the base64
 * secret after `whsec_`, compared with each `v1,<base64>` in webhook-signature.
 */
export function verifyStandardWebhook(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((s) => {
    const [version, value] = s.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** An HTTP server on loopback that records every webhook and answers as scripted per path. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const scripts = new Map<string, { answers: Answer[]; delayMs: number }>();
  const secrets = new Map<string, string>();
  const received: ReceivedWebhook[] = [];
  const inFlight = new Map<string, number>();
  const maxConcurrent = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      const secret = secrets.get(path);
      received.push({ path, headers: req.headers, body, at: Date.now(), verified: secret !== undefined && verifyStandardWebhook(secret, req.headers, body) });
      const script = scripts.get(path) ?? { answers: [204], delayMs: 0 };
      const answer = script.answers.length > 1 ? script.answers.shift()! : script.answers[0]!;
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      const now = (inFlight.get(path) ?? 0) + 1;
      inFlight.set(path, now);
      maxConcurrent.set(path, Math.max(maxConcurrent.get(path) ?? 0, now));
      // In flight until answered, or until the sender gives up on it (its attempt timed out).
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        inFlight.set(path, (inFlight.get(path) ?? 1) - 1);
      };
      res.once('close', finish);
      setTimeout(() => {
        finish();
        if (!res.destroyed) res.writeHead(answer).end(answer >= 400 ? 'receiver says no' : '');
      }, script.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    maxConcurrent,
    answer: (path, answers, opts = {}) => scripts.set(path, { answers: [...answers], delayMs: opts.delayMs ?? 0 }),
    secret: (path, secret) => secrets.set(path, secret),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
