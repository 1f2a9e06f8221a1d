#!/bin/sh
# bench/run.sh - runs the benchmarks with the binaries of an existing build (builds nothing).
#
#   BUILD=build bench/run.sh          # full: 20,000 pushes per phase; 10 series x 8,640 profiles (24 h)
#   QUICK=1 bench/run.sh              # smaller counts (a minute or so)
#   /usr/bin/python3 bench/ui.py      # the web UI alone (headless Chromium)
#   /usr/bin/python3 bench/conns.py   # connections alone (idle RSS, accept rate, bound, EMFILE)
#
# Environment: BUILD (build directory, default build/ next to bench/), QUICK=1, PS_TESTDATA
# (tests/testdata; default: the path compiled into the benchmarks), INGEST_ARGS / STORAGE_ARGS
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

# ---- bench_chunk: chunk codec speed, in process (bench/chunk.c) ----
echo
echo "### bench_chunk (120 profiles x 3,000 nodes)"
if [ -x "$BUILD/bench/bench_chunk" ]; then
    "$BUILD/bench/bench_chunk" || status=$?
else
    echo "run.sh: $BUILD/bench/bench_chunk not found; build first" >&2
    status=1
fi

# ---- bench_xorchunk: float chunk codec size and speed, in process (bench/xorchunk.c) ----
echo
echo "### bench_xorchunk (node_exporter-like series, chunks of 120 samples)"
if [ -x "$BUILD/bench/bench_xorchunk" ]; then
    "$BUILD/bench/bench_xorchunk" || status=$?
else
    echo "run.sh: $BUILD/bench/bench_xorchunk not found; build first" >&2
    status=1
fi

# ---- bench_remote_write: POST /api/v1/write against Prometheus 3 (when cached) and 2.42 receivers (bench/remote_write.c,
# generator bench/rwgen.c; RW_ARGS="--values cpu" for the first generator's mix) ----
RW_ARGS=${RW_ARGS:-}
if [ "$QUICK" = 1 ]; then rw_series=2000; else rw_series=10000; fi
echo
echo "### bench_remote_write ($rw_series series x 120 scrapes, same bytes to profstore and Prometheus)"
if [ -x "$BUILD/bench/bench_remote_write" ]; then
    # shellcheck disable=SC2086
    "$BUILD/bench/bench_remote_write" --profstore "$BUILD/profstore" --series "$rw_series" $RW_ARGS || status=$?
else
    echo "run.sh: $BUILD/bench/bench_remote_write not found; build first" >&2
    status=1
fi

# ---- bench_promql: query_range, instant query and remote_read against Prometheus 3 (when cached) and 2.42 over HTTP,
# on the same data loaded into both through /api/v1/write (bench/promql.c) ----
# sum by (instance) (rate(node_cpu_seconds_total{...}[5m])) over 1,000 of the series of
# bench_remote_write's generator (bench/rwgen.c, its default --values node mix); full: 10,000 series
# x 24 h at 15 s (the load, some minutes, is kept in /tmp/profstore-bench-promql-*; reruns skip it);
# QUICK=1: 2,000 series x 2 h. Prints medians, server CPU and the points that differ.
echo
if [ "$QUICK" = 1 ]; then promql_args="--series 2000 --hours 2"; else promql_args="--series 10000 --hours 24"; fi
echo "### bench_promql ($promql_args)"
if [ -x "$BUILD/bench/bench_promql" ]; then
    # shellcheck disable=SC2086
    "$BUILD/bench/bench_promql" --profstore "$BUILD/profstore" $promql_args || status=$?
else
    echo "run.sh: $BUILD/bench/bench_promql not found; build first" >&2
    status=1
fi

# ---- bench_query: query API latency over a day of CPU profiles (bench/query.c) ----
# Loads once into /tmp/profstore-bench-query-<series>x<profiles> and reuses it on later runs
# (bench_query --reload, or rm -rf the directory, to load again). Full: 24 h for QUERY_SERIES
# series (default 80: the 100 of the target took 11 min to load on a 2-CPU machine, see
# bench/query.c); QUICK=1: 10 series x 1,000 profiles. QUERY_ARGS: extra bench_query flags.
QUERY_ARGS=${QUERY_ARGS:-}
if [ "$QUICK" = 1 ]; then
    query_series=10
    query_pps=1000
else
    query_series=${QUERY_SERIES:-80}
    query_pps=8640
fi
echo
echo "### bench_query ($query_series series x $query_pps profiles)"
if [ -x "$BUILD/bench/bench_query" ]; then
    # shellcheck disable=SC2086
    "$BUILD/bench/bench_query" --profstore "$BUILD/profstore" --series "$query_series" \
        --profiles-per-series "$query_pps" $QUERY_ARGS || status=$?
else
    echo "run.sh: $BUILD/bench/bench_query not found; build first" >&2
    status=1
fi

# ---- query isolation: push and /-/healthy latency while 20 clients run 24 h merges, with and
# without the query pool (bench/query_isolation.py) ----
echo
echo "### query_isolation (20 clients of 24 h merges while pushes run; with and without the query pool)"
/usr/bin/python3 "$here/query_isolation.py" --profstore "$BUILD/profstore" $( [ "$QUICK" = 1 ] && echo --seconds 3 --pushes 50 ) || status=$?

