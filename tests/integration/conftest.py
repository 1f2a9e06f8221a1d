"""Shared fixtures for the profstore integration tests.

Server: one profstore process on a free loopback port with its own (temporary) data dir.
start/stop (SIGTERM, waits for exit)/kill (SIGKILL)/restart on the same data dir, url(),
push(file_or_bytes, **params) -> (status, json), get_json(path), get(path) -> (status, headers,
body). Every server's log is kept in its work dir and attached to the report of a failing test.

Environment:
  PROFSTORE_BIN  the server binary (default <repo>/build/profstore)
  PS_TESTDATA    the fixtures dir (default <repo>/tests/testdata)
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pypi_grpc  # noqa: E402,F401  (grpcio from PyPI first on sys.path)

import pprof_decode as pd  # noqa: E402

REPO = HERE.parents[1]


PROFSTORE_BIN = os.environ.get("PROFSTORE_BIN") or str(REPO / "build" / "profstore")
TESTDATA = Path(os.environ.get("PS_TESTDATA") or (REPO / "tests" / "testdata"))
PPROF_DIR = TESTDATA / "pprof"

# every fixture profile with the facts the tests rely on (see tests/testdata/README.md)
GO_FILES = [
    "go/cpu-01.pb.gz", "go/cpu-01.pb", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz",
    "go/cpu-05.pb.gz", "go/cpu-seed2-01.pb.gz", "go/heap-01.pb.gz", "go/heap-gc-01.pb.gz",
    "go/allocs-01.pb.gz", "go/goroutine-01.pb.gz", "go/block-01.pb.gz", "go/mutex-01.pb.gz",
    "go/threadcreate-01.pb.gz",
]
NODE_FILES = ["node/cpu-01.pb.gz", "node/wall-01.pb.gz", "node/heap-01.pb.gz"]
ALL_FILES = GO_FILES + NODE_FILES

# README "value totals (per sample type)", "samples in file"
README_TOTALS: Dict[str, List[int]] = {
    "go/cpu-01.pb.gz": [298, 2980000000],
    "go/cpu-01.pb": [298, 2980000000],
    "go/cpu-02.pb.gz": [293, 2930000000],
    "go/cpu-03.pb.gz": [289, 2890000000],
    "go/cpu-04.pb.gz": [289, 2890000000],
    "go/cpu-05.pb.gz": [286, 2860000000],
    "go/cpu-seed2-01.pb.gz": [234, 2340000000],
    "go/heap-01.pb.gz": [29635699, 12417316511, 6721, 1048832],
    "go/heap-gc-01.pb.gz": [29636064, 12422350540, 6721, 1048832],
    "go/allocs-01.pb.gz": [29636064, 12422350540, 6721, 1048832],
    "go/goroutine-01.pb.gz": [26],
    "go/block-01.pb.gz": [20163, 45699096660],
    "go/mutex-01.pb.gz": [10982, 764045163],
    "go/threadcreate-01.pb.gz": [9],
    "node/cpu-01.pb.gz": [290, 2768523000, 2990225547],
    "node/wall-01.pb.gz": [1624, 1815632000],
    "node/heap-01.pb.gz": [791161, 98009024],
}
README_SAMPLES = {
    "go/cpu-01.pb.gz": 272, "go/cpu-01.pb": 272, "go/cpu-02.pb.gz": 265, "go/cpu-03.pb.gz": 271,
    "go/cpu-04.pb.gz": 263, "go/cpu-05.pb.gz": 269, "go/cpu-seed2-01.pb.gz": 214,
    "go/heap-01.pb.gz": 111, "go/heap-gc-01.pb.gz": 112, "go/allocs-01.pb.gz": 113,
    "go/goroutine-01.pb.gz": 14, "go/block-01.pb.gz": 14, "go/mutex-01.pb.gz": 7,
    "go/threadcreate-01.pb.gz": 2, "node/cpu-01.pb.gz": 269, "node/wall-01.pb.gz": 36,
    "node/heap-01.pb.gz": 13,
}


def name_param(rel: str) -> Optional[str]:
    """The name= a push of this fixture needs (Go block/mutex are ambiguous), else None."""
    base = rel.split("/")[-1]
    if base.startswith("block-"):
        return "block"
    if base.startswith("mutex-"):
        return "mutex"
    return None


_cache: Dict[str, object] = {}


def fixture_bytes(rel: str) -> bytes:
    key = "b:" + rel
    if key not in _cache:
        _cache[key] = (PPROF_DIR / rel).read_bytes()
    return _cache[key]  # type: ignore[return-value]


def fixture_profile(rel: str) -> pd.Profile:
    key = "p:" + rel
    if key not in _cache:
        _cache[key] = pd.decode(fixture_bytes(rel))
    return _cache[key]  # type: ignore[return-value]


_PORTS_GIVEN: set = set()
# Under pytest-xdist (`make integration`) the workers share one ledger of the ports handed out,
# a file named by PS_PORT_LEDGER (made by the controller in pytest_configure): a port one worker
# gave a server that has not bound it yet is never given by another.
PORT_LEDGER = "PS_PORT_LEDGER"


def _port_taken(port: int) -> bool:
    """Records port as handed out in this run; True when it was already (here or by a worker)."""
    if port in _PORTS_GIVEN:
        return True
    _PORTS_GIVEN.add(port)
    ledger = os.environ.get(PORT_LEDGER)
    if not ledger:
        return False
    import fcntl
    with open(ledger, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        if str(port) in f.read().split():
            return True
        f.write("%d\n" % port)
        f.flush()
    return False


def free_port() -> int:
    """A loopback port free now and not handed out before in this run (by any xdist worker): two
    asked for one server (its main and gRPC ports, both bound only when it starts) must differ."""
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if not _port_taken(port):
            return port


def recv_all(s: socket.socket) -> bytes:
    """Everything s receives until the peer closes (s's timeout applies to each recv)."""
    data = b""
    while True:
        part = s.recv(65536)
        if not part:
            return data
        data += part


class ServerError(RuntimeError):
    pass


class Server:
    """One profstore process. Flags: keyword args (retention="1h" -> --retention 1h;
    storage_compact_max_profiles=5 -> --storage.compact-max-profiles 5; web_config_file=p ->
    --web.config.file p) or extra_args. The admin and lifecycle APIs are on (--web.enable-admin-api,
    --web.enable-lifecycle) unless admin=False: the tests use /api/v1/admin/*, /api/v1/debug/* and
    /-/reload."""

    READY_TIMEOUT = 15.0

    def __init__(self, workdir: Path, data_dir: Optional[Path] = None, extra_args: Optional[List[str]] = None,
                 admin: bool = True, **flags):
        self.admin = admin
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir else self.workdir / "data"
        self.flags = dict(flags)
        self.extra_args = list(extra_args or [])
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None
        self.starts = 0
        self.log_path = self.workdir / "profstore.log"
        self._logf = None
        self.last_raw: bytes = b""
        self.last_headers: Dict[str, str] = {}

    # ---- process control ----
    def args(self) -> List[str]:
        a = [PROFSTORE_BIN, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", str(self.data_dir)]
        if "threads" not in self.flags:
            a += ["--threads", "2"]
        if self.admin:
            a += ["--web.enable-admin-api", "--web.enable-lifecycle"]
        if "storage_disk_reserve" not in self.flags and not any(x.startswith("--storage.disk-reserve") for x in self.extra_args):
            # every data dir would hold a preallocated 32 MiB reserve: hundreds of servers, three
            # kept pytest runs; the tests of the reserve set their own
            a += ["--storage.disk-reserve", "1MiB"]
        for k, v in self.flags.items():
            flag = "--" + k.replace("storage_", "storage.").replace("_", "-")
            if k.startswith("web_"):  # web_config_file -> --web.config.file
                flag = "--" + k.replace("_", ".")
            if v is True:
                a.append(flag)
            elif v is not None and v is not False:
                a += [flag, str(v)]
        return a + self.extra_args

    def start(self, wait_ready: bool = True, **more_flags) -> "Server":
        if self.proc is not None and self.proc.poll() is None:
            raise ServerError("already running")
        self.flags.update(more_flags)
        self.port = free_port()
        self.starts += 1
        self._logf = open(self.log_path, "ab")
        self._logf.write(("\n==== start #%d: %s\n" % (self.starts, " ".join(self.args()))).encode())
        self._logf.flush()
        self.proc = subprocess.Popen(self.args(), stdout=self._logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise ServerError("profstore exited with %s before it was ready; log:\n%s" % (rc, self.log()))
            try:
                st, _, _ = self.get("/-/ready", timeout=1.0)
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise ServerError("profstore not ready after %.0fs; log:\n%s" % (timeout, self.log()))

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _close_log(self):
        if self._logf is not None:
            self._logf.close()
            self._logf = None

    def stop(self, timeout: float = 15.0, sig=signal.SIGTERM) -> int:
        """SIGTERM (or sig) and wait; returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._close_log()
                raise ServerError("profstore did not stop within %.0fs after %s" % (timeout, sig))
        self._close_log()
        return self.proc.returncode

    def kill(self) -> int:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_log()
        return self.proc.returncode if self.proc else 0

    def restart(self, kill: bool = False, **more_flags) -> "Server":
        if kill:
            self.kill()
        else:
            rc = self.stop()
            if rc != 0:
                raise ServerError("profstore exited with %s on SIGTERM; log:\n%s" % (rc, self.log()))
        return self.start(**more_flags)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    # ---- HTTP ----
    def url(self, path: str = "/") -> str:
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[Dict[str, str]] = None, timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = {"Connection": "close"}
            if body is not None:
                hdrs["Content-Type"] = "application/octet-stream"
            hdrs.update(headers or {})
            try:
                conn.request(method, path, body=body, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError):
                # the server may answer (e.g. 413) and close before it read the whole body
                pass
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def get(self, path: str, timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes]:
        return self.request("GET", path, timeout=timeout)

    def get_json(self, path: str, expect: Optional[int] = 200, timeout: float = 10.0):
        st, hdrs, data = self.get(path, timeout=timeout)
        if expect is not None and st != expect:
            raise AssertionError("GET %s: status %d, want %d: %r" % (path, st, expect, data[:500]))
        return json.loads(data)

    def post_json(self, path: str, body: bytes = b"", expect: Optional[int] = 200, timeout: float = 30.0):
        st, hdrs, data = self.request("POST", path, body=body, timeout=timeout)
        if expect is not None and st != expect:
            raise AssertionError("POST %s: status %d, want %d: %r" % (path, st, expect, data[:500]))
        return json.loads(data)

    def push(self, profile: Union[str, Path, bytes], query: Optional[str] = None, timeout: float = 30.0,
             headers: Optional[Dict[str, str]] = None, **params) -> Tuple[int, Optional[dict]]:
        """POST /api/v1/profiles/write. profile: bytes, a path, or a fixture name like
        "go/cpu-01.pb.gz". params are URL-encoded (bytes values allowed: sent as is, %-escaped);
        query, if given, is appended verbatim instead. Returns (status, parsed JSON or None);
        the raw body is kept in self.last_raw."""
        if isinstance(profile, (str, Path)):
            p = Path(profile)
            body = p.read_bytes() if p.is_absolute() else fixture_bytes(str(profile))
        else:
            body = profile
        if query is None:
            query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None},
                                           quote_via=urllib.parse.quote)
        path = "/api/v1/profiles/write" + ("?" + query if query else "")
        st, hdrs, data = self.request("POST", path, body=body, headers=headers, timeout=timeout)
        self.last_raw = data
        self.last_headers = hdrs
        try:
            js = json.loads(data)
        except ValueError:
            js = None
        return st, js

    # ---- debug reads ----
    def series(self) -> List[dict]:
        js = self.get_json("/api/v1/debug/series")
        assert js["status"] == "success", js
        return js["data"]

    def series_by_labels(self) -> Dict[Tuple[Tuple[str, str], ...], dict]:
        return {tuple(sorted(s["labels"].items())): s for s in self.series()}

    def profile_bytes(self, sid: int, ts: int) -> bytes:
        st, hdrs, data = self.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, ts))
        if st != 200:
            raise AssertionError("debug/profile id=%d time=%d: %d %r" % (sid, ts, st, data[:300]))
        return data

    def metrics(self) -> Dict[str, float]:
        st, _, data = self.get("/metrics")
        assert st == 200
        out = {}
        for line in data.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, val = line.rpartition(" ")
            out[name] = float(val)
        return out


def series_snapshot(srv: Server):
    """Comparable view of everything stored: {labels: [(ts, duration, period, total), ...]}."""
    return {tuple(sorted(s["labels"].items())): [(p["ts"], p["duration"], p["period"], p["total"])
                                                 for p in s["profiles"]]
            for s in srv.series()}


# ---- pytest wiring ---------------------------------------------------------------------------

_active_servers: List[Server] = []


# Skips that are not a missing tool: under PS_REQUIRE_TOOLS=1 (`make test`, CI) every other skip
# is a failure, since `make test` installs every tool the tests use (scripts/install-deps.sh).
ALLOWED_SKIPS = (
    "RSS of an ASan build",            # a measure that means nothing under ASan
    "profile totals: profstore only",  # PS_PROMQL_PEER=1 (a Prometheus in profstore's place)
    "Prometheus 3 is not cached",      # built only by `make test-peers` (prom_util.prometheus3_binary)
)
REQUIRE_TOOLS = os.environ.get("PS_REQUIRE_TOOLS") == "1"


# The test files (or file::test) that measure time, CPU or memory under load, bound a latency or
# rebuild the binary the others run: `make integration` runs the others on pytest-xdist workers
# (-m "not serial") and then these alone (-m serial).
SERIAL = frozenset((
    "test_query_limits.py",    # query timeouts, the query pool's queue, a latency bound
    "test_overload.py",        # a full write queue and the decompression budget, under load
    "test_durability.py",      # kills at random moments under concurrent pushes, a 90 s bound
    "test_http_hardening.py",  # the server's CPU seconds while idle, timeouts measured
    "test_debuginfod.py",      # reads answered within a second while a fetch waits
    "test_decode_pool.py",     # a push flood against the decode pool
    "test_readme_config.py::test_make_run_config_scrapes_the_readme_example",  # make run: builds BUILD
    "test_scrape_faults.py",   # RSS between rounds, 64 MiB bodies and a 300 MB bomb within 2 s timeouts
))
# pytest-xdist (--dist loadgroup) runs a group on one worker, its tests in their order: a group is
# a file (its module fixtures set up once), except that the files that drive Chromium are one group,
# so that one browser at a time runs beside the other workers' tests (two or three starve each other
# on 2 cores). BROWSER_FILES are those files besides test_ui_*.py.
BROWSER_FILES = frozenset(("test_cross_origin.py", "test_query_aggregation.py"))
BROWSER_GROUP = "chromium"
# The longest groups (about 20 s or more on 2 idle cores), longest first: with --no-loadscope-reorder
# the workers take the groups in this order, then the others in theirs, so that no long one starts last.
LONG_FIRST = (
    BROWSER_GROUP, "test_promql_compat.py", "test_prom3.py", "test_forward.py", "test_docker_files.py",
    "test_readme_config.py", "test_promql_testdata.py", "test_otlp_http.py",
    "test_otel_collector.py", "test_scrape_targets.py", "test_pyroscope_nodejs.py", "test_scrape_reload.py",
    "test_sharding.py",
)


def xdist_group(filename: str) -> str:
    return BROWSER_GROUP if filename.startswith("test_ui_") or filename in BROWSER_FILES else filename


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: run alone, not beside other tests (conftest.py's SERIAL)")
    if not hasattr(config, "workerinput") and not os.environ.get(PORT_LEDGER):
        import tempfile
        fd, path = tempfile.mkstemp(prefix="profstore-ports-")
        os.close(fd)
        os.environ[PORT_LEDGER] = path  # inherited by the xdist workers started after this
        config._ps_port_ledger = path


def pytest_unconfigure(config):
    path = getattr(config, "_ps_port_ledger", None)
    if path:
        os.environ.pop(PORT_LEDGER, None)
        try:
            os.unlink(path)
        except OSError:
            pass


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if name in SERIAL or "%s::%s" % (name, item.name) in SERIAL:
            item.add_marker(pytest.mark.serial)
    if hasattr(config, "workerinput"):
        rank = {g: i for i, g in enumerate(LONG_FIRST)}
        for item in items:
            item.add_marker(pytest.mark.xdist_group(xdist_group(item.path.name)))
        # stable: the files of a group, and the tests of a file, keep their order
        items.sort(key=lambda item: rank.get(xdist_group(item.path.name), len(LONG_FIRST)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if REQUIRE_TOOLS and rep.skipped and isinstance(rep.longrepr, tuple):
        reason = str(rep.longrepr[2])
        if not any(a in reason for a in ALLOWED_SKIPS) and "xfail" not in rep.keywords:
            rep.outcome = "failed"
            rep.longrepr = "skipped under PS_REQUIRE_TOOLS=1 (make test installs every tool): " + reason
    if rep.failed and _active_servers:
        for i, s in enumerate(_active_servers):
            text = s.log()
            if len(text) > 20000:
                text = "...\n" + text[-20000:]
            rep.sections.append(("profstore log #%d (%s)" % (i, s.log_path), text))


@pytest.fixture
def make_server(tmp_path):
    """Factory: make_server(start=True, name="s", **flags) -> Server (stopped at teardown)."""
    created: List[Server] = []

    def factory(start: bool = True, name: Optional[str] = None, data_dir=None, extra_args=None, **flags) -> Server:
        wd = tmp_path / (name or "srv%d" % len(created))
        s = Server(wd, data_dir=data_dir, extra_args=extra_args, **flags)
        created.append(s)
        _active_servers.append(s)
        if start:
            s.start()
        return s

    yield factory
    for s in created:
        s.kill()  # graceful stops are tested where they matter; this keeps teardown fast
    for s in created:
        if s in _active_servers:
            _active_servers.remove(s)


@pytest.fixture(scope="module")
def module_server_factory(tmp_path_factory):
    """Like make_server, for servers shared by the tests of one module."""
    created: List[Server] = []

    def factory(start: bool = True, name: Optional[str] = None, extra_args=None, **flags) -> Server:
        wd = tmp_path_factory.mktemp(name or "modsrv")
        s = Server(wd, extra_args=extra_args, **flags)
        created.append(s)
        _active_servers.append(s)
        if start:
            s.start()
        return s

    yield factory
    for s in created:
        s.kill()
        if s in _active_servers:
            _active_servers.remove(s)


@pytest.fixture
def server(make_server) -> Server:
    """A running server with default flags, except no retention (the fixtures are not recent)."""
    return make_server(retention="0")


@pytest.fixture(scope="session", autouse=True)
def _check_environment():
    if not Path(PROFSTORE_BIN).exists():
        pytest.exit("profstore binary not found at %s (set PROFSTORE_BIN)" % PROFSTORE_BIN, returncode=2)
    if not PPROF_DIR.is_dir():
        pytest.exit("fixtures not found at %s (set PS_TESTDATA)" % PPROF_DIR, returncode=2)


# ---- helpers for the query API tests (test_query_*.py) -------------------------------------------

QUERY_T0 = 1796022000  # 2026-11-30T07:00:00Z, the fixtures' day: the query tests push with time=T0+n
CPU_TYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
CPU_SAMPLES_TYPE = "process_cpu:samples:count:cpu:nanoseconds:delta"


def form_request(srv: Server, method: str, path: str, params, timeout: float = 30.0):
    """GET path?params or POST path with params as an application/x-www-form-urlencoded body.
    params: a dict or a list of (name, value) pairs (for repeated names such as match[])."""
    items = list(params.items()) if isinstance(params, dict) else list(params)
    enc = urllib.parse.urlencode(items, quote_via=urllib.parse.quote)
    if method == "GET":
        return srv.request("GET", path + ("?" + enc if enc else ""), timeout=timeout)
    return srv.request("POST", path, body=enc.encode(),
                       headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=timeout)


def require_tool(name: str) -> str:
    import shutil
    path = shutil.which(name)
    if path is None:
        pytest.skip("%s is not installed" % name)
    return path


def _go_cache() -> Dict[str, str]:
    """The user's Go build cache: with HOME moved, `go tool pprof` would otherwise build pprof from
    the Go sources again in every test (a minute or more on a busy machine)."""
    if "go_cache" not in _cache:
        env: Dict[str, str] = {}
        go = shutil.which("go")
        if "GOCACHE" not in os.environ and go:
            r = subprocess.run([go, "env", "GOCACHE"], capture_output=True, text=True, timeout=60)
            if r.returncode == 0 and r.stdout.strip():
                env["GOCACHE"] = r.stdout.strip()
        _cache["go_cache"] = env
    return _cache["go_cache"]  # type: ignore[return-value]


def tool_env(tmp_path: Path) -> Dict[str, str]:
    """Environment for go tool pprof / promtool: no copies in ~/pprof, UTC times."""
    return dict(os.environ, PPROF_TMPDIR=str(tmp_path / "pprof"), TZ="UTC", HOME=str(tmp_path), **_go_cache())


def go_pprof(args: List[str], tmp_path: Path, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Runs `go tool pprof ARGS` and fails the test (with its output) when it exits non-zero."""
    go = require_tool("go")
    r = subprocess.run([go, "tool", "pprof"] + list(args), capture_output=True, text=True,
                       env=tool_env(tmp_path), timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise AssertionError("go tool pprof %s: exit %d\n--- stdout:\n%s\n--- stderr:\n%s"
                             % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def pprof_raw_samples(path: Path, tmp_path: Path) -> List[Tuple[int, List[str]]]:
    """`go tool pprof -raw` of a profile file: [(a sample's last value, its frames root first, an inlined
    function as a frame of its own)], in pprof's order."""
    lines = go_pprof(["-raw", str(path)], tmp_path).stdout.split("\n")
    samples, locs, cur = [], {}, None
    i = lines.index("Samples:") + 2
    while not lines[i].startswith("Locations"):
        m = re.match(r"\s+([-\d ]+): ([\d ]+)$", lines[i])
        if m:
            samples.append((int(m.group(1).split()[-1]), [int(x) for x in m.group(2).split()]))
        i += 1
    for line in lines[i + 1:]:
        if line.startswith("Mappings"):
            break
        m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) ", line)
        if m:
            cur = int(m.group(1))
            locs[cur] = [m.group(2)]
            continue
        m = re.match(r"\s+(\S+) \S+:\d+:\d+ s=\d+$", line)
        if m:
            locs[cur].append(m.group(1))
    return [(v, [f for loc in reversed(st) for f in reversed(locs[loc])]) for v, st in samples]


_PPROF_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "mins": 60 * 10**9,
                "hrs": 3600 * 10**9, "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def pprof_quantity(text: str) -> float:
    """'3290ms' -> 3.29e9 (ns), '-0.08s' -> -8e7, '9.65GB' -> bytes, '6721' -> 6721."""
    import re
    m = re.fullmatch(r"(-?[0-9.]+(?:e[+-]?[0-9]+)?)([a-zA-Zµ]*)", text.strip())
    if not m:
        raise ValueError("not a pprof quantity: %r" % text)
    unit = m.group(2)
    if unit not in _PPROF_UNITS and unit != "":
        raise ValueError("unknown pprof unit in %r" % text)
    return float(m.group(1)) * _PPROF_UNITS.get(unit, 1)


def parse_pprof_top(text: str):
    """go tool pprof -top output -> (header lines, rows); a row is (flat, flat%, sum%, cum, cum%, name)
    with the quantities as printed (strings) and the name without pprof's ' (inline)' marker. The
    header leaves out the profile's comments that profstore adds ("profstore: ...", README
    "Aggregation over time"; pprof prints comments in the header), so a merge's header compares
    with pprof's own merge of the files."""
    header, rows, in_rows = [], [], False
    for line in text.splitlines():
        if not in_rows:
            if line.split() == ["flat", "flat%", "sum%", "cum", "cum%"]:
                in_rows = True
            elif not line.startswith("profstore: "):
                header.append(line)
            continue
        if not line.strip():
            continue
        parts = line.split(None, 5)
        if len(parts) < 6:
            raise AssertionError("unexpected pprof -top row: %r" % line)
        name = parts[5]
        if name.endswith(" (inline)"):
            name = name[: -len(" (inline)")]
        rows.append((parts[0], parts[1], parts[2], parts[3], parts[4], name))
    if not in_rows:
        raise AssertionError("no -top table in pprof output:\n" + text)
    return header, rows
