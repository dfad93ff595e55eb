import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import ssh2 from 'ssh2';
import WebSocket, { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coalesceWrites } from '../../src/relay/coalesce-writes.ts';
import { webSocketDuplex } from '../../src/relay/gateway/websocket-stream.ts';
import { useSsh2KeyObjects } from '../../src/relay/ssh2-key-objects.ts';
import { generateKeyPair } from '../../src/ssh/index.ts';

/** A duplex that records what reaches its sink, one entry per underlying write. */
function recorder(opts: { highWaterMark?: number; slow?: boolean } = {}) {
  const writes: Buffer[] = [];
  const stream = new Duplex({
    highWaterMark: opts.highWaterMark,
    read() {},
    write(chunk: Buffer, _enc, done) {
      writes.push(chunk);
      if (opts.slow) setTimeout(done, 5);
      else done();
    },
  });
  return { stream: coalesceWrites(stream), writes };
}

describe('coalesceWrites', () => {
  it('sends the writes of one tick as one, in order, and calls every callback', async () => {
    const { stream, writes } = recorder();
    const called: number[] = [];
    stream.write(Buffer.from('ab'), () => called.push(1));
    stream.write('cd');
    stream.write(Buffer.from('ef'), () => called.push(3));
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes.map(String)).toEqual(['abcdef']);
    expect(called).toEqual([1, 3]);
    stream.write('gh');
    await new Promise((r) => setImmediate(r));
    expect(writes.map(String)).toEqual(['abcdef', 'gh']);
  });

  it('end() sends what is pending first; wrapping twice changes nothing', async () => {
    const { stream, writes } = recorder();
    expect(coalesceWrites(stream)).toBe(stream);
    stream.write('last words');
    stream.end('bye');
    await new Promise((r) => stream.once('finish', r));
    expect(writes.map(String)).toEqual(['last words', 'bye']);
  });

  it('answers false while the stream needs a drain, and drains', async () => {
    const { stream, writes } = recorder({ highWaterMark: 4, slow: true });
    expect(stream.write('12345678')).toBe(true);
    await new Promise((r) => setImmediate(r));
    // The flushed write went over the mark: the next writer is told to wait for 'drain'.
    expect(stream.write('9')).toBe(false);
    await new Promise((r) => stream.once('drain', r));
    await new Promise((r) => setImmediate(r));
    expect(Buffer.concat(writes).toString()).toBe('123456789');
  });
});

/**
 * An SSH connection over a WebSocket as the relay carries them (both ends through
 * webSocketDuplex), with ssh2's per-packet ciphers given key objects: every cipher ssh2 offers
 * carries the data intact, and each SSH packet travels as one WebSocket message, not one per
 * piece ssh2 writes.
 */
describe('SSH over the relay WebSocket', () => {
  const hostKey = generateKeyPair().privateKey;
  let wss: WebSocketServer;
  let port: number;
  /** WebSocket messages the server side received, per connection. */
  let received = 0;

  beforeAll(async () => {
    useSsh2KeyObjects();
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
    await new Promise((r) => wss.once('listening', r));
    port = (wss.address() as AddressInfo).port;
    const server = new ssh2.Server({ hostKeys: [hostKey] }, (client) => {
      client.on('authentication', (ctx) => ctx.accept());
      client.on('session', (accept) =>
        accept().on('exec', (acceptExec) => {
          const channel = acceptExec();
          const hash = createHash('sha256');
          channel.on('data', (d: Buffer) => hash.update(d));
          channel.on('end', () => {
            channel.write(hash.digest('hex'));
            channel.exit(0);
            channel.end();
          });
        }),
      );
    });
    wss.on('connection', (ws) => {
      ws.on('message', () => received++);
      server.injectSocket(webSocketDuplex(ws) as never);
    });
  });
  afterAll(() => wss.close());

  for (const cipher of ['aes128-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr'] as const) {
    it(`carries 4 MB intact with ${cipher}, one message per packet`, async () => {
      const data = randomBytes(4 * 1024 * 1024);
      const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
      // The stream from the 'open' event on, as relay-stream.ts does: the server speaks first.
      const sock = await new Promise<Duplex>((resolve) => ws.once('open', () => resolve(webSocketDuplex(ws))));
      received = 0;
      const client = new ssh2.Client();
      const digest = await new Promise<string>((resolve, reject) => {
        client.on('error', reject);
        client.on('ready', () =>
          client.exec('sha256', (err, channel) => {
            if (err) return reject(err);
            let out = '';
            channel.on('data', (d: Buffer) => (out += d.toString()));
            channel.on('close', () => resolve(out));
            channel.end(data);
          }),
        );
        client.connect({ sock, username: 'u', algorithms: { cipher: [cipher], hmac: ['hmac-sha2-256-etm@openssh.com'] } });
      });
      client.end();
      expect(digest).toBe(createHash('sha256').update(data).digest('hex'));
      // 4 MB is 128 data packets of 32 KB; ssh2 writes each in 3 pieces, which were 3 messages.
      expect(received).toBeLessThan(128 * 1.5);
    });
  }
});
