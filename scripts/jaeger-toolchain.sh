#!/usr/bin/env bash
# Builds Jaeger's all-in-one (`jaeger`, v2: an OpenTelemetry Collector with Jaeger's query service and
# in-memory storage) from the Go module proxy into
#   ${AGENTPLANE_JAEGER_HOME:-~/.cache/agentplane/jaeger}/<version>/bin/jaeger
# for the tracing test, which sends it OTLP and reads traces back through its query API.
# Prints the bin directory as the last line of stdout; logs go to stderr. Safe to run again: built only
# when the binary or its version stamp is missing. Needs Go.
set -euo pipefail

log() { echo "jaeger-toolchain: $*" >&2; }
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
command -v go >/dev/null || { log "Go is needed to build Jaeger"; exit 1; }

version="${AGENTPLANE_JAEGER_VERSION:-v1.76.0}"
cache="${AGENTPLANE_JAEGER_HOME:-$HOME/.cache/agentplane/jaeger}/${version#v}"
bin="$cache/bin"
stamp="$bin/.jaeger.version"
if [[ -x "$bin/jaeger" && "$(cat "$stamp" 2>/dev/null)" == "$version" ]]; then
  log "jaeger $version is in $bin"
  echo "$bin"
  exit 0
fi

mkdir -p "$bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
log "building jaeger $version from the Go module proxy"
(
  cd "$work"
  go mod init agentplane.local/jaeger-build
  # A wrapper module: `go get -tool` resolves the program's dependencies as Jaeger's go.mod asks.
  go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version"
  # Two cores are shared with other jobs: the build yields to them.
  nice -n "${AGENTPLANE_BUILD_NICE:-15}" env CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "$bin/jaeger.partial" github.com/jaegertracing/jaeger/cmd/jaeger
) >&2
mv -f "$bin/jaeger.partial" "$bin/jaeger"
echo "$version" >"$stamp"
log "jaeger $version in $bin"
echo "$bin"
