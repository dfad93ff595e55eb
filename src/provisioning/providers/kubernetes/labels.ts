import type { ComputerProgramInput } from '../types.ts';

/** Label keys linking Kubernetes objects back to agentplane's records. */
const LABELS = {
  computerId: 'agentplane.dev/computer-id',
  organizationId: 'agentplane.dev/organization-id',
} as const;

/** Annotations hold what labels cannot: free-form values and checksums. */
export const ANNOTATIONS = {
  computerName: 'agentplane.dev/computer-name',
  /** Changing the key changes the pod template, so the pod restarts and computer-start installs the new key. */
  authorizedKeySha256: 'agentplane.dev/authorized-key-sha256',
} as const;

/** Kubernetes names allow no `_`; computer ids hold no `-`, so the mapping is one-to-one. */
export function objectName(computerId: string): string {
  return computerId.replaceAll('_', '-');
}

/** The StatefulSet's selector: immutable, so only what never changes for a computer. */
export function selectorLabels(input: Pick<ComputerProgramInput, 'computerId'>): Record<string, string> {
  return { 'app.kubernetes.io/name': 'agentplane-computer', [LABELS.computerId]: input.computerId };
}

/** Every object of a computer carries these, so `kubectl get all -l agentplane.dev/computer-id=...` finds them. */
export function computerLabels(input: Pick<ComputerProgramInput, 'computerId' | 'organizationId'>): Record<string, string> {
  return {
    ...selectorLabels(input),
    'app.kubernetes.io/instance': objectName(input.computerId),
    'app.kubernetes.io/managed-by': 'agentplane',
    [LABELS.organizationId]: input.organizationId,
  };
}
