"""The web UI against hostile strings (issue 21 item 2), in headless Chromium:

  - every answer of the UI (pages, files, 304, 404) carries the Content-Security-Policy
    (scripts and styles of this origin only, no inline script, no framing), nosniff and
    Referrer-Policy; Chromium enforces it (an inline script injected into the page does not run)
    and no view of the UI breaks it (no console error on any page);
  - strings an outsider controls (a function name in a pushed profile, label values, a scrape path,
    a job name) show as text in the graph, compare, targets and status views: no element, no
    attribute and no script comes of them;
  - a scrape URL that is not http(s) (javascript:, data:, whatever /api/v1/targets says) is shown
    as text, never as a link; a target discovered with __scheme__ "javascript:..." is dropped.
"""
import json
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import free_port
from scrape_util import wait_for, write_atomic
from ui_util import CPU_NS, browser, chromium_driver  # noqa: F401 (fixtures)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
EVIL = "<img src=x onerror=window.__pwned=1>"
EVIL2 = "'><svg/onload=window.__pwned=2>"
EVIL_JS = "javascript:window.__pwned=3"
EVIL_PATH = '/debug/pprof/goroutine"><img src=x onerror=window.__pwned=4>'
JS_SCHEME = "javascript:alert(document.domain)//"

# what the page must not hold after rendering hostile strings: elements or handlers made of them
NOTHING_INJECTED = ("!window.__pwned && document.querySelectorAll('img, iframe, object, embed, "
                    "[onerror], [onload], [onclick], [onmouseover]').length === 0 && "
                    "[...document.querySelectorAll('[href], [src], [action]')].every(e => "
                    "!/^\\s*(javascript|data|vbscript):/i.test(e.getAttribute('href') || e.getAttribute('src') || "
                    "e.getAttribute('action') || ''))")


def evil_profile(ts: int) -> bytes:
    """A CPU profile whose functions are called EVIL, EVIL2 and EVIL_JS."""
    st = ["", "samples", "count", "cpu", "nanoseconds", "evil.go"]
    p = pd.Profile(string_table=st)
    p.sample_type = [pd.ValueType(1, 2), pd.ValueType(3, 4)]
    p.period_type = pd.ValueType(3, 4)
    p.period = 10_000_000
    p.time_nanos = ts * 10**9
    p.duration_nanos = 10 * 10**9
    p.mapping = [pd.Mapping(id=1, memory_start=0x400000, memory_limit=0x800000, filename=0, has_functions=True)]
    for i, name in enumerate([EVIL, EVIL2, EVIL_JS]):
        st.append(name)
        p.function.append(pd.Function(id=i + 1, name=len(st) - 1, filename=5, start_line=1))
        p.location.append(pd.Location(id=i + 1, mapping_id=1, address=0x400000 + 16 * (i + 1),
                                      line=[pd.Line(function_id=i + 1, line=1)]))
    p.sample.append(pd.Sample(location_id=[1, 2, 3], value=[5, 50_000_000]))
    p.sample.append(pd.Sample(location_id=[2, 3], value=[3, 30_000_000]))
    return pd.encode(p, gzip_level=1)


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    import time
    wd = tmp_path_factory.mktemp("ui_security")
    e = Env()
    sd = wd / "sd"
    sd.mkdir()
    write_atomic(sd / "t.json", json.dumps([{"targets": ["x"], "labels": {"__scheme__": JS_SCHEME}}]))
    cfg = wd / "p.yml"
    cfg.write_text(
        "global: {scrape_interval: 1h}\nscrape_configs:\n"
        "  - job_name: %s\n" % json.dumps("evil" + EVIL) +
        "    static_configs: [{targets: ['127.0.0.1:%d'], labels: %s}]\n" % (free_port(), json.dumps(
            {"team": EVIL, "note": EVIL2, "doc": EVIL_JS})) +
        "    file_sd_configs: [{files: ['%s/*.json']}]\n" % sd +
        "    relabel_configs: [{target_label: __profile_path__, replacement: %s}]\n" % json.dumps(EVIL_PATH) +
        "    profiling_config:\n      pprof_config: {memory: {enabled: false}, block: {enabled: false}, "
        "mutex: {enabled: false}, process_cpu: {enabled: false}}\n")
    e.srv = module_server_factory(name="uisec", config=str(cfg), retention="0")
    e.now = int(time.time())
    e.t = [e.now - 600, e.now - 300]
    for ts in e.t:
        for team in (EVIL, EVIL2):
            q = urllib.parse.urlencode({"time": str(ts), "labels": 'job="api",team="%s",doc="%s"' % (team, EVIL_JS)},
                                       quote_via=urllib.parse.quote)
            st, js = e.srv.push(evil_profile(ts), query=q)
            assert st == 200, (st, e.srv.last_raw[:300])
    yield e


