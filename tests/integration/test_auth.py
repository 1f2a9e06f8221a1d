"""Authentication and the admin switches (--web.config.file, --web.enable-admin-api,
--web.enable-lifecycle), over plain HTTP; TLS is test_tls.py.

  - basic auth (exporter-toolkit's basic_auth_users, bcrypt): none, wrong, right; 401 with
    WWW-Authenticate: Basic exactly and a Prometheus-shaped body; /-/healthy and /-/ready open;
  - bearer tokens (profstore's bearer_tokens, SHA-256 digests) with scopes: the wrong scope is 403,
    on Connect paths in Connect's error JSON; only tokens configured: WWW-Authenticate: Bearer;
  - admin APIs off by default (503 "admin APIs disabled", /-/reload 403 "Lifecycle API is not
    enabled."), and the admin scope when auth is on;
  - SIGHUP and /-/reload re-read the file; a wrong one is refused with its line:column at start
    (exit 2) and on reload (the old one stays);
  - promtool check web-config accepts the files without our extension and refuses bearer_tokens;
  - /api/v1/targets redacts credential-like params unless an admin asks.
"""

import base64
import hashlib
import json
import signal
import subprocess
import time
import warnings

import pytest

from conftest import PROFSTORE_BIN
from prom_util import promtool_binary

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # crypt is deprecated (3.11) but is Debian's, and libxcrypt's bcrypt
    import crypt
    _SALT = crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4)  # cost 4: fast tests


def bcrypt(pw: str) -> str:
    return crypt.crypt(pw, _SALT)


def sha(tok: str) -> str:
    return hashlib.sha256(tok.encode()).hexdigest()


def basic(user: str, pw: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()}


def bearer(tok: str) -> dict:
    return {"Authorization": "Bearer " + tok}


USERS = "basic_auth_users:\n  alice: %s\n" % bcrypt("wonderland")
TOKENS = ("bearer_tokens:\n"
          "  - sha256: %s\n    scopes: [read]\n    name: grafana\n"
          "  - sha256: %s\n    scopes: [write]\n"
          "  - sha256: %s\n    scopes: [read, write, admin]\n" % (sha("tok-read"), sha("tok-write"), sha("tok-admin")))


