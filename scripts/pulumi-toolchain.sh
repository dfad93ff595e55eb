#!/usr/bin/env bash
# Provides, offline, the Pulumi CLI at the version of the @pulumi/pulumi dependency, Pulumi YAML's
# language host, upstream's pulumi-resource-kubernetes at the version @pulumi/kubernetes asks for,
# and agentplane's pulumi-resource-command at @pulumi/command's. Only the Go module proxy is used.
#
#   ${AGENTPLANE_PULUMI_HOME:-~/.cache/agentplane/pulumi}/<version>/bin/pulumi   (put bin on PATH)
#   ${AGENTPLANE_PULUMI_HOME:-~/.cache/agentplane/pulumi}/<version>/home         (use as PULUMI_HOME)
#
# Prints the bin directory as the last line of stdout; logs go to stderr. Safe to run again.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "pulumi-toolchain: $*" >&2; }
# Debian's and the official Go install locations, for shells whose PATH lacks them.
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

# The version field of an installed package, else its exact pin in package.json.
dep_version() {
  local pkg="$1" v=""
  if [[ -f "$root/node_modules/$pkg/package.json" ]]; then
    v="$(grep -m1 -o '"version": *"[^"]*"' "$root/node_modules/$pkg/package.json" | sed 's/.*"\([^"]*\)"$/\1/')"
  fi
  if [[ -z "$v" ]]; then
    v="$(grep -m1 -o "\"$pkg\": *\"[^\"]*\"" "$root/package.json" | sed 's/.*"[~^=]*\([^"]*\)"$/\1/' || true)"
  fi
  echo "$v"
}

version="$(dep_version @pulumi/pulumi)"
[[ -n "$version" ]] || { log "cannot find the @pulumi/pulumi version in package.json"; exit 1; }
command_version="$(dep_version @pulumi/command)"
[[ -n "$command_version" ]] || { log "cannot find the @pulumi/command version in package.json"; exit 1; }
kubernetes_version="$(dep_version @pulumi/kubernetes)"
[[ -n "$kubernetes_version" ]] || { log "cannot find the @pulumi/kubernetes version in package.json"; exit 1; }

cache="${AGENTPLANE_PULUMI_HOME:-$HOME/.cache/agentplane/pulumi}/$version"
bin="$cache/bin"
export PULUMI_HOME="$cache/home" PULUMI_SKIP_UPDATE_CHECK=true
mkdir -p "$bin" "$PULUMI_HOME"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

cli_version() { PULUMI_SKIP_UPDATE_CHECK=true "$1" version 2>/dev/null || true; }

# zxcvbn-go (two forks of it, behind the "looks like a secret" warnings of `pulumi config set` and
# `esc env set`) fills its word lists at program start: ~70 ms of the ~160 ms of CPU every CLI run
# spends before doing anything, on every stack operation. In the CLI built here they are filled on
# first use instead: the same lists and the same answers, for the commands that ask. Run in the
# build's module directory with the module path; a module that is not in the build, or whose
# source no longer has the expected shape, is left as it is (the build goes on without the patch).
lazy_word_lists() {
  local mod="$1" src="" dir="patched/${1//\//_}"
  # Downloaded first: `go get` may have fetched only its go.mod.
  if ! go mod download "$mod" 2>/dev/null || ! src="$(go list -m -f '{{.Dir}}' "$mod" 2>/dev/null)" || [[ ! -d "$src" ]]; then
    log "$mod is not in the build; nothing to patch"
    return 0
  fi
  mkdir -p patched && cp -r "$src" "$dir" && chmod -R u+w "$dir"
  [[ -f "$dir/go.mod" ]] || echo "module $mod" >"$dir/go.mod"
  perl -0pi -e 's/import \(\n/import (\n\t"sync"\n/; s/\nfunc init\(\) \{/\n\/\/ Load fills Lists once, on first use (agentplane\x27s build of the Pulumi CLI).\nfunc Load() { loadOnce.Do(load) }\n\nvar loadOnce sync.Once\n\nfunc load() {/' "$dir/frequency/frequency.go"
  perl -0pi -e 's/func init\(\) \{\n\tloadFrequencyList\(\)\n\}\n//; s/func loadFrequencyList\(\) \{\n/func loadFrequencyList() {\n\tfrequency.Load()\n/' "$dir/matching/matching.go"
  if grep -q 'frequency.Load()' "$dir/matching/matching.go" && ! grep -q 'func init()' "$dir/frequency/frequency.go" "$dir/matching/matching.go"; then
    go mod edit -replace="$mod=./$dir"
  else
    log "$mod's source has changed shape; building it unpatched"
  fi
}
# What a CLI built here is made of; a cached one built by another recipe is built again.
recipe="v$version $(declare -f lazy_word_lists | sha256sum | cut -c1-16)"

if [[ "$(cli_version "$bin/pulumi")" == "v$version" && ( -L "$bin/pulumi" || "$(cat "$bin/.pulumi.recipe" 2>/dev/null)" == "$recipe" ) ]]; then
  log "pulumi v$version is in $bin"
elif command -v pulumi >/dev/null && [[ "$(cli_version pulumi)" == "v$version" ]]; then
  log "linking pulumi v$version from PATH"
  ln -sfn "$(readlink -f "$(command -v pulumi)")" "$bin/pulumi"
