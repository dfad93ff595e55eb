#!/usr/bin/env bash
# Provides, offline, the parts of a private Kubernetes cluster for the kubernetes-provider and
# deploy-program tests: kube-apiserver, kube-controller-manager and kube-scheduler built from the
# k8s.io/kubernetes module, kwok (simulated nodes and kubelets) and its stage files, and a link to
# Debian's etcd (package etcd-server, which .ci/run installs). Only the Go module proxy is used.
#
#   ${AGENTPLANE_KUBE_HOME:-~/.cache/agentplane/kubernetes}/<version>/bin/{etcd,kube-apiserver,
#       kube-controller-manager,kube-scheduler,kwok,kwok.yaml,storage-class.yaml}
#
# Prints the bin directory as the last line of stdout; logs go to stderr. Safe to run again.
# About 15 minutes of CPU on 2 cores the first time; test/support/kube-cluster.ts runs the result.
set -euo pipefail

log() { echo "kube-toolchain: $*" >&2; }
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

k8s_version="${AGENTPLANE_KUBE_VERSION:-v1.33.13}"
# The staging modules (k8s.io/api, client-go, …) are published as v0.<minor>.<patch>.
staging_version="v0.${k8s_version#v1.}"
minor="$(echo "$k8s_version" | cut -d. -f2)"
kwok_version="${AGENTPLANE_KWOK_VERSION:-v0.8.0}"
cache="${AGENTPLANE_KUBE_HOME:-$HOME/.cache/agentplane/kubernetes}/${k8s_version#v}"
bin="$cache/bin"
mkdir -p "$bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
# Two cores are shared with other jobs: builds yield to them.
nice_go() { nice -n "${AGENTPLANE_BUILD_NICE:-15}" go "$@"; }

etcd="$(command -v etcd || true)"
[[ -n "$etcd" ]] || { log "etcd is missing: apt-get install etcd-server (Debian)"; exit 1; }
ln -sfn "$etcd" "$bin/etcd"

stamp="$bin/.kubernetes.version"
if [[ -x "$bin/kube-apiserver" && -x "$bin/kube-controller-manager" && -x "$bin/kube-scheduler" \
      && "$(cat "$stamp" 2>/dev/null)" == "$k8s_version" ]]; then
  log "kubernetes $k8s_version is in $bin"
else
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $k8s_version (about 12 minutes on 2 cores)"
  mkdir "$work/k8s"
  (
    cd "$work/k8s"
    go mod init agentplane.local/kubernetes-build
    go mod download -json "k8s.io/kubernetes@$k8s_version" >/dev/null
    mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$k8s_version.mod"
    # k8s.io/kubernetes replaces each staging module with ./staging/…; a dependency's replaces do not
    # apply, so point each at its published version. Copy upstream's godebug default too.
    edits=()
    while read -r from _rest; do edits+=("-replace=$from=$from@$staging_version"); done \
      < <(grep -E '=> \./staging' "$mod" | sed 's/^replace //' | awk '{print $1}')
    go mod edit "${edits[@]}" -godebug=default=go1.24
    go get "k8s.io/kubernetes/cmd/kube-apiserver@$k8s_version" \
      "k8s.io/kubernetes/cmd/kube-controller-manager@$k8s_version" "k8s.io/kubernetes/cmd/kube-scheduler@$k8s_version"
    # Without the version stamp the server reports v0.0.0-master and clients cannot parse it.
    ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2025-01-01T00:00:00Z"
    done
    for c in kube-apiserver kube-controller-manager kube-scheduler; do
      nice_go build -ldflags "$ld" -o "$bin/$c.partial" "k8s.io/kubernetes/cmd/$c"
      mv -f "$bin/$c.partial" "$bin/$c"
    done
  ) >&2
  echo "$k8s_version" >"$stamp"
fi

kwok_stamp="$bin/.kwok.version"
if [[ -x "$bin/kwok" && "$(cat "$kwok_stamp" 2>/dev/null)" == "$kwok_version" ]]; then
  log "kwok $kwok_version is in $bin"
else
  log "building kwok $kwok_version"
  mkdir "$work/kwok"
  (
    cd "$work/kwok"
    go mod init agentplane.local/kwok-build
    go get "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
    nice_go build -ldflags "-s -w" -o "$bin/kwok.partial" sigs.k8s.io/kwok/cmd/kwok
  ) >&2
  mv -f "$bin/kwok.partial" "$bin/kwok"
  echo "$kwok_version" >"$kwok_stamp"
fi

# kwok needs stages (what happens to nodes, pods and volumes); take the "fast" ones from its module.
stages="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$kwok_version/kustomize/stage"
if [[ ! -d "$stages" ]]; then
  (cd "$work" && go mod download "sigs.k8s.io/kwok@$kwok_version") >&2
fi
{
  first=1
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
           volume/fast/pv-bind.yaml volume/fast/pv-delete.yaml volume/fast/pvc-provision.yaml volume/fast/pvc-delete.yaml; do
    [[ $first == 1 ]] || echo "---"
    first=0
    cat "$stages/$f"
  done
} >"$bin/kwok.yaml"
cp -f "$stages/volume/fast/storage-class.yaml" "$bin/storage-class.yaml"

log "kubernetes $k8s_version, kwok $kwok_version and etcd in $bin"
echo "$bin"
