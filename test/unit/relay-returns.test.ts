import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createReturns, replicaOfReturn } from '../../src/relay/returns.ts';
import { SshError } from '../../src/ssh/index.ts';

describe("agents' connections back, matched to the sessions waiting for them", () => {
  it('hands a connection to the session waiting for its token, once', async () => {
    const returns = createReturns<PassThrough>('rpl_abc123');
    const expected = returns.expect('cmp_1', 1_000);
    expect(replicaOfReturn(expected.token)).toBe('rpl_abc123');
    expect(returns.waitsFor(expected.token)).toBe(true);
    const stream = new PassThrough();
    expect(returns.deliver(expected.token, stream)).toBe(true);
    expect(await expected.arrived).toBe(stream);
    // Spent: a second connection with the same token is nobody's.
    expect(returns.waitsFor(expected.token)).toBe(false);
    expect(returns.deliver(expected.token, new PassThrough())).toBe(false);
  });

  it('refuses tokens nobody waits for: unknown, cancelled or expired', async () => {
    const returns = createReturns<PassThrough>('rpl_abc123');
    expect(returns.deliver('rpl_abc123.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', new PassThrough())).toBe(false);
    const cancelled = returns.expect('cmp_1', 1_000);
    cancelled.cancel();
    expect(returns.deliver(cancelled.token, new PassThrough())).toBe(false);
    const late = returns.expect('cmp_1', 20);
    const err = await late.arrived.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SshError);
    expect((err as SshError).message).toMatch(/cmp_1.*did not connect back .* 20 ms/);
    expect(returns.deliver(late.token, new PassThrough())).toBe(false);
  });

  it('each token is new, and names its replica only when it has the shape of one', () => {
    const returns = createReturns<PassThrough>('rpl_abc123');
    const tokens = new Set(Array.from({ length: 100 }, () => returns.expect('cmp_1', 1_000)).map((e) => (e.cancel(), e.token)));
    expect(tokens.size).toBe(100);
    for (const bad of ['', 'rpl_abc123', 'rpl_abc123.short', '../rpl_x.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'rpl_abc123.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n']) {
      expect(replicaOfReturn(bad)).toBeUndefined();
    }
  });
});
