#!/bin/sh
# build-ebpf-profiler.sh SRC [DIR] - builds the OpenTelemetry eBPF profiler (Apache-2.0) from SRC, a
# checkout of github.com/open-telemetry/opentelemetry-ebpf-profiler, into DIR/ebpf-profiler
# (default $PS_EBPF_PROFILER_DIR, else ${TMPDIR:-/tmp}/profstore-ebpf-profiler), outside the
# repository, as its Makefile's `ebpf-profiler` target does (CGO_ENABLED=0, tags osusergo,netgo,
# the eBPF object support/ebpf/tracer.ebpf.amd64 committed in SRC; its modules as SRC's go.sum pins
# them, from the Go module proxy). The proxy does not serve go.opentelemetry.io/ebpf-profiler
# itself, hence a checkout. tests/ebpf/check.py runs the result (`make ebpf-check`).
#
# One change, only where this machine needs it (and said on stderr): the profiler raises
# RLIMIT_MEMLOCK to unlimited before it loads eBPF, which needs CAP_SYS_RESOURCE; a sandbox without
# it (a root without that capability) gets EPERM and the profiler stops. On kernels >= 5.11 eBPF
# memory is charged to the memory cgroup and that limit no longer applies, so the built copy
# treats EPERM there as "nothing to raise". See docs/operations.md#opentelemetry-clients.
set -eu
src=$(cd "${1:?usage: $0 SRC [DIR]}" && pwd)
dir=${2:-${PS_EBPF_PROFILER_DIR:-${TMPDIR:-/tmp}/profstore-ebpf-profiler}}
[ -f "$src/rlimit/rlimit.go" ] && [ -f "$src/support/ebpf/tracer.ebpf.amd64" ] ||
    { echo "build-ebpf-profiler: $src is not an opentelemetry-ebpf-profiler checkout" >&2; exit 1; }
mkdir -p "$dir"
rm -rf "$dir/src"
cp -r "$src" "$dir/src"
if ! (ulimit -H -l unlimited) 2>/dev/null; then
    echo "build-ebpf-profiler: this machine cannot raise RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE): the copy tolerates EPERM there" >&2
    python3 - "$dir/src/rlimit/rlimit.go" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = '\t\treturn nil, fmt.Errorf("failed to set temporary rlimit: %w", err)'
assert s.count(old) == 1, "rlimit.go changed upstream: " + p
s = s.replace(old, '\t\tif err == unix.EPERM { // profstore: memcg accounting (kernel >= 5.11), no CAP_SYS_RESOURCE\n'
                   '\t\t\treturn func() {}, nil\n\t\t}\n' + old)
open(p, "w").write(s)
PY
fi
(cd "$dir/src" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -tags osusergo,netgo -o "$dir/ebpf-profiler" .)
echo "$dir/ebpf-profiler"
