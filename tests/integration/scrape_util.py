"""Helpers for the scraper tests (test_scrape_*.py): the real Go scrape target (tests/gotarget,
built once per pytest process), small Python HTTP targets that misbehave on purpose, config files,
and polling helpers.

    gotarget_binary()              builds gotarget with `go build -trimpath` once (skips without go)
    GoTarget(port, seed, args)     one gotarget process; start/stop/restart on the same port
    PyTarget(handler_fn)           a threaded http.server on a free port; handler_fn(path, handler)
    write_atomic(path, text)       write + rename (file_sd files must change in one step)
    wait_for(fn, timeout, what)    polls fn() until it returns something truthy
    active_targets(srv) / dropped_targets(srv) / series_list(srv, selector)
"""

from __future__ import annotations

import atexit
import http.client
import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from conftest import REPO, Server, free_port
from proc_util import ChildProcess

GOTARGET_SRC = REPO / "tests" / "gotarget"

# Light workload: the tests share 2 cores with the server (and with other test runs). One CPU worker
# at 10 % duty still gives CPU profiles every kernel of the seed's plan; one mutex worker still
# contends with the cache readers (mutex + block profiles have content).
LIGHT = ["-duty", "10", "-cpu-workers", "1", "-alloc-workers", "0", "-mutex-workers", "1", "-idle-waiters", "2"]
WITH_ALLOCS = ["-duty", "10", "-cpu-workers", "1", "-alloc-workers", "1", "-mutex-workers", "1",
               "-idle-waiters", "2"]

# the kernels each -workload-seed runs (tests/gotarget/main.go makePlan; logged as "plan:" at start)
KERNELS = ["kernelFib", "kernelSHA256", "kernelSort", "kernelMatmul", "kernelFormat", "kernelCompress"]
SEED_PLAN = {
    1: {"kernelFib", "kernelFormat", "kernelMatmul", "kernelSort"},
    2: {"kernelFormat", "kernelMatmul", "kernelSHA256"},
    3: {"kernelCompress", "kernelMatmul", "kernelSHA256", "kernelSort"},
}

# what a default Go target gives (memory, block, goroutine, mutex, process_cpu) and threadcreate
TYPES = {
    "memory": ["memory:alloc_objects:count:space:bytes:delta", "memory:alloc_space:bytes:space:bytes:delta",
               "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"],
    "block": ["block:contentions:count:contentions:count:delta", "block:delay:nanoseconds:contentions:count:delta"],
    "mutex": ["mutex:contentions:count:contentions:count:delta", "mutex:delay:nanoseconds:contentions:count:delta"],
    "goroutine": ["goroutine:goroutine:count:goroutine:count"],
    "process_cpu": ["process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"],
    "threadcreate": ["threadcreate:threadcreate:count:threadcreate:count"],
}
CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"

# profiling_config that enables only the goroutine profile (cheap; used where the profile type
# does not matter)
GOROUTINE_ONLY = """    profiling_config:
      pprof_config:
        memory: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        process_cpu: {enabled: false}
"""

_bin_cache: Dict[str, str] = {}


