#!/bin/sh
# Fetches the third-party code the web UI embeds (web/ui/package.json: uPlot) into
# web/ui/node_modules with `npm ci`, exactly as web/ui/package-lock.json pins it. Offline-safe:
# when node_modules already holds what the lockfile pins (a stamp with the lockfile's hash, written
# after a successful `npm ci`, and the files the build embeds), nothing is fetched.
# Run by scripts/install-deps.sh and by the build (CMake) when the lockfile changes.
set -eu

UI="$(cd "$(dirname "$0")/../web/ui" && pwd)"
STAMP="$UI/node_modules/.profstore-lock"
WANT="$(sha256sum "$UI/package-lock.json" | cut -d' ' -f1)"
NEEDED="node_modules/uplot/dist/uPlot.esm.js node_modules/uplot/dist/uPlot.min.css"

have_all() {
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] || return 1
    for f in $NEEDED; do [ -f "$UI/$f" ] || return 1; done
}

if have_all; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "fetch-ui-deps: npm is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
cd "$UI"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
for f in $NEEDED; do
    [ -f "$f" ] || { echo "fetch-ui-deps: npm ci did not bring $f" >&2; exit 1; }
done
echo "$WANT" > "$STAMP"