else
  log "building pulumi v$version from the Go module proxy (about 5 minutes on 2 cores)"
  mkdir "$work/cli"
  (
    cd "$work/cli"
    go mod init agentplane.local/pulumi-cli
    # pulumi's own go.mod has this replace; a dependency's replaces do not apply, so repeat it.
    go mod edit -replace=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
    go get "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$version" "github.com/pulumi/pulumi/sdk/v3@v$version"
    lazy_word_lists github.com/nbutton23/zxcvbn-go
    lazy_word_lists github.com/ccojocar/zxcvbn-go
    # Without the version stamp the Automation API cannot read the CLI version.
    go build -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$version" \
      -o "$bin/pulumi.partial" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  ) >&2
  mv -f "$bin/pulumi.partial" "$bin/pulumi"
  echo "$recipe" >"$bin/.pulumi.recipe"
fi

# The upstream provider module (github.com/pulumi/pulumi-command/provider) has no release tags and
# the Go module proxy refuses its commit pseudo-versions, so agentplane builds its own from
# scripts/pulumi-resource-command/ (command:local:Command and command:remote:Command, with a schema
# for Pulumi YAML programs) against the pulumi SDK the CLI already pulled in. It is installed into
# PULUMI_HOME under the version @pulumi/command asks for; on PATH the engine would warn on every run.
mkdir "$work/command"
cp "$root"/scripts/pulumi-resource-command/*.go "$root/scripts/pulumi-resource-command/schema.json" "$work/command/"
stamp="$PULUMI_HOME/.pulumi-resource-command.stamp"
want="$command_version $(cat "$work"/command/* | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  log "building pulumi-resource-command $command_version"
  (
    cd "$work/command"
    go mod init agentplane.local/pulumi-resource-command
    go get "github.com/pulumi/pulumi/sdk/v3@v$version"
    go build -mod=mod -ldflags "-X main.version=$command_version" -o pulumi-resource-command .
    "$bin/pulumi" plugin install resource command "$command_version" --file pulumi-resource-command --reinstall
  ) >&2
  echo "$want" >"$stamp"
fi

# Upstream's Kubernetes provider. The proxy serves one version of its module, a pseudo-version of
# the v4 line; its cmd/pulumi-resource-kubernetes/main.go embeds two files upstream's generate.go
# writes from the module's schema.json and terraform-mapping.json, so a wrapper module copies
# main.go and writes them (the schema's version set to what @pulumi/kubernetes asks for). About 15
# minutes of CPU on 2 cores the first time; the Go build cache makes a rebuild a minute.
kubernetes_module=github.com/pulumi/pulumi-kubernetes/provider/v4
kubernetes_pseudo=v4.0.0-20260115033456-f47bc2d6f199
build_kubernetes() {
  cd "$work/kubernetes"
  go mod init agentplane.local/pulumi-resource-kubernetes
  go get "$kubernetes_module@$kubernetes_pseudo"
  local src
  src="$(go list -m -f '{{.Dir}}' "$kubernetes_module")/cmd/pulumi-resource-kubernetes"
  cp "$src/main.go" . && chmod u+w main.go
  # What upstream's generate.go does: the schema with its version set, both files compacted.
  cp "$root/scripts/pulumi-kubernetes-embed.go" generate.go
  go run generate.go "$src" "$kubernetes_version"
  go build -mod=mod -ldflags "-s -w -X $kubernetes_module/pkg/version.Version=$kubernetes_version" -o pulumi-resource-kubernetes .
  "$bin/pulumi" plugin install resource kubernetes "$kubernetes_version" --file pulumi-resource-kubernetes --reinstall
}
plugin="$PULUMI_HOME/plugins/resource-kubernetes-v$kubernetes_version/pulumi-resource-kubernetes"
stamp="$PULUMI_HOME/.pulumi-resource-kubernetes.upstream"
want="$kubernetes_version $kubernetes_pseudo $( (declare -f build_kubernetes; cat "$root/scripts/pulumi-kubernetes-embed.go") | sha256sum | cut -c1-16)"
# A plugin that neither this script nor the retired stand-in's put there (`pulumi plugin install`
# on a machine with internet) is upstream's at the right version already.
retired="$PULUMI_HOME/.pulumi-resource-kubernetes.stamp"
if [[ -x "$plugin" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  log "pulumi-resource-kubernetes $kubernetes_version (upstream, $kubernetes_pseudo) is in PULUMI_HOME"
elif [[ -x "$plugin" && ! -e "$stamp" && ! -e "$retired" ]]; then
  log "using the pulumi-resource-kubernetes $kubernetes_version already installed in PULUMI_HOME"
else
  log "building upstream's pulumi-resource-kubernetes $kubernetes_version ($kubernetes_module@$kubernetes_pseudo; about 15 minutes the first time)"
  mkdir "$work/kubernetes"
  (build_kubernetes) >&2
  rm -f "$retired"
  echo "$want" >"$stamp"
fi

# Pulumi YAML's language host, beside the CLI (the engine finds language hosts there and on PATH).
yaml_version=v1.25.0
if [[ "$(cat "$bin/.pulumi-language-yaml.version" 2>/dev/null)" == "$yaml_version" && -x "$bin/pulumi-language-yaml" ]]; then
  log "pulumi-language-yaml $yaml_version is in $bin"
else
  log "building pulumi-language-yaml $yaml_version (about 2 minutes the first time)"
  mkdir "$work/yaml"
  (
    cd "$work/yaml"
    go mod init agentplane.local/pulumi-language-yaml
    go get "github.com/pulumi/pulumi-yaml@$yaml_version"
    go build -mod=mod -ldflags "-s -w -X github.com/pulumi/pulumi-yaml/pkg/version.Version=$yaml_version" \
      -o "$bin/pulumi-language-yaml.partial" github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml
  ) >&2
  mv -f "$bin/pulumi-language-yaml.partial" "$bin/pulumi-language-yaml"
  echo "$yaml_version" >"$bin/.pulumi-language-yaml.version"
fi

log "pulumi v$version in $bin; PULUMI_HOME $PULUMI_HOME"
echo "$bin"
