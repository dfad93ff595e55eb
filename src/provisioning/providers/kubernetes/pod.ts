import { createHash } from 'node:crypto';
import type * as pulumi from '@pulumi/pulumi';
import type k8s from '@pulumi/kubernetes';
import { IMAGE } from './image-contract.ts';
import { ANNOTATIONS } from './labels.ts';
import type { ContainerResources } from './resources.ts';
import type { KubernetesSettings } from './settings.ts';

export interface PodArgs {
  labels: Record<string, string>;
  settings: KubernetesSettings;
  resources: ContainerResources;
  authorizedPublicKey: string;
  homeClaimName: pulumi.Input<string>;
  sshSecretName: pulumi.Input<string>;
}

/**
 * The computer's pod: the image's sshd as the computer's user, the home on its own volume, the
 * keys from the Secret. Agents run arbitrary code here, so the pod gets nothing it does not need:
 * no root, no added capabilities, no Kubernetes API token, no other services' addresses; and,
 * where the operator names one, a sandbox runtime (gVisor, Kata) between it and the node's kernel.
 */
export function podTemplate(a: PodArgs): k8s.types.input.core.v1.PodTemplateSpec {
  return {
    metadata: {
      labels: a.labels,
      annotations: { [ANNOTATIONS.authorizedKeySha256]: createHash('sha256').update(a.authorizedPublicKey).digest('hex') },
    },
    spec: {
      ...(a.settings.runtimeClassName ? { runtimeClassName: a.settings.runtimeClassName } : {}),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: IMAGE.uid,
        runAsGroup: IMAGE.uid,
        // The volumes become the user's group: the home writable, the Secret's files readable.
        fsGroup: IMAGE.uid,
        // A large home is not re-chowned file by file on every start.
        fsGroupChangePolicy: 'OnRootMismatch',
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'computer',
          image: a.settings.image,
          imagePullPolicy: a.settings.imagePullPolicy,
          ports: [{ name: 'ssh', containerPort: IMAGE.sshPort, protocol: 'TCP' }],
          resources: a.resources,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          // Ready once sshd accepts connections: Pulumi's StatefulSet wait ends there.
          readinessProbe: { tcpSocket: { port: 'ssh' }, periodSeconds: 5 },
          volumeMounts: [
            { name: 'home', mountPath: IMAGE.home },
            { name: 'ssh', mountPath: IMAGE.secretsDir, readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'home', persistentVolumeClaim: { claimName: a.homeClaimName } },
        // 0440 with fsGroup: readable by the user, which computer-start needs to copy them.
        { name: 'ssh', secret: { secretName: a.sshSecretName, defaultMode: 0o440 } },
      ],
    },
  };
}
