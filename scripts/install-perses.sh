#!/bin/sh
# install-perses.sh [DIR] - the Perses project's Pyroscope plugin (@perses-dev/pyroscope-plugin
# 0.4.0, Apache-2.0) with the few packages its client code needs in Node (@perses-dev/core, date-fns,
# react; no browser packages: tests/perses/.npmrc leaves the plugin's UI peers out), exactly as
# tests/perses/package-lock.json pins them, installed by `npm ci` into DIR (default
# $PS_PERSES_DIR, else ${TMPDIR:-/tmp}/profstore-perses), outside the repository.
# tests/integration/test_perses_client.py drives it. Does nothing when DIR already holds this
# lockfile's install (a stamp with its hash). scripts/install-deps.sh runs it; the test runs it
# when DIR is missing.
set -eu
src="$(cd "$(dirname "$0")/../tests/perses" && pwd)"
dir=${1:-${PS_PERSES_DIR:-${TMPDIR:-/tmp}/profstore-perses}}
want="$(cat "$src/package.json" "$src/package-lock.json" "$src/.npmrc" | sha256sum | cut -d' ' -f1)"
need="node_modules/@perses-dev/pyroscope-plugin/lib/cjs/model/pyroscope-client.js"

[ -f "$dir/$need" ] && [ "$(cat "$dir/.profstore-lock" 2>/dev/null)" = "$want" ] && exit 0
command -v npm >/dev/null 2>&1 || { echo "install-perses: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
mkdir -p "$dir"
# one install at a time into DIR (two test runs may start together)
exec 9>"$dir/.install-lock"
flock 9
[ -f "$dir/$need" ] && [ "$(cat "$dir/.profstore-lock" 2>/dev/null)" = "$want" ] && exit 0
rm -f "$dir/.profstore-lock"
cp "$src/package.json" "$src/package-lock.json" "$src/.npmrc" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
[ -f "$dir/$need" ] || { echo "install-perses: npm ci did not bring $need" >&2; exit 1; }
echo "$want" > "$dir/.profstore-lock"
