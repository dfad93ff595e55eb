import { describe, expect, it } from 'vitest';
import { parseEgressAllow, refusedKind } from '../../src/egress/policy.ts';

describe('egress policy', () => {
  const none = parseEgressAllow(undefined);

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'unique local (private)'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['100.64.0.1', 'shared (carrier-grade NAT)'],
    ['64:ff9b::7f00:1', 'IPv4-embedding'],
  ])('refuses %s as %s', (address, kind) => {
    expect(refusedKind(none, 'example.test', address)).toBe(kind);
  });

  it.each(['93.184.216.34', '172.32.0.1', '8.8.8.8', '2606:4700::1111', '::ffff:93.184.216.34'])('reaches the public address %s', (address) => {
    expect(refusedKind(none, 'example.test', address)).toBeUndefined();
  });

  it('reaches what the operator allows: CIDR blocks, single addresses and host names', () => {
    const policy = parseEgressAllow(' 10.0.0.0/8, 127.0.0.1 ,fd00::/8, Models.Internal. ');
    expect(refusedKind(policy, 'x', '10.9.9.9')).toBeUndefined();
    expect(refusedKind(policy, 'x', '127.0.0.1')).toBeUndefined();
    expect(refusedKind(policy, 'x', '::ffff:127.0.0.1')).toBeUndefined();
    expect(refusedKind(policy, 'x', '127.0.0.2')).toBe('loopback');
    expect(refusedKind(policy, 'x', 'fd00::5')).toBeUndefined();
    expect(refusedKind(policy, 'models.internal', '192.168.0.1')).toBeUndefined();
    expect(refusedKind(policy, 'other.internal', '192.168.0.1')).toBe('private');
  });

  it('names a bad entry', () => {
    expect(() => parseEgressAllow('10.0.0.0/33')).toThrow(/"10.0.0.0\/33" has a prefix length outside 0-32/);
    expect(() => parseEgressAllow('not a host')).toThrow(/"not a host" is neither a CIDR block/);
    expect(() => parseEgressAllow('host/8')).toThrow(/AGENTPLANE_EGRESS_ALLOW/);
  });
});
