#!/bin/sh
# run.sh - builds every libFuzzer target (tests/fuzz/build.sh) and fuzzes each for N seconds
# (default 20): fuzz_pprof seeded with the real pprof fixtures (as they are and gunzipped),
# fuzz_chunk, fuzz_xorchunk, fuzz_spanparts, fuzz_unsymrec, fuzz_rolluprec and fuzz_float_dense seeded with chunks their encoders make, fuzz_selector seeded with
# real selectors, fuzz_promql and fuzz_pqeval (parse and evaluate) with real queries, fuzz_remote seeded with the captured Prometheus
# remote-write bodies (as they are and uncompressed), fuzz_remote_read with the captured read
# requests (likewise), fuzz_connect with the Connect requests it encodes itself (a PushRequest
# holding a real pprof, binary and JSON; types.v1 requests), fuzz_pyingest with the captured
# Pyroscope SDK requests (query, Content-Type and body) and a few folded bodies, fuzz_adhoc with
# the pprof fixtures (gzipped and raw), folded texts, flamebearer JSON and the perf capture as
# uploaded files, fuzz_fbjson with flamebearer documents, fuzz_perf with the real `perf script`
# capture (tests/testdata/perf) and a few shapes, fuzz_querier with
# querier.v1 requests as Grafana sends them (binary and JSON), fuzz_ui_headers with the headers
# Chromium sends for the UI, fuzz_otlp with the OTLP requests of its committed corpus (protobuf and
# JSON, written by the integration tests' protoc classes), fuzz_webconfig with a few web config files,
# fuzz_grpc with gRPC calls it encodes itself with nghttp2's client session, fuzz_symbols with a
# small program compiled with gcc -g -O2 and a small C++ one with g++ -g -O2 (8 address bytes, then
# the ELF: whole, and its objcopy --only-keep-debug file), fuzz_elfcheck with a C program's two
# files (without the address).
# Every target also gets the committed corpus tests/fuzz/corpus/<target>/ (campaign.sh keeps it:
# inputs that add coverage, and regress-* files of fixed findings); fuzz_config has only that.
# Targets fuzz PS_FUZZ_JOBS at a time (default: one per core). Exits non-zero if libFuzzer finds a
# crash, leak or timeout; the reproducer is left in the output directory (<target>-crash-*, -leak-*,
# -timeout-*).
# PS_FUZZ_SEED=N: libFuzzer's -seed (default 1, the same run each time; 0: a new one each run).
# PS_FUZZ_SEEDS_ONLY=DIR (campaign.sh): write each target's seeds into DIR/<target>/ with the
# binaries already in PS_FUZZ_OUT, without building or fuzzing.
#
# usage: tests/fuzz/run.sh [SECONDS] [TARGET...]      e.g. tests/fuzz/run.sh 600 fuzz_pprof
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-20}
[ $# -gt 0 ] && shift
targets=${*:-"fuzz_pprof fuzz_chunk fuzz_xorchunk fuzz_spanparts fuzz_unsymrec fuzz_rolluprec fuzz_float_dense fuzz_float_log fuzz_selector fuzz_promql fuzz_pqeval fuzz_remote fuzz_remote_read fuzz_connect fuzz_pyingest fuzz_adhoc fuzz_fbjson fuzz_perf fuzz_querier fuzz_otlp fuzz_ui_headers fuzz_webconfig fuzz_config fuzz_grpc fuzz_symbols fuzz_elfcheck"}
out=${PS_FUZZ_OUT:-${TMPDIR:-/tmp}/profstore-fuzz-$$}
# a fixed seed: make test replays the same mutations each time, so it fails on a code change, not on
# luck (campaign.sh and PS_FUZZ_SEED=0, a seed of libFuzzer's choosing, are where new findings come from)
seed=${PS_FUZZ_SEED:-1}

# the fixtures (tests/testdata, or $PS_TESTDATA): pprof/, and prometheus/ and pyroscope/ beside it
seeds=${PS_TESTDATA:-$root/tests/testdata}/pprof
[ -d "$seeds" ] || { echo "run.sh: no seed directory $seeds" >&2; exit 2; }

[ -n "${PS_FUZZ_SEEDS_ONLY:-}" ] || "$here/build.sh" "$out" >/dev/null

# PS_FUZZ_JOBS targets fuzz at once (default: one per core), each for the whole SECONDS
jobs=${PS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
running=0
fuzz_one() { # target corpus: fuzzes, leaves its exit status in $out/$1.status
    rc=0
    # fuzz_symbols: libdw 0.188's dwarf_getscopes leaks its array on some damaged DWARF (its
    # second walk fails after the first allocated it; nothing is returned to free): leaks are not
    # findings there, neither per input nor at exit (memory still is: -rss_limit_mb)
    leaks=1 asan=${ASAN_OPTIONS:-}
    [ "$1" != fuzz_symbols ] || { leaks=0; asan="detect_leaks=0${asan:+:$asan}"; }
    (cd "$out" && ASAN_OPTIONS="$asan" "$out/$1" -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -detect_leaks="$leaks" \
        -artifact_prefix="$out/$1-" -print_final_stats=1 "$2" 2>"$out/$1.log") || rc=$?
    echo "$rc" > "$out/$1.status"
}
check_done() { # reports the targets that finished; exits on the first that failed
    for st in "$out"/*.status; do
        [ -f "$st" ] || continue
        t=$(basename "$st" .status)
        if [ "$(cat "$st")" != 0 ]; then
            tail -50 "$out/$t.log" >&2
            echo "run.sh: $t FAILED; reproducer in $out" >&2
            exit 1
        fi
        echo "run.sh: $t:"
        grep -E "stat::number_of_executed_units|Done" "$out/$t.log" | head -2
        rm -f "$st"
    done
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

for t in $targets; do
    [ -x "$out/$t" ] || { echo "run.sh: $t was not built" >&2; exit 2; }
    corpus="$work/$t"
    mkdir -p "$corpus"
    case $t in
    fuzz_pprof)
        # each fixture as it is, and gunzipped (mutating raw protobuf reaches further than gzip)
        for f in $(cd "$seeds" && find . -type f \( -name '*.pb' -o -name '*.pb.gz' \) | sort); do
            name=$(echo "${f#./}" | tr / _)
            cp "$seeds/$f" "$corpus/$name"
            case $f in *.gz) gunzip -c "$seeds/$f" > "$corpus/${name%.gz}.raw" ;; esac
        done ;;
    fuzz_chunk)
        # the target writes valid chunks as seeds when asked
        PS_FUZZ_CHUNK_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_xorchunk)
        PS_FUZZ_XORCHUNK_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_spanparts)
        PS_FUZZ_SPANPARTS_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_unsymrec)
        PS_FUZZ_UNSYMREC_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_rolluprec)
        PS_FUZZ_ROLLUPREC_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_float_dense)
        PS_FUZZ_FLOAT_DENSE_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_symbols)
        printf 'static inline int sq(int x) { return x * x; }\nint f(int n) { int a = 0; for (int i = 0; i < n; i++) a += sq(i); return a; }\nint main(int c, char **v) { (void)v; return f(c); }\n' > "$work/sym.c"
        gcc -g -O2 -o "$work/sym" "$work/sym.c"
        objcopy --only-keep-debug "$work/sym" "$work/sym.debug"
        a=$(nm "$work/sym" | awk '$3=="f"{print $1}')
        for e in sym sym.debug; do
            # the address, 8 bytes little-endian, then the file
            python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<Q', int('$a', 16)))" > "$corpus/$e"
            cat "$work/$e" >> "$corpus/$e"
        done
        # and a C++ one: mangled linkage names (namespaces, templates, an operator) to demangle
        printf 'namespace n { template <typename T> struct V { T x; __attribute__((noinline)) bool operator<(const V &o) const { return x < o.x; } }; }\nint main(int c, char **v) { (void)v; n::V<long> a{c}, b{2}; return a < b; }\n' > "$work/cxx.cc"
        g++ -g -O2 -o "$work/cxx" "$work/cxx.cc"
        objcopy --only-keep-debug "$work/cxx" "$work/cxx.debug"
        a=$(nm "$work/cxx" | awk '$3 ~ /^_ZNK1n1VIlEltE/{print $1}')
        for e in cxx cxx.debug; do
            python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<Q', int('$a', 16)))" > "$corpus/$e"
            cat "$work/$e" >> "$corpus/$e"
        done ;;
    fuzz_elfcheck)
        printf 'int f(int n) { return n * 3; }\nint main(int c, char **v) { (void)v; return f(c); }\n' > "$work/elf.c"
        gcc -g -O2 -o "$work/elf" "$work/elf.c"
        objcopy --only-keep-debug "$work/elf" "$work/elf.debug"
        cp "$work/elf" "$work/elf.debug" "$corpus/" ;;
    fuzz_selector)
        i=0
        for s in 'process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api",instance=~"10\\..*"}' \
                 '{__name__=~"memory:.*",job!="batch"}' 'sum by (job) (x{a=`b`})' '1+2*3^2' \
                 "x{a='\\x41\\u00e9'}" 'sum(rate(x[5m]))' '{a!~"(a+)+$"}'; do
            printf '%s' "$s" > "$corpus/seed$i"; i=$((i + 1))
        done ;;
    fuzz_promql|fuzz_pqeval)
        i=0
        for s in 'sum by (job) (rate(http_requests_total{code=~"5.."}[5m])) / ignoring(code) group_left sum(x)' \
                 'histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m] offset -1h @ 100)))' \
                 'max_over_time(deriv(x[1h:5m])[1d:] @ start()) > bool 0.5e-3' \
                 'topk(3, count_values without (a) ("v", -x ^ 2 % 0x1f)) or vector(time()) unless on() y' \
                 "label_replace(up, 'a', \"\\u00e9\", \`b\`, '(.*)') and quantile_over_time(.9, z[1y2w])" \
                 'absent(nonexistent{job="x"}) + (1 - -Inf) * scalar(a) atan2 NaN'; do
            printf '%s' "$s" > "$corpus/seed$i"; i=$((i + 1))
        done ;;
    fuzz_remote)
        # first byte: bit 0 = version 2, bit 1 = the rest is raw protobuf to compress (fuzz_remote.c)
        prom=$(dirname "$seeds")/prometheus
        for f in "$prom"/remote-write-*.bin; do
            [ -f "$f" ] || continue
            name=$(basename "$f" .bin)
            { printf '\000'; cat "$f"; } > "$corpus/$name"
            /usr/bin/python3 -c 'import sys, snappy; sys.stdout.buffer.write(b"\x02" + snappy.uncompress(open(sys.argv[1], "rb").read()))' \
                "$f" > "$corpus/$name.raw" || exit 2
        done
        printf '\003\042\000\042\010__name__\042\002up\052\011\012\002\001\002\022\003\020\350\007' > "$corpus/v2-up" ;;
    fuzz_remote_read)
        # first byte: bit 1 = the rest is raw protobuf to compress (fuzz_remote_read.c)
        prom=$(dirname "$seeds")/prometheus
        for f in "$prom"/remote-read-0*.bin; do
            [ -f "$f" ] || continue
            name=$(basename "$f" .bin)
            { printf '\000'; cat "$f"; } > "$corpus/$name"
            /usr/bin/python3 -c 'import sys, snappy; sys.stdout.buffer.write(b"\x02" + snappy.uncompress(open(sys.argv[1], "rb").read()))' \
                "$f" > "$corpus/$name.raw" || exit 2
        done ;;
    fuzz_connect)
        # first byte: bit 0 = JSON, bits 1-3 = the message (fuzz_connect.c)
        PS_FUZZ_CONNECT_SEEDS="$corpus" PS_FUZZ_CONNECT_PPROF="$seeds/go/goroutine-01.pb.gz" \
            "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_adhoc)
        # uploaded files: pprof fixtures gzipped and raw, folded texts, a JSON one (fuzz_adhoc.c)
        for f in "$seeds"/go/cpu-01.pb.gz "$seeds"/go/heap-01.pb.gz "$seeds"/go/cpu-01.pb "$seeds"/node/*.pb.gz; do
            [ -f "$f" ] && cp "$f" "$corpus/$(basename "$f")"
        done
        gunzip -c "$seeds/go/goroutine-01.pb.gz" > "$corpus/goroutine-01.pb"
        printf 'main;a;b 10\nmain;c 5\r\nz 1\n' > "$corpus/folded"
        printf ' {"version":1}' > "$corpus/json"
        cp "$(dirname "$seeds")/perf/prog-script.txt" "$corpus/perf"
        printf '{"version":1,"flamebearer":{"names":["total","main","work"],"levels":[[0,10,0,0],[0,10,2,1],[2,8,8,2]],"numTicks":10,"maxSelf":8},"metadata":{"format":"single","spyName":"","sampleRate":100,"units":"samples","name":"cpu"}}' > "$corpus/fbjson" ;;
    fuzz_fbjson)
        # flamebearer documents: profstore's render of a small tree, a cut one ("other"), an empty one
        printf '{"version":1,"flamebearer":{"names":["total","main","work","inner","x"],"levels":[[0,12,0,0],[0,12,2,1],[2,8,5,2,0,2,0,4],[5,3,3,3,2,2,2,4]],"numTicks":12,"maxSelf":5},"metadata":{"format":"single","spyName":"gospy","sampleRate":100,"units":"samples","name":"cpu"},"timeline":null,"groups":null,"heatmap":null}' > "$corpus/tree"
        printf '{"version":1,"flamebearer":{"names":["total","a","b","other"],"levels":[[0,9,0,0],[0,9,1,1],[1,5,5,2,0,3,3,3]],"numTicks":9,"maxSelf":5},"metadata":{"format":"single"}}' > "$corpus/other"
        printf '{"flamebearer":{"names":["total"],"levels":[[0,0,0,0]]},"metadata":{"format":"single"}}' > "$corpus/empty"
        printf '{"flamebearer":{"names":["total","a"],"levels":[[0,2,0,0,0,2,0,0,0],[0,1,0,1,1,1,1]]},"metadata":{"format":"double"}}' > "$corpus/double" ;;
    fuzz_perf)
        cp "$(dirname "$seeds")/perf/prog-script.txt" "$corpus/prog"
        printf '# header\nV8 WorkerThread 24636/25607 [000] 94564.109216: cycles:\r\n\t    ffffffffb37b3618 __cgroup_account_cputime+0x28 (/lib/vmlinux)\r\n                  3fa48f [unknown] ([unknown])\n\t 91197 f(int) const (/x)\n\n' > "$corpus/shapes"
        printf 'java 12688 [002] 6544038.708352: cpu-clock:\njava 12688/12764 6544038.708352: cpu-clock:\n' > "$corpus/nocallchain" ;;
    fuzz_pyingest)
        # "<query>\n<Content-Type>\n<body>" of each captured SDK request (fuzz_pyingest.c)
        pyro=$(dirname "$seeds")/pyroscope
        for f in "$pyro"/nodejs-*/ingest-*.txt "$pyro"/go-*/ingest-*.txt; do
            [ -f "$f" ] || continue
            name=$(echo "$f" | sed 's|.*/\([^/]*\)/\(ingest-[0-9]*\).txt|\1_\2|')
            q=$(head -1 "$f" | sed 's/^POST [^?]*?\([^ ]*\) HTTP.*/\1/')
            ct=$(grep -i '^content-type: ' "$f" | head -1 | sed 's/^[^:]*: //' | tr -d '\r')
            { printf '%s\n%s\n' "$q" "$ct"; cat "${f%.txt}.bin"; } > "$corpus/$name"
        done
        printf 'name=app.cpu%%7Benv%%3Dprod%%7D&from=1796022000&until=1796022010&sampleRate=100\ntext/plain\nmain;a;b 10\nmain;c 5\n' \
            > "$corpus/folded"
        printf 'name=app.wall&format=lines\n\na;b\na;b\nc\n' > "$corpus/lines"
        printf 'name=app&format=pprof\napplication/octet-stream\n' > "$corpus/cpu"
        cat "$seeds/go/cpu-01.pb.gz" >> "$corpus/cpu"
        { printf 'name=app%%7B__session_id__%%3D1%%7D&spyName=gospy\nmultipart/form-data; boundary=b0\n--b0\r\n'
          printf 'Content-Disposition: form-data; name="profile"; filename="profile.pprof"\r\n\r\n'
          cat "$seeds/go/mutex-01.pb.gz"
          printf '\r\n--b0\r\nContent-Disposition: form-data; name="sample_type_config"; filename="sample_type_config.json"\r\n\r\n'
          printf '{"contentions":{"display-name":"mutex_count"},"delay":{"display-name":"mutex_duration"}}\r\n--b0--\r\n'
        } > "$corpus/go-mutex" ;;
    fuzz_querier)
        # first byte: bits 0-2 the message, bit 3 protojson, bit 4 (+ bit 0) heatmap/analyze (fuzz_querier.c)
        printf '\000\010\350\007\020\240\037' > "$corpus/profile-types"
        printf '\001\012\002{}\020\001\030\002' > "$corpus/label-names"
        printf '\002\012\010instance\022\002{}' > "$corpus/label-values"
        printf '\004\012\011a:b:c:d:e\022\002{}\030\001\040\002\050\200\200\001' > "$corpus/merge"
        printf '\007\012\001x\052\003pod\061\000\000\000\000\000\000\056\100\070\001\110\003' > "$corpus/series"
        printf '\014{"profileTypeID":"a:b:c:d:e","labelSelector":"{}","start":"1","maxNodes":16384,"format":"PROFILE_FORMAT_PPROF"}' > "$corpus/merge-json"
        printf '\014{"profile_typeID":"a:b:c:d:e","stackTraceSelector":{"callSite":[{"name":"main"},{"name":"main.f"}],"goPgo":{"keepLocations":1}}}' > "$corpus/merge-callsite-json"
        printf '\005\012\011a:b:c:d:e\062\016\012\006\012\004main\012\004\012\002mf' > "$corpus/profile-callsite"
        printf '\017{"groupBy":["pod"],"step":15.5,"aggregation":"TIME_SERIES_AGGREGATION_TYPE_AVERAGE","limit":"3"}' > "$corpus/series-json"
        # bit 4: GetProfileStats and settings.v1 (bits 1-2: stats, Get, Set, Delete)
        printf '\030{}' > "$corpus/stats-json"
        printf '\034{"setting":{"name":"pluginSettings","value":"{}","modifiedAt":1000}}' > "$corpus/set-json"
        printf '\024\012\011\012\001a\022\001b\030\350\007' > "$corpus/set"
        printf '\036{"name":"pluginSettings"}' > "$corpus/delete-json"
        # bit 5: recording rules (bits 1-2: List, Get, Upsert, Delete; bit 0: the stored value)
        printf '\054{"metricName":"profiles_recorded_cpu","matchers":["{ service_name=\\"api\\" }","{ __profile_type__=\\"a:b:c:d:e\\"}"],"groupBy":["pod"],"stacktraceFilter":{"$typeName":"x","functionName":{"functionName":"main","metricType":0}}}' > "$corpus/rule-upsert-json"
        printf '\044\012\001a\022\023profiles_recorded_x\032\026{__profile_type__=\"x\"}\042\001p\060\002\072\006\012\004\012\002fn' > "$corpus/rule-upsert"
        printf '\052{"id":"abcdefghij"}' > "$corpus/rule-get-json"
        printf '\041\012\001a\022\023profiles_recorded_x\070\003' > "$corpus/rule-store"
        # bit 4 with bit 0: SelectHeatmap, AnalyzeQuery (bit 1)
        printf '\021\012\011a:b:c:d:e\022\002{}\030\001\040\002\051\000\000\000\000\000\000\116\100\062\003pod\070\001\100\002\110\001' > "$corpus/heatmap"
        printf '\031{"profileTypeID":"a:b:c:d:e","start":"1","end":2,"step":60,"queryType":"HEATMAP_QUERY_TYPE_INDIVIDUAL","exemplarType":"EXEMPLAR_TYPE_INDIVIDUAL","limit":"3"}' > "$corpus/heatmap-json"
        printf '\023\020\001\030\002\042\020a:b:c:d:e{x="y"}' > "$corpus/analyze"
        printf '\033{"start":"1","end":"2","query":"{}"}' > "$corpus/analyze-json" ;;
    fuzz_ui_headers)
        # "<Accept-Encoding>\n<If-None-Match>\n<path>" (fuzz_ui_headers.c), as Chromium sends them
        printf 'gzip, deflate, br, zstd\n"0123456789abcdef0123-gz"\n/ui/index.html' > "$corpus/chromium"
        printf 'br;q=1.0, gzip;q=0.5, *;q=0\nW/"a", "fedcba98765432100000"\n/ui/js/main.js' > "$corpus/list"
        printf 'identity\n*\n/ui/nope' > "$corpus/star" ;;
    fuzz_grpc)
        # gRPC calls as nghttp2's client session encodes them (fuzz_grpc.c); first byte: feed size
        PS_FUZZ_GRPC_SEEDS="$corpus" "$out/$t" -runs=0 "$corpus" >/dev/null 2>&1 || true ;;
    fuzz_webconfig)
        # web config files: TLS with client certificates, users, tokens, headers
        printf 'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519]\n' > "$corpus/tls"
        printf 'basic_auth_users:\n  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\nhttp_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n' > "$corpus/users"
        printf 'bearer_tokens:\n  - sha256: a2f0a437be4fd6ceaaa59fac18e495e88345b0aa6fb8ccbddd05a8d88e7a3e56\n    scopes: [read, write]\n    name: x\n' > "$corpus/tokens" ;;
    esac
    if [ -n "${PS_FUZZ_SEEDS_ONLY:-}" ]; then
        mkdir -p "$PS_FUZZ_SEEDS_ONLY/$t" && cp "$corpus"/* "$PS_FUZZ_SEEDS_ONLY/$t/" 2>/dev/null || true
        continue
    fi
    [ -d "$here/corpus/$t" ] && find "$here/corpus/$t" -maxdepth 1 -type f -exec cp {} "$corpus/" \;
    echo "run.sh: fuzzing $t for ${secs}s ($(ls "$corpus" | wc -l) seeds)"
    fuzz_one "$t" "$corpus" &
    running=$((running + 1))
    [ "$running" -lt "$jobs" ] || { wait; running=0; check_done; }
done
wait
check_done
[ -n "${PS_FUZZ_SEEDS_ONLY:-}" ] || rm -rf "$out"
