#!/bin/sh
# install-pysdk.sh [DIR] - the real Pyroscope Python SDK that tests/integration/test_sdk_spans.py
# runs: pyroscope-io and pyroscope-otel from PyPI, pinned below with the OpenTelemetry SDK they
# use, in a venv of Debian's python3 at DIR (default $PS_PYSDK_DIR, else
# ${TMPDIR:-/tmp}/profstore-pysdk), outside the repository. Does nothing when DIR already holds
# exactly these versions. scripts/install-deps.sh runs it; the test runs it when DIR is missing.
set -eu
dir=${1:-${PS_PYSDK_DIR:-${TMPDIR:-/tmp}/profstore-pysdk}}
PINS="pyroscope-io==1.4.0 pyroscope-otel==1.1.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2"

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
"$dir/bin/pip" install -q --disable-pip-version-check --no-input $PINS
have_pins || { echo "install-pysdk: $dir does not hold $PINS after pip install" >&2; exit 1; }
