#!/usr/bin/env bash
# Provides what `pulumi preview`/`pulumi up` of the root project (src/deploy) needs beyond
# scripts/pulumi-toolchain.sh: the nodejs language host (pulumi-language-nodejs, same version as the
# CLI) and the kubernetes resource plugin (pulumi-resource-kubernetes, the @pulumi/kubernetes version),
# built from the Go module proxy into the toolchain's bin/ and PULUMI_HOME.
#
# On the offline build machines the Go module proxy refuses both modules (403 for every version of
# github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3 and of
# github.com/pulumi/pulumi-kubernetes/provider/v4): the kubernetes plugin is then agentplane's
# stand-in that pulumi-toolchain.sh builds, and the missing language host makes the script exit 1.
# Elsewhere, an ordinary Pulumi install (which ships the language host) plus
# `pulumi plugin install resource kubernetes <version>` does the same.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "pulumi-deploy-tools: $*" >&2; }
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

bin="$(bash "$root/scripts/pulumi-toolchain.sh" | tail -n1)"
cache="$(dirname "$bin")"
version="$(basename "$cache")"
export PULUMI_HOME="$cache/home" PULUMI_SKIP_UPDATE_CHECK=true GOFLAGS="${GOFLAGS:-} -buildvcs=false"
k8s_version="$(grep -m1 -o '"@pulumi/kubernetes": *"[^"]*"' "$root/package.json" | sed 's/.*"\([^"]*\)"$/\1/')"
[[ -n "$k8s_version" ]] || { log "no @pulumi/kubernetes in package.json"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# `go mod download` of one module version into $work/src; fails with the proxy's reason.
fetch() {
  local module="$1" v="$2" dir
  if ! dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$module@$v" 2>&1 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')" || [[ -z "$dir" ]]; then
    log "the Go module proxy does not serve $module@$v:"
    (cd "$work" && go mod download "$module@$v" 2>&1 | sed 's/^/  /' >&2) || true
    return 1
  fi
  echo "$dir"
}

status=0
if [[ -x "$bin/pulumi-language-nodejs" ]]; then
  log "pulumi-language-nodejs is in $bin"
elif src="$(fetch github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3 "v$version")"; then
  log "building pulumi-language-nodejs v$version"
  (cd "$src" && go build -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$version" -o "$bin/pulumi-language-nodejs" .) >&2
else
  status=1
fi

plugin_dir="$PULUMI_HOME/plugins/resource-kubernetes-v$k8s_version"
upstream_marker="$PULUMI_HOME/.pulumi-resource-kubernetes.upstream"
if [[ -x "$plugin_dir/pulumi-resource-kubernetes" && "$(cat "$upstream_marker" 2>/dev/null)" == "$k8s_version" ]]; then
  log "pulumi-resource-kubernetes $k8s_version (upstream) is in $plugin_dir"
elif ! src="$(fetch github.com/pulumi/pulumi-kubernetes/provider/v4 "v$k8s_version")"; then
  # pulumi-toolchain.sh installed agentplane's stand-in (scripts/pulumi-resource-kubernetes), which
  # serves every kind agentplane's programs declare: enough, if not upstream's.
  if [[ -x "$plugin_dir/pulumi-resource-kubernetes" ]]; then
    log "keeping agentplane's stand-in pulumi-resource-kubernetes $k8s_version"
  else
    status=1
  fi
else
  log "building pulumi-resource-kubernetes $k8s_version (go generate, then go build)"
  cp -r "$src" "$work/provider" && chmod -R u+w "$work/provider"
  (
    cd "$work/provider"
    # The provider embeds its schema, which go generate produces; the module zip does not carry it.
    go generate ./cmd/pulumi-resource-kubernetes
    go build -ldflags "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$k8s_version" \
      -o pulumi-resource-kubernetes ./cmd/pulumi-resource-kubernetes
    "$bin/pulumi" plugin install resource kubernetes "$k8s_version" --file pulumi-resource-kubernetes --reinstall
  ) >&2
  echo "$k8s_version" >"$upstream_marker"
fi

[[ $status -eq 0 ]] && log "deploy tools ready in $bin and $PULUMI_HOME"
exit $status
