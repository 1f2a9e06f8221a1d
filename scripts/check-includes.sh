#!/bin/sh
# check-includes.sh - the dependency rule, checked over the sources (run by `make test`):
#
#   core  <-  parser, proto, storage  <-  src/<room>  <-  web, grpc  <-  src/main.c
#
# Each folder below may include headers of the folders listed for it (and its own), nothing else;
# the rooms of src/ may use each other only as listed, so there is no cycle. The build enforces
# the same through each library's include path; this check also catches a header that is never
# compiled and names the line. Exits 1 on any violation.
set -eu
cd "$(dirname "$0")/.."

# folder -> prefix used in #include "prefix/..." -> prefixes it may include
rules='
core          core
parser        parser     core
proto         proto      core
storage       storage    core
src/config    config     core parser
src/auth      auth       core config
src/discovery discovery  core config
src/ingest    ingest     core parser proto storage
src/query     query      core parser proto storage
src/render    render     core
src/symbols   symbols    core
src/debuginfo debuginfo  core proto symbols
src/rules     rules      core parser proto storage
src/httpclient httpclient core config
src/scrape    scrape     core config discovery httpclient ingest proto
src/forward   forward    core parser proto storage config httpclient ingest
web           web        core parser proto storage config auth discovery ingest query rules render scrape forward debuginfo
src/grpc      grpc       core proto config auth
src/main.c    main       core parser proto storage config auth discovery ingest query rules render scrape forward web grpc symbols debuginfo
tests/unit/core      -   core
tests/unit/parser    -   core parser
tests/unit/proto     -   core proto
tests/unit/storage   -   core storage proto
tests/unit/config    -   core config
tests/unit/auth      -   core config auth
tests/unit/discovery -   core config discovery
tests/unit/ingest    -   core parser proto storage ingest
tests/unit/query     -   core parser proto storage ingest query
tests/unit/render    -   core proto render
tests/unit/symbols   -   core symbols
tests/unit/debuginfo -   core proto symbols debuginfo
tests/unit/rules     -   core parser proto storage ingest rules
tests/unit/scrape    -   core config discovery httpclient ingest proto scrape
tests/unit/forward   -   core parser proto storage config httpclient ingest forward
tests/unit/grpc      -   core config auth proto grpc
tests/support        -   core proto
bench                -   core parser proto storage config auth ingest query
'
prefixes='core parser proto storage config auth discovery httpclient ingest query rules render scrape forward web grpc symbols debuginfo'

bad=0
echo "$rules" | while read -r dir own allowed; do
    [ -n "$dir" ] || continue
    [ -e "$dir" ] || continue
    if [ -f "$dir" ]; then files=$dir; else files=$(find "$dir" -maxdepth 1 -name '*.[ch]' -o -maxdepth 1 -name '*.re' | sort); fi
    for f in $files; do
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "$f" | while IFS= read -r line; do
            inc=$(printf '%s' "$line" | sed 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/')
            pfx=${inc%%/*}
            case "$dir:$inc" in tests/unit/*:../testutil.h | tests/unit/*:../storewriter.h) continue ;; esac  # the unit tests' shared helpers
            case " $prefixes " in *" $pfx "*) ;; *) echo "$f:${line%%:*}: #include \"$inc\": no folder \"$pfx\" to include from"; exit 1 ;; esac
            [ "$pfx" = "$own" ] && continue
            case " $allowed " in *" $pfx "*) ;; *)
                echo "$f:${line%%:*}: #include \"$inc\": $dir may not depend on $pfx (allowed: $allowed)"; exit 1 ;;
            esac
        done || exit 1
    done || exit 1
done && { echo "check-includes: the dependency rule holds"; exit 0; }
echo "check-includes: FAILED (see scripts/check-includes.sh for the rule)" >&2
exit 1
