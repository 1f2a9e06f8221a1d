"""Native frames symbolized from debug files fetched from debuginfod servers (--debuginfod.url):
Debian's own debuginfod server (elfutils 0.188) on a loopback port serving the split debug file of
test_symbols.py's program (gcc -g -O2, stripped); profstore's frames equal eu-addr2line -i -f -a
once the fetch has finished (waited for on profstore_debuginfod_fetches_total), a first read
before shows each frame either as module+0xoffset or already symbolized, never anything else; the
fetched file is found again after a restart with no server. A build id no server has is asked
once (the server's log), not at every read. A closed port and a server that accepts and never
answers: reads and writes answer at once while the fetch waits, and it ends at --debuginfod.timeout.
Servers answering a file that is not ELF, an ELF file of another build id, or a Content-Length of
1 TB: refused and counted, nothing lands in the cache, the frames stay unsymbolized."""

import json
import re
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import pprof_decode as pd
from conftest import free_port
from proc_util import ChildProcess
from test_symbols import CPU, T0, Program, push, query, stacks

RESULTS = ("ok", "not_found", "timeout", "error", "refused")


class Debuginfod(ChildProcess):
    """Debian's debuginfod (elfutils) serving the files under root (-F: ELF/DWARF files scanned by
    build id) on a free port; it binds every address, the tests use 127.0.0.1."""

    def __init__(self, root: Path, work: Path):
        self.port = free_port()
        self.log = work / "debuginfod.log"
        self.proc = subprocess.Popen(["debuginfod", "-F", "-t", "0", "-g", "0", "-d", str(work / "db.sqlite"),
                                      "-p", str(self.port), str(root)],
                                     stdout=open(self.log, "wb"), stderr=subprocess.STDOUT)
        self.track()
        self.url = "http://127.0.0.1:%d" % self.port

    def wait_serves(self, build_id: str, timeout: float = 30.0):
        """Until its scan has indexed build_id (asked here, not through profstore)."""
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (self.url, build_id), timeout=5) as r:
                    if r.status == 200:
                        return r.read()
            except Exception:
                pass
            assert time.time() < deadline, self.log.read_text()[-2000:]
            time.sleep(0.2)

    def requests(self, build_id: str) -> int:
        """GETs of build_id's debuginfo the server logged from libdebuginfod (its User-Agent)."""
        return len(re.findall(r"UA:elfutils/0\.188\S* XFF: GET /buildid/%s/debuginfo " % build_id, self.log.read_text()))


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return Program(tmp_path_factory.mktemp("dprog"))


@pytest.fixture(scope="module")
def server(prog, tmp_path_factory):
    work = tmp_path_factory.mktemp("debuginfod")
    root = work / "files"
    root.mkdir()
    (root / "prog.debug").write_bytes(prog.debug.read_bytes())
    d = Debuginfod(root, work)
    assert d.wait_serves(prog.build_id) == prog.debug.read_bytes()
    yield d
    d.stop()


