# The computer's unix user, its home under the computers' root (kept while the computer lives),
# the computer's key as the only authorized key, and the files of the sandbox's own /etc (its
# user only). Environment: AUTHORIZED_KEY, DISK_BYTES (advisory: recorded for metrics, not enforced).

create() {
  # Nothing of the root needs to be readable by others: a computer sees only its own home, bound
  # into its sandbox by root.
  mkdir -p "$ROOT" "$DIR"
  chmod 700 "$ROOT" "$DIR"
  home="$DIR/home"
  host_lock
  if ! id -u "$USER_NAME" >/dev/null 2>&1; then
    # '*' (no password, not locked): sshd without PAM refuses locked accounts even for keys.
    useradd --home-dir "$home" --no-create-home --shell /bin/bash --user-group --password '*' \
      --comment "agentplane computer $ID" "$USER_NAME"
  elif ! getent group "$USER_NAME" >/dev/null; then
    # useradd killed halfway (its control plane killed mid-provision) writes /etc/passwd before
    # /etc/group: the user is there without its group. Finish what it began.
    groupadd --gid "$(id -g "$USER_NAME")" "$USER_NAME"
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
  sandbox_etc
  echo "$USER_NAME"
}

# passwd, group and shadow as the sandbox shows them: root, sshd's privilege-separation user and
# the computer's user, nobody else (the host's list names every computer).
sandbox_etc() {
  uid=$(id -u "$USER_NAME")
  gid=$(id -g "$USER_NAME")
  sshd_uid=$(id -u sshd 2>/dev/null || echo 65534)
  etc="$DIR/etc"
  mkdir -p "$etc"
  chmod 755 "$etc"
  printf '%s\n' "root:x:0:0:root:/root:/usr/sbin/nologin" "sshd:x:$sshd_uid:65534::/run/sshd:/usr/sbin/nologin" \
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin" "$USER_NAME:x:$uid:$gid:agentplane computer:$home:/bin/bash" >"$etc/passwd"
  printf '%s\n' "root:x:0:" "nogroup:x:65534:" "$USER_NAME:x:$gid:" >"$etc/group"
  printf '%s\n' "root:*:1::::::" "sshd:*:1::::::" "nobody:*:1::::::" "$USER_NAME:*:1::::::" >"$etc/shadow"
  printf '%s\n' "127.0.0.1 localhost" "127.0.1.1 $USER_NAME" "::1 localhost ip6-localhost ip6-loopback" >"$etc/hosts"
  chmod 644 "$etc/passwd" "$etc/group" "$etc/hosts"
  chmod 600 "$etc/shadow"
}

delete() {
  if id -u "$USER_NAME" >/dev/null 2>&1; then
    pkill -9 -u "$USER_NAME" || true
    host_lock
    userdel "$USER_NAME"
    flock -u 9
  fi
  # userdel killed halfway removes the user before its group.
  if getent group "$USER_NAME" >/dev/null; then
    host_lock
    groupdel "$USER_NAME"
    flock -u 9
  fi
  rm -rf "$DIR"
}
