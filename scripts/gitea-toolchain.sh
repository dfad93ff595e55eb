#!/usr/bin/env bash
# Provides, offline, a Gitea server and its Actions runner for the forge tests and the automations
# bench. Only the Go module proxy is used; each is built through a throwaway wrapper module.
#
#   ${AGENTPLANE_GITEA_HOME:-~/.cache/agentplane/gitea}/<gitea version>/bin/gitea
#   ${AGENTPLANE_GITEA_HOME:-~/.cache/agentplane/gitea}/<gitea version>/bin/gitea-runner
#   ${AGENTPLANE_GITEA_HOME:-~/.cache/agentplane/gitea}/<gitea version>/bin/gitea-src  (symlink: the
#       module source, which holds options/ and templates/; Gitea's STATIC_ROOT_PATH without bindata)
#
# Prints the bin directory as the last line of stdout; logs go to stderr. Safe to run again.
# Versions: Gitea 1.26.0 (1.27 moved to the gitea.dev module path, which the proxy refuses) and
# gitea.com/gitea/runner 1.0.8 (act_runner is refused by the proxy; runner is its successor).
set -euo pipefail

log() { echo "gitea-toolchain: $*" >&2; }
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

gitea_version="${AGENTPLANE_GITEA_VERSION:-v1.26.0}"
runner_version="${AGENTPLANE_GITEA_RUNNER_VERSION:-v1.0.8}"
cache="${AGENTPLANE_GITEA_HOME:-$HOME/.cache/agentplane/gitea}/${gitea_version#v}"
bin="$cache/bin"
mkdir -p "$bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
# Two cores are shared with other jobs: builds yield to them.
nice_go() { nice -n "${AGENTPLANE_BUILD_NICE:-15}" go "$@"; }

if [[ -x "$bin/gitea" ]] && "$bin/gitea" --version 2>/dev/null | grep -q "version ${gitea_version#v} "; then
  log "gitea $gitea_version is in $bin"
else
  log "building gitea $gitea_version from the Go module proxy (about 5 minutes on 2 cores)"
  mkdir "$work/gitea"
  (
    cd "$work/gitea"
    go mod init agentplane.local/gitea-build
    go mod download -json "code.gitea.io/gitea@$gitea_version" >/dev/null
    mod="$(go env GOMODCACHE)/cache/download/code.gitea.io/gitea/@v/$gitea_version.mod"
    # A dependency's replace/exclude directives do not apply to the main module: repeat them.
    # Gitea writes each on one line, so they can be read off its go.mod.
    edits=()
    while read -r _ from _ to ver _rest; do edits+=("-replace=$from=$to@$ver"); done < <(grep -E '^replace [^ ]+ => [^ ]+ v' "$mod" || true)
    while read -r _ m v _rest; do edits+=("-exclude=$m@$v"); done < <(grep -E '^exclude [^ ]+ v' "$mod" || true)
    [[ ${#edits[@]} -eq 0 ]] || go mod edit "${edits[@]}"
    go get "code.gitea.io/gitea@$gitea_version"
    # Without the version stamp /api/v1/version answers "development".
    nice_go build -tags 'sqlite sqlite_unlock_notify' \
      -ldflags "-s -w -X main.Version=${gitea_version#v}" -o "$bin/gitea.partial" code.gitea.io/gitea
  ) >&2
  mv -f "$bin/gitea.partial" "$bin/gitea"
fi

# A build without the bindata tag reads locales and templates from the module source.
src="$(go env GOMODCACHE)/code.gitea.io/gitea@$gitea_version"
if [[ ! -d "$src/options" ]]; then
  (cd "$work" && go mod download "code.gitea.io/gitea@$gitea_version") >&2
fi
ln -sfn "$src" "$bin/gitea-src"

runner_stamp="$bin/.gitea-runner.version"
if [[ -x "$bin/gitea-runner" && "$(cat "$runner_stamp" 2>/dev/null)" == "$runner_version" ]]; then
  log "gitea-runner $runner_version is in $bin"
else
  log "building gitea-runner $runner_version"
  mkdir "$work/runner"
  (
    cd "$work/runner"
    go mod init agentplane.local/gitea-runner-build
    go get "gitea.com/gitea/runner@$runner_version"
    nice_go build -ldflags "-s -w -X gitea.com/gitea/runner/internal/pkg/ver.version=$runner_version" \
      -o "$bin/gitea-runner.partial" gitea.com/gitea/runner
  ) >&2
  mv -f "$bin/gitea-runner.partial" "$bin/gitea-runner"
  echo "$runner_version" >"$runner_stamp"
fi

log "gitea $gitea_version and gitea-runner $runner_version in $bin"
echo "$bin"
