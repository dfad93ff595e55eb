import { inTransaction } from '../../db/transaction.ts';
import { Unauthorized } from '../../lib/errors.ts';
import type { ComputersDeps } from './deps.ts';
import { lockComputer, registrationTokenHash } from './dial-in.ts';
import { computerSetupJob } from './job-kinds.ts';
import { reachThroughAgent } from './registration.ts';
import type { RegisterDialInInput } from './schemas.ts';

const unknownToken = () => new Unauthorized('The registration token is not valid: it is unknown, already used, or its computer was deleted');

/**
 * `POST /api/v0/computers/register`: a dial-in machine's agent registers the computer its token
 * was issued for. The token is spent (single use); the agent's keys become the relay credential and
 * the pinned host key, and the set-up is queued once the computer's stack is up too.
 */
export async function registerDialIn(deps: ComputersDeps, input: RegisterDialInInput) {
  const reached = reachThroughAgent(deps.gateway && deps.relayUrls?.agentUrl(), input.connection);
  const hash = registrationTokenHash(input.registrationToken);
  const now = deps.clock.now();
  return inTransaction(deps.db, async (tx) => {
    const found = await tx.computer.findFirst({ where: { registrationTokenHash: hash, deletedAt: null }, select: { id: true } });
    if (!found) throw unknownToken();
    await lockComputer(tx, found.id);
    const c = await tx.computer.findUniqueOrThrow({ where: { id: found.id } });
    if (c.registrationTokenHash !== hash || c.deletedAt) throw unknownToken();
    if (!c.registrationExpiresAt || c.registrationExpiresAt <= now) {
      throw new Unauthorized(`The registration token of computer "${c.name}" expired at ${c.registrationExpiresAt?.toISOString() ?? 'its issue'}`);
    }
    await tx.computer.update({
      where: { id: c.id },
      data: {
        agentPublicKey: reached.agentPublicKey,
        hostKeyFingerprint: reached.hostKeyFingerprint,
        relayAgentUrl: reached.relayAgentUrl,
        remoteUser: input.remoteUser,
        registrationTokenHash: null,
        registrationExpiresAt: null,
      },
    });
    // The stack came up first (awaitRegistration ran): the set-up waits for nothing else.
    if (c.connectionType === 'agent' && c.operation === 'provision') await deps.queue.send(computerSetupJob, { computerId: c.id }, { tx });
    return { id: c.id, name: c.name, relayAgentUrl: reached.relayAgentUrl ?? null };
  });
}
