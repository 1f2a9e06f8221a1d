"""The web UI's serving (web/api_ui.c, files embedded by scripts/embed-ui.py) over plain HTTP, and
the browser harness (ui_util.py) against it: the pages and /ui/ files with their content types,
ETag / If-None-Match -> 304, gzip by Accept-Encoding (Vary), no-cache, 404 and 405; the bytes
served are the files of web/ui/ and uPlot's from web/ui/node_modules, byte for byte. In Chromium:
the page loads with no console error and no failed request, at 1280 and 800 px."""

import gzip
import hashlib
from pathlib import Path

import pytest

from conftest import REPO
from ui_util import browser, chromium_driver, ui_server  # noqa: F401

UI = REPO / "web" / "ui"
VENDOR = {"/ui/vendor/uPlot.esm.js": UI / "node_modules/uplot/dist/uPlot.esm.js",
          "/ui/vendor/uPlot.min.css": UI / "node_modules/uplot/dist/uPlot.min.css"}
PAGES = ["/", "/graph", "/compare", "/targets", "/status", "/upload", "/shared"]


def ui_files():
    """URL path -> file of every embedded file (what CMakeLists.txt globs)."""
    out = dict(VENDOR)
    for p in sorted(UI.rglob("*")):
        rel = p.relative_to(UI).as_posix()
        if not p.is_file() or rel.startswith("node_modules/") or rel in ("package.json", "package-lock.json") \
                or p.name.startswith(".") or p.name.endswith("~"):
            continue
        out["/ui/" + rel] = p
    return out


TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png",
         ".json": "application/json"}


def test_every_file_served_byte_for_byte(ui_server):
    srv = ui_server.srv
    files = ui_files()
    assert "/ui/index.html" in files and "/ui/vendor/uPlot.esm.js" in files
    for url, path in files.items():
        want = path.read_bytes()
        st, h, body = srv.get(url)
        assert st == 200, (url, st, body[:200])
        assert body == want, url
        assert h["content-type"] == TYPES[path.suffix], url
        assert h["etag"] == '"%s"' % hashlib.sha256(want).hexdigest()[:20], url
        assert h["cache-control"] == "no-cache", url
        assert h["x-content-type-options"] == "nosniff", url
        assert "content-encoding" not in h, url


def test_pages_serve_index_html(ui_server):
    srv = ui_server.srv
    index = (UI / "index.html").read_bytes()
    for page in PAGES + ["/graph?query=%7Bjob%3D%22api%22%7D"]:
        st, h, body = srv.get(page)
        assert (st, body, h["content-type"]) == (200, index, "text/html; charset=utf-8"), page
    st, h, body = srv.request("HEAD", "/compare")
    assert (st, body, h["content-length"], h["content-type"]) == (200, b"", str(len(index)), "text/html; charset=utf-8")
    st, h, body = srv.get("/favicon.ico")
    assert (st, body, h["content-type"]) == (200, (UI / "favicon.svg").read_bytes(), "image/svg+xml")


def test_gzip_when_accepted(ui_server):
    srv = ui_server.srv
    want = VENDOR["/ui/vendor/uPlot.esm.js"].read_bytes()
    etag = '"%s"' % hashlib.sha256(want).hexdigest()[:20]
    for ae in ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "*", "x-gzip"]:
        st, h, body = srv.request("GET", "/ui/vendor/uPlot.esm.js", headers={"Accept-Encoding": ae})
        assert (st, h.get("content-encoding"), h["vary"]) == (200, "gzip", "Accept-Encoding"), ae
        assert gzip.decompress(body) == want, ae
        assert h["etag"] == etag[:-1] + '-gz"', ae
        assert int(h["content-length"]) == len(body) < len(want) // 3
    for ae in ["identity", "gzip;q=0", "br", "*;q=0", "gzip;q=0, *", ""]:
        st, h, body = srv.request("GET", "/ui/vendor/uPlot.esm.js", headers={"Accept-Encoding": ae})
        assert (st, h.get("content-encoding"), body, h["vary"]) == (200, None, want, "Accept-Encoding"), ae


