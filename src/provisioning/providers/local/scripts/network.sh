# The computer's own network namespace, joined to the host by a veth pair with a /30 of its own.
# Environment: SUBNET_BASE (the subnet's first address as an integer), SLOTS (how many /30s).
# Prints {"host": computer address, "gateway": host address}.

ip4() {
  v=$1
  echo "$((v >> 24 & 255)).$((v >> 16 & 255)).$((v >> 8 & 255)).$((v & 255))"
}

slot_of() {
  grep -lx "$ID" "$HOST_STATE"/slots/* 2>/dev/null | head -n 1 | xargs -r basename
}

create() {
  host_lock
  mkdir -p "$HOST_STATE/slots"
  slot=$(slot_of)
  if [ -z "$slot" ]; then
    slot=0
    while [ -e "$HOST_STATE/slots/$slot" ]; do slot=$((slot + 1)); done
    [ "$slot" -lt "$SLOTS" ] || fail "no free address left in the local computers' subnet ($SLOTS in use); delete computers or widen AGENTPLANE_LOCAL_SUBNET"
    echo "$ID" >"$HOST_STATE/slots/$slot"
  fi
  flock -u 9
  gateway=$(ip4 $((SUBNET_BASE + slot * 4 + 1)))
  host=$(ip4 $((SUBNET_BASE + slot * 4 + 2)))
  [ -e "/run/netns/$NS" ] || ip netns add "$NS"
  ip link show "$VETH_HOST" >/dev/null 2>&1 || ip link add "$VETH_HOST" type veth peer name "$VETH_GUEST" netns "$NS"
  ip addr replace "$gateway/30" dev "$VETH_HOST"
  ip link set "$VETH_HOST" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr replace "$host/30" dev "$VETH_GUEST"
  ip -n "$NS" link set "$VETH_GUEST" up
  ip -n "$NS" route replace default via "$gateway"
  printf '{"host":"%s","gateway":"%s"}\n' "$host" "$gateway"
}

delete() {
  if [ -e "/run/netns/$NS" ]; then
    ip netns pids "$NS" | xargs -r kill -9
    ip netns del "$NS"
  fi
  # Deleting the namespace takes its end of the pair, and the host's end with it, asynchronously.
  ip link del "$VETH_HOST" 2>/dev/null || true
  host_lock
  for f in $(grep -lx "$ID" "$HOST_STATE"/slots/* 2>/dev/null); do rm -f "$f"; done
}
