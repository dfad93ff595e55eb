import net from 'node:net';
import type { CheckedTarget } from '../egress/guard.ts';
import { schemeOf } from './url.ts';

/** How one `git clone` is held to the addresses its URL was checked at. */
export interface PinnedClone {
  /** The URL to clone (rewritten only for git://, which has no other way to pin an address). */
  url: string;
  /** `-c name=value` settings for git. */
  config: string[];
  /** Options for the ssh that git runs. */
  sshOptions: string[];
}

const bracketed = (address: string) => (net.isIPv6(address) ? `[${address}]` : address);

/**
 * git resolves host names itself, so the check made before the clone would not bind it: each
 * transport is told the checked addresses (curl's resolve list for http(s), ssh's HostName, the
 * address itself for git://), and http redirects, which could lead anywhere, are not followed.
 */
export function pinClone(url: string, target: CheckedTarget): PinnedClone {
  const addresses = target.addresses.map(bracketed);
  const scheme = schemeOf(url);
  if (scheme === 'http' || scheme === 'https') {
    return {
      url,
      config: [`http.curloptResolve=${target.host}:${target.port}:${addresses.join(',')}`, 'http.followRedirects=false'],
      sshOptions: [],
    };
  }
  if (scheme === 'git') {
    const u = new URL(url);
    u.hostname = addresses[0]!;
    return { url: u.toString(), config: [], sshOptions: [] };
  }
  // ssh:// and scp-like: connect to the checked address, verify the host key under the name.
  return { url, config: [], sshOptions: [`HostName=${target.addresses[0]!}`, `HostKeyAlias=${target.host}`] };
}
