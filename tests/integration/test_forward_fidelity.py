"""Forwarding fidelity (issue 12; README "Forwarding"): what B stores of A's forwarding is what A
stored, and the log's byte bound.

  - Deltas: A scrapes a cumulative Go memory profile (alloc_* count since process start; the
    scraper stores their deltas under ":delta" ids) with keep_sample_type alloc_space and
    inuse_space, and forwards it to B over Pyroscope's push with __delta__="false" (Pyroscope's
    "already a delta"): B's series (type ids, times, durations, periods, totals) equal A's, so B
    holds neither the plain alloc_space id nor the two types A did not keep.
  - tls_config: B serves TLS with a certificate for the name b.example only, and asks for a client
    certificate; A connects to 127.0.0.1 with server_name b.example, ca_file, cert_file and
    key_file; without server_name the name check fails, without the client certificate B refuses,
    with insecure_skip_verify (and the client certificate) it goes.
  - queue_config.max_bytes: with a down endpoint, the oldest entries past the bound are dropped
    (an exact count), with the dropped metric and a log line.
  - Metric metadata of remote write (also a request of metadata alone) reach a profstore B: its
    /api/v1/metadata answers what A's does.
"""
import http.server
import json
import subprocess
import threading

import pytest

import pprof_decode as pd
from conftest import fixture_bytes
from scrape_util import PyTarget, send_body
from test_forward import series_snapshot, status, wait_for, wait_sent, with_service_name
from test_remote_write import pb, post as rw_post, v1_body  # noqa: F401 (fixture)
from conftest import _active_servers
from test_tls import TlsServer, make_ca, make_cert

SCRAPES = 4  # stored: the first scrape's inuse_space only, then both kept types of the next 3


def test_scraped_deltas_keep_their_type_ids(make_server, tmp_path):
    base = pd.decode(fixture_bytes("go/heap-01.pb.gz"))
    names = [base.string_table[t.type] for t in base.sample_type]
    assert names == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"], names
    served = []

    def handle(path, h):
        if not path.startswith("/debug/pprof/allocs") or len(served) >= SCRAPES:
            send_body(h, 404, b"no more\n", "text/plain")
            return
        k = len(served) + 1
        p = pd.decode(fixture_bytes("go/heap-01.pb.gz"))
        for s in p.sample:  # the counters grow k-fold; inuse stays
            s.value = [s.value[0] * k, s.value[1] * k, s.value[2], s.value[3]]
        p.time_nanos = base.time_nanos + k * 1000000000
        served.append(k)
        send_body(h, 200, pd.encode(p, gzip_level=1))

    target = PyTarget(handle)
    try:
        b = make_server(name="b", retention="0")
        cfg = tmp_path / "a.yml"
        cfg.write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: app\n"
            "    static_configs: [{targets: ['%s']}]\n"
            "    profiling_config:\n"
            "      pprof_config:\n"
            "        memory: {keep_sample_type: [{type: alloc_space, unit: bytes}, {type: inuse_space, unit: bytes}]}\n"
            "        block: {enabled: false}\n"
            "        mutex: {enabled: false}\n"
            "        goroutine: {enabled: false}\n"
            "        process_cpu: {enabled: false}\n"
            "forward:\n"
            "  - name: b\n"
            "    url: http://127.0.0.1:%d\n"
            "    queue_config: {batch_send_deadline: 100ms}\n" % (target.address, b.port))
        a = make_server(name="a", retention="0", config=str(cfg))
        wait_for(lambda: len(served) >= SCRAPES, 30, "%d scrapes" % SCRAPES)
        snap = wait_for(lambda: (lambda s: s if sum(len(v) for v in s.values()) == 1 + 2 * (SCRAPES - 1) else None)(
            series_snapshot(a)), 30, "A's profiles stored")
        ids = sorted(dict(k)["__name__"] for k in snap)
        assert ids == ["memory:alloc_space:bytes:space:bytes:delta", "memory:inuse_space:bytes:space:bytes"]
        wait_sent(a, "b", SCRAPES)
        got = series_snapshot(b)
        assert got == with_service_name(snap)
        # the delta series' totals: the growth between scrapes, the fixture's alloc_space total each time
        alloc = [v for k, v in got.items() if dict(k)["__name__"].endswith(":delta")][0]
        assert [p[3] for p in alloc] == [pd.totals(base)[1]] * (SCRAPES - 1)
        e = status(a)["b"]
        assert (e["sent"], e["failed"], e["dropped"]) == (SCRAPES, 0, 0)
    finally:
        target.close()


