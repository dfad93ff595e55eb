# The computer's own sshd: inside its network namespace and cgroups, its own host key, only the
# computer's user may log in. Environment: HOST (the computer's address). Prints the host key.

running() {
  [ -f "$DIR/sshd/sshd.pid" ] && kill -0 "$(cat "$DIR/sshd/sshd.pid")" 2>/dev/null
}

create() {
  d="$DIR/sshd"
  mkdir -p "$d" /run/sshd
  chmod 700 "$d"
  [ -f "$d/host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "agentplane-$ID" -f "$d/host_ed25519_key"
  cat >"$d/sshd_config" <<CONFIG
ListenAddress $HOST:22
HostKey $d/host_ed25519_key
PidFile $d/sshd.pid
AllowUsers $USER_NAME
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 64
ClientAliveInterval 30
Subsystem sftp internal-sftp
CONFIG
  if ! running; then
    procs=""
    for c in $(cgroup_dirs); do procs="$procs $c/cgroup.procs"; done
    # The shell joins the cgroups first, so sshd and every session it forks inherit the limits.
    sh -c 'for f in $1; do echo $$ >"$f"; done; shift; exec "$@"' sh "$procs" \
      ip netns exec "$NS" /usr/sbin/sshd -f "$d/sshd_config" -E "$d/sshd.log"
  fi
  cut -d' ' -f1,2 "$d/host_ed25519_key.pub"
}

delete() {
  if running; then kill -9 "$(cat "$DIR/sshd/sshd.pid")"; fi
  rm -rf "$DIR/sshd"
}
