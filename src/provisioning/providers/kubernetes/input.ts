import ssh2 from 'ssh2';
import { z } from 'zod';
import type { ComputerProgramInput } from '../types.ts';

// A label value: at most 63, alphanumeric at both ends.
const labelValue = z
  .string()
  .regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be usable as a Kubernetes label value (at most 63 of [A-Za-z0-9_.-])');

const InputSchema = z.object({
  // Ids name the StatefulSet, whose pods' controller-revision-hash label adds 11 characters to a 63 limit.
  computerId: z
    .string()
    .regex(/^[a-z0-9]+(_[a-z0-9]+)*$/, 'must be lower-case letters and digits joined by "_", like cmp_3k2j...')
    .max(52, 'must be at most 52 characters'),
  name: z.string().min(1, 'must not be empty'),
  organizationId: labelValue,
  authorizedPublicKey: z.string().trim().refine(isPublicKeyLine, 'must be one OpenSSH public key line, e.g. "ssh-ed25519 AAAA..."'),
  resources: z.object({
    cpus: z.number().min(0.001, 'must be at least 0.001 (one millicore)'),
    memoryMiB: z.number().int('must be a whole number of MiB').min(16, 'must be at least 16'),
    diskGiB: z.number().int('must be a whole number of GiB').min(1, 'must be at least 1'),
  }),
  running: z.boolean(),
});

/** One computer's input rejected before any resource is declared; names each bad field. */
export class ComputerInputError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`kubernetes computer: invalid input: ${problems.join('; ')}`);
    this.name = 'ComputerInputError';
    this.problems = problems;
  }
}

export function parseComputerInput(input: ComputerProgramInput): ComputerProgramInput {
  const parsed = InputSchema.safeParse(input);
  if (!parsed.success) throw new ComputerInputError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return parsed.data;
}

function isPublicKeyLine(line: string): boolean {
  if (/[\r\n]/.test(line)) return false;
  const key = ssh2.utils.parseKey(line);
  return !(key instanceof Error) && !Array.isArray(key) && !key.isPrivateKey();
}