# ---- bench_scrape: cost of scraping 1,000 targets x 5 profile types every 10 s (bench/scrape.c) ----
# A forked epoll server on 1,000 loopback addresses (127.0.0.1, 127.0.0.2, ...) serves the real Go
# profiles; profstore scrapes them (file_sd). Prints profstore's CPU per scrape and per 1,000 targets
# per interval, RSS, scrapes/s and failures. Full: a 60 s window after the first round (~75 s);
# QUICK=1: 20 s. SCRAPE_ARGS: extra bench_scrape flags (e.g. "--targets 2000").
SCRAPE_ARGS=${SCRAPE_ARGS:-}
echo
echo "### bench_scrape (1,000 targets x 5 types / 10 s)"
if [ -x "$BUILD/bench/bench_scrape" ]; then
    # shellcheck disable=SC2086
    QUICK=$QUICK "$BUILD/bench/bench_scrape" --profstore "$BUILD/profstore" $SCRAPE_ARGS || status=$?
else
    echo "run.sh: $BUILD/bench/bench_scrape not found; build first" >&2
    status=1
fi

# ---- bench_remote_read: POST /api/v1/read of 1 h of 1,000 float series, profstore vs Prometheus
# 2.42 fed the same remote writes (bench/remote_read.c); QUICK=1: 10 rounds ----
echo
echo "### bench_remote_read (1,000 series x 1 h at 15 s)"
if [ -x "$BUILD/bench/bench_remote_read" ]; then
    if [ "$QUICK" = 1 ]; then rr_rounds=10; else rr_rounds=50; fi
    "$BUILD/bench/bench_remote_read" --profstore "$BUILD/profstore" --rounds "$rr_rounds" || status=$?
else
    echo "run.sh: $BUILD/bench/bench_remote_read not found; build first" >&2
    status=1
fi

# ---- bench_pprof: ps_pprof_decode / ps_pprof_encode per call on the fixtures (bench/pprof.c) ----
echo
echo "### bench_pprof"
if [ -x "$BUILD/bench/bench_pprof" ]; then
    if [ "$QUICK" = 1 ]; then "$BUILD/bench/bench_pprof" --rounds 200 || status=$?; else "$BUILD/bench/bench_pprof" || status=$?; fi
else
    echo "run.sh: $BUILD/bench/bench_pprof not found; build first" >&2
    status=1
fi

# ---- authentication: a credential check in process (bench/auth_check.c), then µs per request with
# no web config, basic auth (cached) and a bearer token (bench/auth.py) ----
echo
echo "### bench_auth_check, bench/auth.py"
if [ -x "$BUILD/bench/bench_auth_check" ]; then "$BUILD/bench/bench_auth_check" || status=$?; fi
/usr/bin/python3 "$here/auth.py" --profstore "$BUILD/profstore" --requests "$([ "$QUICK" = 1 ] && echo 1000 || echo 5000)" || status=$?

# ---- shared (ad hoc) profiles: Upload and Get of a real CPU profile and of the 12,420-node synthetic
# one, beside /pyroscope/render of the same profile pushed as a series (bench/adhoc.py) ----
echo
echo "### bench/adhoc.py"
/usr/bin/python3 "$here/adhoc.py" --profstore "$BUILD/profstore" --n "$([ "$QUICK" = 1 ] && echo 10 || echo 50)" || status=$?
/usr/bin/python3 "$here/adhoc.py" --profstore "$BUILD/profstore" --profile synthetic --n "$([ "$QUICK" = 1 ] && echo 5 || echo 30)" || status=$?

# ---- bench_ui: the web UI in headless Chromium: time to first flame graph, flame graph draw time of
# 1 h and 24 h merges with 8,192 nodes (bench/ui.py; prints "skipped" without chromium) ----
echo
echo "### bench_ui (24 h of a 12,420-node CPU profile, 1 h and 24 h merges, max_nodes=8192)"
/usr/bin/python3 "$here/ui.py" --profstore "$BUILD/profstore" || status=$?

# ---- bench_conns: idle connections held (RSS, CPU), accept rate, the connection bound and EMFILE
# (bench/conns.py) ----
echo
echo "### bench_conns (512 idle connections, accept rate, 1,000 idle at --web.max-connections=512, nofile 256)"
/usr/bin/python3 "$here/conns.py" --profstore "$BUILD/profstore" || status=$?

# ---- bench_grpc: the gRPC listener's health checks/s and a 1 MiB request's round trip beside the
# main port's /-/healthy and a 1 MiB POST (bench/grpc_listener.py) ----
echo
echo "### bench_grpc (Health/Check calls/s with grpcio, 1 MiB round trip; HTTP/1.1 beside it)"
/usr/bin/python3 "$here/grpc_listener.py" --profstore "$BUILD/profstore" --calls "$([ "$QUICK" = 1 ] && echo 1000 || echo 5000)" || status=$?

# ---- bench_forward: profiles/s and samples/s forwarded A -> B, A's CPU per profile with and
# without forwarding, catch-up after an outage of B (bench/forward.py; full: 5 min at 500/s) ----
echo
echo "### bench_forward"
if [ "$QUICK" = 1 ]; then
    /usr/bin/python3 "$here/forward.py" --profstore "$BUILD/profstore" --sender-bin "$BUILD/bench/bench_overload_send" --profiles 1000 --outage 10 --rate 200 --rw-requests 50 || status=$?
else
    /usr/bin/python3 "$here/forward.py" --profstore "$BUILD/profstore" --sender-bin "$BUILD/bench/bench_overload_send" || status=$?
fi
exit $status
