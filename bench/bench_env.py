"""bench_env.py - what the Python benches that drive tests/integration's Server share, on import:
tests/integration on sys.path (conftest.py, its helpers), grpcio from PyPI before the system's
(pypi_grpc.py), and PROFSTORE_BIN defaulting to
build/profstore (conftest reads it when imported; --profstore overrides it).

    import bench_env  # noqa: F401  (first, before importing conftest)
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import pypi_grpc  # noqa: E402,F401  (grpcio from PyPI first on sys.path)
os.environ.setdefault("PROFSTORE_BIN", str(ROOT / "build" / "profstore"))
