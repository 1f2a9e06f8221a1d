"""The targets page (web/ui/js/targets.js) and the status page (web/ui/js/status.js) in headless
Chromium, against two servers: one scraping a real gotarget (job "gotarget", every profile up) and
a job whose endpoint refuses connections (down, with its error), and one with pushed fixtures only
(its counts do not change while the test reads them); and one with native frames without symbols.
What the pages show is what the APIs say: rows, health, labels, errors, filters; build info,
storage and series counts, the build ids missing symbols, flags, config. No
console error, no failed request; screenshots at 1280 and 800 px."""

import time

import pytest

from conftest import free_port
from scrape_util import active_targets, wait_for
from test_symbols import T0
from test_symbols_missing import progs  # noqa: F401
from test_symbols_missing import push as push_native
from ui_util import Browser, browser, chromium_driver, ui_data  # noqa: F401

DOWN_PORT = free_port()
DOWN_JOB = ("  - job_name: down\n"
            "    static_configs: [{targets: ['127.0.0.1:%d']}]\n"
            "    profiling_config:\n"
            "      pprof_config:\n"
            "        memory: {enabled: false}\n"
            "        block: {enabled: false}\n"
            "        mutex: {enabled: false}\n"
            "        process_cpu: {enabled: false}\n" % DOWN_PORT)


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    with ui_data(tmp_path_factory.mktemp("pages-scraped"), extra_jobs=DOWN_JOB) as d:
        if d.gotarget is None:
            pytest.skip("go is not installed (gotarget)")

        def settled():
            ts = active_targets(d.srv)
            return len(ts) == 6 and all(t["health"] == ("down" if t["scrapePool"] == "down" else "up") for t in ts)
        wait_for(settled, 40, "every gotarget profile up and the down job down")
        yield d


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    with ui_data(tmp_path_factory.mktemp("pages-pushed"), scrape=False) as d:
        yield d


def show(b: Browser, path: str, css: str, width: int = 1280):
    """Opens path and waits for the page module's root element (css) to have loaded everything."""
    b.open(path, width=width)
    b.wait_js("document.readyState === 'complete'")
    b.wait_js("document.querySelector(%r) && document.querySelector(%r).getAttribute('aria-busy') === 'false' "
              "&& !document.querySelector('[aria-busy=\"true\"]')" % (css, css), timeout=15,
              what="the page %s rendered" % path)


def clean(b: Browser):
    assert b.console_errors() == []
    assert b.failed_requests() == []


@pytest.mark.parametrize("width", [1280, 800])
def test_targets_page(scraped, browser, width):
    browser.base_url = scraped.srv.url("")
    show(browser, "/targets", ".pg-targets-page", width)
    api = active_targets(scraped.srv)
    rows = browser.js("""return [...document.querySelectorAll('tr.pg-target')].map(r => ({
        url: r.dataset.url, health: r.dataset.health,
        cells: [...r.cells].map(c => c.innerText.trim())}))""")
    assert sorted((r["url"], r["health"]) for r in rows) == sorted((t["scrapeUrl"], t["health"]) for t in api)
    by_url = {t["scrapeUrl"]: t for t in api}
    for r in rows:
        t = by_url[r["url"]]
        endpoint, profile, state, labels, last, dur, err = r["cells"]
        assert (endpoint, profile, state) == (t["scrapeUrl"], t["profileName"], t["health"])
        if t["health"] == "up":
            assert err == "" == t["lastError"]
        else:  # curl's message, with its "after N ms" that may change from one scrape to the next
            assert err.startswith("Failed to connect to 127.0.0.1 port %d after " % DOWN_PORT), err
        assert labels.split() == sorted('%s="%s"' % kv for kv in t["labels"].items())
        assert last.endswith(" ago"), last
    pools = browser.js("return [...document.querySelectorAll('details.pg-pool')].map(d => d.dataset.pool + ' ' + "
                       "d.querySelector('.pg-pool-count').textContent)")
    assert pools == ["down (0/1 up)", "gotarget (5/5 up)"]
    assert browser.text(".pg-summary") == "6 targets, 5 up"
    down = [r for r in rows if r["health"] == "down"]
    assert len(down) == 1, down
    browser.screenshot("targets-%d" % width)
    clean(browser)


