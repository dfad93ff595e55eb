import dns from 'node:dns';
import net from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { BadRequest } from '../lib/errors.ts';
import { scpLike } from '../repos/url.ts';
import { EGRESS_ALLOW_VARIABLE, refusedKind, type EgressPolicy } from './policy.ts';

/** A URL a tenant controls resolved to an address the control plane does not reach for tenants. */
class HostUnresolvable extends BadRequest {}

export class EgressRefused extends BadRequest {
  constructor(target: string, address: string, kind: string) {
    super(
      `${target} connects to ${address}, a ${kind} address, which agentplane does not reach on an organization's behalf; ` +
        `an operator can allow it by adding the address (or its CIDR block, or the host name) to ${EGRESS_ALLOW_VARIABLE}`,
      { metadata: { url: target, address, variable: EGRESS_ALLOW_VARIABLE } },
    );
  }
}

/** A host that passed the policy, with the addresses it was checked at: connect to these and no others. */
export interface CheckedTarget {
  host: string;
  port: number;
  addresses: string[];
}

/**
 * The one egress guard: every outbound request the control plane makes on a tenant's behalf (a
 * custom model's base URL, a repository it clones, a forge, a webhook) goes through it.
 * Operator-written configuration (the models file, AGENTPLANE_* variables) does not.
 */
export interface EgressGuard {
  /** Resolves the URL's host now: EgressRefused (a 400) when any address it has is refused, a 400 when it does not resolve. */
  check(url: string): Promise<CheckedTarget>;
  /**
   * The request-time form of `check`: a name that does not resolve passes (it may by the time it
   * is used, and every connection is checked again), a refused address does not.
   */
  screen(url: string): Promise<void>;
  /** fetch whose every connection, redirects included, is checked at the address actually connected to. */
  fetch: typeof globalThis.fetch;
}

const DEFAULT_PORTS: Record<string, number> = { 'https:': 443, 'http:': 80, 'ssh:': 22, 'git:': 9418, 'wss:': 443, 'ws:': 80 };

/** Host and port of an http(s), ssh, git or scp-like (`git@host:owner/repo`) URL. */
function hostAndPort(raw: string): { host: string; port: number; shown: string } {
  const scp = scpLike(raw);
  if (scp) return { host: scp.host, port: 22, shown: scp.host };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BadRequest(`${JSON.stringify(raw)} is not a URL`);
  }
  const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  if (!url.hostname || port === undefined) throw new BadRequest(`${url.protocol}//${url.host} is not a URL agentplane connects to`);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port, shown: `${url.protocol}//${url.host}` };
}

/** Every address a host name has (the system resolver's answer, as connections would get it). */
export type ResolveAll = (host: string) => Promise<string[]>;

const systemResolveAll: ResolveAll = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export function createEgressGuard(policy: EgressPolicy, resolveAll: ResolveAll = systemResolveAll): EgressGuard {
  const refusal = (shown: string, host: string, address: string) => {
    const kind = refusedKind(policy, host, address);
    return kind === undefined ? undefined : new EgressRefused(shown, address, kind);
  };

  async function check(url: string): Promise<CheckedTarget> {
    const { host, port, shown } = hostAndPort(url.trim());
    let addresses: string[];
    if (net.isIP(host)) {
      addresses = [host];
    } else {
      try {
        addresses = await resolveAll(host);
      } catch (err) {
        throw new HostUnresolvable(`${shown}: the host name ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
      }
    }
    for (const address of addresses) {
      const refused = refusal(shown, host, address);
      if (refused) throw refused;
    }
    return { host, port, addresses };
  }

  // Name resolution for connections: a name that resolves to any refused address fails before a
  // packet is sent, and each connection resolves afresh, so DNS rebinding meets the same check.
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolveAll(hostname).then(
      (found) => {
        const refused = found.map((address) => refusal(hostname, hostname, address)).find(Boolean);
        if (refused) return callback(refused, '', 0);
        const list = found.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
        if (!list.length) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
        callback(null, list[0]!.address, list[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
  const base = buildConnector({ lookup, timeout: 30_000 });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    const shown = `${opts.protocol}//${opts.hostname}${opts.port ? `:${opts.port}` : ''}`;
    // IP literals skip name resolution: refuse them before connecting.
    const early = net.isIP(host) ? refusal(shown, host, host) : undefined;
    if (early) return callback(early, null);
    base(opts, (err, socket) => {
      if (err) return callback(err, null);
      // The address actually connected to, whatever resolved it.
      const late = refusal(shown, host, socket!.remoteAddress ?? '');
      if (late) {
        socket!.destroy();
        return callback(late, null);
      }
      callback(null, socket!);
    });
  };
  const dispatcher = new Agent({ connect });

  const guardedFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    try {
      return await undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
    } catch (err) {
      // fetch reports connection failures as "fetch failed"; the refusal is the reason worth showing.
      const refused = egressRefusalIn(err);
      throw refused ?? err;
    }
  }) as unknown as typeof globalThis.fetch;

  async function screen(url: string): Promise<void> {
    try {
      await check(url);
    } catch (err) {
      if (!(err instanceof HostUnresolvable)) throw err;
    }
  }

  return { check, screen, fetch: guardedFetch };
}

/** The EgressRefused anywhere in an error's cause chain (SDKs and fetch wrap it). */
export function egressRefusalIn(err: unknown): EgressRefused | undefined {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressRefused) return e;
  }
  return undefined;
}
