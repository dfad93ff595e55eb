/**
 * What the program relies on in the computer image (images/computer: Dockerfile, computer-start.sh,
 * sshd_config). A custom image must keep these, e.g. by building FROM agentplane-computer.
 */
export const IMAGE = {
  /** The unix user sshd runs as and logs in: the only user in the container. */
  username: 'agent',
  uid: 1000,
  home: '/home/agent',
  /** sshd's port inside the pod; the Service maps port 22 to it (a non-root sshd cannot bind 22). */
  sshPort: 2222,
  /** Where computer-start reads the Secret's files (its AGENTPLANE_SECRETS_DIR default). */
  secretsDir: '/etc/agentplane/secrets',
  authorizedKeysFile: 'authorized_keys',
  hostKeyFile: 'ssh_host_ed25519_key',
} as const;
