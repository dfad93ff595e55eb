# The computer's own network namespace, joined to the host by a veth pair with a /30 of its own.
# Environment: SUBNET_BASE (the subnet's first address as an integer), SLOTS (how many /30s),
# API_PORT (the control plane's port), ALLOW_PORTS and ALLOW_NETS (space-separated host ports and
# IPv4 blocks the operator opens besides; may be empty).
# Prints {"host": computer address, "gateway": host address}.

# nftables: what a computer may reach. Traffic from its veth to the host itself (any of the host's
# addresses) goes to its own input chain: the API port, the ports allowed and replies to the
# control plane's connections (its SSH) pass, the rest is refused. Traffic it sends through the
# host (other computers, the outside world) goes to its own forward chain: only to the blocks
# allowed, never to another computer. One table for every computer on the host; its base chains
# look each computer's chains up by interface in a verdict map.
TABLE="inet agentplane_local"

firewall() {
  ports=$(echo "$API_PORT $ALLOW_PORTS" | xargs | tr ' ' ',')
  nets=$(echo "$ALLOW_NETS" | xargs | tr ' ' ',')
  allow_out=""
  [ -z "$nets" ] || allow_out="add rule $TABLE fwd_$VETH_HOST ip daddr { $nets } accept"
  # One transaction: the base chains' one rule each is replaced (flush, add) and the computer's
  # chains and map entries written, all or nothing; \`add\` is a no-op for what exists.
  host_lock
  nft -f - <<NFT
add table $TABLE
add map $TABLE input_by_veth { type ifname : verdict; }
add map $TABLE forward_by_veth { type ifname : verdict; }
add chain $TABLE input { type filter hook input priority -10; policy accept; }
add chain $TABLE forward { type filter hook forward priority -10; policy accept; }
flush chain $TABLE input
add rule $TABLE input iifname vmap @input_by_veth
flush chain $TABLE forward
add rule $TABLE forward iifname vmap @forward_by_veth
add chain $TABLE in_$VETH_HOST
flush chain $TABLE in_$VETH_HOST
add rule $TABLE in_$VETH_HOST ct state established,related accept
add rule $TABLE in_$VETH_HOST tcp dport { $ports } accept
add rule $TABLE in_$VETH_HOST reject with icmpx type admin-prohibited
add chain $TABLE fwd_$VETH_HOST
flush chain $TABLE fwd_$VETH_HOST
add rule $TABLE fwd_$VETH_HOST ct state established,related accept
add rule $TABLE fwd_$VETH_HOST oifname "aph*" reject with icmpx type admin-prohibited
$allow_out
add rule $TABLE fwd_$VETH_HOST reject with icmpx type admin-prohibited
add element $TABLE input_by_veth { "$VETH_HOST" : jump in_$VETH_HOST }
add element $TABLE forward_by_veth { "$VETH_HOST" : jump fwd_$VETH_HOST }
NFT
  flock -u 9
}

firewall_delete() {
  nft list table $TABLE >/dev/null 2>&1 || return 0
  nft delete element $TABLE input_by_veth "{ \"$VETH_HOST\" }" 2>/dev/null || true
  nft delete element $TABLE forward_by_veth "{ \"$VETH_HOST\" }" 2>/dev/null || true
  nft delete chain $TABLE in_$VETH_HOST 2>/dev/null || true
  nft delete chain $TABLE fwd_$VETH_HOST 2>/dev/null || true
}

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
  firewall
  printf '{"host":"%s","gateway":"%s"}\n' "$host" "$gateway"
}

delete() {
  if [ -e "/run/netns/$NS" ]; then
    ip netns pids "$NS" | xargs -r kill -9
    ip netns del "$NS"
  fi
  # Deleting the namespace takes its end of the pair, and the host's end with it, asynchronously.
  ip link del "$VETH_HOST" 2>/dev/null || true
  firewall_delete
  host_lock
  for f in $(grep -lx "$ID" "$HOST_STATE"/slots/* 2>/dev/null); do rm -f "$f"; done
}
