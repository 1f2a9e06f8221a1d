#!/bin/sh
# install-pysdk.sh [--legacy] [DIR] - the real Pyroscope Python SDK that the integration tests run,
# from PyPI, every package pinned below (pip --no-deps: nothing unpinned comes along), in a venv of
# Debian's python3 at DIR, outside the repository:
#   (default) pyroscope-io 1.x (Connect push.v1.PusherService/Push) with pyroscope-otel and the
#             OpenTelemetry SDK: test_sdk_spans.py, test_sdk_profiles.py; DIR defaults to
#             $PS_PYSDK_DIR, else ${TMPDIR:-/tmp}/profstore-pysdk;
#   --legacy  pyroscope-io 0.8.x (POST /ingest) and the cffi it loads its agent with:
#             test_sdk_profiles.py; DIR defaults to $PS_PYSDK08_DIR, else ${TMPDIR:-/tmp}/profstore-pysdk08.
#   --grpc    grpcio, the gRPC client of the tests and benches (not a venv: a folder that
#             tests/integration/pypi_grpc.py puts first on Debian's python3's sys.path); DIR
#             defaults to $PS_PYGRPC_DIR, else ${TMPDIR:-/tmp}/profstore-pygrpc.
#   --xdist   pytest-xdist and execnet, which `make integration` runs the tests on (a folder
#             likewise, put on PYTHONPATH by the Makefile; they work with Debian 12's pytest 7.2);
#             DIR defaults to $PS_PYXDIST_DIR, else ${TMPDIR:-/tmp}/profstore-pyxdist.
# Does nothing when DIR already holds exactly these versions. scripts/install-deps.sh runs them;
# the SDK tests run it when DIR is missing.
set -eu
if [ "${1:-}" = --grpc ] || [ "${1:-}" = --xdist ]; then
    if [ "$1" = --grpc ]; then
        dir=${2:-${PS_PYGRPC_DIR:-${TMPDIR:-/tmp}/profstore-pygrpc}}
        PINS="grpcio==1.85.1 typing_extensions==4.16.0"
    else
        dir=${2:-${PS_PYXDIST_DIR:-${TMPDIR:-/tmp}/profstore-pyxdist}}
        PINS="pytest-xdist==3.8.0 execnet==2.1.2"
    fi
    check() { PYTHONPATH="$dir" /usr/bin/python3 -I -c '
import importlib.metadata as m, sys
sys.path.insert(0, sys.argv[1])
d = {x.metadata["Name"].lower().replace("-", "_"): x.version for x in m.distributions(path=[sys.argv[1]])}
sys.exit(any(d.get(n.lower().replace("-", "_")) != v for n, v in (p.split("==") for p in sys.argv[2:])))' "$dir" $PINS; }
    check && exit 0
    rm -rf "$dir"
    /usr/bin/python3 -m pip install -q --disable-pip-version-check --no-input --no-deps --root-user-action=ignore \
        --target "$dir" $PINS
    check || { echo "install-pysdk: $dir does not hold $PINS after pip install" >&2; exit 1; }
    exit 0
fi
if [ "${1:-}" = --legacy ]; then
    shift
    dir=${1:-${PS_PYSDK08_DIR:-${TMPDIR:-/tmp}/profstore-pysdk08}}
    PINS="pyroscope-io==0.8.16 cffi==2.1.1 pycparser==3.12"
else
    dir=${1:-${PS_PYSDK_DIR:-${TMPDIR:-/tmp}/profstore-pysdk}}
    PINS="pyroscope-io==1.4.0 pyroscope-otel==1.1.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2
opentelemetry-semantic-conventions==0.66b2 typing_extensions==4.16.0"
fi

have_pins() {
    [ -x "$dir/bin/python" ] || return 1
    "$dir/bin/python" - $PINS <<'PY'
import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        if m.version(name) != version:
            sys.exit(1)
    except m.PackageNotFoundError:
        sys.exit(1)
PY
}

have_pins && exit 0
rm -rf "$dir"
/usr/bin/python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check --no-input --no-deps $PINS
"$dir/bin/pip" check -q >/dev/null || { "$dir/bin/pip" check >&2; echo "install-pysdk: $PINS leave a dependency unmet" >&2; exit 1; }
have_pins || { echo "install-pysdk: $dir does not hold $PINS after pip install" >&2; exit 1; }
