#!/bin/sh
# Fetches the third-party code the web UI embeds (web/ui/package.json: uPlot) into
# web/ui/node_modules with `npm ci`, exactly as web/ui/package-lock.json pins it. Offline-safe:
# when node_modules already holds what the lockfile pins (a stamp with the lockfile's hash, written
# after a successful `npm ci`, or npm's own record of the same packages, and the files the build
# embeds), nothing is fetched.
# Run by scripts/install-deps.sh and by the build (CMake) when the lockfile changes.
set -eu

UI="$(cd "$(dirname "$0")/../web/ui" && pwd)"
STAMP="$UI/node_modules/.profstore-lock"
WANT="$(sha256sum "$UI/package-lock.json" | cut -d' ' -f1)"
NEEDED="node_modules/uplot/dist/uPlot.esm.js node_modules/uplot/dist/uPlot.min.css"

# npm's own record of what it installed (node_modules/.package-lock.json) holds the lockfile's
# packages: then the stamp can be rewritten without fetching (e.g. after a build's `make clean`)
npm_record_matches() {
    command -v python3 >/dev/null 2>&1 || return 1
    python3 - "$UI/package-lock.json" "$UI/node_modules/.package-lock.json" <<'PY'
import json, sys
try:
    want = {k: v for k, v in json.load(open(sys.argv[1]))["packages"].items() if k}
    have = json.load(open(sys.argv[2]))["packages"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
sys.exit(0 if all(have.get(k, {}).get("integrity") == v.get("integrity") for k, v in want.items()) else 1)
PY
}

have_all() {
    for f in $NEEDED; do [ -f "$UI/$f" ] || return 1; done
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && return 0
    npm_record_matches || return 1
    echo "$WANT" > "$STAMP"
}

if have_all; then
    # newer than the lockfile and package.json: the build's rule for it is satisfied (touched only
    # when it is not, else every `make` would embed the UI again and relink)
    [ "$STAMP" -nt "$UI/package-lock.json" ] && [ "$STAMP" -nt "$UI/package.json" ] || touch "$STAMP"
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
