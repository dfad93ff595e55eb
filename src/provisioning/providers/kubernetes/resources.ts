import type { ComputerResources } from '../types.ts';
import type { KubernetesSettings } from './settings.ts';

export interface ContainerResources {
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
}

/**
 * The computer's size as Kubernetes quantities. Limits are what the computer was given; requests
 * (what the scheduler reserves) are a configured share of them, so they can never exceed the limits.
 */
export function containerResources(r: ComputerResources, s: KubernetesSettings): ContainerResources {
  const millicores = Math.round(r.cpus * 1000);
  return {
    requests: {
      cpu: `${Math.max(1, Math.round(millicores * s.cpuRequestFraction))}m`,
      memory: `${Math.max(1, Math.round(r.memoryMiB * s.memoryRequestFraction))}Mi`,
    },
    limits: { cpu: `${millicores}m`, memory: `${r.memoryMiB}Mi` },
  };
}

export function storageRequest(r: ComputerResources): string {
  return `${r.diskGiB}Gi`;
}
