import type { Computer, ProvisioningStep } from '../../generated/prisma/client.ts';
import type { RelayUrls } from '../../relay/urls.ts';
import type { StoredSource } from './source.ts';
import { STACK_OPERATIONS } from './lifecycle.ts';
import type { ComputerView } from './schemas.ts';

const ms = (d: Date | null) => (d === null ? undefined : d.getTime());
const opt = <T>(v: T | null) => (v === null ? undefined : v);

function sourceView(source: unknown): ComputerView['computerSource'] {
  if (!source || typeof source !== 'object') return undefined;
  const s = source as StoredSource;
  return s.kind === 'computer' ? { kind: 'computer', computerId: s.sourceComputerId } : { kind: s.kind, templateId: s.templateId };
}

function stepView(step: ProvisioningStep) {
  return {
    id: step.id,
    name: step.name,
    status: step.status,
    error: opt(step.error),
    startedAt: ms(step.startedAt),
    completedAt: ms(step.completedAt),
    installSessionId: opt(step.installSessionId),
  };
}

/**
 * The wire shape; steps only when the caller asked for them. Every live computer a caller can read
 * is one it may reach, so each carries the relay address of `agentplane ssh` (relayClientUrl).
 * `versions` (version-view.ts) says which program version it runs and whether a newer one waits.
 */
export function computerView(
  c: Computer & { provisioningSteps?: ProvisioningStep[] },
  versions: Pick<ComputerView, 'templateVersion' | 'updateAvailable'>,
  relay?: RelayUrls,
): ComputerView {
  return {
    id: c.id,
    name: c.name,
    providerType: c.providerType,
    // A deleted computer is not what it was: its stored status stays as the teardown found it.
    status: c.deletedAt ? 'deleted' : c.status,
    createdAt: c.createdAt.getTime(),
    hostId: opt(c.hostId),
    isListed: c.isListed,
    remoteUser: opt(c.remoteUser),
    relayClientUrl: c.deletedAt ? undefined : (relay?.clientUrl(c.id) ?? opt(c.relayClientUrl)),
    relayAgentUrl: opt(c.relayAgentUrl),
    clonedRepoDirectories: c.clonedRepoDirectories,
    ownerPrincipalKind: c.ownerKind === 'service' ? 'service' : 'human',
    ownerId: c.ownerId,
    computerSource: sourceView(c.source),
    provisioningSteps: c.provisioningSteps?.map(stepView),
    powerState: c.powerState === 'running' || c.powerState === 'paused' ? c.powerState : undefined,
    deletedAt: ms(c.deletedAt),
    operation: STACK_OPERATIONS.find((o) => o === c.operation),
    operationError: opt(c.operationError),
    ...versions,
  };
}
