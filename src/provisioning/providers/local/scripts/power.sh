# Running or paused: a paused computer's processes (its sshd and every session) are frozen.
# Environment: RUNNING (true or false).

create() {
  if cgroup_v2; then
    [ "$RUNNING" = true ] && v=0 || v=1
    echo "$v" >"/sys/fs/cgroup/$CG/cgroup.freeze"
  else
    [ "$RUNNING" = true ] && v=THAWED || v=FROZEN
    echo "$v" >"$(v1_dir freezer)/freezer.state"
  fi
  echo "$RUNNING"
}

delete() {
  for d in $(cgroup_dirs); do
    [ ! -f "$d/freezer.state" ] || echo THAWED >"$d/freezer.state"
    [ ! -f "$d/cgroup.freeze" ] || echo 0 >"$d/cgroup.freeze"
  done
}