def test_targets_filters(scraped, browser):
    browser.base_url = scraped.srv.url("")
    show(browser, "/targets", ".pg-targets-page")

    def urls():
        return sorted(browser.js("return [...document.querySelectorAll('tr.pg-target')].map(r => r.dataset.url)"))

    all_urls = sorted(t["scrapeUrl"] for t in active_targets(scraped.srv))
    assert urls() == all_urls
    browser.wait_for("#pg-unhealthy").click()
    assert urls() == ["http://127.0.0.1:%d/debug/pprof/goroutine" % DOWN_PORT]
    browser.wait_for("#pg-unhealthy").click()
    f = browser.wait_for("input.pg-filter")
    f.send_keys("process_cpu")
    assert urls() == ["http://%s/debug/pprof/profile?seconds=5" % scraped.gotarget.address]
    f.clear()
    f.send_keys("nomatch-anywhere")
    assert urls() == []
    assert browser.text(".pg-pools") == "No target matches the filter."
    f.clear()
    f.send_keys(" ")  # clear() sends no input event; a key does
    assert urls() == all_urls
    # folding a job hides its rows and survives the 10 s refresh (and the Refresh button)
    browser.js("document.querySelector('details.pg-pool[data-pool=gotarget] > summary').click()")
    browser.wait_for("button.pg-refresh").click()
    browser.wait_js("document.querySelector('.pg-targets-page').getAttribute('aria-busy') === 'false'")
    assert browser.js("return document.querySelector('details.pg-pool[data-pool=gotarget]').open") is False
    clean(browser)


def kv(browser, section):
    return browser.js("return Object.fromEntries([...document.querySelectorAll(%r)].map("
                      "r => [r.dataset.key, r.cells[1].innerText.trim()]))" % ("#%s tr[data-key]" % section))


@pytest.mark.parametrize("width", [1280, 800])
def test_status_page(pushed, browser, width):
    srv = pushed.srv
    browser.base_url = srv.url("")
    show(browser, "/status", ".pg-status-page", width)
    b = srv.get_json("/api/v1/status/buildinfo")["data"]
    assert kv(browser, "pg-build") == {"version": b["version"], "revision": b["revision"], "branch": b["branch"],
                                       "buildUser": b["buildUser"], "buildDate": b["buildDate"],
                                       "compiler": b["goVersion"]}
    rt = kv(browser, "pg-runtime")
    assert rt["retention"] == "15d" and rt["reload"] == "successful"
    t = srv.get_json("/api/v1/status/tsdb")["data"]
    st = kv(browser, "pg-storage")
    n = len(pushed.pushed)
    # 3 instances with CPU (2 series each), one with heap (4 types) and goroutine (1), each in 2 versions
    assert (t["headStats"]["numSeries"], t["storage"]["profileSeries"]) == (22, 22)
    assert st["numSeries"] == "22" and st["profileSeries"] == "22" and st["floatSeries"] == "0"
    assert st["headRecords"] == "{:,}".format(t["storage"]["headRecords"]) == "{:,}".format(12 * 6 + 12 * 5)
    assert n == 12 * 5
    by_type = browser.js("return [...document.querySelectorAll('#pg-storage table[data-what=\"profile type\"] tbody tr')]"
                         ".map(r => [r.dataset.name, r.cells[1].innerText.trim()])")
    assert by_type == [[r["name"], str(r["value"])] for r in t["seriesCountByMetricName"]]
    assert by_type[:2] == [["process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", "6"],
                           ["process_cpu:samples:count:cpu:nanoseconds:delta", "6"]]
    # Go's profiles are symbolized: no build id misses symbols
    assert srv.get_json("/api/v1/status/symbols")["data"]["missing"] == {"buildIds": 0, "samples": 0}
    assert kv(browser, "pg-symbols") == {"missing": "0 (0)", "available": "0 (0)"}
    assert browser.js("return document.querySelector('#pg-symbols p.hint').textContent") == \
        "No build id is missing symbols."
    flags = srv.get_json("/api/v1/status/flags")["data"]
    shown = browser.js("return [...document.querySelectorAll('tr[data-flag]')].map(r => r.dataset.flag)")
    assert shown == sorted(flags)
    browser.screenshot("status-%d" % width)
    clean(browser)


