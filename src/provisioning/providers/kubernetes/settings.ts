import type { Config } from '../../../config.ts';

/** The provider's deployment-wide settings, read from AGENTPLANE_COMPUTERS_NAMESPACE and AGENTPLANE_K8S_* (src/config.ts). */
export type KubernetesSettings = Config['kubernetes'];
