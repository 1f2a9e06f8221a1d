#!/bin/sh
# install-parca.sh [DIR] - builds the Parca server (github.com/parca-dev/parca/cmd/parca, Apache-2.0)
# at the pinned tag below from the Go module proxy (`go mod download`, then `go build`) into DIR/bin (default
# $PS_PEERS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/profstore-peers/parca-$PARCA_VERSION), outside
# the repository, and prints the binary's path. Nothing of Parca enters the repository. Does nothing
# when DIR already holds this version's binary. bench/peers (make bench-peers) runs it.
#
# The module as served builds as it is: ui/ui.go embeds ui/packages/app/web/build, which the module
# holds with only a keep.go in it (the React UI is not built into it), so the server runs with an
# empty UI; its APIs (gRPC, gRPC-Web and an HTTP gateway on one port) are all the benchmark uses. It needs Go >= 1.25
# (go.mod says go 1.25.0); the Go at /usr/local/go (1.26) is taken before any `go` on PATH, since
# Debian's golang-go (1.19, installed for the tests) is too old for it. The first build took 25 min
# (7 min of CPU) on 2 cores shared with other work, module downloads included; DIR then holds
# 340 MB (the binary and the copied source), the Go module and build caches the rest.
# `--cached` builds nothing: it prints the binary's path when DIR holds it, else exits 1 (make test
# runs the short peers bench only then). $PS_GO, when set, is the Go to build with (install-deps.sh
# --peers sets it to the Go it chose).
set -eu
cached_only=0
[ "${1:-}" = --cached ] && { cached_only=1; shift; }
PARCA_VERSION=v0.28.0
dir=${1:-${PS_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/profstore-peers}/parca-$PARCA_VERSION}
bin="$dir/bin/parca"
[ -x "$bin" ] && [ "$(cat "$dir/.profstore-version" 2>/dev/null)" = "$PARCA_VERSION" ] && { echo "$bin"; exit 0; }
[ "$cached_only" = 1 ] && { echo "install-parca: Parca $PARCA_VERSION is not built in $dir" >&2; exit 1; }

GO=go
[ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
[ -n "${PS_GO:-}" ] && GO=$PS_GO
command -v "$GO" >/dev/null 2>&1 || { echo "install-parca: no Go found (Go >= 1.25 at /usr/local/go or on PATH)" >&2; exit 1; }
minor=$("$GO" env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
[ "${minor:-0}" -ge 25 ] || { echo "install-parca: $GO is $("$GO" env GOVERSION); Parca $PARCA_VERSION needs Go >= 1.25" >&2; exit 1; }

mkdir -p "$dir"
exec 9>"$dir/.install-lock"
flock 9
[ -x "$bin" ] && [ "$(cat "$dir/.profstore-version" 2>/dev/null)" = "$PARCA_VERSION" ] && { echo "$bin"; exit 0; }
rm -f "$dir/.profstore-version"
echo "install-parca: building Parca $PARCA_VERSION with $("$GO" env GOVERSION) into $dir/bin (first time: several minutes)" >&2
# Not `go install path@version`: that also reads the module's version list (for a deprecation
# notice), which the Go module proxy here refuses (403) though it serves the tagged version itself.
# So: download that version (its checksum checked against the checksum database as usual), copy its
# source into DIR/src and build ./cmd/parca there with the module's own go.mod and go.sum.
info=$(GOTOOLCHAIN=local "$GO" mod download -json "github.com/parca-dev/parca@$PARCA_VERSION")
srcdir=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$srcdir" ] || { echo "install-parca: go mod download gave no source directory: $info" >&2; exit 1; }
rm -rf "$dir/src"
cp -r "$srcdir" "$dir/src"
chmod -R u+w "$dir/src"
(cd "$dir/src" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly "$GO" build -trimpath \
    -ldflags "-X main.version=$PARCA_VERSION" -o "$bin" ./cmd/parca) >&2
[ -x "$bin" ] || { echo "install-parca: go build did not bring $bin" >&2; exit 1; }
echo "$PARCA_VERSION" > "$dir/.profstore-version"
echo "$bin"