def test_status_flag_filter_and_config(scraped, browser):
    srv = scraped.srv
    browser.base_url = srv.url("")
    show(browser, "/status", ".pg-status-page")
    f = browser.wait_for("#pg-flags input.pg-filter")
    f.send_keys("retention")
    shown = browser.js("return [...document.querySelectorAll('tr[data-flag]')].map(r => r.dataset.flag)")
    flags = srv.get_json("/api/v1/status/flags")["data"]
    assert shown == sorted(k for k, v in flags.items() if "retention" in k or "retention" in v)
    assert shown == ["retention", "storage.retention-interval"]
    yaml = srv.get_json("/api/v1/status/config")["data"]["yaml"]
    browser.js("document.querySelector('#pg-config details').open = true")
    assert browser.js("return document.querySelector('#pg-config pre').textContent") == yaml
    st = kv(browser, "pg-storage")
    floats = [s for s in srv.series() if s.get("kind") == "float"]
    assert len(floats) > 0
    t = srv.get_json("/api/v1/status/tsdb")["data"]["storage"]
    assert t["floatSeries"] == len(floats) or t["floatSeries"] > len(floats)  # scrapes go on
    assert int(st["floatSeries"].replace(",", "")) <= t["floatSeries"]
    clean(browser)


def test_status_shows_errors_inline(pushed, browser):
    """A request that fails shows the server's message in its own section, the others still load."""
    browser.base_url = pushed.srv.url("")
    browser.open("/status")
    browser.wait_js("document.readyState === 'complete'")
    html = browser.js_async("""const done = arguments[arguments.length - 1];
        import('/ui/js/status.js').then(async (m) => {
          const api = { get: (path) => path.endsWith('/tsdb')
              ? Promise.reject(new Error('limit: must be 1 to 10000, got 0')) : fetch(path).then(r => r.json()).then(j => j.data) };
          const root = document.createElement('div'); document.body.append(root);
          await m.render(root, api);
          done(root.querySelector('#pg-storage .error').textContent + '|' + root.querySelector('#pg-build tr[data-key=version] td').textContent);
        }, (e) => done('import failed: ' + e));""")
    assert html == "Storage: limit: must be 1 to 10000, got 0|0.1.0"


def test_status_forwarding(make_server, tmp_path, browser):
    """The status page's Forwarding section: one row per endpoint with its counters."""
    b = make_server(name="b", retention="0")
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n  - name: central\n    url: http://127.0.0.1:%d\n"
                   "    queue_config: {batch_send_deadline: 100ms}\n" % b.port)
    a = make_server(name="a", retention="0", config=str(cfg))
    for i in range(3):
        st, js = a.push("go/cpu-01.pb.gz", time=str(int(time.time()) - 600 + i), labels='{job="ui"}')
        assert st == 200, js
    wait_for(lambda: a.get_json("/api/v1/status/forward")["data"][0]["sent"] == 3, 20, "3 forwarded")
    browser.base_url = a.url("")
    show(browser, "/status", ".pg-status-page")
    rows = browser.js("return [...document.querySelectorAll('#pg-forward tbody tr')]"
                      ".map(r => [r.dataset.endpoint, ...[...r.cells].slice(1, 4).map(c => c.innerText.trim())])")
    assert rows == [["central", "pyroscope_push", "3", "0"]]
    clean(browser)


def test_status_symbols(make_server, progs, tmp_path, browser):
    """The status page's Symbols section: the build id missing symbols (one program's debug file is
    under --symbols.dir, the other's not) with its file, samples, profiles and values, as
    /api/v1/status/symbols says; the counts of both."""
    a, b = progs
    symdir = tmp_path / "debug"
    symdir.mkdir()
    a.place(symdir)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push_native(srv, a, b, T0)
    browser.base_url = srv.url("")
    show(browser, "/status", ".pg-status-page")
    d = srv.get_json("/api/v1/status/symbols")["data"]
    assert [e["buildId"] for e in d["buildIds"]] == [b.build_id]
    assert kv(browser, "pg-symbols") == {"missing": "1 (23)", "available": "1 (%d)" % (len(a.addrs) + 3)}
    rows = browser.js("return [...document.querySelectorAll('#pg-symbols table.pg-symbols tbody tr')]"
                      ".map(r => [r.dataset.buildId, ...[...r.cells].slice(1, 5).map(c => c.innerText.trim())])")
    assert rows == [[b.build_id, "/usr/lib/libother.so", "23", "1",
                     "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta: 430ms"]]
    totals = browser.js("return [...document.querySelectorAll('#pg-symbols td div[data-type]')]"
                        ".map(x => [x.dataset.type, Number(x.dataset.total)])")
    assert totals == [[v["type"], v["total"]] for v in d["buildIds"][0]["values"]]
    assert totals == [["process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", 43 * 10_000_000]]
    browser.js("document.querySelector('#pg-symbols').scrollIntoView()")
    browser.screenshot("status-symbols")
    clean(browser)