def test_headers_on_every_ui_answer(env):
    srv = env.srv
    etag = srv.get("/ui/js/main.js")[1]["etag"]
    answers = [srv.get(p) for p in ("/", "/graph", "/targets", "/status", "/ui/js/main.js", "/ui/css/app.css",
                                    "/favicon.ico", "/ui/nope.js")]
    answers.append(srv.request("GET", "/ui/js/main.js", headers={"If-None-Match": etag}))
    answers.append(srv.request("HEAD", "/compare"))
    assert [a[0] for a in answers] == [200, 200, 200, 200, 200, 200, 200, 404, 304, 200]
    for st, hdrs, _ in answers:
        assert (hdrs.get("content-security-policy"), hdrs.get("x-content-type-options"),
                hdrs.get("referrer-policy")) == (CSP, "nosniff", "no-referrer"), st


def test_csp_enforced_and_kept_by_every_view(env, browser):
    """Chromium refuses an inline script under the policy, and every view (graph with its flame
    graph, table and breakdown, compare, targets, status) renders without a violation."""
    b = browser
    b.base_url = env.srv.url("")
    a, z = env.t[0] - 60, env.t[1] + 60
    b.open("/graph?" + urllib.parse.urlencode({"type": CPU_NS, "from": a, "to": z, "sel": 'job="api"', "bd": "team"},
                                               quote_via=urllib.parse.quote))
    b.wait_js("window.psApp && psApp.view && psApp.view.panel && psApp.view.panel.fg", 15, "the flame graph")
    b.wait_for("table.bd-table")
    assert b.console_errors() == []
    ran = b.js("const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
               "document.head.append(s); return window.__inline === 1;")
    assert ran is False
    errs = b.console_errors()
    assert len(errs) == 1 and "Executing inline script violates the following Content Security Policy directive " \
        "'script-src 'self''" in errs[0] and "The action has been blocked." in errs[0], errs


def wait_view(b, css):
    b.wait_js("document.readyState === 'complete'")
    b.wait_js("document.querySelector(%r) && !document.querySelector('[aria-busy=\"true\"]')" % css, 15, css)


