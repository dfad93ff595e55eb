# CPU and memory limits (and the freezer that pauses the computer) through cgroups, v2 or v1.
# Environment: CPU_QUOTA_US (per 100 ms period), MEMORY_BYTES, PIDS_MAX (processes and threads at once).

create() {
  if cgroup_v2; then
    parent="/sys/fs/cgroup/${CG%/*}"
    mkdir -p "$parent"
    echo "+cpu +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
    echo "+cpu +memory +pids" >"$parent/cgroup.subtree_control"
    d="/sys/fs/cgroup/$CG"
    mkdir -p "$d"
    echo "$CPU_QUOTA_US 100000" >"$d/cpu.max"
    echo "$MEMORY_BYTES" >"$d/memory.max"
    echo "$PIDS_MAX" >"$d/pids.max"
  else
    for d in $(cgroup_dirs); do mkdir -p "$d"; done
    cpu=$(v1_dir cpu)
    echo 100000 >"$cpu/cpu.cfs_period_us"
    echo "$CPU_QUOTA_US" >"$cpu/cpu.cfs_quota_us"
    echo "$MEMORY_BYTES" >"$(v1_dir memory)/memory.limit_in_bytes"
    echo "$PIDS_MAX" >"$(v1_dir pids)/pids.max"
  fi
}

delete() {
  for d in $(cgroup_dirs); do
    [ -d "$d" ] || continue
    if [ -f "$d/freezer.state" ]; then echo THAWED >"$d/freezer.state"; fi
    if [ -f "$d/cgroup.freeze" ]; then echo 0 >"$d/cgroup.freeze"; fi
    if [ -f "$d/cgroup.kill" ]; then echo 1 >"$d/cgroup.kill"; fi
    # A process killed just now (an SSH session closing as the teardown starts) may still hold
    # the group for a moment after it left cgroup.procs: rmdir is tried again until it goes.
    tries=0
    while [ "$tries" -lt 50 ]; do
      if [ -s "$d/cgroup.procs" ]; then xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null || true; fi
      if [ ! -s "$d/cgroup.procs" ] && rmdir "$d" 2>/dev/null; then break; fi
      sleep 0.1
      tries=$((tries + 1))
    done
    if [ -d "$d" ]; then rmdir "$d"; fi
  done
}
