import type { LocalAllow } from './names.ts';

const PORT = /^\d{1,5}$/;
const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/;

/**
 * AGENTPLANE_LOCAL_ALLOW: comma-separated host ports (`9418`: the host's listeners on that port)
 * and IPv4 blocks (`203.0.113.0/24`, `0.0.0.0/0` for everywhere) that `local` computers may reach
 * besides the control plane's API port. Anything else is refused with the entry named.
 */
export function parseLocalAllow(text: string): LocalAllow {
  const allow: LocalAllow = { ports: [], nets: [] };
  for (const entry of text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    if (PORT.test(entry)) {
      const port = Number(entry);
      if (port < 1 || port > 65535) throw new Error(`${JSON.stringify(entry)} is not a port (1-65535)`);
      allow.ports.push(port);
      continue;
    }
    const m = CIDR.exec(entry);
    if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || (m[5] !== undefined && Number(m[5]) > 32)) {
      throw new Error(`${JSON.stringify(entry)} is neither a port (9418) nor an IPv4 block (203.0.113.0/24)`);
    }
    allow.nets.push(m[5] === undefined ? `${entry}/32` : entry);
  }
  return allow;
}
