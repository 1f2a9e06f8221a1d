#!/bin/sh
# install-prometheus3.sh [DIR] - builds Prometheus 3 (github.com/prometheus/prometheus, Apache-2.0:
# module version v0.316.0 is Prometheus 3.16.0) from the Go module proxy into DIR/bin (default
# $PS_PEERS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/profstore-peers/prometheus-$PROM3_VERSION),
# outside the repository, and prints the `prometheus` binary's path (`promtool` is beside it).
# Nothing of Prometheus enters the repository. Does nothing when DIR already holds this version.
#
# `go install` refuses a module whose go.mod has replace/exclude lines, so, as install-parca.sh
# does: `go mod download` that version (checksum checked against the checksum database), copy its
# source into DIR/src and build ./cmd/prometheus and ./cmd/promtool there with the module's own
# go.mod and go.sum (its replace and exclude lines included; GOWORK=off: its go.work is for its own
# development). Without the `builtinassets` build tag
# the web UI's assets are not embedded: the server runs with its APIs only, all the tests use.
# The Go at /usr/local/go (1.26) is taken before any `go` on PATH: Debian's golang-go (1.19,
# installed for the tests) is too old.
set -eu
PROM3_VERSION=v0.316.0
PROM3_RELEASE=3.16.0
dir=${1:-${PS_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/profstore-peers}/prometheus-$PROM3_RELEASE}
bin="$dir/bin/prometheus"
ready() { [ -x "$bin" ] && [ -x "$dir/bin/promtool" ] && [ "$(cat "$dir/.profstore-version" 2>/dev/null)" = "$PROM3_VERSION" ]; }
ready && { echo "$bin"; exit 0; }

GO=go
[ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
[ -n "${PS_GO:-}" ] && GO=$PS_GO
command -v "$GO" >/dev/null 2>&1 || { echo "install-prometheus3: no Go found (/usr/local/go or on PATH)" >&2; exit 1; }

mkdir -p "$dir"
exec 9>"$dir/.install-lock"
flock 9
ready && { echo "$bin"; exit 0; }
rm -f "$dir/.profstore-version"
echo "install-prometheus3: building Prometheus $PROM3_RELEASE ($PROM3_VERSION) with $("$GO" env GOVERSION) into $dir/bin (first time: several minutes)" >&2
info=$(GOTOOLCHAIN=local "$GO" mod download -json "github.com/prometheus/prometheus@$PROM3_VERSION")
srcdir=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$srcdir" ] || { echo "install-prometheus3: go mod download gave no source directory: $info" >&2; exit 1; }
rm -rf "$dir/src"
cp -r "$srcdir" "$dir/src"
chmod -R u+w "$dir/src"
ldflags="-X github.com/prometheus/common/version.Version=$PROM3_RELEASE -X github.com/prometheus/common/version.Branch=profstore-peers"
(cd "$dir/src" && GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly "$GO" build -trimpath -ldflags "$ldflags" \
    -o "$dir/bin/" ./cmd/prometheus ./cmd/promtool) >&2
[ -x "$bin" ] && [ -x "$dir/bin/promtool" ] || { echo "install-prometheus3: go build did not bring $bin and promtool" >&2; exit 1; }
echo "$PROM3_VERSION" > "$dir/.profstore-version"
echo "$bin"
