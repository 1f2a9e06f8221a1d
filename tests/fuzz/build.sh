#!/bin/sh
# build.sh - builds the libFuzzer target fuzz_pprof (clang, ASan + UBSan) straight from the sources:
# core/*.c, proto/pprof.c and the protobuf-c code generated from proto/profile.proto into a
# temporary directory. No CMake involved.
#
# usage: tests/fuzz/build.sh [OUTDIR]     (default $PS_FUZZ_OUT or ${TMPDIR:-/tmp}/profstore-fuzz)
# prints the path of the binary on its last line. Also builds fuzz_chunk (storage/chunk.c, libzstd),
# fuzz_xorchunk (storage/xorchunk.c), fuzz_spanparts (storage/spanparts.c), fuzz_unsymrec (storage/unsymrec.c), fuzz_rolluprec (storage/rolluprec.c), fuzz_float_dense (storage/float_dense.c), fuzz_float_log (storage/float_log.c), fuzz_selector and fuzz_promql (parser/), fuzz_pqeval (parser/ + src/query/promql*.c), fuzz_remote
# (proto/remote.c, snappy; gzip.c for the inflate budget), fuzz_remote_read (proto/remote_read.c), fuzz_connect (proto/pbjson.c,
# proto/pyroscope.c, jansson), fuzz_pyingest (src/ingest/pyroscope.c, multipart.c: Pyroscope's
# /ingest), fuzz_adhoc (src/ingest/adhoc.c: ad hoc profile uploads), fuzz_fbjson and fuzz_perf
# (parser/flamebearer.c, parser/perfscript.c), fuzz_querier (proto/querier.c, proto/pbjson.c), fuzz_otlp (proto/otlp.c, src/ingest/otlp.c) and fuzz_ui_headers (web/ui_assets.c: the
# web UI's Accept-Encoding, If-None-Match, paths), fuzz_webconfig (src/config/webconfig.c) and fuzz_config
# (src/config/: the YAML configuration), fuzz_grpc (src/grpc/server.c over nghttp2) and fuzz_symbols
# (src/symbols/symbols.c over libdwfl: debug files) and fuzz_elfcheck (src/symbols/elfcheck.c: an
# uploaded debug file's check) into OUTDIR.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${PS_FUZZ_OUT:-${TMPDIR:-/tmp}/profstore-fuzz}}
CC=${CC:-clang}

gen=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_pprof_gen.XXXXXX")
trap 'rm -rf "$gen"' EXIT INT TERM

mkdir -p "$out"
# the include tree the CMake build gives each library: <prefix>/ -> the source folder
mkdir -p "$gen/inc"
ln -s "$root/core" "$gen/inc/core"
ln -s "$root/proto" "$gen/inc/proto"
ln -s "$root/parser" "$gen/inc/parser"
ln -s "$root/storage" "$gen/inc/storage"
ln -s "$root/src/ingest" "$gen/inc/ingest"
ln -s "$root/src/render" "$gen/inc/render"
ln -s "$root/web" "$gen/inc/web"
protoc-c --proto_path="$root/proto" --c_out="$gen" "$root/proto/profile.proto"

