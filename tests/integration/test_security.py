"""Security findings of issue 21 (items 1, 5, 9), each against the real server:

  - what service discovery and relabeling may choose (item 1): only http and https are scraped;
    a target whose __scheme__ is anything else (file, gopher, javascript:..., ftp) or whose
    __address__ carries a path, query, fragment or user info is dropped with a reason in the log;
    a redirect to another protocol is refused by every libcurl handle (scrape, http_sd, forward);
    a FIFO named as a password_file or matched by a file_sd pattern does not block the scraper
    or shutdown;
  - secrets (item 5): one rule for /api/v1/status/config, /api/v1/status/forward,
    /api/v1/targets and the log: "<secret>" for values named like credentials (params, labels,
    external labels, query parameters), "xxxxx" for URL passwords (as Prometheus' Redacted URLs);
  - the listening address (item 9): a second profstore (another data directory) on an address in
    use exits 1 with a clear message and the first keeps serving alone; the same against another
    program listening there with SO_REUSEPORT.
"""
import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import PROFSTORE_BIN
from scrape_util import GOROUTINE_ONLY, PyTarget, _ThreadingServer, config_text, send_body, wait_for, write_atomic


class Listener:
    """A TCP port that records every connection and the bytes it got (no answer)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.got = []  # bytes per connection
        self.lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.settimeout(0.5)
            data = b""
            try:
                while len(data) < 4096:
                    b = c.recv(4096)
                    if not b:
                        break
                    data += b
            except OSError:
                pass
            c.close()
            with self.lock:
                self.got.append(data)

    def connections(self):
        with self.lock:
            return list(self.got)

    def close(self):
        self.sock.close()


def targets(srv):
    js = srv.get_json("/api/v1/targets")
    assert js["status"] == "success", js
    return js["data"]


# ---- item 1: the scrape protocol --------------------------------------------------------------


def test_sd_and_relabeling_cannot_choose_the_protocol(make_server, tmp_path):
    """file_sd groups and a relabel rule set __scheme__ / __address__ to everything libcurl would
    act on, and a relabel rule a __profile_path__ that would turn the address into user info
    ("@host/x"): none is scraped, each is dropped with the reason logged, and the file whose name a
    file:// target named never shows up in lastError; the gopher:// port gets no byte."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-CONTENT-0123456789\n")
    gopher = Listener()
    good = PyTarget(lambda path, h: send_body(h, 500, b"no profile here"))
    sd = tmp_path / "sd"
    sd.mkdir()
    hostile = [
        ({"__scheme__": "file"}, "localhost%s#" % secret),
        ({"__scheme__": "gopher"}, "127.0.0.1:%d" % gopher.port),
        ({"__scheme__": "javascript:alert(document.domain)//"}, "x"),
        ({"__scheme__": "ftp"}, "127.0.0.1:%d" % gopher.port),
        ({"__scheme__": "HTTP"}, "127.0.0.1:%d" % gopher.port),
        ({}, "127.0.0.1:%d/x" % gopher.port),
        ({}, "127.0.0.1:%d?a=b" % gopher.port),
        ({}, "127.0.0.1:%d#f" % gopher.port),
        ({}, "user:pw@127.0.0.1:%d" % gopher.port),
    ]
    groups = [{"targets": [addr], "labels": labels} for labels, addr in hostile]
    groups.append({"targets": [good.address], "labels": {"__scheme__": "http"}})
    write_atomic(sd / "t.json", json.dumps(groups))
    cfg = tmp_path / "p.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: sd\n"
        "    file_sd_configs: [{files: ['%s/*.json']}]\n" % sd + GOROUTINE_ONLY +
        "  - job_name: relabeled\n"
        "    static_configs: [{targets: ['127.0.0.1:%d']}]\n" % gopher.port +
        "    relabel_configs:\n"
        "      - {target_label: __scheme__, replacement: gopher}\n" + GOROUTINE_ONLY +
        "  - job_name: path\n"  # a path that would make the address user info: the host is another
        "    static_configs: [{targets: ['%s']}]\n" % good.address +
        "    relabel_configs:\n"
        "      - {target_label: __profile_path__, replacement: '@127.0.0.1:%d/x?token=tk9secret'}\n" % gopher.port +
        GOROUTINE_ONLY)))
    srv = make_server(config=str(cfg))
    try:
        wait_for(lambda: any(t["lastScrape"] != "0001-01-01T00:00:00Z" for t in targets(srv)["activeTargets"]), 10,
                 "the good target scraped")
        time.sleep(2.5)  # two more intervals: a hostile target would have been scraped by now
        d = targets(srv)
        assert [(t["scrapePool"], t["scrapeUrl"]) for t in d["activeTargets"]] == [
            ("sd", "http://%s/debug/pprof/goroutine" % good.address)]
        dropped = sorted((t["discoveredLabels"]["job"], t["discoveredLabels"]["__scheme__"],
                          t["discoveredLabels"]["__address__"]) for t in d["droppedTargets"])
        # (user info of an address is shown with its password as xxxxx, as in a URL)
        want = sorted([("sd", labels.get("__scheme__", "http"), addr.replace("user:pw@", "user:xxxxx@"))
                       for labels, addr in hostile] + [("relabeled", "http", "127.0.0.1:%d" % gopher.port),
                                                  ("path", "http", good.address)])
        assert dropped == want
        body = json.dumps(d)
        assert "TOPSECRET" not in body
        assert gopher.connections() == [], "a dropped target was connected to"
        log = srv.log()
        assert "TOPSECRET" not in log
        for scheme in ("file", "gopher", "javascript:alert(document.domain)//", "ftp", "HTTP"):
            assert ('msg="target dropped after relabeling" job=sd reason="the scheme is not http or https" '
                    'scheme=%s address=' % scheme) in log, scheme
        assert ('msg="target dropped after relabeling" job=relabeled reason="the scheme is not http or https" '
                'scheme=gopher address=127.0.0.1:%d path=/debug/pprof/goroutine\n' % gopher.port) in log
        assert ('msg="target dropped after relabeling" job=path reason="the profile path does not start with /" '
                'scheme=http address=%s path="@127.0.0.1:%d/x?token=<secret>"\n' % (good.address, gopher.port)) in log
        bad = 'job=sd reason="not a valid host:port (no paths, queries, user info or spaces)" scheme=http address='
        for addr in ("127.0.0.1:%d/x", '"127.0.0.1:%d?a=b"', "127.0.0.1:%d#f", "user:xxxxx@127.0.0.1:%d"):
            assert bad + addr % gopher.port + " path=/debug/pprof/goroutine\n" in log, addr  # no password logged
        assert "user:pw@" not in log and "tk9secret" not in log
    finally:
        good.close()
        gopher.close()


