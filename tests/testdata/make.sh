#!/bin/sh
# make.sh OUTDIR - new fixtures made with the repository's own programs, in the layout of
# tests/testdata, written under OUTDIR (never over the committed files, which stay the reference):
#
#   pprof/go/      tests/gotarget (-workload-seed 1, and 2 for cpu-seed2-01) through its
#                  /debug/pprof/* endpoints, as in README.md; cpu-01.pb and cpu-01.top.txt
#   prometheus/    Prometheus (Debian's 2.42) scraping that gotarget every 1 s with remote_write and
#                  remote_read to capture.py: three write requests, a metadata-only one, the reads
#                  of three promtool queries; a second Prometheus, fed the writes, answers the first
#                  read (remote-read-response-01); each .bin decoded to .json by promjson.py
#   pyroscope/     the @pyroscope/nodejs SDK, 0.6.4 and 0.4.13, profiling
#                  tests/integration/pyroscope_workload.js for 12 s, captured by capture.py
#   pprof/node/    Node pprof files from those uploads: wall-01 and heap-01 (the first wall and
#                  heap upload of 0.6.4), cpu-01 (a third run, 0.6.4 with cpu time)
#   pyroscope/go-1.5.0-otel, python-1.4.0-otel
#                  span profiles: tests/spanapp (pyroscope-go + otel-profiling-go) and
#                  tests/integration/sdk_spans_workload.py (pyroscope-io + pyroscope-otel, in the
#                  venv of scripts/install-pysdk.sh), each against capture.py, and what they printed
#
# Needs go, prometheus + promtool, node + npm (the SDKs are installed as test_pyroscope_nodejs.py
# does, into $PS_NPM_DIR, default /tmp/profstore-npm), curl, python3-snappy. Takes about 2 minutes.
# At the end: SHA256SUMS and a summary of every pprof file (types, samples, totals).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: tests/testdata/make.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
case "$out" in "$here"|"$here"/*) echo "make.sh: OUTDIR must not be under $here" >&2; exit 2 ;; esac
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/profstore-fixtures.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() { $py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it succeeds
    t=$(( $1 * 5 )); what=$2; shift 2
    while ! "$@" >/dev/null 2>&1; do
        t=$((t - 1)); [ $t -gt 0 ] || { echo "make.sh: timed out waiting for $what" >&2; exit 1; }
        sleep 0.2
    done
}
port_open() { $py -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1"; }
get() { curl -sSf -o "$1" "$2"; }
mkdir -p "$out/pprof/go" "$out/pprof/node" "$out/prometheus" "$out/pyroscope"

# ---- Go ----------------------------------------------------------------------------------------
echo "make.sh: building tests/gotarget"
(cd "$root/tests/gotarget" && go build -trimpath -o "$work/gotarget" .)
p1=$(free_port)
"$work/gotarget" -addr "127.0.0.1:$p1" -workload-seed 1 > "$work/gotarget-1.log" 2>&1 &
pids="$pids $!"
wait_for 15 "gotarget seed 1" curl -sf "http://127.0.0.1:$p1/healthz"

# Node and Prometheus run meanwhile (each on its own ports): start the SDK runs now
echo "make.sh: installing @pyroscope/nodejs 0.6.4 and 0.4.13"
npm_dir=${PS_NPM_DIR:-${TMPDIR:-/tmp}/profstore-npm}
for v in 0.6.4 0.4.13; do
    d=$npm_dir/pyroscope-nodejs-$v
    if ! [ -f "$d/node_modules/@pyroscope/nodejs/package.json" ]; then
        mkdir -p "$d"
        (cd "$d" && npm init -y >/dev/null && npm install --no-audit --no-fund "@pyroscope/nodejs@$v" >/dev/null)
    fi
done
mkdir -p "$work/app"
cp "$root/tests/integration/pyroscope_workload.js" "$work/app/"
sdk_run() { # sdk_run NAME VERSION COLLECT_CPU: the workload for 12 s against a capture server
    port=$(free_port)
    $py "$here/capture.py" --port "$port" --out "$work/$1" --max 9 &
    pids="$pids $!"
    wait_for 10 "capture server $1" port_open "$port"
    (cd "$work/app" && env -u PYROSCOPE_ADHOC_SERVER_ADDRESS NODE_PATH="$npm_dir/pyroscope-nodejs-$2/node_modules" \
        SERVER_URL="http://127.0.0.1:$port" DURATION_MS=12000 FLUSH_MS=5000 COLLECT_CPU="$3" \
        node pyroscope_workload.js > "$work/$1.log" 2>&1) &
    node_pids="$node_pids $!"
}
node_pids=""
sdk_run nodejs-0.6.4 0.6.4 0
sdk_run nodejs-0.4.13 0.4.13 0
sdk_run nodejs-cpu 0.6.4 1

echo "make.sh: Prometheus scraping gotarget, writing to capture.py"
pc=$(free_port)
$py "$here/capture.py" --port "$pc" --out "$work/prom" --max 3 &
pids="$pids $!"
wait_for 10 "capture server prom" port_open "$pc"
pp=$(free_port)
cat > "$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  external_labels:
    replica: fixture
scrape_configs:
  - job_name: gotarget
    static_configs:
      - targets: ["127.0.0.1:$p1"]
        labels:
          env: test
remote_write:
  - url: http://127.0.0.1:$pc/api/v1/write
    remote_timeout: 5s
    queue_config: {batch_send_deadline: 1s, max_samples_per_send: 500, min_backoff: 100ms, max_backoff: 1s}
    metadata_config: {send: true, send_interval: 5s}
remote_read:
  - url: http://127.0.0.1:$pc/api/v1/read
    remote_timeout: 5s
    read_recent: true
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom-data" \
    --web.listen-address="127.0.0.1:$pp" > "$work/prometheus.log" 2>&1 &
pids="$pids $!"

# the Go captures: after 13 s of workload (block, mutex and allocs accumulate)
sleep 13
g=$out/pprof/go
echo "make.sh: Go profiles"
for i in 01 02 03 04 05; do get "$g/cpu-$i.pb.gz" "http://127.0.0.1:$p1/debug/pprof/profile?seconds=3"; done
get "$g/heap-01.pb.gz" "http://127.0.0.1:$p1/debug/pprof/heap"
get "$g/heap-gc-01.pb.gz" "http://127.0.0.1:$p1/debug/pprof/heap?gc=1"
for n in allocs goroutine block mutex threadcreate; do get "$g/$n-01.pb.gz" "http://127.0.0.1:$p1/debug/pprof/$n"; done
p2=$(free_port)
"$work/gotarget" -addr "127.0.0.1:$p2" -workload-seed 2 > "$work/gotarget-2.log" 2>&1 &
pid2=$!
pids="$pids $pid2"
wait_for 15 "gotarget seed 2" curl -sf "http://127.0.0.1:$p2/healthz"
sleep 1.5
get "$g/cpu-seed2-01.pb.gz" "http://127.0.0.1:$p2/debug/pprof/profile?seconds=3"
kill "$pid2"
gunzip -c "$g/cpu-01.pb.gz" > "$g/cpu-01.pb"
TZ=UTC PPROF_TMPDIR="$work/pprof-tmp" go tool pprof -top -nodecount=10 "$g/cpu-01.pb.gz" > "$g/cpu-01.top.txt" 2>/dev/null

# ---- Prometheus --------------------------------------------------------------------------------
echo "make.sh: remote write and read"
wait_for 60 "three remote-write requests and a metadata one" \
    test -f "$work/prom/remote-write-03.bin" -a -f "$work/prom/remote-write-metadata-01.bin"
promtool query instant "http://127.0.0.1:$pp" 'gotarget_kernel_iterations_total{kernel="matmul"}' > "$work/q1.txt"
now=$(date +%s)
promtool query range --start=$((now - 40)) --end="$now" --step=5s "http://127.0.0.1:$pp" \
    'sum by (kernel) (rate(gotarget_kernel_iterations_total[10s]))' > "$work/q2.txt"
promtool query series --match=up "http://127.0.0.1:$pp" > "$work/q3.txt"
wait_for 10 "three remote-read requests" test -f "$work/prom/remote-read-03.bin"

# a second Prometheus as the receiver: fed the three writes, it answers the first read
pq=$(free_port)
printf 'global:\n  scrape_interval: 15s\n' > "$work/peer.yml"
prometheus --config.file="$work/peer.yml" --storage.tsdb.path="$work/peer-data" --web.listen-address="127.0.0.1:$pq" \
    --web.enable-remote-write-receiver > "$work/peer.log" 2>&1 &
pids="$pids $!"
wait_for 30 "the receiving Prometheus" curl -sf "http://127.0.0.1:$pq/-/ready"
for i in 01 02 03; do
    curl -sSf -o /dev/null -H 'Content-Encoding: snappy' -H 'Content-Type: application/x-protobuf' \
        -H 'X-Prometheus-Remote-Write-Version: 0.1.0' --data-binary "@$work/prom/remote-write-$i.bin" \
        "http://127.0.0.1:$pq/api/v1/write"
done
curl -sSf -o "$work/prom/remote-read-response-01.bin" -H 'Content-Encoding: snappy' \
    -H 'Content-Type: application/x-protobuf' -H 'X-Prometheus-Remote-Read-Version: 0.1.0' \
    --data-binary "@$work/prom/remote-read-01.bin" "http://127.0.0.1:$pq/api/v1/read"
pr=$out/prometheus
for f in remote-write-01 remote-write-02 remote-write-03 remote-write-metadata-01 remote-read-01 remote-read-02 \
         remote-read-03 remote-read-response-01; do
    cp "$work/prom/$f.bin" "$pr/"
    [ -f "$work/prom/$f.txt" ] && cp "$work/prom/$f.txt" "$pr/"
    case $f in remote-write*) how=write ;; remote-read-response*) how=readresp ;; *) how=read ;; esac
    (cd "$here" && $py promjson.py "$how" "$pr/$f.bin") > "$pr/$f.json"
done
cp "$work/prom/requests.log" "$pr/"

# ---- Node ---------------------------------------------------------------------------------------
echo "make.sh: waiting for the SDK runs"
for p in $node_pids; do
    wait "$p" || { cat "$work"/nodejs-*.log >&2; echo "make.sh: an SDK run failed" >&2; exit 1; }
done
for v in 0.6.4 0.4.13; do
    d=$out/pyroscope/nodejs-$v
    mkdir -p "$d"
    for f in "$work/nodejs-$v"/ingest-*; do cp "$f" "$d/"; done
    cp "$work/nodejs-$v/requests.log" "$d/"
done
# the first wall upload and the first heap upload of 0.6.4 (raw gzip'd pprof bodies); cpu-01 the
# first wall upload of the run with cpu time (sample types samples, wall, cpu)
for f in "$work"/nodejs-0.6.4/ingest-*.bin; do
    case $(grep -c 'sampleRate=' "${f%.bin}.txt") in
    0) [ -f "$out/pprof/node/heap-01.pb.gz" ] || cp "$f" "$out/pprof/node/heap-01.pb.gz" ;;
    *) [ -f "$out/pprof/node/wall-01.pb.gz" ] || cp "$f" "$out/pprof/node/wall-01.pb.gz" ;;
    esac
done
for f in "$work"/nodejs-cpu/ingest-*.bin; do
    if grep -q 'sampleRate=' "${f%.bin}.txt"; then cp "$f" "$out/pprof/node/cpu-01.pb.gz"; break; fi
done

# ---- span profiles of the Go and Python SDKs ----------------------------------------------------
echo "make.sh: span profiles (tests/spanapp, sdk_spans_workload.py)"
(cd "$root/tests/spanapp" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o "$work/spanapp" .)
"$root/scripts/install-pysdk.sh"
pysdk=${PS_PYSDK_DIR:-${TMPDIR:-/tmp}/profstore-pysdk}
mkdir -p "$work/sdkapp"
cp "$root/tests/integration/sdk_spans_workload.py" "$work/sdkapp/"
for kind in go py; do
    port=$(free_port)
    $py "$here/capture.py" --port "$port" --out "$work/spans-$kind" --max 9 &
    cap=$!
    pids="$pids $cap"
    wait_for 10 "capture server spans-$kind" port_open "$port"
    if [ $kind = go ]; then
        d=$out/pyroscope/go-1.5.0-otel
        env -u PYROSCOPE_ADHOC_SERVER_ADDRESS "$work/spanapp" -server "http://127.0.0.1:$port" > "$work/spans-$kind.out"
    else
        d=$out/pyroscope/python-1.4.0-otel
        (cd "$work/sdkapp" && SERVER_URL="http://127.0.0.1:$port" "$pysdk/bin/python" sdk_spans_workload.py) > "$work/spans-$kind.out"
    fi
    sleep 1
    kill "$cap"
    mkdir -p "$d"
    cp "$work/spans-$kind"/*-0* "$d/"
    cp "$work/spans-$kind.out" "$d/spans.txt"
done

# ---- sums and a summary --------------------------------------------------------------------------
(cd "$out" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
$py - "$root/tests/integration" "$out" <<'EOF'
import gzip, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import pprof_decode as pd
out = Path(sys.argv[2])
for f in sorted((out / "pprof").rglob("*.pb*")):
    p = pd.decode(f.read_bytes())
    types = ", ".join("%s/%s" % (p.string_table[t.type], p.string_table[t.unit]) for t in p.sample_type)
    print("%-28s %-70s samples %4d  totals %s" % (f.relative_to(out), types, len(p.sample),
                                                   " / ".join(str(t) for t in pd.totals(p))))
EOF
echo "make.sh: done: $out"
