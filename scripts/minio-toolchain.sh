#!/usr/bin/env bash
# Builds the MinIO server (an S3-compatible object store) from the Go module proxy into
# ~/.cache/agentplane/minio/<version>/minio (or $AGENTPLANE_MINIO_HOME), for the tests of wiki
# video storage on object storage. Prints the binary's path. Needs Go; takes a few minutes once.
set -euo pipefail
VERSION="${AGENTPLANE_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
HOME_DIR="${AGENTPLANE_MINIO_HOME:-$HOME/.cache/agentplane/minio}/$VERSION"
BIN="$HOME_DIR/minio"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "minio-toolchain: Go is needed to build MinIO" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$HOME_DIR"
# GOFLAGS=-mod=mod: `go install pkg@version` builds the module as published, with its own go.sum.
(cd "$WORK" && nice -n 15 env GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$HOME_DIR" go install "github.com/minio/minio@$VERSION") >&2
echo "$BIN"
