#!/bin/sh
# bench/run.sh - runs the benchmarks with the binaries of an existing build (builds nothing).
#
#   BUILD=build bench/run.sh          # full: 20,000 pushes per phase; 10 series x 8,640 profiles (24 h)
#   QUICK=1 bench/run.sh              # smaller counts (a minute or so)
#
# Environment: BUILD (build directory, default build/ next to bench/), QUICK=1, PS_TESTDATA
# (shared/testdata; default: the path compiled into the benchmarks), INGEST_ARGS / STORAGE_ARGS
# (extra flags for bench_ingest / bench_storage, e.g. INGEST_ARGS="--conns 32").
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
BUILD=${BUILD:-$root/build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
QUICK=${QUICK:-0}
INGEST_ARGS=${INGEST_ARGS:-}
STORAGE_ARGS=${STORAGE_ARGS:-}

for b in "$BUILD/profstore" "$BUILD/bench/bench_ingest" "$BUILD/bench/bench_storage"; do
    if [ ! -x "$b" ]; then
        echo "run.sh: $b not found; build first:" >&2
        echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j2" >&2
        exit 1
    fi
done

if [ "$QUICK" = 1 ]; then
    ingest_n=2000
    storage_pps=360
else
    ingest_n=20000
    storage_pps=8640
fi

status=0
echo "### bench_ingest (-n $ingest_n)"
# shellcheck disable=SC2086
"$BUILD/bench/bench_ingest" --profstore "$BUILD/profstore" -n "$ingest_n" $INGEST_ARGS || status=$?
echo
echo "### bench_storage (10 series x $storage_pps profiles)"
# shellcheck disable=SC2086
"$BUILD/bench/bench_storage" --profstore "$BUILD/profstore" --series 10 --profiles-per-series "$storage_pps" $STORAGE_ARGS ||
    status=$?
exit $status
