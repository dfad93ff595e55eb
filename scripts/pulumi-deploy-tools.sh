#!/usr/bin/env bash
# Provides what `pulumi preview`/`pulumi up` of the root project (src/deploy) needs beyond
# scripts/pulumi-toolchain.sh (which builds the CLI and upstream's kubernetes plugin): the nodejs
# language host (pulumi-language-nodejs, same version as the CLI), built from the Go module proxy
# into the toolchain's bin/.
#
# On the offline build machines the Go module proxy refuses it (403 for every version of
# github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3), so the script exits 1 there;
# the tests run the deploy program inline through the Automation API instead. Elsewhere, an
# ordinary Pulumi install ships the language host.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "pulumi-deploy-tools: $*" >&2; }
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

bin="$(bash "$root/scripts/pulumi-toolchain.sh" | tail -n1)"
cache="$(dirname "$bin")"
version="$(basename "$cache")"
export PULUMI_HOME="$cache/home" PULUMI_SKIP_UPDATE_CHECK=true GOFLAGS="${GOFLAGS:-} -buildvcs=false"
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

[[ $status -eq 0 ]] && log "deploy tools ready in $bin and $PULUMI_HOME"
exit $status
