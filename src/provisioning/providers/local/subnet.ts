/** The local computers' address block: one /30 per computer (the host's end, then the computer's). */
export interface Subnet {
  /** The network address as an unsigned 32-bit integer. */
  base: number;
  /** How many /30 blocks fit. */
  slots: number;
}

export function parseSubnet(cidr: string): Subnet {
  const [address, prefixText] = cidr.split('/');
  const octets = (address ?? '').split('.').map(Number);
  const prefix = Number(prefixText);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255) || !(prefix >= 8 && prefix <= 30)) {
    throw new Error(`invalid subnet ${JSON.stringify(cidr)}: expected an IPv4 CIDR block between /8 and /30, e.g. 10.231.0.0/16`);
  }
  const value = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  return { base: value - (value % size), slots: size / 4 };
}