def test_etag_revalidation(ui_server):
    srv = ui_server.srv
    st, h, _ = srv.get("/ui/index.html")
    etag = h["etag"]
    gz = etag[:-1] + '-gz"'
    for inm in [etag, gz, "W/" + etag, '"other", ' + etag, "*"]:
        st, h2, body = srv.request("GET", "/ui/index.html", headers={"If-None-Match": inm})
        assert (st, body, h2["etag"]) == (304, b"", etag), inm
        assert "content-length" not in h2 and "transfer-encoding" not in h2, h2
    st, h2, body = srv.request("GET", "/", headers={"If-None-Match": gz, "Accept-Encoding": "gzip"})
    assert (st, body, h2["etag"]) == (304, b"", gz)
    for inm in ['"other"', etag[:-2] + '"', "W/\"x\""]:
        st, _, body = srv.request("GET", "/ui/index.html", headers={"If-None-Match": inm})
        assert (st, body) == (200, (UI / "index.html").read_bytes()), inm


def test_unknown_files_and_methods(ui_server):
    srv = ui_server.srv
    for path in ["/ui/nope.js", "/ui/js/", "/ui/vendor/", "/ui/package.json", "/ui/package-lock.json",
                 "/ui/node_modules/uplot/dist/uPlot.esm.js", "/ui/index.html.gz", "/uindex.html"]:
        st, h, body = srv.get(path)
        assert st == 404, (path, st)
        assert h["content-type"] == "application/json", path
    st, _, body = srv.get("/ui/nope.js")
    assert body == b'{"status":"error","errorType":"not_found","error":"no such file of the web UI: /ui/nope.js"}\n'
    st, h, body = srv.request("POST", "/ui/index.html", body=b"")
    assert (st, h["allow"]) == (405, "GET, HEAD")
    st, h, body = srv.request("POST", "/graph", body=b"")
    assert (st, h["allow"]) == (405, "GET, HEAD")
    # path normalisation: .. cannot leave /ui/ (h2o normalises the path before routing)
    st, _, body = srv.get("/ui/js/../index.html")
    assert (st, body) == (200, (UI / "index.html").read_bytes())


@pytest.mark.parametrize("width", [1280, 800])
def test_page_loads_clean_in_chromium(ui_server, browser, width):
    browser.open("/", width=width)
    browser.wait_js("document.readyState === 'complete'")
    browser.wait_for("body")
    assert browser.js("return window.innerWidth") == width
    assert browser.console_errors() == []
    assert browser.failed_requests() == []
    urls = {r.url for r in browser.requests()}
    assert ui_server.srv.url("/") in urls
    path = browser.screenshot("serve-%d" % width)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_harness_sees_errors(ui_server, browser):
    """The harness reports a console error and a failed request (so a clean page means clean)."""
    browser.open("/")
    browser.wait_js("document.readyState === 'complete'")
    browser.js("console.error('boom from the test'); fetch('/ui/missing.js').catch(() => {});")
    browser.wait_js("performance.getEntriesByName(location.origin + '/ui/missing.js').length > 0")
    errs = browser.console_errors()
    assert any("boom from the test" in e for e in errs), errs
    failed = browser.failed_requests()
    assert (ui_server.srv.url("/ui/missing.js"), 404) in failed, failed


def test_fixture_data(ui_server):
    """What ui_server pushed is there: 3 CPU instances x 12 points, plus the scraped gotarget."""
    d = ui_server
    assert len(d.pushes("go/cpu")) == 36
    assert d.t_last - d.t_first == 11 * 300
    types = d.types()
    assert "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta" in types
    assert "memory:inuse_space:bytes:space:bytes" in types
    if d.gotarget is not None:
        vals = d.srv.get_json("/api/v1/label/job/values")["data"]
        assert vals == ["api", "gotarget", "worker"]


def test_metrics_count_ui_files_under_one_handler(ui_server):
    srv = ui_server.srv

    def count(handler, code):
        return srv.metrics().get('profstore_http_requests_total{handler="%s",code="%s"}' % (handler, code), 0.0)

    f0, n0, p0 = count("/ui/:path", "200"), count("/ui/:path", "404"), count("/graph", "200")
    srv.get("/ui/index.html")
    srv.get("/ui/vendor/uPlot.min.css")
    srv.get("/ui/nope")
    srv.get("/graph")
    assert (count("/ui/:path", "200") - f0, count("/ui/:path", "404") - n0, count("/graph", "200") - p0) == (2, 1, 1)
