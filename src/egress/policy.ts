import net from 'node:net';

/**
 * Which addresses the control plane refuses to reach on a tenant's behalf, and what the operator
 * allowed anyway (`AGENTPLANE_EGRESS_ALLOW`: CIDR blocks and host names).
 */
export interface EgressPolicy {
  /** Host names (lower case) reached whatever they resolve to. */
  readonly hosts: ReadonlySet<string>;
  /** Address blocks reached although a refused range covers them. */
  readonly cidrs: net.BlockList;
  /** The variable's value as given, for messages. */
  readonly source: string;
}

export const EGRESS_ALLOW_VARIABLE = 'AGENTPLANE_EGRESS_ALLOW';

type Family = 'ipv4' | 'ipv6';

/** Refused ranges, each with the word a message uses for it. */
const REFUSED: ReadonlyArray<[kind: string, network: string, prefix: number, family: Family]> = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared (carrier-grade NAT)', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['reserved', '240.0.0.0', 4, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  ['unique local (private)', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
  // Addresses that embed an IPv4 address (NAT64, 6to4) could reach any of the above.
  ['IPv4-embedding', '64:ff9b::', 96, 'ipv6'],
  ['IPv4-embedding', '2002::', 16, 'ipv6'],
];

const refusedLists = REFUSED.map(([kind, network, prefix, family]) => {
  const list = new net.BlockList();
  list.addSubnet(network, prefix, family);
  return { kind, list, family };
});

/** Parses the operator's allow list; a bad entry stops start-up with the entry named. */
export function parseEgressAllow(raw: string | undefined): EgressPolicy {
  const hosts = new Set<string>();
  const cidrs = new net.BlockList();
  for (const entry of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const slash = entry.indexOf('/');
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = net.isIP(address);
    if (family === 0) {
      if (slash !== -1 || !/^[A-Za-z0-9.-]+$/.test(entry)) {
        throw new Error(`${EGRESS_ALLOW_VARIABLE}: ${JSON.stringify(entry)} is neither a CIDR block (10.0.0.0/8, fd00::/8) nor a host name`);
      }
      hosts.add(entry.toLowerCase().replace(/\.$/, ''));
      continue;
    }
    const max = family === 4 ? 32 : 128;
    const prefix = slash === -1 ? max : Number(entry.slice(slash + 1));
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) {
      throw new Error(`${EGRESS_ALLOW_VARIABLE}: ${JSON.stringify(entry)} has a prefix length outside 0-${max}`);
    }
    cidrs.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { hosts, cidrs, source: raw ?? '' };
}

/** `::ffff:a.b.c.d` is the IPv4 address it maps; every other address is itself. */
function normalize(address: string): { address: string; family: Family } {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return { address: mapped[1]!, family: 'ipv4' };
  return { address, family: net.isIPv6(address) ? 'ipv6' : 'ipv4' };
}

/** The kind of refused range `address` is in ("loopback", "private", ...), or undefined when it may be reached. */
export function refusedKind(policy: EgressPolicy, host: string, address: string): string | undefined {
  if (policy.hosts.has(host.toLowerCase().replace(/\.$/, ''))) return undefined;
  const { address: ip, family } = normalize(address);
  if (policy.cidrs.check(ip, family)) return undefined;
  return refusedLists.find((r) => r.family === family && r.list.check(ip, family))?.kind;
}
