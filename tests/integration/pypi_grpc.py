"""grpcio from PyPI for the tests and the benches: `scripts/install-pysdk.sh --grpc` installs the
pinned grpcio into a folder ($PS_PYGRPC_DIR, default <tmp>/profstore-pygrpc) that this module puts
first on sys.path, before any grpc module of the system. conftest.py and bench/bench_env.py import
it before anything imports grpc; test_grpc.py checks that grpc is this one."""

import os
import sys
import tempfile

DIR = os.environ.get("PS_PYGRPC_DIR") or os.path.join(tempfile.gettempdir(), "profstore-pygrpc")
if os.path.isdir(DIR) and DIR not in sys.path:
    sys.path.insert(0, DIR)