def gotarget_binary() -> str:
    """Path of a gotarget binary built from tests/gotarget (once per process)."""
    if "bin" in _bin_cache:
        return _bin_cache["bin"]
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed (needed to build tests/gotarget)")
    d = tempfile.mkdtemp(prefix="gotarget-")
    atexit.register(shutil.rmtree, d, True)
    out = os.path.join(d, "gotarget")
    env = dict(os.environ)
    if "HOME" not in env and "GOCACHE" not in env:  # go needs a build cache; the user's is faster
        env["GOCACHE"] = os.path.join(d, "gocache")
    r = subprocess.run([go, "build", "-trimpath", "-o", out, "."], cwd=str(GOTARGET_SRC), env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError("go build of gotarget failed:\n%s%s" % (r.stdout, r.stderr))
    _bin_cache["bin"] = out
    return out


class GoTarget(ChildProcess):
    """One gotarget process on 127.0.0.1:port (a free port unless given)."""

    def __init__(self, workdir: Path, seed: int = 1, port: Optional[int] = None, args: Optional[List[str]] = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.seed = seed
        self.port = port or free_port()
        self.args = list(LIGHT if args is None else args)
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.log_path = self.workdir / ("gotarget-%d.log" % self.port)

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.port

    def url(self, path: str) -> str:
        return "http://%s%s" % (self.address, path)

    def start(self, timeout: float = 15.0) -> "GoTarget":
        self.starts += 1
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([gotarget_binary(), "-addr", self.address, "-workload-seed", str(self.seed)]
                                     + self.args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        self.track()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gotarget exited with %s: %s" % (self.proc.returncode, self.log()))
            try:
                if http_get(self.url("/healthz"), timeout=1.0)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("gotarget on %s not healthy after %.0fs: %s" % (self.address, timeout, self.log()))

    def restart(self) -> "GoTarget":
        """Stops the process and starts a new one on the same port (its counters start from zero)."""
        self.stop()
        deadline = time.monotonic() + 10
        while True:  # the port may take a moment to be free again
            try:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", self.port))
                s.close()
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        return self.start()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def fetch(self, path: str, timeout: float = 10.0) -> bytes:
        st, _, body = http_get(self.url(path), timeout=timeout)
        assert st == 200, (path, st, body[:200])
        return body


@pytest.fixture
def gotargets(tmp_path):
    """Factory: gotargets(seed=1, port=None, args=None, start=True) -> GoTarget; all killed at teardown."""
    made: List[GoTarget] = []

    def factory(seed: int = 1, port: Optional[int] = None, args: Optional[List[str]] = None,
                start: bool = True) -> GoTarget:
        t = GoTarget(tmp_path / "targets", seed=seed, port=port, args=args)
        made.append(t)
        if start:
            t.start()
        return t

    yield factory
    for t in made:
        t.kill()


# ---- plain HTTP ---------------------------------------------------------------------------------

def http_get(url: str, timeout: float = 10.0):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", u.path + ("?" + u.query if u.query else ""), headers={"Connection": "close"})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class _ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class PyTarget:
    """A scrape target in this process: handler(path, h) is called for every GET, with h the
    BaseHTTPRequestHandler (send_response/send_header/end_headers/wfile). Counts requests per path."""

    def __init__(self, handler: Callable[[str, http.server.BaseHTTPRequestHandler], None]):
        outer = self
        self.handler = handler  # may be replaced while serving
        self.requests: List[tuple] = []  # (monotonic time, path)
        self.lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with outer.lock:
                    outer.requests.append((time.monotonic(), self.path))
                try:
                    outer.handler(self.path, self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a):
                pass

        self.httpd = _ThreadingServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.port

    def count(self, since: float = 0.0) -> int:
        with self.lock:
            return sum(1 for t, _ in self.requests if t >= since)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def send_body(h, status: int, body: bytes, ctype: str = "application/octet-stream", close: bool = False):
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    if close:
        h.send_header("Connection", "close")
        h.close_connection = True
    h.end_headers()
    h.wfile.write(body)


# ---- config, polling, API reads -----------------------------------------------------------------

def write_atomic(path: Path, text: str) -> None:
    path = Path(path)
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def wait_for(fn: Callable[[], object], timeout: float, what: str, interval: float = 0.25):
    """Polls fn() until it returns something truthy; fails with `what` and fn's last value."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0fs waiting for %s (last: %r)" % (timeout, what, last))
        time.sleep(interval)


def targets_json(srv: Server, state: Optional[str] = None) -> dict:
    js = srv.get_json("/api/v1/targets" + ("?state=" + state if state else ""))
    assert js["status"] == "success", js
    return js["data"]


def active_targets(srv: Server) -> List[dict]:
    return targets_json(srv)["activeTargets"]


def dropped_targets(srv: Server) -> List[dict]:
    return targets_json(srv)["droppedTargets"]


# the float series every scrape writes next to its profile (test_scrape_synthetic.py)
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling"}


def series_list(srv: Server, selector: str, scrape_series: bool = False) -> List[Dict[str, str]]:
    """GET /api/v1/series?match[]=selector (all time); the profile series only unless scrape_series."""
    q = urllib.parse.urlencode([("match[]", selector), ("start", "0"), ("end", str(int(time.time()) + 3600))])
    js = srv.get_json("/api/v1/series?" + q)
    assert js["status"] == "success", js
    return [s for s in js["data"] if scrape_series or s["__name__"] not in SCRAPE_SERIES]


def stored(srv: Server, **match) -> List[dict]:
    """/api/v1/debug/series entries of profile series whose labels include all of match."""
    return [s for s in srv.series() if s.get("kind") != "float" and all(s["labels"].get(k) == v for k, v in match.items())]


def scrape_metric(srv: Server, name: str, job: Optional[str] = None) -> float:
    key = name + ('{job="%s"}' % job if job is not None else "")
    return srv.metrics().get(key, 0.0)


def config_text(global_interval: str = "1s", global_timeout: str = "1s", external: Optional[dict] = None,
                jobs: str = "") -> str:
    out = "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n" % (global_interval, global_timeout)
    if external:
        out += "  external_labels:\n" + "".join("    %s: %s\n" % (k, json.dumps(v)) for k, v in external.items())
    return out + "scrape_configs:\n" + jobs


def rss_kb(pid: int) -> int:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def sanitized_binary() -> bool:
    """True if the server binary is built with AddressSanitizer: its freed memory sits in a
    quarantine and everything runs slower, so RSS and timing figures mean little."""
    if "asan" not in _bin_cache:
        from conftest import PROFSTORE_BIN
        try:
            with open(PROFSTORE_BIN, "rb") as f:
                _bin_cache["asan"] = b"__asan_init" in f.read()
        except OSError:
            _bin_cache["asan"] = False
    return bool(_bin_cache["asan"])
