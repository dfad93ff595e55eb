# The computer's own sshd, in the computer's sandbox: inside its network namespace and cgroups,
# with its own mount, PID, IPC, UTS and cgroup namespaces (bubblewrap), a read-only view of the
# host's system directories (/usr, /etc less its secrets, with the computer's own passwd and
# group), its home, a private /tmp, /var/tmp and /dev/shm, its own /proc, and no_new_privs. sshd
# keeps only the capabilities it needs to log the computer's user in; every session, tool call and
# install runs as that user inside. Environment: HOST (the computer's address). Prints the host key.

# The sandbox's outer process (bwrap); the sandbox ends with it.
running() {
  pid=$(cat "$DIR/sshd/sandbox.pid" 2>/dev/null) || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = bwrap ]
}

# sshd of a computer made before sandboxes (PidFile in the sshd directory), which the sandbox replaces.
stop_unsandboxed() {
  if [ -f "$DIR/sshd/sshd.pid" ]; then
    kill -9 "$(cat "$DIR/sshd/sshd.pid")" 2>/dev/null || true
    rm -f "$DIR/sshd/sshd.pid"
  fi
}

# bwrap's arguments for each directory above the home, so that every one of them is searchable
# inside (bwrap makes the parents of a mount point 0700 otherwise) and holds nothing else.
parent_dirs() {
  p=""
  for part in $(dirname "$1" | tr '/' ' '); do
    p="$p/$part"
    printf -- '--perms 0755 --dir %s ' "$p"
  done
}

# The sandbox's /etc: a tmpfs of its own holding each entry of the host's /etc, read-only, except
# the lists of users and their secrets, the host's SSH keys and sudo's rules; the computer's own
# passwd, group, shadow and hosts stand in their place. (Its own file system, not the host's /etc
# with files bound over it: a useradd on the host renames a new /etc/passwd over the old one, and
# the kernel then detaches every mount on the old one in every namespace.)
etc_args() {
  for f in /etc/* /etc/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    case "${f#/etc/}" in
      passwd | passwd- | group | group- | shadow | shadow- | gshadow | gshadow- | subuid | subuid- | subgid | subgid-) continue ;;
      hosts | hostname | machine-id | ssh | sudoers | sudoers.d | netns | *[[:space:]]*) continue ;;
      # useradd's and vipw's locks and temporary copies, there only for a moment.
      *.lock | .pwd.lock | *+ | *.tmp | *.edit) continue ;;
    esac
    if [ -L "$f" ]; then
      target=$(readlink "$f")
      case "$target" in *[[:space:]]*) continue ;; esac
      printf -- '--symlink %s %s ' "$target" "$f"
    else
      printf -- '--ro-bind-try %s %s ' "$f" "$f"
    fi
  done
  for f in passwd group shadow hosts; do printf -- '--ro-bind %s/etc/%s /etc/%s ' "$DIR" "$f" "$f"; done
  printf -- '--ro-bind %s/etc/shadow /etc/gshadow ' "$DIR"
  # Only the SSH client's configuration.
  printf -- '--perms 0755 --dir /etc/ssh '
  for f in ssh_config ssh_config.d moduli; do
    [ ! -e "/etc/ssh/$f" ] || printf -- '--ro-bind /etc/ssh/%s /etc/ssh/%s ' "$f" "$f"
  done
}

# bwrap's arguments: the sandbox's whole file system, namespaces and capabilities (no path here
# holds white space: ROOT is checked at start, the rest are derived from the computer's id).
sandbox_args() {
  home="$DIR/home"
  d="$DIR/sshd"
  echo --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --hostname "$USER_NAME" \
    --ro-bind /usr /usr "$(system_dirs)" \
    --perms 0755 --tmpfs /etc "$(etc_args)" \
    --proc /proc --dev /dev \
    --perms 1777 --tmpfs /tmp --perms 1777 --tmpfs /dev/shm --perms 1777 --tmpfs /var/tmp \
    --tmpfs /run --perms 0755 --dir /run/sshd \
    "$(parent_dirs "$home")" --bind "$home" "$home" \
    "$(parent_dirs "$d")" --ro-bind "$d" "$d" \
    --chdir / \
    --cap-drop ALL --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_CHOWN --cap-add CAP_SYS_CHROOT \
    --cap-add CAP_NET_BIND_SERVICE --cap-add CAP_KILL --cap-add CAP_DAC_OVERRIDE --cap-add CAP_FOWNER --cap-add CAP_AUDIT_WRITE \
    /usr/sbin/sshd -D -e -f "$d/sshd_config"
}

# sshd listens on the computer's address, port 22: the sandbox's own view of its network namespace
# (/proc/PID/net/tcp: address and port in hex, state 0A), read without entering it.
listening() {
  [ -n "${hex:-}" ] || hex=$(printf '%02X' $(echo "$HOST" | tr '.' ' ') | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')
  grep -q " $hex:0016 00000000:0000 0A" "/proc/$1/net/tcp" 2>/dev/null
}

create() {
  d="$DIR/sshd"
  mkdir -p "$d"
  chmod 700 "$d"
  [ -f "$d/host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "agentplane-$ID" -f "$d/host_ed25519_key"
  cat >"$d/sshd_config" <<CONFIG
ListenAddress $HOST:22
HostKey $d/host_ed25519_key
PidFile none
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
  stop_unsandboxed
  if ! running; then
    procs=""
    for c in $(cgroup_dirs); do procs="$procs $c/cgroup.procs"; done
    # The shell joins the cgroups first, so the sandbox and every session sshd forks inherit the
    # limits; it runs detached, its output in the log (root's alone: the sshd directory is 0700),
    # with none of the control plane's environment.
    args=$(sandbox_args)
    # shellcheck disable=SC2016,SC2086
    setsid sh -c 'for f in $1; do echo $$ >"$f"; done; shift; exec "$@"' sh "$procs" \
      ip netns exec "$NS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin bwrap $args </dev/null >>"$d/sshd.log" 2>&1 &
    pid=$!
    echo "$pid" >"$d/sandbox.pid"
    # Ready when sshd listens: the control plane connects next.
    tries=0
    until listening "$pid"; do
      # A paused computer's sandbox is frozen as it joins the cgroup: it listens once resumed.
      ! cgroup_frozen || break
      kill -0 "$pid" 2>/dev/null || fail "the computer's sandbox did not start: $(tail -n 5 "$d/sshd.log")"
      [ "$tries" -lt 1000 ] || fail "the computer's sshd did not listen within 10 s: $(tail -n 5 "$d/sshd.log")"
      sleep 0.01
      tries=$((tries + 1))
    done
  fi
  cut -d' ' -f1,2 "$d/host_ed25519_key.pub"
}

# Ends the sandbox: its PID namespace's first process (the outer bwrap's child), which takes every
# process of the namespace with it, then the outer bwrap.
stop_sandbox() {
  pid=$(cat "$DIR/sshd/sandbox.pid")
  pkill -9 -P "$pid" || true
  kill -9 "$pid" 2>/dev/null || true
}

delete() {
  if running; then stop_sandbox; fi
  stop_unsandboxed
  rm -rf "$DIR/sshd"
}
