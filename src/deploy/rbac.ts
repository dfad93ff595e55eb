import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';

export interface ComputerRbacArgs {
  /** Where the control plane runs; its ServiceAccount lives here. */
  namespace: pulumi.Input<string>;
  /** The one namespace managed computers are created in; the Role reaches nothing else. */
  computersNamespace: pulumi.Input<string>;
  labels: Record<string, string>;
}

/**
 * The control plane's ServiceAccount and the least the `kubernetes` computer provider needs:
 * a Role (not a ClusterRole) in the computers' namespace only.
 */
export class ComputerRbac extends pulumi.ComponentResource {
  readonly serviceAccount: k8s.core.v1.ServiceAccount;
  readonly role: k8s.rbac.v1.Role;
  readonly roleBinding: k8s.rbac.v1.RoleBinding;

  constructor(name: string, args: ComputerRbacArgs, opts?: pulumi.ComponentResourceOptions) {
    super('agentplane:deploy:ComputerRbac', name, {}, opts);
    const parent = { parent: this };
    this.serviceAccount = new k8s.core.v1.ServiceAccount(name, { metadata: { name: 'agentplane', namespace: args.namespace, labels: args.labels } }, parent);
    const verbs = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
    this.role = new k8s.rbac.v1.Role(
      name,
      {
        metadata: { name: 'agentplane-computers', namespace: args.computersNamespace, labels: args.labels },
        rules: [
          { apiGroups: [''], resources: ['pods', 'services', 'persistentvolumeclaims', 'secrets'], verbs },
          { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
          { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
          // The kubernetes provider's computers are StatefulSets; Pulumi reads events while it waits on them.
          { apiGroups: ['apps'], resources: ['statefulsets'], verbs },
          { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
        ],
      },
      parent,
    );
    this.roleBinding = new k8s.rbac.v1.RoleBinding(
      name,
      {
        metadata: { name: 'agentplane-computers', namespace: args.computersNamespace, labels: args.labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: this.role.metadata.name },
        subjects: [{ kind: 'ServiceAccount', name: this.serviceAccount.metadata.name, namespace: args.namespace }],
      },
      parent,
    );
    this.registerOutputs({ serviceAccountName: this.serviceAccount.metadata.name });
  }
}