@pytest.fixture(scope="module")
def bcerts(tmp_path_factory):
    d = tmp_path_factory.mktemp("fwdcerts")
    make_ca(d, "ca")
    make_cert(d, "ca", "b", "DNS:b.example")
    make_cert(d, "ca", "cli")
    return d


class NamedTls(TlsServer):
    """B, reached by curl as b.example (its certificate's only name) on 127.0.0.1."""

    def https(self, path="/"):
        return "https://b.example:%d%s" % (self.port, path)


@pytest.fixture
def tls_b(tmp_path, bcerts):
    c = bcerts
    wd = tmp_path / "b"
    wd.mkdir()
    (wd / "web.yml").write_text("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
                                "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: %s\n"
                                % (c / "b.crt", c / "b.key", c / "ca.crt"))
    b = NamedTls(wd, web_config_file=wd / "web.yml", retention="0")
    b.curl_args = ("--cacert", str(c / "ca.crt"), "--cert", str(c / "cli.crt"), "--key", str(c / "cli.key"),
                   "--connect-to", "b.example::127.0.0.1:")
    _active_servers.append(b)
    yield b.start()
    b.kill()
    _active_servers.remove(b)


def test_tls_server_name(make_server, tls_b, bcerts, tmp_path):
    c, b = bcerts, tls_b
    url = "https://127.0.0.1:%d" % b.port
    cli = "cert_file: %s, key_file: %s" % (c / "cli.crt", c / "cli.key")
    tls = {"sni": "{ca_file: %s, %s, server_name: b.example}" % (c / "ca.crt", cli),
           "nosni": "{ca_file: %s, %s}" % (c / "ca.crt", cli),
           "nocert": "{ca_file: %s, server_name: b.example}" % (c / "ca.crt"),
           "insecure": "{insecure_skip_verify: true, %s}" % cli}
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n" + "".join(
        "  - name: %s\n    url: %s\n    tls_config: %s\n"
        "    queue_config: {batch_send_deadline: 100ms, min_backoff: 50ms, max_backoff: 200ms}\n" % (n, url, t)
        for n, t in tls.items()))
    a = make_server(name="a", retention="0", config=str(cfg))
    st, js = a.push(fixture_bytes("go/cpu-01.pb.gz"), time="1700000000", labels='{job="tls"}')
    assert st == 200, js
    wait_sent(a, "sni", 1)
    wait_sent(a, "insecure", 1)
    wait_for(lambda: all(status(a)[n]["failed"] >= 2 for n in ("nosni", "nocert")), 20, "failures")
    s = status(a)
    assert [(n, s[n]["sent"], s[n]["dropped"], s[n]["pending"] > 0) for n in tls] == [
        ("sni", 1, 0, False), ("nosni", 0, 0, True), ("nocert", 0, 0, True), ("insecure", 1, 0, False)]
    # B got it (twice: one series, the second a duplicate), reached by its name over TLS
    r = subprocess.run(["curl", "-sS", "--max-time", "10", *b.curl_args,
                        b.https("/api/v1/debug/series")],
                       capture_output=True, text=True, timeout=30)
    data = json.loads(r.stdout)["data"]
    assert sorted(x["labels"]["__name__"] for x in data) == ["process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta",
                                                           "process_cpu:samples:count:cpu:nanoseconds:delta"]
    assert all(x["labels"]["service_name"] == "tls" for x in data)


ENTRY = 36  # bytes of one entry below: 0x02, 1 series, L=16, labels, 1 sample, 16


def test_max_bytes_drops_the_oldest(make_server, tmp_path, pb):  # noqa: F811
    cfg = tmp_path / "a.yml"
    # nothing listens on port 9 of 127.0.0.1: every send fails and is retried
    cfg.write_text("forward:\n  - name: down\n    url: http://127.0.0.1:9/api/v1/write\n    protocol: remote_write\n"
                   "    queue_config: {batch_send_deadline: 10ms, min_backoff: 20ms, max_backoff: 100ms,"
                   " max_bytes: %d}\n" % (5 * ENTRY + 10))
    a = make_server(name="a", retention="0", config=str(cfg))
    t0 = 1700000000000
    for k in range(20):
        st, _, body = rw_post(a, v1_body(pb, [({"__name__": "fb", "i": "0"}, [(t0 + 1000 * k, float(k))])]))
        assert st == 204, body
    e = wait_for(lambda: (lambda e: e if e["dropped"] == 15 else None)(status(a)["down"]), 10, "dropped 15: %r" % (status(a)["down"],))
    assert (e["sent"], e["pending"]) == (0, 5)
    m = a.metrics()
    assert m['profstore_forward_dropped_total{endpoint="down",protocol="remote_write"}'] == 15
    log = a.log()
    assert 'msg="forwarding: the oldest entries over max_bytes dropped" endpoint=down' in log, log[-2000:]
    assert "max_bytes=%d" % (5 * ENTRY + 10) in log