def test_hostile_strings_stay_text_in_every_view(env, browser):
    b = browser
    b.base_url = env.srv.url("")
    a, z = env.t[0] - 60, env.t[1] + 60
    q = {"type": CPU_NS, "from": a, "to": z, "sel": 'job="api"', "bd": "team"}
    # graph: the legend, the flame graph (canvas) and its top table, the label breakdown
    b.open("/graph?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
    b.wait_js("window.psApp && psApp.view && psApp.view.panel && psApp.view.panel.fg", 15, "the flame graph")
    b.wait_for("table.bd-table")
    b.wait_js("document.body.innerText.includes(%s)" % json.dumps(EVIL), 10, "the function name as text")
    text = b.js("return document.body.innerText;")
    for s in (EVIL, EVIL2, EVIL_JS):
        assert s in text, s
    assert sorted(b.js("return [...document.querySelectorAll('table.bd-table tbody tr')].map(r => r.dataset.value);")) \
        == sorted([EVIL, EVIL2])
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    # a hover tooltip over the first frame below the root
    b.js("document.querySelector('.panel canvas') && document.querySelector('.panel canvas').scrollIntoView();")
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    # compare: the same series on both sides
    b.open("/compare?" + urllib.parse.urlencode({"type": CPU_NS, "bfrom": a, "bto": z, "cfrom": a, "cto": z,
                                                  "bsel": 'team="%s"' % EVIL, "csel": 'job="api"'},
                                                 quote_via=urllib.parse.quote))
    b.wait_js("window.psApp && psApp.view && psApp.view.diff && psApp.view.diff.fg", 15, "the diff")
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    # targets: the job name, the labels, the scrape URL with a hostile path
    b.open("/targets")
    wait_view(b, ".pg-targets-page")
    row = b.wait_for("tr.pg-target")
    assert b.js("return document.querySelector('.pg-pool-name').textContent;") == "evil" + EVIL
    url = "http://%s%s" % (env.srv.get_json("/api/v1/targets")["data"]["activeTargets"][0]["labels"]["instance"],
                           EVIL_PATH)
    assert b.js("return document.querySelector('tr.pg-target .pg-endpoint').textContent;") == url
    chips = b.js("return [...document.querySelectorAll('tr.pg-target .pg-label')].map(e => e.textContent);")
    for k, v in (("team", EVIL), ("note", EVIL2), ("doc", EVIL_JS)):
        assert '%s="%s"' % (k, v) in chips
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    assert row is not None
    # status: the configuration (job name, labels, path) as text
    b.open("/status")
    wait_view(b, ".pg-status-page")
    yaml = env.srv.get_json("/api/v1/status/config")["data"]["yaml"]
    assert EVIL in yaml
    b.wait_js("document.querySelector('pre.pg-yaml') && document.querySelector('pre.pg-yaml').textContent === %s"
              % json.dumps(yaml), 10, "the config as text")
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    assert b.console_errors() == []


def test_a_javascript_target_is_dropped(env):
    d = env.srv.get_json("/api/v1/targets")["data"]
    assert [t["discoveredLabels"]["__scheme__"] for t in d["droppedTargets"]] == [JS_SCHEME]
    assert all(t["scrapeUrl"].startswith("http://") for t in d["activeTargets"])


def test_non_http_scrape_urls_are_never_links(env, browser):
    """Whatever /api/v1/targets says (here: answers replaced in the page before it loads), a
    scrape URL that is not http(s) is text: no <a href="javascript:..."> exists to be clicked."""
    b = browser
    b.base_url = env.srv.url("")
    urls = ["javascript:alert(document.domain)//://x:80/debug/pprof/goroutine", " JaVaScRiPt:window.__pwned=5",
            "data:text/html,<script>window.__pwned=6</script>", "vbscript:x", "file:///etc/passwd",
            "http://127.0.0.1:1/debug/pprof/goroutine"]
    fake = {"status": "success", "data": {"droppedTargets": [], "activeTargets": [
        {"discoveredLabels": {}, "labels": {"job": "j", "instance": "i%d" % k}, "scrapePool": "j", "scrapeUrl": u,
         "globalUrl": u, "profileName": "goroutine", "lastError": EVIL, "lastScrape": "0001-01-01T00:00:00Z",
         "lastScrapeDuration": 0, "health": "unknown", "scrapeInterval": "1h", "scrapeTimeout": "10s"}
        for k, u in enumerate(urls)]}}
    script = ("(() => { const body = %s; const real = window.fetch;"
              "window.fetch = (u, o) => String(u).includes('/api/v1/targets') ? "
              "Promise.resolve(new Response(body, {status: 200, headers: {'Content-Type': 'application/json'}})) "
              ": real(u, o); })();" % json.dumps(json.dumps(fake)))
    ident = b.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})["identifier"]
    try:
        b.open("/targets")
        wait_view(b, ".pg-targets-page")
        wait_for(lambda: len(b.find_all("tr.pg-target")) == len(urls), 10, "every row")
        cells = b.js("return [...document.querySelectorAll('tr.pg-target .pg-endpoint')].map(c => "
                     "[c.textContent, c.querySelector('a') ? c.querySelector('a').getAttribute('href') : null]);")
        assert sorted(cells) == sorted([[u, u if u.startswith("http://") else None] for u in urls])
        assert b.js("return %s;" % NOTHING_INJECTED) is True
        assert b.js("return [...document.querySelectorAll('tr.pg-target .pg-error')].map(c => c.textContent);") \
            == [EVIL] * len(urls)
    finally:
        b.driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": ident})
    assert b.console_errors() == []