def test_redirects_only_to_http(make_server, tmp_path):
    """A scrape target, an http_sd server and a forward receiver that redirect to ftp:// (which
    libcurl 7.88 follows by default) get no connection there: every handle speaks http and https
    only, also after a redirect; the scrape says why in lastError."""
    ftp = Listener()
    to_ftp = "ftp://127.0.0.1:%d/x" % ftp.port

    def redirect(path, h):
        h.send_response(302)
        h.send_header("Location", to_ftp)
        h.send_header("Content-Length", "0")
        h.end_headers()

    t = PyTarget(redirect)

    class Post(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(307)
            self.send_header("Location", to_ftp)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    fw = _ThreadingServer(("127.0.0.1", 0), Post)
    threading.Thread(target=fw.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    cfg = tmp_path / "p.yml"
    cfg.write_text("forward:\n  - name: fw\n    url: http://127.0.0.1:%d\n"
                   "    queue_config: {batch_send_deadline: 100ms, min_backoff: 50ms, max_backoff: 200ms}\n"
                   % fw.server_address[1] + config_text("1s", "1s", jobs=(
                       "  - job_name: scraped\n"
                       "    static_configs: [{targets: ['%s']}]\n" % t.address + GOROUTINE_ONLY +
                       "  - job_name: sd\n"
                       "    http_sd_configs: [{url: 'http://%s/sd', refresh_interval: 1s}]\n" % t.address +
                       GOROUTINE_ONLY)))
    srv = make_server(config=str(cfg))
    try:
        st, _ = srv.push("go/cpu-01.pb.gz", labels='{job="api"}')
        assert st == 200
        wait_for(lambda: [x["lastError"] for x in targets(srv)["activeTargets"]] ==
                 ['Protocol "ftp" not supported or disabled in libcurl'], 10, "the scrape's error")
        wait_for(lambda: srv.get_json("/api/v1/status/forward")["data"][0]["failed"] >= 2, 10, "forward attempts")
        wait_for(lambda: srv.metrics()["profstore_sd_failures_total"] >= 2, 10, "http_sd attempts")
        assert ftp.connections() == []
        log = srv.log()
        assert 'msg="http_sd: refresh failed, keeping the last good targets" job=sd url=http://%s/sd ' \
               'err="Unsupported protocol"' % t.address in log
        assert 'msg="forwarding: sending failed; retrying" endpoint=fw status=0 err="Unsupported protocol"' in log
    finally:
        t.close()
        fw.shutdown()
        fw.server_close()
        ftp.close()


def test_fifos_block_nothing(make_server, tmp_path):
    """A basic_auth password_file that is a FIFO (and a FIFO matched by a file_sd pattern): the
    scraper neither waits for a writer nor reads from it; the other job is scraped, the error says
    why, and SIGTERM ends the server at once."""
    fifo_pw = tmp_path / "pw.fifo"
    os.mkfifo(fifo_pw)
    sd = tmp_path / "sd"
    sd.mkdir()
    os.mkfifo(sd / "a.json")
    good = PyTarget(lambda path, h: send_body(h, 500, b"no profile here"))
    write_atomic(sd / "b.json", json.dumps([{"targets": [good.address]}]))
    cfg = tmp_path / "p.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: pw\n"
        "    basic_auth: {username: u, password_file: '%s'}\n" % fifo_pw +
        "    static_configs: [{targets: ['%s']}]\n" % good.address + GOROUTINE_ONLY +
        "  - job_name: sd\n"
        "    file_sd_configs: [{files: ['%s/*.json']}]\n" % sd + GOROUTINE_ONLY)))
    srv = make_server(config=str(cfg))
    try:
        def errors():
            return sorted((x["scrapePool"], x["lastError"]) for x in targets(srv)["activeTargets"])

        want = [("pw", "unable to read basic auth password file %s: not a regular file" % fifo_pw),
                ("sd", "server returned HTTP status 500: no profile here")]
        wait_for(lambda: errors() == want, 10, "both jobs scraped (%s)" % want)
        n = good.count()
        wait_for(lambda: good.count() >= n + 2, 5, "scrapes going on")
        t0 = time.monotonic()
        assert srv.stop(timeout=10) == 0
        assert time.monotonic() - t0 < 5
    finally:
        good.close()