def push_at(srv, prog, t):
    """test_symbols.push's profile at time t (ns)."""
    from otlp_util import Builder, post
    b = Builder()
    sc = b.resource({"service.name": "native"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, t, 10**10)
    m = b.mapping("/opt/app/prog", prog.m_start, prog.m_limit, prog.m_offset, prog.build_id)
    for a in prog.addrs:
        b.sample(p, [b.location(prog.proc_addr(a), m)], 1)
    r = post(srv.port, b.req)
    assert r.status == 200, r


def fetches(srv):
    m = srv.metrics()
    return {r: int(m['profstore_debuginfod_fetches_total{result="%s"}' % r]) for r in RESULTS}


def wait_fetches(srv, want_total: int, timeout: float = 20.0):
    deadline = time.time() + timeout
    while True:
        f = fetches(srv)
        if sum(f.values()) >= want_total:
            return f
        assert time.time() < deadline, f
        time.sleep(0.05)


def unsymbolized(prog):
    return {prog.proc_addr(a): "/opt/app/prog+%#x" % (prog.proc_addr(a) - prog.m_start + prog.m_offset)
            for a in prog.addrs}


def test_fetched_symbols_equal_eu_addr2line(make_server, prog, server, tmp_path):
    srv = make_server(extra_args=["--debuginfod.url", server.url])
    push(srv, prog)
    want = {prog.proc_addr(a): v for a, v in prog.addr2line().items()}
    unsym = unsymbolized(prog)
    # the first read queued the fetch and answered at once: each frame unsymbolized, or already
    # symbolized if the file landed during the read
    first = stacks(pd.decode(query(srv)))
    assert sorted(first) == sorted(want)
    assert all(v in (unsym[a], want[a]) for a, v in first.items())
    assert wait_fetches(srv, 1) == {"ok": 1, "not_found": 0, "timeout": 0, "error": 0, "refused": 0}
    got = stacks(pd.decode(query(srv)))
    assert got == want
    chains = {tuple(f[0] for f in v) for v in got.values()}
    assert ("mix", "step", "work") in chains and ("step", "work") in chains
    m = srv.metrics()
    assert m["profstore_debuginfod_fetched_bytes_total"] == prog.debug.stat().st_size
    assert m["profstore_debuginfod_pending"] == 0 and m["profstore_debuginfod_queue_full_total"] == 0
    # the flame graph names the functions
    fg = json.loads(query(srv, "flamegraph"))
    assert sorted(fg["names"]) == sorted({"total"} | {f[0] for v in want.values() for f in v})
    # the file landed in the cache directory (the default, under the data directory), byte for byte
    landed = srv.data_dir / "debuginfod" / ".build-id" / prog.build_id[:2] / (prog.build_id[2:] + ".debug")
    assert landed.read_bytes() == prog.debug.read_bytes()
    assert server.requests(prog.build_id) == 1
    # the status page's list names where the build id's file came from
    st, _, body = srv.get("/api/v1/status/symbols?state=all")
    assert st == 200, body
    got = [(e["buildId"], e["symbols"], e["source"]) for e in json.loads(body)["data"]["buildIds"]]
    assert got == [(prog.build_id, "available", "debuginfod")], got
    # after a restart with the server gone (a closed port), the cached file serves the first read
    srv.stop()
    srv2 = make_server(data_dir=srv.data_dir, extra_args=["--debuginfod.url", "http://127.0.0.1:%d" % free_port()])
    assert stacks(pd.decode(query(srv2))) == want
    assert sum(fetches(srv2).values()) == 0


def test_not_found_is_asked_once(make_server, prog, server, tmp_path):
    """A build id the server lacks: one request, then reads do not ask again (10 minutes)."""
    from otlp_util import Builder, post
    bid = "0f" * 20
    b = Builder()
    sc = b.resource({"service.name": "native"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, T0, 10**10)
    m = b.mapping("/opt/app/other", 0x400000, 0x500000, 0, bid)
    b.sample(p, [b.location(0x401000, m)], 1)
    srv = make_server(extra_args=["--debuginfod.url", server.url])
    r = post(srv.port, b.req)
    assert r.status == 200, r
    assert stacks(pd.decode(query(srv))) == {0x401000: "/opt/app/other+0x1000"}
    assert wait_fetches(srv, 1) == {"ok": 0, "not_found": 1, "timeout": 0, "error": 0, "refused": 0}
    time.sleep(1.1)  # past the symbolizer's once-a-second look at a build id with no file
    for _ in range(5):
        assert stacks(pd.decode(query(srv))) == {0x401000: "/opt/app/other+0x1000"}
    time.sleep(0.5)
    assert fetches(srv) == {"ok": 0, "not_found": 1, "timeout": 0, "error": 0, "refused": 0}
    assert server.requests(bid) == 1


class Hanging:
    """Accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def timed_query(srv):
    t = time.monotonic()
    body = query(srv)
    return time.monotonic() - t, body


def test_dead_server_is_an_error_at_once(make_server, prog):
    port = free_port()  # nothing listens there
    srv = make_server(extra_args=["--debuginfod.url", "http://127.0.0.1:%d" % port, "--debuginfod.timeout", "3s"])
    push(srv, prog)
    took, body = timed_query(srv)
    assert stacks(pd.decode(body)) == unsymbolized(prog) and took < 1.0, took
    assert wait_fetches(srv, 1, timeout=3.0) == {"ok": 0, "not_found": 0, "timeout": 0, "error": 1, "refused": 0}
    assert stacks(pd.decode(query(srv))) == unsymbolized(prog)


def test_hanging_server_blocks_nothing(make_server, prog):
    h = Hanging()
    try:
        srv = make_server(extra_args=["--debuginfod.url", "http://127.0.0.1:%d" % h.port,
                                      "--debuginfod.timeout", "3s"])
        push(srv, prog)
        t0 = time.monotonic()
        took, body = timed_query(srv)
        assert stacks(pd.decode(body)) == unsymbolized(prog) and took < 1.0, took
        # while the fetch hangs: reads and writes answer at once, again and again
        deadline = time.time() + 10
        while not h.conns:
            assert time.time() < deadline
            time.sleep(0.05)
        for i in range(5):
            took, body = timed_query(srv)
            assert stacks(pd.decode(body)) == unsymbolized(prog) and took < 1.0, took
            t = time.monotonic()
            push_at(srv, prog, T0 + (i + 1) * 10**10)
            assert time.monotonic() - t < 1.0
        assert srv.metrics()["profstore_debuginfod_pending"] == 1
        f = wait_fetches(srv, 1, timeout=8.0)
        ended = time.monotonic() - t0
        assert f == {"ok": 0, "not_found": 0, "timeout": 1, "error": 0, "refused": 0}
        assert 3.0 <= ended < 5.5, ended  # the timeout, ended within a second after it
        assert len(h.conns) == 1  # asked once, not at every read
        assert srv.metrics()["profstore_debuginfod_pending"] == 0
    finally:
        h.close()


def test_shutdown_during_a_hanging_fetch(make_server, prog):
    """SIGTERM while a fetch waits on a server that never answers (timeout 1 h): the fetch is
    abandoned within a second and the server stops cleanly."""
    h = Hanging()
    try:
        srv = make_server(extra_args=["--debuginfod.url", "http://127.0.0.1:%d" % h.port,
                                      "--debuginfod.timeout", "1h"])
        push(srv, prog)
        assert stacks(pd.decode(query(srv))) == unsymbolized(prog)
        deadline = time.time() + 10
        while not h.conns:
            assert time.time() < deadline
            time.sleep(0.05)
        t = time.monotonic()
        assert srv.stop() == 0
        assert time.monotonic() - t < 3.0
    finally:
        h.close()


class Garbage:
    """An HTTP server answering every debuginfo request 200 with what mode says: "notelf" (text),
    "otherelf" (/bin/true: ELF, another build id), "huge" (Content-Length 1 TB, then 1 MiB of
    zeros and a connection kept open)."""

    def __init__(self, mode: str):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        g = self
        self.requests = 0

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                g.requests += 1
                body = {"notelf": b"this is not an ELF file\n" * 100,
                        "otherelf": Path("/bin/true").read_bytes()}.get(mode)
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)) if body is not None else str(10**12))
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)
                    return
                try:
                    self.wfile.write(b"\0" * (1 << 20))
                    self.wfile.flush()
                    time.sleep(10)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("mode", ["notelf", "otherelf", "huge"])
def test_garbage_is_refused(make_server, prog, mode):
    g = Garbage(mode)
    try:
        srv = make_server(extra_args=["--debuginfod.url", "http://127.0.0.1:%d" % g.port])
        push(srv, prog)
        assert stacks(pd.decode(query(srv))) == unsymbolized(prog)
        assert wait_fetches(srv, 1) == {"ok": 0, "not_found": 0, "timeout": 0, "error": 0, "refused": 1}
        time.sleep(1.1)  # past the symbolizer's once-a-second look
        assert stacks(pd.decode(query(srv))) == unsymbolized(prog)
        assert g.requests == 1
        m = srv.metrics()
        assert m["profstore_debuginfod_fetched_bytes_total"] == 0 and m["profstore_debuginfod_pending"] == 0
        # nothing kept: no accepted file, and libdebuginfod's download area emptied
        cache = srv.data_dir / "debuginfod"
        assert sorted(p.name for p in cache.iterdir()) == ["cache_clean_interval_s", "cache_miss_s"]
        assert srv.get("/-/healthy")[0] == 200
    finally:
        g.close()


def test_bad_settings_are_refused_at_start(tmp_path):
    from conftest import PROFSTORE_BIN
    r = subprocess.run([PROFSTORE_BIN, "--data-dir", str(tmp_path / "d"), "--debuginfod.url", "ftp://example.com"],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (2, 'profstore: --debuginfod.url: debuginfod URL "ftp://example.com" is not '
                                           'http://, https:// or file://\n')
    (tmp_path / "file").write_text("")
    r = subprocess.run([PROFSTORE_BIN, "--data-dir", str(tmp_path / "d"), "--debuginfod.url", "http://127.0.0.1:1",
                        "--debuginfod.cache-dir", str(tmp_path / "file" / "cache")],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (2, 'profstore: --debuginfod.cache-dir: debuginfod cache directory "%s": '
                                           'Not a directory\n' % (tmp_path / "file" / "cache"))
