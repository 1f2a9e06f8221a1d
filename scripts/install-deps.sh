#!/bin/sh
# Installs what profstore needs to build, run, test and bench beside its peers (only what is
# missing). Uses sudo only when not root. Safe to run repeatedly. Each step is pinned: Debian's
# packages by the release (Debian 12), the UI's npm packages by web/ui/package-lock.json, the Go
# modules of the test programs by their go.mod/go.sum, PyPI packages by exact versions
# (install-pysdk.sh), Parca by its tag and its go.sum (install-parca.sh).
#
#   install-deps.sh --build   `make run`/`make build`: what building and running need (BUILD_PKGS,
#                             Node.js and npm for the UI's packages); docker/Dockerfile's build
#                             stage uses it (no browser, Go or Prometheus in the image build)
#   install-deps.sh           `make test`: all of --build, TEST_PKGS, the test programs' Go modules
#                             downloaded, the Python SDKs' venvs, Perses' plugin, the Collector
#   install-deps.sh --peers   `make bench-peers` and `make test-peers`: all of --build, grpcio
#                             (PyPI), Parca and Prometheus 3 built into their caches
#
# Go: the test programs' and Parca's go.mod need Go >= 1.26 (GOTOOLCHAIN=local: no toolchain is
# downloaded). The Go used is /usr/local/go/bin/go when it is that new (preinstalled there), else
# `go` on PATH when it is; each step prints which. Debian's golang-go (1.19, too old for them) is
# not installed: its /usr/bin/go would be the `go` of any PATH with /usr/bin before
# /usr/local/go/bin. The Makefile puts /usr/local/go/bin first on PATH for the tests and benches.
set -eu

# what `cmake -S . -B build && cmake --build build` needs (the unit tests are built too: cmocka);
# ca-certificates for npm's HTTPS fetch of the UI's packages
BUILD_PKGS="build-essential cmake pkg-config re2c protobuf-c-compiler libnghttp2-dev
libh2o-evloop-dev libssl-dev libprotobuf-c-dev libsnappy-dev zlib1g-dev libdeflate-dev liblmdb-dev libzstd-dev
libpcre2-dev libyaml-dev libcurl4-openssl-dev libjansson-dev libcmocka-dev libdw-dev libdebuginfod-dev python3
ca-certificates"
# what the tests, fuzzing and the real clients need on top (elfutils: eu-addr2line, test_symbols.py
# checks symbols against it; debuginfod: the server test_debuginfod.py fetches from; docker-compose only for its `config`
# check of docker/compose.yml, which needs no Docker daemon: Docker itself is not installed)
TEST_PKGS="clang libclang-rt-14-dev lmdb-utils python3-pytest python3-protobuf protobuf-compiler python3-snappy
python3-yaml docker-compose prometheus curl openssl chromium chromium-driver python3-selenium
python3-venv python3-pip python3-h2 elfutils debuginfod"

case "${1:-}" in
    "") PKGS="$BUILD_PKGS $TEST_PKGS" ;;
    --build) PKGS="$BUILD_PKGS" ;;
    # bench/peers/peers.py: gRPC to Parca (grpcio from PyPI, installed with pip, as for the tests)
    --peers) PKGS="$BUILD_PKGS python3-pip" ;;
    *) echo "usage: $0 [--build | --peers]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"

# pick_go STEP: sets GO to a Go >= 1.26 (/usr/local/go first) and says which, or fails
GO_MIN=26
pick_go() {
    GO=""
    for g in /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)"; do
        [ -n "$g" ] && [ -x "$g" ] || continue
        minor=$("$g" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
        if [ "${minor:-0}" -ge "$GO_MIN" ]; then GO=$g; break; fi
    done
    [ -n "$GO" ] || { echo "install-deps: $1 needs Go >= 1.$GO_MIN (at /usr/local/go or on PATH); found none" >&2; exit 1; }
    echo "install-deps: $1 uses $GO ($("$GO" env GOVERSION))"
}

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
# Node.js and npm run the real Pyroscope SDKs in the integration tests; a machine that already has
# them (e.g. from NodeSource, whose nodejs bundles npm and conflicts with Debian's npm) keeps its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    echo "installing:$missing"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# the web UI's third-party code (uPlot), as web/ui/package-lock.json pins it (nothing when present)
"$(dirname "$0")/fetch-ui-deps.sh"
# make test: the Go modules of the test programs (tests/*/go.mod, as their go.sum pins them), so
# that no test waits for a download; grpcio from PyPI, the tests' gRPC client; pytest-xdist from PyPI,
# which runs the integration tests on several workers; the real Pyroscope Python SDKs, 1.x and 0.8.x, pinned, in
# venvs outside the repository; the Perses project's Pyroscope plugin that test_perses_client.py
# drives, as tests/perses pins it; the OpenTelemetry Collector that test_otel_collector.py runs,
# built as tests/otelcol pins it
if [ -z "${1:-}" ]; then
    pick_go "make test"
    export PATH="$(dirname "$GO"):$PATH"
    for m in "$here"/../tests/*/go.mod; do
        (cd "$(dirname "$m")" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly "$GO" mod download)
    done
    "$here/install-pysdk.sh" --grpc
    "$here/install-pysdk.sh" --xdist
    "$here/install-pysdk.sh"
    "$here/install-pysdk.sh" --legacy
    "$here/install-perses.sh"
    "$here/install-otelcol.sh"
fi
# make bench-peers / test-peers: Parca and Prometheus 3 at their pinned tags, each built once into
# its cache (several minutes each)
if [ "${1:-}" = --peers ]; then
    pick_go "make bench-peers (Parca's and Prometheus 3's builds, go tool pprof)"
    "$here/install-pysdk.sh" --grpc
    PS_GO=$GO "$here/install-parca.sh" >/dev/null
    echo "install-deps: Parca: $("$here/install-parca.sh" --cached)"
    echo "install-deps: Prometheus 3: $(PS_GO=$GO "$here/install-prometheus3.sh")"
fi