# ---- item 5: one redaction rule ----------------------------------------------------------------


def test_one_redaction_rule(make_server, tmp_path):
    """Credentials in params, labels, external labels, http_sd and forward URLs are shown nowhere:
    not in /api/v1/status/config (Prometheus' shapes: <secret>, user:xxxxx@), /status/forward,
    /targets (to a caller without admin) nor the log."""
    calls = []

    def sd_answer(path, h):  # the first refresh fails (logged with the URL), then the targets
        calls.append(path)
        if len(calls) == 1:
            send_body(h, 503, b"not yet")
        else:
            send_body(h, 200, json.dumps([{"targets": ["127.0.0.1:9"], "labels": {"team": "a"}}]).encode(),
                      "application/json")

    sd = PyTarget(sd_answer)
    fw_port = sd.port  # answers POSTs with 501: the forwarder logs its failures
    sd_url = "http://sduser:sd-s3cret@%s/sd?access_token=q-s3cret&x=1" % sd.address
    cfg = tmp_path / "p.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n  external_labels: {region: eu, auth_token: e-s3cret}\n"
        "forward:\n  - url: http://fwuser:fw-s3cret@127.0.0.1:%d\n"
        "    queue_config: {batch_send_deadline: 100ms, min_backoff: 50ms, max_backoff: 200ms}\n"
        "scrape_configs:\n  - job_name: app\n"
        "    params: {token: [p-s3cret], seconds: ['5']}\n"
        "    static_configs: [{targets: ['127.0.0.1:9'], labels: {api_key: l-s3cret, shard_key: s1}}]\n"
        "    http_sd_configs: [{url: '%s', refresh_interval: 1s}]\n" % (fw_port, sd_url) +
        "    relabel_configs: [{source_labels: [__meta_url], target_label: sd_url}]\n" + GOROUTINE_ONLY)
    srv = make_server(config=str(cfg), extra_args=["--log-level=debug"])
    try:
        st, _ = srv.push("go/cpu-01.pb.gz", labels='{job="api"}')
        assert st == 200
        wait_for(lambda: len(targets(srv)["activeTargets"]) == 2, 10, "the http_sd target")
        wait_for(lambda: srv.get_json("/api/v1/status/forward")["data"][0]["failed"] >= 1, 10, "a forward attempt")
        y = srv.get_json("/api/v1/status/config")["data"]["yaml"]
        # as Prometheus 2.42 writes strings (yaml.v2): <secret> and URLs plain, "5" quoted
        assert "  external_labels:\n    auth_token: <secret>\n    region: eu\n" in y
        assert "forward:\n- name: http://fwuser:xxxxx@127.0.0.1:%d\n  url: http://fwuser:xxxxx@127.0.0.1:%d\n" \
            % (fw_port, fw_port) in y
        assert "  params:\n    seconds:\n    - \"5\"\n    token:\n    - <secret>\n" in y \
            or "  params:\n    token:\n    - <secret>\n    seconds:\n    - \"5\"\n" in y
        assert "    labels:\n      api_key: <secret>\n      shard_key: s1\n" in y
        shown_sd = "http://sduser:xxxxx@%s/sd?access_token=<secret>&x=1" % sd.address
        assert "  - url: %s\n" % shown_sd in y
        fwd = srv.get_json("/api/v1/status/forward")["data"]
        assert [(e["name"], e["url"]) for e in fwd] == [("http://fwuser:xxxxx@127.0.0.1:%d" % fw_port,
                                                          "http://fwuser:xxxxx@127.0.0.1:%d/push.v1.PusherService/Push"
                                                          % fw_port)]
        d = targets(srv)
        by_job = {t["discoveredLabels"].get("__meta_url", "static"): t for t in d["activeTargets"]}
        assert sorted(by_job) == [shown_sd, "static"]
        # a label made from __meta_url is stored without the password (the scrape's up series)
        wait_for(lambda: srv.get_json("/api/v1/label/sd_url/values")["data"], 10, "the up series of the SD target")
        assert srv.get_json("/api/v1/label/sd_url/values")["data"] == [shown_sd]
        st_t = by_job["static"]
        assert (st_t["labels"]["api_key"], st_t["labels"]["shard_key"]) == ("<secret>", "s1")
        assert st_t["discoveredLabels"]["__param_token"] == "<secret>"
        assert st_t["scrapeUrl"] == "http://127.0.0.1:9/debug/pprof/goroutine?seconds=5&token=<secret>"
        log = srv.log()
        for where, text in (("status/config", y), ("status/forward", json.dumps(fwd)), ("targets", json.dumps(d)),
                            ("log", log)):
            assert "s3cret" not in text, where
        assert ('msg="forwarding" endpoint=http://fwuser:xxxxx@127.0.0.1:{0} protocol=pyroscope_push '
                'url=http://fwuser:xxxxx@127.0.0.1:{0}/push.v1.PusherService/Push cursor=0'.format(fw_port)) in log
        assert ('msg="http_sd: refresh failed, keeping the last good targets" job=app '
                'url="http://sduser:xxxxx@127.0.0.1:{0}/sd?access_token=<secret>&x=1"'.format(sd.port)) in log
    finally:
        sd.close()


