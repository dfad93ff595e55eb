# Shared by every script of a local computer. Each script defines `create` and `delete`; both
# are idempotent, so a run interrupted midway (the control plane killed) is finished by the next.
# Environment: ID, DIR (the computer's directory), ROOT (all computers' directories), CG (cgroup path), NS,
# VETH_HOST, VETH_GUEST, USER_NAME.
set -eu

fail() {
  echo "$*" >&2
  exit 1
}

# Pure cgroup v2 when the root holds cgroup.controllers; otherwise v1 hierarchies (hybrid hosts
# mount an empty v2 tree beside them, which has no controllers to limit anything with).
cgroup_v2() { [ -f /sys/fs/cgroup/cgroup.controllers ]; }

v1_mount() {
  awk -v c="$1" '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) { print $2; exit } }' /proc/self/mounts
}

# The computer's cgroup directory in every hierarchy it uses, one per line.
cgroup_dirs() {
  if cgroup_v2; then
    echo "/sys/fs/cgroup/$CG"
  else
    for c in cpu cpuacct memory freezer pids; do
      m=$(v1_mount "$c")
      [ -z "$m" ] || echo "$m/$CG"
    done | sort -u
  fi
}

v1_dir() {
  m=$(v1_mount "$1")
  [ -n "$m" ] || fail "cgroup v1 controller $1 is not mounted"
  echo "$m/$CG"
}

# Host-wide state of local computers, shared by every agentplane on this machine (they share its
# network); on tmpfs, so it goes with a reboot, as the namespaces and addresses it tracks do.
HOST_STATE=/run/agentplane/local

# Serializes edits of host-wide files (/etc/passwd, address slots) between computers.
host_lock() {
  mkdir -p "$HOST_STATE"
  exec 9>"$HOST_STATE/lock"
  flock 9
}

# Whether the computer's processes are frozen (paused).
cgroup_frozen() {
  if cgroup_v2; then
    grep -qx 'frozen 1' "/sys/fs/cgroup/$CG/cgroup.events" 2>/dev/null
  else
    [ "$(cat "$(v1_dir freezer)/freezer.state" 2>/dev/null)" = FROZEN ]
  fi
}

# Each top-level link or directory of the host's system (merged /usr or not), read-only.
system_dirs() {
  for d in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$d" ]; then
      printf -- '--symlink %s /%s ' "$(readlink "/$d")" "$d"
    elif [ -d "/$d" ]; then
      printf -- '--ro-bind /%s /%s ' "$d" "$d"
    fi
  done
}