# every target: libFuzzer with ASan + UBSan, warnings on, the include tree above
# each target compiles in the background, PS_FUZZ_JOBS (default: one per core) at a time; the
# sources generated above a target's line are written before it starts
jobs=${PS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
running=0
fuzzcc() {
    ("$CC" -std=gnu11 -g -O1 -fno-omit-frame-pointer \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
        -I"$gen/inc" "$@" -lcrypto || touch "$gen/failed") & # libcrypto: core/encode.c
    running=$((running + 1))
    [ "$running" -lt "$jobs" ] || { wait; running=0; }
}

# shellcheck disable=SC2046
fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c zlib libdeflate) \
    -I"$root/tests/support" "$here/fuzz_pprof.c" "$root/tests/support/pprof_reference.c" "$root/proto/pprof.c" "$root/proto/gzip.c" "$root/proto/pballoc.c" "$gen/profile.pb-c.c" "$root"/core/*.c \
    $(pkg-config --libs libprotobuf-c zlib libdeflate) -lm -lpthread \
    -o "$out/fuzz_pprof"

# fuzz_chunk: the chunk codec (storage/chunk.c) needs the core helpers and libzstd (packed chunks).
# Built here too, before the last line, which stays the path of fuzz_pprof for run.sh.
fuzzcc "$here/fuzz_chunk.c" "$root/storage/chunk.c" "$root"/core/*.c -lzstd -lm -lpthread \
    -o "$out/fuzz_chunk"

# fuzz_spanparts: the span parts codec (storage/spanparts.c), core helpers only.
fuzzcc "$here/fuzz_spanparts.c" "$root/storage/spanparts.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_spanparts"

# fuzz_unsymrec: the record of the counts of frames without symbols (storage/unsymrec.c), core helpers only.
fuzzcc "$here/fuzz_unsymrec.c" "$root/storage/unsymrec.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_unsymrec"

# fuzz_rolluprec: the rollup record (storage/rolluprec.c), core helpers only.
fuzzcc "$here/fuzz_rolluprec.c" "$root/storage/rolluprec.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_rolluprec"

# fuzz_xorchunk: the float chunk codec (storage/xorchunk.c), core helpers only.
fuzzcc "$here/fuzz_xorchunk.c" "$root/storage/xorchunk.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_xorchunk"

# fuzz_float_dense: the dense float chunk codec (storage/float_dense.c, with xorchunk.c), core helpers only.
fuzzcc "$here/fuzz_float_dense.c" "$root/storage/float_dense.c" "$root/storage/xorchunk.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_float_dense"

# fuzz_float_log: the float sample log's record (storage/float_log.c), core helpers only.
fuzzcc "$here/fuzz_float_log.c" "$root/storage/float_log.c" "$root"/core/*.c -lm -lpthread \
    -o "$out/fuzz_float_log"

# fuzz_selector: the selector/PromQL parser (parser/), with the re2c lexer generated here.
if [ -f "$root/parser/selector.re" ] && [ -f "$here/fuzz_selector.c" ]; then
    re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    # shellcheck disable=SC2046
    fuzzcc "$here/fuzz_selector.c" "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs libpcre2-8 jansson) -lm -lpthread \
        -o "$out/fuzz_selector"
fi

# fuzz_promql: the PromQL parser and printers (parser/promql.c), same sources as fuzz_selector.
if [ -f "$root/parser/promql.c" ] && [ -f "$here/fuzz_promql.c" ]; then
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    # shellcheck disable=SC2046
    fuzzcc "$here/fuzz_promql.c" "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs libpcre2-8 jansson) -lm -lpthread \
        -o "$out/fuzz_promql"
fi

# fuzz_pqeval: the PromQL parser and evaluator together (parser/ and src/query/promql*.c over an
# in-memory sample source); the headers of src/query and storage/ for their types only.
if [ -f "$root/src/query/promql_eval.c" ] && [ -f "$here/fuzz_pqeval.c" ]; then
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    [ -e "$gen/inc/query" ] || ln -s "$root/src/query" "$gen/inc/query"
    # shellcheck disable=SC2046
    fuzzcc "$here/fuzz_pqeval.c" "$root/src/query/promql_eval.c" "$root/src/query/promql_func.c" "$root/src/query/promql_util.c" "$root"/parser/*.c \
        "$gen/selector.re.c" "$root"/core/*.c $(pkg-config --libs libpcre2-8 jansson) -lm -lpthread \
        -o "$out/fuzz_pqeval"
fi

# fuzz_remote: the remote-write codec (proto/remote.c) with its generated protobuf-c code and snappy.
if [ -f "$root/proto/remote.proto" ] && [ -f "$here/fuzz_remote.c" ]; then
    protoc-c --proto_path="$root/proto" --c_out="$gen" "$root/proto/remote.proto"
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c) \
        "$here/fuzz_remote.c" "$root/proto/remote.c" "$root/proto/gzip.c" "$root/proto/pballoc.c" "$gen/remote.pb-c.c" "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c) -lsnappy -lz -ldeflate -lm -lpthread \
        -o "$out/fuzz_remote"
fi

# fuzz_remote_read: the remote-read request decoder (proto/remote_read.c; remote.c for the shared
# wire scan and snappy check).
if [ -f "$root/proto/remote_read.c" ] && [ -f "$here/fuzz_remote_read.c" ]; then
    [ -f "$gen/remote.pb-c.c" ] || protoc-c --proto_path="$root/proto" --c_out="$gen" "$root/proto/remote.proto"
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c) \
        "$here/fuzz_remote_read.c" "$root/proto/remote_read.c" "$root/proto/remote.c" "$root/proto/gzip.c" "$root/proto/pballoc.c" \
        "$gen/remote.pb-c.c" "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c) -lsnappy -lz -ldeflate -lm -lpthread \
        -o "$out/fuzz_remote_read"
fi

# fuzz_connect: Connect request decoding (proto/pbjson.c over the Pyroscope messages, proto/pyroscope.c).
if [ -f "$root/proto/pbjson.c" ] && [ -f "$here/fuzz_connect.c" ]; then
    protoc-c --proto_path="$root/proto" --c_out="$gen" "$root"/proto/pyroscope_*.proto
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c jansson) \
        "$here/fuzz_connect.c" "$root/proto/pbjson.c" "$root/proto/pyroscope.c" "$root/proto/pballoc.c" \
        "$gen"/pyroscope_*.pb-c.c "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c jansson) -lm -lpthread \
        -o "$out/fuzz_connect"
fi

# fuzz_pyingest: Pyroscope's /ingest parameters and bodies (src/ingest/pyroscope.c, multipart.c), with
# what they call: ps_ingest_build (ingest.c, which uses the label parser), the pprof decoder, jansson.
if [ -f "$root/src/ingest/pyroscope.c" ] && [ -f "$here/fuzz_pyingest.c" ]; then
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c zlib libdeflate jansson) \
        "$here/fuzz_pyingest.c" "$root/src/ingest/pyroscope.c" "$root/src/ingest/multipart.c" \
        "$root/src/ingest/ingest.c" "$root/proto/pprof.c" "$root/proto/gzip.c" "$root/proto/pballoc.c" "$gen/profile.pb-c.c" \
        "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c zlib libdeflate jansson libpcre2-8) -lm -lpthread \
        -o "$out/fuzz_pyingest"
fi

# fuzz_fbjson and fuzz_perf: the flamebearer JSON and perf script parsers (parser/stacks.h);
# fuzz_fbjson renders what it reads and reads that again (src/render).
if [ -f "$root/parser/stacks.c" ] && [ -f "$here/fuzz_fbjson.c" ]; then
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags jansson) "$here/fuzz_fbjson.c" "$root/parser/stacks.c" "$root/parser/flamebearer.c" \
        "$root"/src/render/*.c "$root"/core/*.c $(pkg-config --libs jansson) -lm -lpthread \
        -o "$out/fuzz_fbjson"
    fuzzcc "$here/fuzz_perf.c" "$root/parser/stacks.c" "$root/parser/perfscript.c" "$root"/core/*.c -lm -lpthread \
        -o "$out/fuzz_perf"
fi

# fuzz_adhoc: the ad hoc profile upload decoder (src/ingest/adhoc.c: format detection, folded stacks
# through pyroscope.c) and the flame graphs Get and Diff make of it (src/render).
if [ -f "$root/src/ingest/adhoc.c" ] && [ -f "$here/fuzz_adhoc.c" ]; then
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c zlib libdeflate jansson) \
        "$here/fuzz_adhoc.c" "$root/src/ingest/adhoc.c" "$root/src/ingest/pyroscope.c" "$root/src/ingest/multipart.c" \
        "$root/src/ingest/ingest.c" "$root"/src/render/*.c "$root/proto/pprof.c" "$root/proto/gzip.c" \
        "$root/proto/pballoc.c" "$gen/profile.pb-c.c" "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c zlib libdeflate jansson libpcre2-8) -lm -lpthread \
        -o "$out/fuzz_adhoc"
fi

# fuzz_otlp: OTLP profiles (proto/otlp.c over proto/pbjson.c, jansson) and their conversion
# (src/ingest/otlp.c), with what it calls: ps_ingest_build (ingest.c, the label parser), the
# pprof decoder.
if [ -f "$root/src/ingest/otlp.c" ] && [ -f "$here/fuzz_otlp.c" ]; then
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    protoc-c --proto_path="$root/proto" --c_out="$gen" "$root"/proto/otlp_*.proto
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c zlib libdeflate jansson) \
        "$here/fuzz_otlp.c" "$root/src/ingest/otlp.c" "$root/src/ingest/ingest.c" "$root/proto/otlp.c" \
        "$root/proto/pbjson.c" "$root/proto/pprof.c" "$root/proto/gzip.c" "$root/proto/pballoc.c" "$gen/profile.pb-c.c" \
        "$gen"/otlp_*.pb-c.c "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs libprotobuf-c zlib libdeflate jansson libpcre2-8) -lm -lpthread \
        -o "$out/fuzz_otlp"
fi

# fuzz_querier: the querier.v1 and settings.v1 request decoders (proto/querier.c, proto/settings.c,
# proto/recording.c)
# over proto/pbjson.c (jansson).
if [ -f "$root/proto/querier.c" ] && [ -f "$here/fuzz_querier.c" ]; then
    [ -f "$gen/pyroscope_querier.pb-c.c" ] && [ -f "$gen/pyroscope_settings.pb-c.c" ] && [ -f "$gen/pyroscope_recording.pb-c.c" ] || protoc-c --proto_path="$root/proto" --c_out="$gen" "$root"/proto/pyroscope_*.proto
    # shellcheck disable=SC2046
    fuzzcc -I"$gen" $(pkg-config --cflags libprotobuf-c jansson) \
        "$here/fuzz_querier.c" "$root/proto/querier.c" "$root/proto/settings.c" "$root/proto/recording.c" \
        "$root/proto/pbjson.c" "$root/proto/pballoc.c" "$gen/pyroscope_types.pb-c.c" "$gen/pyroscope_google.pb-c.c" \
        "$gen/pyroscope_querier.pb-c.c" "$gen/pyroscope_settings.pb-c.c" "$gen/pyroscope_recording.pb-c.c" \
        "$root/src/query/profile_uuid.c" \
        "$root"/core/*.c $(pkg-config --libs libprotobuf-c jansson) -lm -lpthread \
        -o "$out/fuzz_querier"
fi

# fuzz_ui_headers: the web UI's header parsing and path lookup (web/ui_assets.c), with a table of its own.
if [ -f "$root/web/ui_assets.c" ] && [ -f "$here/fuzz_ui_headers.c" ]; then
    fuzzcc "$here/fuzz_ui_headers.c" "$root/web/ui_assets.c" "$root"/core/*.c -lm -lpthread \
        -o "$out/fuzz_ui_headers"
fi

# fuzz_webconfig: the web configuration parser (src/config/webconfig.c, libyaml).
if [ -f "$root/src/config/webconfig.c" ] && [ -f "$here/fuzz_webconfig.c" ]; then
    ln -sfn "$root/src/config" "$gen/inc/config"
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags yaml-0.1) "$here/fuzz_webconfig.c" "$root/src/config/webconfig.c" "$root/src/config/yamlutil.c" "$root"/core/*.c \
        $(pkg-config --libs yaml-0.1) -lm -lpthread -o "$out/fuzz_webconfig"
fi

# fuzz_config: the YAML configuration (src/config/: parse, status text, relabeling) with libyaml,
# OpenSSL (hashmod's MD5) and the parser (label names, regexes).
if [ -f "$root/src/config/config.c" ] && [ -f "$here/fuzz_config.c" ]; then
    [ -e "$gen/inc/config" ] || ln -s "$root/src/config" "$gen/inc/config"
    [ -f "$gen/selector.re.c" ] || re2c -W --no-generation-date -o "$gen/selector.re.c" "$root/parser/selector.re"
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags yaml-0.1 libcrypto) \
        "$here/fuzz_config.c" "$root/src/config/config.c" "$root/src/config/config_yaml.c" "$root/src/config/yamlutil.c" \
        "$root/src/config/redact.c" \
        "$root/src/config/relabel.c" "$root"/parser/*.c "$gen/selector.re.c" "$root"/core/*.c \
        $(pkg-config --libs yaml-0.1 libcrypto libpcre2-8 jansson) -lm -lpthread \
        -o "$out/fuzz_config"
fi

# fuzz_grpc: the gRPC listener's HTTP/2 and framing path (src/grpc/server.c) over nghttp2's session API,
# without sockets; auth.c and gzip.c as it calls them.
if [ -f "$root/src/grpc/server.c" ] && [ -f "$here/fuzz_grpc.c" ]; then
    [ -e "$gen/inc/config" ] || ln -s "$root/src/config" "$gen/inc/config"
    [ -e "$gen/inc/auth" ] || ln -s "$root/src/auth" "$gen/inc/auth"
    [ -e "$gen/inc/grpc" ] || ln -s "$root/src/grpc" "$gen/inc/grpc"
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags libnghttp2 openssl zlib libdeflate) "$here/fuzz_grpc.c" "$root/src/grpc/server.c" \
        "$root/src/auth/auth.c" "$root/src/config/webconfig_tls.c" "$root/proto/gzip.c" "$root"/core/*.c \
        $(pkg-config --libs libnghttp2 openssl zlib libdeflate) -lcrypt -lm -lpthread -o "$out/fuzz_grpc"
fi

# fuzz_symbols: a debug file read through libdwfl as the store's read symbolizes (src/symbols/symbols.c,
# the C++ names of demangle.c; debuginfod.c is linked, not driven: no servers)
if [ -f "$root/src/symbols/symbols.c" ] && [ -f "$here/fuzz_symbols.c" ]; then
    [ -e "$gen/inc/symbols" ] || ln -s "$root/src/symbols" "$gen/inc/symbols"
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags libdw libdebuginfod) "$here/fuzz_symbols.c" "$root"/src/symbols/*.c "$root"/core/*.c \
        $(pkg-config --libs libdw libdebuginfod) -lelf -lstdc++ -lm -lpthread -o "$out/fuzz_symbols"
fi

# fuzz_elfcheck: an uploaded debug file checked through libelf (src/symbols/elfcheck.c)
if [ -f "$root/src/symbols/elfcheck.c" ] && [ -f "$here/fuzz_elfcheck.c" ]; then
    [ -e "$gen/inc/symbols" ] || ln -s "$root/src/symbols" "$gen/inc/symbols"
    # shellcheck disable=SC2046
    fuzzcc $(pkg-config --cflags libdw) "$here/fuzz_elfcheck.c" "$root/src/symbols/elfcheck.c" "$root"/core/*.c \
        $(pkg-config --libs libdw) -lelf -lm -lpthread -o "$out/fuzz_elfcheck"
fi

wait
[ ! -f "$gen/failed" ] || { echo "build.sh: a fuzz target did not compile" >&2; exit 1; }
echo "$out/fuzz_pprof"
