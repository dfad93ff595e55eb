import type { ProgramEndpoint } from './contract.ts';
import { ProgramProblem } from './problem.ts';

const CONTRACT =
  'a program must output either "ssh: {host, port, user, hostKey}" (a machine agentplane reaches over SSH) or "agent: true" ' +
  '(a machine that runs agentplane agent and dials in), and "pausable: true" if it stops the machine while agentplane:running is "false"';

/**
 * How to reach the computer, from its stack's outputs (plain values) after an `up`. (Stacks made
 * before the built-ins kept the contract output `host`, `username`, ...: every operation runs the
 * program again, so their next `up` rewrites them and no reader sees the old shape.)
 */
export function endpointFromOutputs(
  outputs: Record<string, unknown>,
  /** The provider's name, in messages (`program` for a template's). */
  program: string,
): ProgramEndpoint {
  const who = program === 'program' ? "the template's program" : `the ${program} provider's program`;
  const pausable = outputs.pausable === true || outputs.pausable === 'true';
  if (outputs.agent === true || outputs.agent === 'true') return { kind: 'agent', pausable };
  const ssh = outputs.ssh;
  if (ssh === undefined) {
    const names = Object.keys(outputs);
    throw new ProgramProblem(`${who}'s outputs miss the contract (${names.length ? `it output ${names.join(', ')}` : 'it output nothing'}): ${CONTRACT}`);
  }
  const s = (ssh ?? {}) as Record<string, unknown>;
  const missing = ['host', 'port', 'user', 'hostKey'].filter((k) => s[k] === undefined || s[k] === null || s[k] === '');
  const port = Number(s.port);
  const hostKey = String(s.hostKey ?? '').trim();
  if (missing.length > 0) throw new ProgramProblem(`${who}'s output "ssh" lacks ${missing.join(', ')}: ${CONTRACT}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ProgramProblem(`${who}'s output ssh.port is ${JSON.stringify(s.port)}, not a port number`);
  if (!/^\S+ [A-Za-z0-9+/]+=*$/.test(hostKey.split(/\s+/).slice(0, 2).join(' '))) {
    throw new ProgramProblem(
      `${who}'s output ssh.hostKey must be the sshd's public host key as one OpenSSH line ("ssh-ed25519 AAAA..."), not ${JSON.stringify(s.hostKey)}`,
    );
  }
  return { kind: 'ssh', host: String(s.host), port, user: String(s.user), hostKey, pausable };
}
