#!/bin/sh
# Installs the Debian packages profstore needs to build, run and test (only those missing).
# Uses sudo only when not root. Safe to run repeatedly.
#
# `install-deps.sh --build` installs only what building needs (BUILD_PKGS, Node.js and npm for the
# UI's packages): docker/Dockerfile's build stage, which runs no tests, uses it so the image build
# does not fetch a browser, Go and Prometheus. `make` runs it without arguments: everything.
set -eu

# what `cmake -S . -B build && cmake --build build` needs (the unit tests are built too: cmocka);
# ca-certificates for npm's HTTPS fetch of the UI's packages
BUILD_PKGS="build-essential cmake pkg-config re2c protobuf-c-compiler libnghttp2-dev
libh2o-evloop-dev libssl-dev libprotobuf-c-dev libsnappy-dev zlib1g-dev libdeflate-dev liblmdb-dev
libpcre2-dev libyaml-dev libcurl4-openssl-dev libjansson-dev libcmocka-dev libdw-dev libdebuginfod-dev python3
ca-certificates"
# what the tests, fuzzing and the real clients need on top (elfutils: eu-addr2line, test_symbols.py
# checks symbols against it; debuginfod: the server test_debuginfod.py fetches from; docker-compose only for its `config`
# check of docker/compose.yml, which needs no Docker daemon: Docker itself is not installed)
TEST_PKGS="clang libclang-rt-14-dev lmdb-utils python3-pytest python3-protobuf protobuf-compiler python3-snappy
python3-yaml docker-compose golang-go prometheus curl openssl chromium chromium-driver python3-selenium
python3-venv python3-pip python3-grpcio python3-h2 elfutils debuginfod"

case "${1:-}" in
    "") PKGS="$BUILD_PKGS $TEST_PKGS" ;;
    --build) PKGS="$BUILD_PKGS" ;;
    *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

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
# the real Pyroscope Python SDK of the span-profile tests, pinned, in a venv outside the repository;
# the Perses project's Pyroscope plugin that test_perses_client.py drives, as tests/perses pins it;
# the OpenTelemetry Collector that test_otel_collector.py runs, built as tests/otelcol pins it
if [ -z "${1:-}" ]; then
    "$(dirname "$0")/install-pysdk.sh"
    "$(dirname "$0")/install-perses.sh"
    "$(dirname "$0")/install-otelcol.sh"
fi
