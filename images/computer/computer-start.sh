#!/bin/sh
# Starts sshd for a managed computer as the computer's own user (the image's USER, the pod's
# runAsUser). The kubernetes provider mounts a Secret with `authorized_keys` (the computer's key)
# and `ssh_host_ed25519_key` (the host key the control plane pins) at $AGENTPLANE_SECRETS_DIR.
set -eu
secrets="${AGENTPLANE_SECRETS_DIR:-/etc/agentplane/secrets}"
keys="${AGENTPLANE_SSH_DIR:-/var/lib/agentplane/ssh}"
home="${HOME:-/home/agent}"

# sshd refuses a host key others can read and authorized keys on a path others can write; a Secret
# volume gives root-owned, group-readable files on a world-writable tmpfs, so copy them into a
# directory only this user owns. `install` replaces, so a restarted container picks up new keys.
umask 077
if [ -s "$secrets/ssh_host_ed25519_key" ]; then
  install -m 600 "$secrets/ssh_host_ed25519_key" "$keys/ssh_host_ed25519_key"
elif [ ! -s "$keys/ssh_host_ed25519_key" ]; then
  # Run outside the provider (`docker run`): a fresh key per container, never one baked into the image.
  ssh-keygen -q -t ed25519 -N '' -C "$(hostname)" -f "$keys/ssh_host_ed25519_key"
fi
if [ -s "$secrets/authorized_keys" ]; then
  install -m 600 "$secrets/authorized_keys" "$keys/authorized_keys"
elif [ -n "${AUTHORIZED_KEYS:-}" ]; then
  printf '%s\n' "$AUTHORIZED_KEYS" > "$keys/authorized_keys"
fi

# The home is a persistent volume, empty on the first start: give it the usual dotfiles once.
[ -e "$home/.profile" ] || cp -R /etc/skel/. "$home/"
install -d -m 700 "$home/.ssh"

exec /usr/sbin/sshd -D -e -f "${SSHD_CONFIG:-/etc/ssh/sshd_config}" \
  -h "$keys/ssh_host_ed25519_key" \
  -o "AuthorizedKeysFile=.ssh/authorized_keys $keys/authorized_keys"