def web(tmp_path, text, name="web.yml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def req(srv, method, path, headers=None, body=None):
    st, hdrs, data = srv.request(method, path, body=body, headers=headers)
    return st, hdrs, data


def js(data):
    return json.loads(data)


@pytest.fixture
def asrv(make_server, tmp_path):
    return make_server(web_config_file=web(tmp_path, USERS + TOKENS))


def test_basic_auth(asrv):
    st, hdrs, data = req(asrv, "GET", "/api/v1/labels")
    assert st == 401
    assert hdrs["www-authenticate"] == "Basic"
    assert js(data) == {"status": "error", "errorType": "unauthorized", "error":
                        "unauthorized: no credentials: send an Authorization header (basic auth or a bearer token)"}
    for h in (basic("alice", "wrong"), basic("bob", "wonderland"), bearer("nope")):
        st, hdrs, data = req(asrv, "GET", "/api/v1/labels", h)
        assert (st, hdrs["www-authenticate"], js(data)["error"]) == (401, "Basic", "unauthorized: invalid credentials")
    st, _, data = req(asrv, "GET", "/api/v1/labels", {"Authorization": "Basic !!!"})
    assert st == 401 and "malformed Authorization header" in js(data)["error"]
    st, _, data = req(asrv, "GET", "/api/v1/labels", {"Authorization": "Digest x=1"})
    assert st == 401 and js(data)["error"] == "unauthorized: this server takes no credentials of that scheme"
    for _ in range(3):  # the same credentials again: the cache answers
        st, _, data = req(asrv, "GET", "/api/v1/labels", basic("alice", "wonderland"))
        assert (st, js(data)) == (200, {"status": "success", "data": []})
    for path, body in (("/-/healthy", b"Profstore is Healthy.\n"), ("/-/ready", b"Profstore is Ready.\n")):
        st, _, data = req(asrv, "GET", path)
        assert st == 200, data
    # the UI's pages and files need read too
    assert req(asrv, "GET", "/graph")[0] == 401
    assert req(asrv, "GET", "/graph", basic("alice", "wonderland"))[0] == 200
    # an unknown path: authentication first, then the 404
    assert req(asrv, "GET", "/nope")[0] == 401
    assert req(asrv, "GET", "/nope", basic("alice", "wonderland"))[0] == 404


def test_bearer_scopes(asrv):
    assert req(asrv, "GET", "/api/v1/labels", bearer("tok-read"))[0] == 200
    st, _, data = req(asrv, "GET", "/api/v1/labels", bearer("tok-write"))
    assert (st, js(data)) == (403, {"status": "error", "errorType": "forbidden", "error":
                                    "forbidden: this credential lacks the read scope that /api/v1/labels needs"})
    st, _, data = asrv.push("go/cpu-01.pb.gz", headers=bearer("tok-read"), labels='{job="a"}')[0], None, None
    assert st == 403
    st, _ = asrv.push("go/cpu-01.pb.gz", headers=bearer("tok-write"), labels='{job="a"}')
    assert st == 200
    # Connect paths answer in Connect's error JSON
    push = "/push.v1.PusherService/Push"
    ct = {"Content-Type": "application/json"}
    st, _, data = req(asrv, "POST", push, ct, b"{}")
    assert (st, js(data)) == (401, {"code": "unauthenticated", "message":
                                    "unauthorized: no credentials: send an Authorization header (basic auth or a bearer token)"})
    st, _, data = req(asrv, "POST", push, dict(ct, **bearer("tok-read")), b"{}")
    assert (st, js(data)) == (403, {"code": "permission_denied", "message":
                                    "forbidden: this credential lacks the write scope that %s needs" % push})
    st, _, data = req(asrv, "POST", push, dict(ct, **bearer("tok-write")), b"{}")
    assert st == 200, data  # an empty push is fine
    st, _, data = req(asrv, "POST", "/querier.v1.QuerierService/ProfileTypes", dict(ct, **bearer("tok-write")), b"{}")
    assert (st, js(data)["code"]) == (403, "permission_denied")
    # Pyroscope's /ingest: an SDK's auth token (Bearer) or basic auth
    assert req(asrv, "POST", "/ingest?name=app.cpu&format=lines", bearer("tok-read"), b"a;b 1\n")[0] == 403
    st, _, data = req(asrv, "POST", "/ingest?name=app.cpu&format=lines", bearer("tok-write"), b"a;b 1\n")
    assert st == 200, data
    st, _, data = req(asrv, "POST", "/ingest?name=app.cpu&format=lines", basic("alice", "wonderland"), b"a;c 1\n")
    assert st == 200, data


def test_only_tokens_offer_bearer(make_server, tmp_path):
    s = make_server(web_config_file=web(tmp_path, TOKENS))
    st, hdrs, data = req(s, "GET", "/api/v1/labels")
    assert (st, hdrs["www-authenticate"]) == (401, "Bearer")
    st, _, data = req(s, "GET", "/api/v1/labels", basic("alice", "wonderland"))
    assert (st, js(data)["error"]) == (401, "unauthorized: this server takes no credentials of that scheme")


def test_admin_off_by_default(make_server, tmp_path):
    s = make_server(admin=False)
    for path in ("/api/v1/admin/compact", "/api/v1/admin/retention"):
        st, _, data = req(s, "POST", path)
        assert (st, js(data)) == (503, {"status": "error", "errorType": "unavailable", "error":
                                        "admin APIs disabled (start profstore with --web.enable-admin-api)"})
    st, _, data = req(s, "GET", "/api/v1/debug/series?id=1")
    assert (st, js(data)["error"]) == (503, "admin APIs disabled (start profstore with --web.enable-admin-api)")
    st, _, data = req(s, "POST", "/-/reload")
    assert (st, js(data)) == (403, {"status": "error", "errorType": "forbidden", "error":
                                    "Lifecycle API is not enabled. (start profstore with --web.enable-lifecycle)"})
    d = js(req(s, "GET", "/api/v1/status/flags")[2])["data"]
    assert (d["web.enable-admin-api"], d["web.enable-lifecycle"], d["web.config.file"]) == ("false", "false", "")


def test_admin_scope(make_server, tmp_path):
    s = make_server(web_config_file=web(tmp_path, USERS + TOKENS))  # the fixture enables both APIs
    for h in (bearer("tok-read"), bearer("tok-write")):
        st, _, data = req(s, "POST", "/api/v1/admin/compact", h)
        assert (st, js(data)["error"]) == (403, "forbidden: this credential lacks the admin scope that "
                                                "/api/v1/admin/compact needs")
        assert req(s, "POST", "/-/reload", h)[0] == 403
    assert req(s, "POST", "/api/v1/admin/compact", bearer("tok-admin"))[0] == 200
    assert req(s, "POST", "/api/v1/admin/compact", basic("alice", "wonderland"))[0] == 200
    st, _, data = req(s, "POST", "/-/reload", basic("alice", "wonderland"))
    assert (st, js(data)) == (200, {"status": "success", "data": "configuration reloaded"})


def wait_status(s, path, headers, want, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        st = req(s, "GET", path, headers)[0]
        if st == want or time.monotonic() > deadline:
            return st
        time.sleep(0.05)


def test_reload(make_server, tmp_path):
    p = web(tmp_path, USERS)
    s = make_server(web_config_file=p)
    alice, bob = basic("alice", "wonderland"), basic("bob", "builder")
    assert req(s, "GET", "/api/v1/labels", alice)[0] == 200
    p.write_text("basic_auth_users:\n  bob: %s\n" % bcrypt("builder"))
    s.proc.send_signal(signal.SIGHUP)
    assert wait_status(s, "/api/v1/labels", bob, 200) == 200
    assert req(s, "GET", "/api/v1/labels", alice)[0] == 401
    # a wrong file: refused with its position, bob stays
    p.write_text("basic_auth_users:\n  bob: %s\nhttp_server_config:\n  http3: true\n" % bcrypt("x"))
    s.proc.send_signal(signal.SIGHUP)
    msg = "%s:4:3: http_server_config: unknown field \\\"http3\\\" in http_server_config (valid fields: http2, headers)" % p
    deadline = time.monotonic() + 10
    while msg not in s.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert msg in s.log()
    assert req(s, "GET", "/api/v1/labels", bob)[0] == 200
    # the same through /-/reload: 400 with the message
    st, _, data = req(s, "POST", "/-/reload", bob)
    assert (st, js(data)) == (400, {"status": "error", "errorType": "bad_data", "error": msg.replace("\\\"", "\"")})
    # back to no authentication at all
    p.write_text("")
    assert req(s, "POST", "/-/reload", bob)[0] == 200
    assert req(s, "GET", "/api/v1/labels")[0] == 200


@pytest.mark.parametrize("text,msg", [
    ("basic_auth_users:\n  alice: notbcrypt\n", "2:10: basic_auth_users.alice: not a bcrypt hash"),
    ("tls_server_config:\n  cert_file: a.crt\n", "2:3: tls_server_config: missing key_file"),
    ("bearer_tokens:\n  - sha256: abc\n    scopes: [read]\n", "2:13: bearer_tokens[0].sha256: expected the 64 hex digits"),
    ("bearer_tokens:\n  - sha256: %s\n    scopes: [root]\n" % sha("x"),
     "3:14: bearer_tokens[0].scopes[0]: unknown scope \"root\" (use read, write or admin)"),
    ("http_server_config:\n  headers:\n    X-Foo: bar\n",
     "3:5: http_server_config.headers.X-Foo: HTTP header \"X-Foo\" can not be configured"),
    ("basic_auth_user:\n  a: b\n", "1:1: unknown field \"basic_auth_user\" in the web configuration"),
    ("tls_server_config: [\n", "2:1: invalid YAML"),
])
def test_bad_file_at_start(tmp_path, text, msg):
    p = web(tmp_path, text)
    r = subprocess.run([PROFSTORE_BIN, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                        "--web.config.file", str(p)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("profstore: %s:%s" % (p, msg)), r.stderr


def test_promtool_check_web_config(tmp_path):
    tool = promtool_binary()
    good = web(tmp_path, USERS + "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n")
    r = subprocess.run([tool, "check", "web-config", str(good)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "SUCCESS" in r.stdout + r.stderr, r.stdout + r.stderr
    # promtool 2.42 refuses our extension (README says so): keep tokens in a file of their own use
    ext = web(tmp_path, USERS + TOKENS, "ext.yml")
    r = subprocess.run([tool, "check", "web-config", str(ext)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "field bearer_tokens not found in type web.Config" in r.stdout + r.stderr


def test_targets_redacted(make_server, tmp_path):
    cfg = tmp_path / "prof.yml"
    cfg.write_text("global:\n  scrape_interval: 1h\nscrape_configs:\n  - job_name: app\n"
                   "    params:\n      token: [s3cr3t]\n      seconds: ['5']\n"
                   "    static_configs:\n      - targets: ['127.0.0.1:9']\n        labels: {api_key: k1, shard_key: s1}\n")
    s = make_server(config=cfg, web_config_file=web(tmp_path, USERS + TOKENS))

    def target(h):
        st, _, data = req(s, "GET", "/api/v1/targets", h)
        assert st == 200, data
        return js(data)["data"]["activeTargets"][0]

    t = target(bearer("tok-read"))
    assert t["discoveredLabels"]["__param_token"] == "<secret>"
    assert t["discoveredLabels"]["__param_seconds"] == "5"
    assert (t["labels"]["api_key"], t["labels"]["shard_key"]) == ("<secret>", "s1")
    assert "token=<secret>" in t["scrapeUrl"] and "s3cr3t" not in json.dumps(t)
    for h in (bearer("tok-admin"), basic("alice", "wonderland")):  # the operator's view
        t = target(h)
        assert t["discoveredLabels"]["__param_token"] == "s3cr3t" and t["labels"]["api_key"] == "k1"
        assert "token=s3cr3t" in t["scrapeUrl"]


def test_bcrypt_off_the_loop(make_server, tmp_path):
    """A credential check that needs bcrypt runs on the credential thread, not the event loop: with one
    loop (--threads 1) and guesses at a cost-12 hash (~0.3 s each) queued, a bearer request and
    /-/healthy are answered before the second guess is; past PS_AUTHQ_MAX (16) waiting checks a
    request is refused at once with 503 and Retry-After; the right password then passes."""
    import http.client
    import threading

    slow = crypt.crypt("wonderland", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 12))
    s = make_server(threads=1, web_config_file=web(tmp_path, "basic_auth_users:\n  alice: %s\n" % slow + TOKENS))
    done = []  # (what, status, retry-after, body) in the order the answers came
    lock = threading.Lock()

    def get(what, headers, path="/api/v1/labels"):
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        body = r.read()
        with lock:
            done.append((what, r.status, r.getheader("Retry-After"), body))
        c.close()

    guesses = [threading.Thread(target=get, args=("guess", basic("alice", "guess-%d" % i))) for i in range(19)]
    for t in guesses:
        t.start()
    time.sleep(0.1)  # all 19 are in; the first bcrypt takes ~0.3 s
    quick = [threading.Thread(target=get, args=("bearer", bearer("tok-read"))),
             threading.Thread(target=get, args=("healthy", {}, "/-/healthy"))]
    for t in quick:
        t.start()
    for t in quick + guesses:
        t.join()
    busy = [d for d in done if d[0] == "guess" and d[1] == 503]
    assert len(busy) == 3, [d[:2] for d in done]
    assert {d[2] for d in busy} == {"1"}
    assert {js(d[3])["error"] for d in busy} == {"too many credential checks waiting (16, each a bcrypt); retry"}
    refused = [i for i, d in enumerate(done) if d[0] == "guess" and d[1] == 401]
    assert len(refused) == 16
    order = [d[0] for d in done if d[1] != 503]
    # both answered while 15 or 16 guesses still wait (on the loop they would wait behind them all)
    assert {"bearer", "healthy"} <= set(order[:3]), order
    assert [d[1] for d in done if d[0] in ("bearer", "healthy")] == [200, 200]
    st, _, _ = req(s, "GET", "/api/v1/labels", headers=basic("alice", "wonderland"))
    assert st == 200
