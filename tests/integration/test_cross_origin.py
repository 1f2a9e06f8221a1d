"""Cross-origin protection of writes and admin requests (routes.c, as Go's net/http
CrossOriginProtection): a page of another site open in the operator's browser cannot POST to
/ingest, the push endpoints, the admin endpoints or /-/reload; programs (no Sec-Fetch-Site, no
Origin), profstore's own pages and reads are never refused. Checked with headers, and with a real
Chromium page served from another origin that POSTs a folded profile to /ingest."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from ui_util import browser, chromium_driver  # noqa: F401 (fixtures)

CROSS = "cross-origin request refused: Sec-Fetch-Site is not same-origin (a page of another site sent it; " \
        "writes and admin requests come from programs or profstore's own pages)"
BAD_ORIGIN = "cross-origin request refused: Origin does not match Host (a page of another site sent it; " \
             "writes and admin requests come from programs or profstore's own pages)"
FOLDED = b"main;work 7\n"


def ingest(srv, name, headers=None):
    st, _, data = srv.request("POST", "/ingest?name=%s&from=now-10s&until=now" % name,
                              body=FOLDED, headers=headers)
    return st, data


def names(srv):
    return sorted(s["labels"].get("service_name", "") for s in srv.series())


@pytest.fixture
def srv(make_server):
    return make_server(retention="0")


def test_writes_from_another_site_refused(srv):
    origin = "http://127.0.0.1:%d" % srv.port
    cases = [
        ({"Sec-Fetch-Site": "cross-site"}, 403, CROSS),
        ({"Sec-Fetch-Site": "same-site"}, 403, CROSS),  # another port is another origin
        ({"Origin": "http://evil.example"}, 403, BAD_ORIGIN),
        ({"Origin": "null"}, 403, BAD_ORIGIN),
        ({"Origin": "http://127.0.0.1:1"}, 403, BAD_ORIGIN),
        ({"Sec-Fetch-Site": "same-origin", "Origin": origin}, 200, None),
        ({"Sec-Fetch-Site": "none"}, 200, None),  # typed into the address bar
        ({"Origin": origin}, 200, None),
        ({}, 200, None),  # a program
    ]
    stored = []
    for i, (hdrs, want, msg) in enumerate(cases):
        st, data = ingest(srv, "app%d" % i, hdrs)
        assert st == want, (hdrs, st, data)
        if msg is not None:
            assert json.loads(data)["error"] == msg, data
        else:
            stored.append("app%d" % i)
    assert names(srv) == stored


def test_admin_reload_and_connect_refused_reads_not(srv):
    cross = {"Sec-Fetch-Site": "cross-site"}
    for path in ("/-/reload", "/api/v1/admin/compact"):
        st, _, data = srv.request("POST", path, body=b"", headers=cross)
        assert (st, json.loads(data)["error"]) == (403, CROSS), (path, data)
    st, _, data = srv.request("POST", "/push.v1.PusherService/Push", body=b"{}",
                              headers=dict(cross, **{"Content-Type": "application/json"}))
    assert st == 403, data
    assert json.loads(data) == {"code": "permission_denied", "message": CROSS}
    # reads are not state-changing: a cross-site POST of a query is answered
    st, _, data = srv.request("POST", "/api/v1/query", body=b"query=1",
                              headers=dict(cross, **{"Content-Type": "application/x-www-form-urlencoded"}))
    assert st == 200, data
    assert json.loads(data)["data"] == {"resultType": "scalar", "result": [json.loads(data)["data"]["result"][0], "1"]}


class _Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *a):
        pass


def test_a_page_of_another_site_cannot_push(srv, browser):  # noqa: F811
    target = "http://127.0.0.1:%d/ingest?name=fromapage&from=now-10s&until=now" % srv.port
    page = ("<!doctype html><title>t</title><script>"
            "fetch(%s,{method:'POST',mode:'no-cors',body:'main;work 7\\n'})"
            ".then(function(){document.title='sent'},function(){document.title='failed'});"
            "</script>" % json.dumps(target)).encode()
    handler = type("P", (_Page,), {"body": page})
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        browser.open("http://localhost:%d/" % other.server_address[1])
        assert browser.wait_js("document.title === 'sent' || document.title === 'failed'") is True
        assert browser.js("return document.title") == "sent"  # no-cors: sent, the answer opaque
    finally:
        other.shutdown()
    m = srv.metrics()
    assert m['profstore_http_requests_total{handler="/ingest",code="403"}'] == 1
    assert names(srv) == []
