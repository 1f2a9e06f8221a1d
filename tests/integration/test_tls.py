"""TLS (--web.config.file's tls_server_config), with certificates made by openssl at test time and
curl as the client; and a real Prometheus 2.42 remote-writing and remote-reading through
basic_auth and tls_config.

  - HTTPS with curl --cacert; HTTP/2 by ALPN (curl --http2 reports 2), http2: false gives 1.1;
  - RequireAndVerifyClientCert: no client certificate or one of another CA -> the handshake fails;
  - min_version TLS13 refuses a TLS 1.2 client; cipher_suites limit TLS 1.2's suites;
  - a certificate that does not load: exit 2 with file:line:col; a reload swaps the certificate
    and refuses turning TLS off;
  - promtool check web-config accepts every file used here.
"""

import base64
import hashlib
import json
import re
import signal
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from conftest import PPROF_DIR, PROFSTORE_BIN, Server, _active_servers, free_port
from prom_util import prometheus_binary, promtool_binary

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import crypt
    _SALT = crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4)


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=str(cwd), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def make_ca(d: Path, name: str):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".crt",
            "-days", "2", "-subj", "/CN=%s" % name, cwd=d)


def make_cert(d: Path, ca: str, name: str, san: str = None):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=%s" % name, cwd=d)
    args = ["x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
            "-out", name + ".crt", "-days", "2"]
    if san:
        (d / (name + ".ext")).write_text("subjectAltName=%s\n" % san)
        args += ["-extfile", name + ".ext"]
    openssl(*args, cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    make_ca(d, "ca")
    make_ca(d, "ca2")
    make_cert(d, "ca", "srv", "IP:127.0.0.1")
    make_cert(d, "ca2", "srv2", "IP:127.0.0.1")
    make_cert(d, "ca", "cli")
    make_cert(d, "ca2", "cli2")
    return d


def curl(*args):
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True, text=True, timeout=30)