# ---- item 9: the listening address -------------------------------------------------------------


def second_start(port, tmp_path):
    return subprocess.run([PROFSTORE_BIN, "--listen", "127.0.0.1:%d" % port, "--data-dir", str(tmp_path / "d2"),
                           "--storage.disk-reserve", "1MiB"], capture_output=True, text=True, timeout=20)


def test_second_server_on_a_busy_port_refused(make_server, tmp_path):
    """A second profstore with another data directory on the first one's address exits 1 and says
    why; the first answers every one of 50 connections (none lands on a second server)."""
    a = make_server()
    r = second_start(a.port, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ('msg="cannot start HTTP server" err="cannot listen on 127.0.0.1:%d: the address is already in use '
            'by another process (another profstore?)"' % a.port) in r.stdout + r.stderr
    st, _ = a.push("go/cpu-01.pb.gz", labels='{job="api"}')
    assert st == 200
    for _ in range(50):
        assert a.get_json("/api/v1/label/job/values")["data"] == ["api"]
    assert a.running()


def test_port_held_by_another_program_with_reuseport(tmp_path):
    """A program listening with SO_REUSEPORT under the same user: profstore does not join it."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    try:
        r = second_start(s.getsockname()[1], tmp_path)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "the address is already in use by another process" in r.stdout + r.stderr
    finally:
        s.close()
