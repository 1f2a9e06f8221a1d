"""tls_config.server_name against a real TLS target: an HTTPS target on 127.0.0.1 whose certificate
(signed by a CA made here with openssl) names only "profstore.test". With ca_file and server_name
the scrape is up, the TLS handshake sent SNI "profstore.test", and the Host header is still the
target's address (Go's tls.Config.ServerName); without server_name verification fails and the
target is down with curl's reason."""

import http.server
import json
import shutil
import ssl
import subprocess
import threading
import urllib.parse

import pytest

from conftest import fixture_bytes
from scrape_util import _ThreadingServer, active_targets, config_text, send_body, wait_for

NAME = "profstore.test"


def make_certs(d):
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")

    def run(*args):
        r = subprocess.run(["openssl", *args], cwd=d, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=profstore test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=" + NAME)
    (d / "ext.cnf").write_text("subjectAltName=DNS:%s\n" % NAME)
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return d / "ca.pem", d / "srv.pem", d / "srv.key"


class TLSTarget:
    def __init__(self, cert, key, body):
        self.sni, self.hosts = [], []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                outer.hosts.append(self.headers.get("Host"))
                send_body(self, 200, body)

            def log_message(self, *a):
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        ctx.sni_callback = lambda sock, name, c: outer.sni.append(name)
        self.httpd = _ThreadingServer(("127.0.0.1", 0), H)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


ONLY_GOROUTINE = """    profiling_config:
      pprof_config: {process_cpu: {enabled: false}, memory: {enabled: false}, block: {enabled: false},
                     mutex: {enabled: false}}
"""


def test_server_name_sets_sni_and_verification(make_server, tmp_path):
    ca, cert, key = make_certs(tmp_path)
    t = TLSTarget(cert, key, fixture_bytes("go/goroutine-01.pb.gz"))
    addr = "127.0.0.1:%d" % t.port
    jobs = ("  - job_name: named\n    scheme: https\n    tls_config: {ca_file: %s, server_name: %s}\n"
            "    static_configs: [{targets: ['%s']}]\n" % (ca, NAME, addr) + ONLY_GOROUTINE +
            "  - job_name: unnamed\n    scheme: https\n    tls_config: {ca_file: %s}\n"
            "    static_configs: [{targets: ['%s']}]\n" % (ca, addr) + ONLY_GOROUTINE)
    cfg = tmp_path / "profstore.yml"
    cfg.write_text(config_text("1s", "1s", jobs=jobs))
    srv = make_server(config=str(cfg), retention="0")
    try:
        def settled():
            ts = {x["scrapePool"]: x for x in active_targets(srv)}
            return ts if len(ts) == 2 and all(x["health"] != "unknown" for x in ts.values()) else None
        ts = wait_for(settled, 15, "both targets scraped")
        named, unnamed = ts["named"], ts["unnamed"]
        assert named["health"] == "up" and named["lastError"] == "", named
        assert named["scrapeUrl"] == "https://%s/debug/pprof/goroutine" % addr  # shown as configured
        assert unnamed["health"] == "down", unnamed
        assert "127.0.0.1" in unnamed["lastError"] and "certificate" in unnamed["lastError"].lower(), unnamed
        # the named job's handshakes asked for profstore.test; every request kept Host = the address
        assert NAME in t.sni
        assert t.hosts and set(t.hosts) == {addr}
        # profiles only from the named job; both have their scrape series (up 0 for unnamed)
        st, _, body = srv.get("/api/v1/label/job/values?match[]=" + urllib.parse.quote('{__name__=~"goroutine:.*"}'))
        assert st == 200 and b'"named"' in body and b'"unnamed"' not in body
        # the scrape series go to the writer after the target's health is set: wait for their commit
        def up_jobs():
            st, _, body = srv.get("/api/v1/label/job/values?match[]=up")
            assert st == 200, body
            return body if json.loads(body)["data"] == ["named", "unnamed"] else None
        wait_for(up_jobs, 10, "the up series of both jobs")
    finally:
        t.close()
