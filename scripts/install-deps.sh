#!/bin/sh
# Installs the Debian packages profstore needs to build, run and test (only those missing).
# Uses sudo only when not root. Safe to run repeatedly.
set -eu

PKGS="build-essential cmake pkg-config clang re2c protobuf-c-compiler
libh2o-evloop-dev libssl-dev libprotobuf-c-dev libsnappy-dev zlib1g-dev liblmdb-dev
libpcre2-dev libyaml-dev libcurl4-openssl-dev libjansson-dev libcmocka-dev lmdb-utils
python3 python3-pytest python3-protobuf protobuf-compiler python3-snappy golang-go prometheus curl openssl
chromium chromium-driver python3-selenium"

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
