# The computer's unix user, its home under the data directory (kept while the computer lives)
# and the computer's key as the only authorized key. Environment: AUTHORIZED_KEY, DISK_BYTES
# (advisory: recorded for metrics, not enforced).

create() {
  mkdir -p "$DIR"
  chmod 711 "$ROOT" "$DIR"
  home="$DIR/home"
  host_lock
  if ! id -u "$USER_NAME" >/dev/null 2>&1; then
    # '*' (no password, not locked): sshd without PAM refuses locked accounts even for keys.
    useradd --home-dir "$home" --no-create-home --shell /bin/bash --user-group --password '*' \
      --comment "agentplane computer $ID" "$USER_NAME"
  fi
  flock -u 9
  if [ ! -d "$home" ]; then
    mkdir -p "$home"
    cp -rT /etc/skel "$home"
  fi
  mkdir -p "$home/.ssh"
  printf '%s\n' "$AUTHORIZED_KEY" >"$home/.ssh/authorized_keys"
  chown -R "$USER_NAME:$USER_NAME" "$home"
  chmod 700 "$home" "$home/.ssh"
  chmod 600 "$home/.ssh/authorized_keys"
  echo "$DISK_BYTES" >"$DIR/disk-bytes"
  runuser -u "$USER_NAME" -- test -w "$home" ||
    fail "user $USER_NAME cannot reach its home $home: make every directory above $ROOT searchable by others (chmod o+x)"
  echo "$USER_NAME"
}

delete() {
  if id -u "$USER_NAME" >/dev/null 2>&1; then
    pkill -9 -u "$USER_NAME" || true
    host_lock
    userdel "$USER_NAME"
    flock -u 9
  fi
  rm -rf "$DIR"
}
