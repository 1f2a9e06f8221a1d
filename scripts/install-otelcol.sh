#!/bin/sh
# install-otelcol.sh [DIR] - the OpenTelemetry Collector that tests/integration/test_otel_collector.py
# runs: tests/otelcol/main.go (ours) on the Collector's modules at one release
# (go.opentelemetry.io/collector v0.165.0 / v1.71.0, contrib's bearertokenauth v0.165.1), exactly
# as tests/otelcol/go.sum pins them, fetched from the Go module proxy and built into DIR/otelcol
# (default $PS_OTELCOL_DIR, else ${TMPDIR:-/tmp}/profstore-otelcol), outside the repository.
# Does nothing when DIR already holds a build of these sources (a stamp with their hash); the first
# build compiles ~2 minutes of CPU (7 min wall on 2 cores busy with other work, 15 s when Go's
# build cache already holds it), plus the modules' download on a new machine. scripts/install-deps.sh runs it; the test runs it when
# DIR is missing.
set -eu
src="$(cd "$(dirname "$0")/../tests/otelcol" && pwd)"
dir=${1:-${PS_OTELCOL_DIR:-${TMPDIR:-/tmp}/profstore-otelcol}}
want="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -d' ' -f1)"

[ -x "$dir/otelcol" ] && [ "$(cat "$dir/.profstore-build" 2>/dev/null)" = "$want" ] && exit 0
command -v go >/dev/null 2>&1 || { echo "install-otelcol: go is missing (scripts/install-deps.sh installs golang-go)" >&2; exit 1; }
mkdir -p "$dir"
# one build at a time into DIR (two test runs may start together)
exec 9>"$dir/.install-lock"
flock 9
[ -x "$dir/otelcol" ] && [ "$(cat "$dir/.profstore-build" 2>/dev/null)" = "$want" ] && exit 0
rm -f "$dir/.profstore-build"
# -mod=readonly: the committed go.sum must name every module; the machine's own Go, no toolchain
(cd "$src" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -o "$dir/otelcol.new" .)
mv "$dir/otelcol.new" "$dir/otelcol"
echo "$want" > "$dir/.profstore-build"