class TlsServer(Server):
    """A Server whose readiness is polled over HTTPS (curl_args: how to reach it)."""
    curl_args = ()

    def https(self, path="/"):
        return "https://127.0.0.1:%d%s" % (self.port, path)

    def wait_ready(self, timeout: float = Server.READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("profstore exited with %s; log:\n%s" % (self.proc.returncode, self.log()))
            r = curl("-o", "/dev/null", "-w", "%{http_code}", *self.curl_args, self.https("/-/ready"))
            if r.stdout == "200":
                return
            time.sleep(0.05)
        raise AssertionError("profstore not ready over TLS; log:\n" + self.log())


@pytest.fixture
def tls_server(tmp_path):
    made = []

    def factory(web_yml: str, curl_args=(), name="tls", **flags):
        wd = tmp_path / name
        wd.mkdir()
        (wd / "web.yml").write_text(web_yml)
        s = TlsServer(wd, web_config_file=wd / "web.yml", **flags)
        s.curl_args = tuple(curl_args)
        made.append(s)
        _active_servers.append(s)
        return s.start()

    yield factory
    for s in made:
        s.kill()
        _active_servers.remove(s)


def tls_yml(certs, extra=""):
    return "tls_server_config:\n  cert_file: %s\n  key_file: %s\n%s" % (certs / "srv.crt", certs / "srv.key", extra)


def promtool_ok(path):
    r = subprocess.run([promtool_binary(), "check", "web-config", str(path)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def test_https_and_http2(tls_server, certs):
    ca = ("--cacert", str(certs / "ca.crt"))
    s = tls_server(tls_yml(certs), ca)
    promtool_ok(s.workdir / "web.yml")
    r = curl(*ca, s.https("/-/healthy"))
    assert (r.returncode, r.stdout) == (0, "Profstore is Healthy.\n"), r.stderr
    assert curl(*ca, "--http2", "-o", "/dev/null", "-w", "%{http_version}", s.https("/api/v1/labels")).stdout == "2"
    assert curl(*ca, "--http1.1", "-o", "/dev/null", "-w", "%{http_version}", s.https("/api/v1/labels")).stdout == "1.1"
    r = curl(*ca, "--http2", s.https("/api/v1/labels"))
    assert json.loads(r.stdout) == {"status": "success", "data": []}
    assert curl(s.https("/-/healthy")).returncode == 60  # not trusted without the CA
    # plain HTTP to the TLS port gets no answer
    assert curl("-o", "/dev/null", "-w", "%{http_code}", s.url("/-/healthy")).stdout in ("000", "")
    # http2: false: ALPN offers HTTP/1.1 only
    s2 = tls_server(tls_yml(certs, "http_server_config:\n  http2: false\n  headers:\n    X-Content-Type-Options: "
                            "nosniff\n"), ca, name="h1")
    promtool_ok(s2.workdir / "web.yml")
    r = curl(*ca, "--http2", "-D", "-", "-o", "/dev/null", s2.https("/api/v1/labels"))
    assert r.stdout.startswith("HTTP/1.1 200"), r.stdout
    assert "x-content-type-options: nosniff\n" in r.stdout.lower()


def test_client_certificates(tls_server, certs):
    ca = ("--cacert", str(certs / "ca.crt"))
    cli = ("--cert", str(certs / "cli.crt"), "--key", str(certs / "cli.key"))
    s = tls_server(tls_yml(certs, "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: %s\n"
                           % (certs / "ca.crt")), ca + cli)
    promtool_ok(s.workdir / "web.yml")
    r = curl(*ca, *cli, s.https("/api/v1/labels"))
    assert (r.returncode, json.loads(r.stdout)["status"]) == (0, "success"), r.stderr
    for args in ((), ("--cert", str(certs / "cli2.crt"), "--key", str(certs / "cli2.key"))):
        for tls in (("--tls-max", "1.2"), ()):  # TLS 1.2 refuses in the handshake, 1.3 right after it
            r = curl(*ca, *args, *tls, "-o", "/dev/null", "-w", "%{http_code}", s.https("/api/v1/labels"))
            assert r.returncode != 0 and r.stdout in ("000", ""), (args, tls, r)


def test_min_version_and_ciphers(tls_server, certs):
    ca = ("--cacert", str(certs / "ca.crt"))
    s = tls_server(tls_yml(certs, "  min_version: TLS13\n"), ca)
    promtool_ok(s.workdir / "web.yml")
    assert curl(*ca, "--tls-max", "1.2", s.https("/-/healthy")).returncode == 35  # handshake refused
    assert curl(*ca, "--tlsv1.3", s.https("/-/healthy")).returncode == 0
    s2 = tls_server(tls_yml(certs, "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"),
                    ca, name="ciphers")
    promtool_ok(s2.workdir / "web.yml")
    assert curl(*ca, "--ciphers", "ECDHE-RSA-AES128-GCM-SHA256", s2.https("/-/healthy")).returncode == 0
    assert curl(*ca, "--ciphers", "ECDHE-RSA-AES256-GCM-SHA384", s2.https("/-/healthy")).returncode == 35


def test_bad_certificate_at_start(tmp_path, certs):
    (tmp_path / "bad.crt").write_text("not a certificate\n")
    p = tmp_path / "web.yml"
    p.write_text("tls_server_config:\n  cert_file: bad.crt\n  key_file: %s\n" % (certs / "srv.key"))
    r = subprocess.run([PROFSTORE_BIN, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                        "--web.config.file", str(p)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert r.stderr.startswith("profstore: %s:2:14: tls_server_config.cert_file: cannot load %s: " %
                               (p, tmp_path / "bad.crt")), r.stderr
    # a key of another certificate
    p.write_text(tls_yml(certs).replace("srv.key", "srv2.key"))
    r = subprocess.run([PROFSTORE_BIN, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                        "--web.config.file", str(p)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert r.stderr.startswith("profstore: %s:3:13: tls_server_config.key_file: " % p), r.stderr


def test_reload_swaps_the_certificate(tls_server, certs):
    ca, ca2 = ("--cacert", str(certs / "ca.crt")), ("--cacert", str(certs / "ca2.crt"))
    s = tls_server(tls_yml(certs), ca)
    p = s.workdir / "web.yml"
    assert curl(*ca, s.https("/-/healthy")).returncode == 0
    p.write_text(tls_yml(certs).replace("srv.", "srv2."))
    s.proc.send_signal(signal.SIGHUP)
    # every event loop swaps on its own: wait until a new connection sees the new certificate on
    # each of them (the old CA no longer verifies), then check both
    deadline, streak = time.monotonic() + 10, 0
    while streak < 6 and time.monotonic() < deadline:
        ok = curl(*ca2, s.https("/-/healthy")).returncode == 0 and curl(*ca, s.https("/-/healthy")).returncode == 60
        streak = streak + 1 if ok else 0
        if not ok:
            time.sleep(0.05)
    assert curl(*ca2, s.https("/-/healthy")).returncode == 0
    assert curl(*ca, s.https("/-/healthy")).returncode == 60
    # turning TLS off needs a restart: refused, the running one stays
    p.write_text("basic_auth_users: {}\n")
    r = curl(*ca2, "-X", "POST", s.https("/-/reload"))
    assert json.loads(r.stdout) == {"status": "error", "errorType": "bad_data", "error":
                                    "%s: TLS cannot be turned off by a reload (tls_server_config removed): restart "
                                    "profstore for that" % p}
    assert curl(*ca2, s.https("/-/healthy")).returncode == 0


def test_prometheus_remote_write_and_read(tls_server, certs, tmp_path):
    """A real Prometheus 2.42 through tls_config: remote_write with `authorization` (a bearer token of
    the write scope), remote_read with basic_auth."""
    prom = prometheus_binary()
    web = tls_yml(certs, "basic_auth_users:\n  prom: %s\nbearer_tokens:\n  - sha256: %s\n    scopes: [write]\n"
                  % (crypt.crypt("remote", _SALT), hashlib.sha256(b"rw-token").hexdigest()))
    auth = base64.b64encode(b"prom:remote").decode()
    ca = ("--cacert", str(certs / "ca.crt"))
    s = tls_server(web, ca)
    plain = tmp_path / "web-promtool.yml"  # promtool refuses our bearer_tokens: the file without them
    plain.write_text(web[:web.index("bearer_tokens:")])
    promtool_ok(plain)
    hdr = ("-H", "Authorization: Basic " + auth)
    now = int(time.time())
    r = curl(*ca, *hdr, "--data-binary", "@%s" % (PPROF_DIR / "go/cpu-01.pb.gz"),
             s.https("/api/v1/profiles/write?labels=%7Bjob%3D%22api%22%7D&time=" + str(now - 30)))
    assert json.loads(r.stdout)["status"] == "success", r.stdout
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    tls = "    tls_config: {ca_file: %s}\n" % (certs / "ca.crt")
    write_client = "    authorization: {credentials: rw-token}\n" + tls
    read_client = "    basic_auth: {username: prom, password: remote}\n" + tls
    cfg.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: self\n"
                   "    static_configs: [{targets: ['127.0.0.1:%d']}]\n"
                   "remote_write:\n  - url: %s\n    queue_config: {batch_send_deadline: 500ms, min_backoff: 100ms}\n%s"
                   "remote_read:\n  - url: %s\n    read_recent: true\n%s"
                   % (port, s.https("/api/v1/write"), write_client, s.https("/api/v1/read"), read_client))
    log = open(tmp_path / "prometheus.log", "wb")
    p = subprocess.Popen([prom, "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                          "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    try:
        # remote_write: Prometheus' own `up` arrives in profstore
        deadline = time.monotonic() + 60
        got = []
        while time.monotonic() < deadline:
            r = curl(*ca, *hdr, s.https("/api/v1/series?match[]=up"))
            got = json.loads(r.stdout)["data"] if r.returncode == 0 else []
            if got:
                break
            time.sleep(0.2)
        assert got == [{"__name__": "up", "instance": "127.0.0.1:%d" % port, "job": "self"}], \
            (tmp_path / "prometheus.log").read_text()[-3000:]
        # remote_read: Prometheus answers from profstore's profile totals
        q = "count(process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta)"
        r = curl("-G", "--data-urlencode", "query=" + q, "--data-urlencode", "time=%d" % now,
                 "http://127.0.0.1:%d/api/v1/query" % port)
        data = json.loads(r.stdout)["data"]["result"]
        assert [x["value"][1] for x in data] == ["1"], r.stdout
        # without credentials profstore refused nothing Prometheus sent
        # (Prometheus logs "server returned HTTP status 401 Unauthorized"; a bare "401" also
        # matches durations such as "remote_storage=401.335µs")
        text = (tmp_path / "prometheus.log").read_text()
        assert not re.search(r"status 401\b|Unauthorized", text), text[-3000:]
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
