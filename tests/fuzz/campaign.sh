#!/bin/sh
# campaign.sh - a long fuzzing campaign: every libFuzzer target (each tests/fuzz/fuzz_*.c that
# build.sh builds, so a new target joins by itself) under ASan + UBSan, one target at a time, each
# for a given time or number of executions, growing the committed corpus tests/fuzz/corpus/<target>/.
#
#   tests/fuzz/campaign.sh [--time SECONDS | --runs N] [--jobs J] [--out DIR] [--no-build] [TARGET...]
#
#   --time SECONDS  fuzzing time per target (default 180)
#   --runs N        executions per target instead (split over the jobs), e.g. --runs 10000000
#   --jobs J        parallel fuzzing processes per target sharing its corpus (libFuzzer -jobs=J
#                   -workers=J; default 2, for the 2-core machine; everything runs under nice -n 19)
#   --out DIR       binaries, logs, the working corpus (default ${TMPDIR:-/tmp}/profstore-campaign)
#   --no-build      reuse the binaries in DIR
#
# Seeds: run.sh's (the fixtures of tests/testdata and the targets' own seed writers, via
# PS_FUZZ_SEEDS_ONLY) plus the committed corpus; a dictionary tests/fuzz/dict/<target>.dict when
# there is one. At the end of each target the working corpus is merged (-merge=1) over the seeds:
# what adds coverage beyond them becomes the committed corpus, capped at 200 files and 1 MiB per
# target (smallest first; inputs over 64 KiB are not kept). regress-* files (the reproducers of
# fixed findings) and seed-* files (hand-written seeds) are always kept. Findings (crash-*, leak-*, timeout-*, oom-*) are saved in
# tests/fuzz/crashes/<target>/ (not committed). Prints a table: target, executions, exec/s,
# corpus files/bytes, findings; exits 1 if there was a finding.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
secs=180
runs=
jobs=2
out=${TMPDIR:-/tmp}/profstore-campaign
build=1
while [ $# -gt 0 ]; do
    case $1 in
    --time) secs=$2; runs=; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "campaign.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
case $jobs in ''|*[!0-9]*|0) echo "campaign.sh: --jobs needs a positive number" >&2; exit 2 ;; esac

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "$build" ]; then
    echo "campaign.sh: building into $out"
    nice -n 19 "$here/build.sh" "$out" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 2; }
fi
if [ $# -gt 0 ]; then
    targets=$*
else
    targets=
    for f in "$here"/fuzz_*.c; do
        t=$(basename "$f" .c)
        if [ -x "$out/$t" ]; then targets="$targets $t"; else echo "campaign.sh: $t was not built (skipped)" >&2; fi
    done
fi

# run.sh's seeds for every target, with the binaries just built
seeds=$out/seeds
rm -rf "$seeds"
# shellcheck disable=SC2086
PS_FUZZ_OUT=$out PS_FUZZ_SEEDS_ONLY=$seeds "$here/run.sh" 0 $targets >/dev/null

table=$out/table.txt
printf '%-18s %12s %9s %8s %9s %8s\n' target executions exec/s corpus bytes findings > "$table"
total_find=0
for t in $targets; do
    [ -x "$out/$t" ] || { echo "campaign.sh: $t was not built" >&2; exit 2; }
    work=$out/corpus/$t
    logs=$out/logs/$t
    crashes=$here/crashes/$t
    committed=$here/corpus/$t
    mkdir -p "$work" "$logs" "$crashes" "$committed" "$seeds/$t"
    rm -f "$logs"/*
    find "$seeds/$t" "$committed" -maxdepth 1 -type f -exec cp {} "$work/" \;
    dict=
    [ -f "$here/dict/$t.dict" ] && dict=-dict=$here/dict/$t.dict
    if [ -n "$runs" ]; then limit="-runs=$(( (runs + jobs - 1) / jobs ))"; else limit="-max_total_time=$secs"; fi
    before=$(find "$crashes" -type f | wc -l)
    echo "campaign.sh: $t: $(ls "$work" | wc -l) inputs, ${runs:-${secs}s}, $jobs jobs"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$logs" && nice -n 19 "$out/$t" $limit -jobs="$jobs" -workers="$jobs" -timeout=10 -rss_limit_mb=1536 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" $dict "$work" >/dev/null 2>&1) || true
    t1=$(date +%s)
    execs=0
    for l in "$logs"/fuzz-*.log; do
        [ -f "$l" ] || continue
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -1)
        # a job that stopped on a finding may not print its stats: its last status line then
        [ -n "$n" ] || n=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$l" | tail -1)
        execs=$((execs + ${n:-0}))
    done
    found=$(( $(find "$crashes" -type f | wc -l) - before ))
    total_find=$((total_find + found))

    # merge: what adds coverage over the seeds becomes the committed corpus
    merged=$out/merged/$t
    rm -rf "$merged" && mkdir -p "$merged"
    find "$seeds/$t" "$committed" -maxdepth 1 -type f \( -path "$seeds/*" -o -name 'regress-*' -o -name 'seed-*' \) \
        -exec cp {} "$merged/" \;
    keep=$(ls "$merged" | tr "\n" " ")
    nice -n 19 "$out/$t" -merge=1 -max_len=65536 -timeout=10 -rss_limit_mb=1536 $dict "$merged" "$work" \
        >"$logs/merge.log" 2>&1 || echo "campaign.sh: $t: merge failed (see $logs/merge.log)" >&2
    find "$committed" -maxdepth 1 -type f ! -name 'regress-*' ! -name 'seed-*' -delete
    n=0
    bytes=$(find "$committed" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    for f in $(cd "$merged" && find . -maxdepth 1 -type f -size -65537c -printf '%s %f\n' | sort -n | cut -d' ' -f2); do
        case " $keep " in *" $f "*) continue ;; esac
        sz=$(stat -c %s "$merged/$f")
        [ $n -lt 200 ] && [ $((bytes + sz)) -le 1048576 ] || break
        cp "$merged/$f" "$committed/$f"
        n=$((n + 1)); bytes=$((bytes + sz))
    done
    files=$(find "$committed" -maxdepth 1 -type f | wc -l)
    el=$((t1 - t0)); [ $el -gt 0 ] || el=1
    printf '%-18s %12d %9d %8d %9d %8d\n' "$t" "$execs" $((execs / el)) "$files" "$bytes" "$found" | tee -a "$table"
    [ "$found" -eq 0 ] || ls "$crashes" | sed "s|^|campaign.sh: $t: finding $crashes/|" >&2
done
echo
cat "$table"
[ "$total_find" -eq 0 ]
