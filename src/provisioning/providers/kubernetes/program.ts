import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';
import { deriveHostKey } from '../../../ssh/derived-host-key.ts';
import type { ComputerProgram } from '../types.ts';
import { IMAGE } from './image-contract.ts';
import { parseComputerInput } from './input.ts';
import { ANNOTATIONS, computerLabels, objectName, selectorLabels } from './labels.ts';
import { podTemplate } from './pod.ts';
import { containerResources, storageRequest } from './resources.ts';
import type { KubernetesSettings } from './settings.ts';

const SKIP_AWAIT = { 'pulumi.com/skipAwait': 'true' };

/**
 * The inline program for one computer's stack: a Secret with its keys, a volume for its home, a
 * StatefulSet of one pod (none while paused) and a ClusterIP Service on port 22. Everything lives
 * in the computers' namespace, which the deploy program creates and scopes the control plane's Role to.
 *
 * `hostKeySecret` (the control plane's encryption key) derives the sshd host key, so every run of
 * the stack gives the same key without storing or generating one.
 */
export function kubernetesComputerProgram(settings: KubernetesSettings, hostKeySecret: Buffer): ComputerProgram {
  return async (raw) => {
    const input = parseComputerInput(raw);
    const name = objectName(input.computerId);
    const namespace = settings.namespace;
    const labels = computerLabels(input);
    const annotations = { [ANNOTATIONS.computerName]: input.name };
    const metadata = (suffix = '', extra: Record<string, string> = {}) => ({
      name: `${name}${suffix}`,
      namespace,
      labels,
      annotations: { ...annotations, ...extra },
    });
    const hostKey = deriveHostKey(hostKeySecret, input.computerId);

    // Explicit, so `context` applies and every object of the stack names the provider it came from.
    const provider = new k8s.Provider('kubernetes', { context: settings.context });
    const opts = { provider };

    const secret = new k8s.core.v1.Secret(
      `${name}-ssh`,
      {
        metadata: metadata('-ssh'),
        type: 'Opaque',
        stringData: pulumi.secret({
          [IMAGE.authorizedKeysFile]: `${input.authorizedPublicKey}\n`,
          [IMAGE.hostKeyFile]: hostKey.privateKey,
        }),
      },
      opts,
    );

    // Its own resource, not a volumeClaimTemplate: a template change replaces the StatefulSet,
    // and its PVCs either leak on destroy or go with it. This one is resized in place and
    // removed by `pulumi destroy`. A new default StorageClass applies to new computers only.
    const home = new k8s.core.v1.PersistentVolumeClaim(
      `${name}-home`,
      {
        // A WaitForFirstConsumer class binds the claim only once the pod exists, and Pulumi can
        // tell that apart only by reading the StorageClass, which the namespaced Role cannot:
        // waiting here would deadlock. The StatefulSet's wait for a ready pod covers the volume.
        metadata: metadata('-home', SKIP_AWAIT),
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: settings.storageClassName,
          resources: { requests: { storage: storageRequest(input.resources) } },
        },
      },
      { ...opts, ignoreChanges: ['spec.storageClassName'] },
    );

    const service = new k8s.core.v1.Service(
      name,
      {
        // Pulumi would wait for endpoints, which a paused computer never has, nor a new one before
        // its pod exists. The StatefulSet's wait and the provisioner's SSH check cover readiness.
        metadata: metadata('', SKIP_AWAIT),
        spec: {
          type: 'ClusterIP',
          selector: selectorLabels(input),
          ports: [{ name: 'ssh', port: 22, targetPort: 'ssh', protocol: 'TCP' }],
        },
      },
      opts,
    );

    new k8s.apps.v1.StatefulSet(
      name,
      {
        metadata: metadata(),
        spec: {
          // Paused = no pod; the home volume and the Secret stay.
          replicas: input.running ? 1 : 0,
          serviceName: service.metadata.name,
          selector: { matchLabels: selectorLabels(input) },
          template: podTemplate({
            labels,
            settings,
            resources: containerResources(input.resources, settings),
            authorizedPublicKey: input.authorizedPublicKey,
            homeClaimName: home.metadata.name,
            sshSecretName: secret.metadata.name,
          }),
        },
      },
      opts,
    );

    return {
      ssh: {
        // `<service>.<namespace>.svc` resolves from any pod of the cluster, whatever its domain.
        host: pulumi.interpolate`${service.metadata.name}.${service.metadata.namespace}.svc`,
        port: 22,
        user: IMAGE.username,
        hostKey: hostKey.publicKey,
      },
      pausable: true,
    };
  };
}
