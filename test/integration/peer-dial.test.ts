import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassThroughUnsupported } from '../../src/relay/gateway/index.ts';
import { peerTokens } from '../../src/relay/peer-auth.ts';
import { dialPeer } from '../../src/relay/peer-dial.ts';
import { SshError } from '../../src/ssh/index.ts';

/**
 * How a replica reads another's refusals, against a real HTTP server answering the upgrade the way
 * the peer listener does: a replica older than people's connections answers 403 to the new paths
 * (it reads their suffix as part of the computer id, so the token does not match), and the caller
 * falls back to the bridge instead of failing the person's session during a rolling update.
 */
let server: http.Server;
let url: string;
const answers = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer();
  server.on('upgrade', (req, socket) => {
    const status = answers.get(req.url ?? '') ?? 404;
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const tokens = peerTokens('test-secret');
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("a replica reading another replica's refusal", () => {
  it("403 to a person's channel or a return (an older replica): PassThroughUnsupported, so the caller bridges", async () => {
    answers.set('/relay/peer/cmp_old/people', 403);
    answers.set('/relay/peer/cmp_old/return', 403);
    expect(await errorOf(dialPeer(url, 'cmp_old', tokens, AbortSignal.timeout(5_000), 'person'))).toBeInstanceOf(PassThroughUnsupported);
    expect(await errorOf(dialPeer(url, 'cmp_old', tokens, AbortSignal.timeout(5_000), 'return'))).toBeInstanceOf(PassThroughUnsupported);
  });

  it("501 (the holder's agent did not ask for it): PassThroughUnsupported", async () => {
    answers.set('/relay/peer/cmp_501/people', 501);
    expect(await errorOf(dialPeer(url, 'cmp_501', tokens, AbortSignal.timeout(5_000), 'person'))).toBeInstanceOf(PassThroughUnsupported);
  });

  it("403 or 404 to the control plane's own channel: Unreachable, with the status", async () => {
    answers.set('/relay/peer/cmp_old', 403);
    for (const id of ['cmp_old', 'cmp_gone']) {
      const err = await errorOf(dialPeer(url, id, tokens, AbortSignal.timeout(5_000)));
      expect(err).toBeInstanceOf(SshError);
      expect((err as SshError).kind).toBe('unreachable');
      expect((err as SshError).message).toMatch(/the replica holding the agent's tunnel answered 40[34]/);
    }
  });
});