class HeldReceiver(http.server.BaseHTTPRequestHandler):
    """A remote-write receiver: 503 while mode is "down"; while "hold", a request waits for
    release before its 204; else 204 at once."""
    mode = "down"
    release = threading.Event()
    held = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        cls = type(self)
        if cls.mode == "down":
            self.send_response(503)
        else:
            if cls.mode == "hold":
                cls.held.set()
                cls.release.wait(20)
                cls.mode = "up"
            self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_max_bytes_applies_to_a_window_read_ahead(make_server, tmp_path, pb):  # noqa: F811
    """The backlog passes max_bytes while a window is in flight and the next one is already read
    ahead: once the first is answered, the oldest entries over the bound are dropped, the window
    read ahead with them (it is read again), as when no window was read ahead."""
    HeldReceiver.mode = "down"
    HeldReceiver.release.clear()
    HeldReceiver.held.clear()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeldReceiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        cfg = tmp_path / "a.yml"
        cfg.write_text("forward:\n  - name: r\n    url: http://127.0.0.1:%d/api/v1/write\n    protocol: remote_write\n"
                       "    queue_config: {batch_send_deadline: 10ms, min_backoff: 20ms, max_backoff: 50ms,"
                       " max_samples_per_send: 2, max_shards: 1, max_bytes: %d}\n"
                       % (httpd.server_address[1], 12 * ENTRY + 10))
        a = make_server(name="a", retention="0", config=str(cfg))
        t0 = 1700000000000
        push = lambda k: rw_post(a, v1_body(pb, [({"__name__": "fb", "i": "0"}, [(t0 + 1000 * k, float(k))])]))  # noqa: E731
        for k in range(10):  # 10 entries fit under the bound of 12
            assert push(k)[0] == 204
        HeldReceiver.mode = "hold"
        # restarted, A reads the window [0, 1] from the log at once and the next one, [2, 3], ahead
        a.restart()
        assert HeldReceiver.held.wait(10), "no request came"
        for k in range(10, 20):  # now 18 after the window in flight: the 6 oldest of them are over
            assert push(k)[0] == 204
        HeldReceiver.release.set()
        e = wait_for(lambda: (lambda e: e if e["pending"] == 0 else None)(status(a)["r"]), 20,
                     "nothing pending: %r" % (status(a)["r"],))
        assert (e["sent"], e["dropped"]) == (14, 6)
        assert 'msg="forwarding: the oldest entries over max_bytes dropped" endpoint=r units=6' in a.log()
    finally:
        HeldReceiver.release.set()
        httpd.shutdown()


def test_remote_write_metadata_forwarded(make_server, tmp_path, pb):  # noqa: F811
    """Metric metadata (type, help, unit) go on as remote write 1.0 metadata entries: a profstore B
    stores them and its /api/v1/metadata answers what A's does. (Prometheus' own /api/v1/metadata
    lists its scrape targets' metadata only, never remote-written metadata.)"""
    b = make_server(name="b", retention="0")
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n  - name: b\n    url: http://127.0.0.1:%d/api/v1/write\n    protocol: remote_write\n"
                   "    queue_config: {batch_send_deadline: 10ms}\n" % b.port)
    a = make_server(name="a", retention="0", config=str(cfg))
    t0 = 1700000000000
    st, _, body = rw_post(a, v1_body(pb, [({"__name__": "req_total", "job": "j"}, [(t0, 1.0)])],
                                     metadata=[(1, "req_total", "Requests served.", ""),
                                               (2, "temp_celsius", "Temperature.", "celsius")]))
    assert st == 204, body
    # metadata on their own, as Prometheus sends them every minute: the newer help wins
    st, _, body = rw_post(a, v1_body(pb, [], metadata=[(2, "temp_celsius", "Room temperature.", "celsius")]))
    assert st == 204, body
    e = wait_sent(a, "b", 1)
    assert (e["sent"], e["dropped"], e["pending"]) == (1, 0, 0)
    want = {"req_total": [{"type": "counter", "help": "Requests served.", "unit": ""}],
            "temp_celsius": [{"type": "gauge", "help": "Room temperature.", "unit": "celsius"}]}
    assert a.get_json("/api/v1/metadata")["data"] == want
    assert b.get_json("/api/v1/metadata")["data"] == want
