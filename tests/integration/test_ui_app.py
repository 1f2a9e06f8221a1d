"""The web UI's app (web/ui/index.html, js/main.js, query.js, graph.js, state.js, breakdown.js, panel.js)
in headless Chromium against a real server holding the ui_server fixture's pushes (ui_util.py: three
instances, twelve CPU profiles each, 5 min apart, version v1 then v2) and a scraped gotarget.

Expected values come from the fixtures (README totals of the pushed files) and from the server's own
HTTP answers, never from the page. Screenshots of every view go to the test's tmp dir (and to
$PS_UI_SCREENSHOTS)."""

import json
import re
import urllib.parse

import pytest

from conftest import README_TOTALS, go_pprof
from ui_util import CPU_NS, browser, chromium_driver, ui_server  # noqa: F401 (fixtures)
from ui_util import no_errors, state, wait_graph


# ---- helpers ------------------------------------------------------------------------------------

def rng(ui):
    return ui.t_first - 60, ui.t_last + 60


def graph_url(ui, view="graph", **params):
    a, b = rng(ui)
    p = {"type": CPU_NS, "from": a, "to": b}
    p.update(params)
    return "/%s?%s" % (view, urllib.parse.urlencode(p, quote_via=urllib.parse.quote))


def wait_panel(browser, panel="psApp.view.panel"):
    """Waits until the panel's profile has loaded (no request of its own pending) -> its data-total."""
    browser.wait_js("%s && %s.fg && !%s.el.classList.contains('busy')" % (panel, panel, panel), 15, panel)
    return browser.js("return %s.totalEl.dataset;" % panel)


def cpu_total(pushes):
    return sum(README_TOTALS[p.file][1] for p in pushes)


def api_fg(ui, path="/api/v1/profiles/query", **params):
    params.setdefault("format", "flamegraph")
    return ui.query_json(path, **params)


def drag(browser, t0, t1, graph="psApp.view.graph"):
    """Drags over the graph from time t0 to t1 (unix s) at mid height."""
    from selenium.webdriver.common.action_chains import ActionChains
    over = browser.js("const o = %s.u.over; o.scrollIntoView({block: 'center'}); return o;" % graph)
    w, h, x0, x1 = browser.js(
        "const u = %s.u, r = u.over.getBoundingClientRect();"
        "return [r.width, r.height, u.valToPos(arguments[0], 'x'), u.valToPos(arguments[1], 'x')];" % graph, t0, t1)
    ActionChains(browser.driver).move_to_element_with_offset(over, int(x0 - w / 2), 0).click_and_hold() \
        .move_by_offset(int(x1 - x0), 0).release().perform()


def unhover(browser):
    """Moves the mouse onto the page's header (no graph cursor or hover in a screenshot)."""
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).move_to_element(browser.wait_for("header.top .brand")).perform()


def click_point(browser, series, idx):
    from selenium.webdriver.common.action_chains import ActionChains
    over = browser.js("const o = psApp.view.graph.u.over; o.scrollIntoView({block: 'center'}); return o;")
    w, h, x, y = browser.js(
        "const u = psApp.view.graph.u, r = u.over.getBoundingClientRect();"
        "return [r.width, r.height, u.valToPos(u.data[0][arguments[1]], 'x'),"
        " u.valToPos(u.data[arguments[0]][arguments[1]], 'y')];", series, idx)
    ActionChains(browser.driver).move_to_element_with_offset(over, int(x - w / 2), int(y - h / 2)) \
        .pause(0.1).click().perform()


# ---- tests --------------------------------------------------------------------------------------

def test_page_loads_types_and_autocompletion(ui_server, browser):
    from selenium.webdriver.common.keys import Keys
    browser.open("/")
    wait_graph(browser)
    assert urllib.parse.urlparse(browser.driver.current_url).path == "/graph"
    # the type picker lists exactly the stored types, as "name — sample type (unit)"
    types = ui_server.srv.get_json("/api/v1/profiles/types")["data"]
    opts = browser.js("return [...document.querySelectorAll('select.type option')].map(o => [o.value, o.textContent]);")
    assert sorted(o[0] for o in opts) == sorted(t["id"] for t in types)
    cpu = [o[1] for o in opts if o[0] == CPU_NS]
    assert cpu == ["process_cpu — cpu (nanoseconds) per interval"]
    # the default type is the CPU one; the picker switches the type (and the URL)
    assert state(browser)["type"] == CPU_NS
    from selenium.webdriver.support.ui import Select
    Select(browser.wait_for("select.type")).select_by_value("goroutine:goroutine:count:goroutine:count")
    browser.wait_js("new URLSearchParams(location.search).get('type') === 'goroutine:goroutine:count:goroutine:count'", 10)
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.axes[1].label === 'count'", 10, "the goroutine graph")
    a, b = browser.js("return psApp.view.graph.range;")
    want = ui_server.query_json("/api/v1/series", **{"match[]": "goroutine:goroutine:count:goroutine:count", "start": a, "end": b})["data"]
    pushed = {'{instance="a:6060", job="api", version="%s"}' % v for v in ("v1", "v2")}
    labels = set(browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);"))
    assert pushed <= labels and len(labels) == len(want)
    Select(browser.wait_for("select.type")).select_by_value(CPU_NS)
    browser.wait_js("new URLSearchParams(location.search).get('type') === '%s'" % CPU_NS, 10)
    # label names: those of every profile type's series, without __name__
    sel = browser.wait_for("input.selector")
    sel.click()
    browser.wait_for("ul.suggest li")
    names = browser.js("return [...document.querySelectorAll('ul.suggest li')].map(li => li.textContent);")
    every = '{__name__=~"%s"}' % "|".join(t["id"] for t in types)
    want = [n for n in ui_server.srv.get_json("/api/v1/labels?match[]=" + urllib.parse.quote(every))["data"]
            if n != "__name__"]
    assert sorted(names) == sorted(want) == ["env", "instance", "job", "version"]
    # a value list filtered by the matchers already typed: job="api" has instances a and b only
    sel.send_keys('job="api", instance="')
    browser.wait_js("[...document.querySelectorAll('ul.suggest li')].map(li => li.textContent).join(',') === 'a:6060,b:6060'",
                    10, "instance values of job api")
    # keyboard: ↓ Enter takes the first value
    sel.send_keys(Keys.ARROW_DOWN, Keys.ENTER)
    assert sel.get_attribute("value") == 'job="api", instance="a:6060"'
    # name prefix filters; a name already used is not offered again
    sel.send_keys(", ver")
    browser.wait_js("[...document.querySelectorAll('ul.suggest li')].map(li => li.textContent).join(',') === 'version'", 10)
    sel.send_keys(Keys.ARROW_DOWN, Keys.ENTER)
    assert sel.get_attribute("value") == 'job="api", instance="a:6060", version='
    browser.screenshot("graph-autocomplete")
    # Enter runs the query: the selector goes into the URL
    sel.send_keys(Keys.ESCAPE, '"v2"', Keys.ENTER)
    browser.wait_js("new URLSearchParams(location.search).get('sel') === 'job=\"api\", instance=\"a:6060\", version=\"v2\"'", 10)
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.series.length === 2", 10, "the one series")
    # "/" focuses the selector from anywhere on the page
    browser.js("document.activeElement.blur();")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).send_keys("/").perform()
    assert browser.js("return document.activeElement.classList.contains('selector');") is True
    no_errors(browser)


def test_graph_one_line_per_series_with_right_points(ui_server, browser):
    browser.open(graph_url(ui_server, sel='job="api"'))
    wait_graph(browser)
    data = browser.js("return psApp.view.graph.u.data;")
    labels = browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);")
    # one line per (instance, version) series of job api, one point per pushed profile
    series = sorted({(p.labels["instance"], p.labels["version"]) for p in ui_server.pushes(job="api")})
    assert sorted(labels) == sorted('{instance="%s", job="api", version="%s"}' % s for s in series)
    for i, lab in enumerate(labels):
        inst, ver = re.search(r'instance="([^"]+)".*version="([^"]+)"', lab).groups()
        pushes = ui_server.pushes(instance=inst, version=ver)
        pts = [(t, v) for t, v in zip(data[0], data[i + 1]) if v is not None]
        assert [t for t, _ in pts] == [p.ts for p in pushes]
        # seconds of CPU on the axis
        assert [round(v * 1e9) for _, v in pts] == [README_TOTALS[p.file][1] for p in pushes]
    assert browser.js("return psApp.view.graph.u.axes[1].label;") == "seconds"
    # sum by version (ticked in the query bar): two lines, each the sum over instances a and b at each push time
    browser.js("document.querySelector('details.sumby').open = true;")
    browser.wait_for("details.sumby input[value=version]").click()
    browser.wait_js("new URLSearchParams(location.search).get('by') === 'version'", 10)
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.series.length === 3", 10, "two groups")
    labels = browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);")
    assert labels == ['{version="v1"}', '{version="v2"}']
    data = browser.js("return psApp.view.graph.u.data;")
    for i, ver in enumerate(["v1", "v2"]):
        pts = [(t, round(v * 1e9)) for t, v in zip(data[0], data[i + 1]) if v is not None]
        ts = sorted({p.ts for p in ui_server.pushes(job="api", version=ver)})
        assert pts == [(t, cpu_total([p for p in ui_server.pushes(job="api") if p.ts == t])) for t in ts]
    browser.screenshot("graph-sum-by")
    no_errors(browser)


def test_drag_range_merges_and_click_point_selects_one(ui_server, browser):
    browser.open(graph_url(ui_server, sel='job="api"'))
    wait_graph(browser)
    whole = wait_panel(browser)
    assert int(whole["total"]) == cpu_total(ui_server.pushes(job="api"))
    # drag between push times: from the middle of the 2nd and 3rd pushes to that of the 7th and 8th
    t = sorted({p.ts for p in ui_server.pushes(job="api")})
    drag(browser, (t[1] + t[2]) / 2, (t[6] + t[7]) / 2)
    browser.wait_js("new URLSearchParams(location.search).get('sto')", 10, "a selection in the URL")
    s = state(browser)
    got = wait_panel(browser)
    fg = api_fg(ui_server, query=CPU_NS + '{job="api"}', start=s["sfrom"], end=s["sto"])
    inside = [p for p in ui_server.pushes(job="api") if float(s["sfrom"]) <= p.ts <= float(s["sto"])]
    assert sorted({p.ts for p in inside}) == t[2:7]
    assert int(got["total"]) == fg["total"] == cpu_total(inside)
    # the selection is drawn on the graph
    assert browser.js("return psApp.view.graph.sel;") == [float(s["sfrom"]), float(s["sto"])]
    unhover(browser)
    browser.screenshot("graph-range")
    # "compare with…": Compare, the selection as its baseline; back returns here
    browser.wait_for("button.tocompare").click()
    browser.wait_js("location.pathname === '/compare'", 10)
    c = state(browser)
    assert (c["bsfrom"], c["bsto"], c["bsel"], c["csel"]) == (s["sfrom"], s["sto"], 'job="api"', 'job="api"')
    assert int(wait_panel(browser, "psApp.view.left")["total"]) == cpu_total(inside)
    assert int(wait_panel(browser, "psApp.view.right")["total"]) == cpu_total(ui_server.pushes(job="api"))
    browser.driver.back()
    browser.wait_js("location.pathname === '/graph' && psApp.view.graph && psApp.view.graph.u", 10)
    assert state(browser) == s
    assert int(wait_panel(browser)["total"]) == cpu_total(inside)
    # a click on a point: that one profile
    labels = browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);")
    k = labels.index('{instance="b:6060", job="api", version="v1"}')
    click_point(browser, k + 1, browser.js("return psApp.view.graph.u.data[0].indexOf(arguments[0]);", t[3]))
    browser.wait_js("new URLSearchParams(location.search).get('ssel')", 10, "a point in the URL")
    s = state(browser)
    assert (s["sfrom"], s["sto"]) == ("%.3f" % t[3], "%.3f" % t[3])
    assert s["ssel"] == 'instance="b:6060", job="api", version="v1"'
    one = ui_server.pushes(instance="b:6060", version="v1")
    one = [p for p in one if p.ts == t[3]]
    assert len(one) == 1
    got = wait_panel(browser)
    assert int(got["total"]) == README_TOTALS[one[0].file][1]
    assert browser.js("return psApp.view.graph.sel;") == [float(t[3]), float(t[3])]
    # by keyboard: → → ↓ Enter = the 2nd profile time, the 2nd series with a value there
    from selenium.webdriver.common.keys import Keys
    data = browser.js("return psApp.view.graph.u.data;")
    with_value = [k for k in range(1, len(data)) if data[k][1] is not None]
    browser.js("document.querySelector('.graph').focus();")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_DOWN, Keys.ENTER).perform()
    browser.wait_js("new URLSearchParams(location.search).get('sfrom') === '%.3f'" % data[0][1], 10, "the keyboard's point")
    s = state(browser)
    assert s["ssel"] == labels[with_value[1] - 1].strip("{}")
    pushed = [p for p in ui_server.pushes(job="api") if p.ts == data[0][1]
              and '{instance="%s", job="api", version="%s"}' % (p.labels["instance"], p.labels["version"]) == labels[with_value[1] - 1]]
    assert int(wait_panel(browser)["total"]) == cpu_total(pushed) and len(pushed) == 1
    no_errors(browser)


def test_point_shows_its_profile_by_id_and_the_link_shares_it(ui_server, browser):
    browser.open(graph_url(ui_server, sel='job="api"'))
    wait_graph(browser)
    wait_panel(browser)
    t = sorted({p.ts for p in ui_server.pushes(job="api")})
    labels = browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);")
    k = labels.index('{instance="a:6060", job="api", version="v1"}')
    click_point(browser, k + 1, browser.js("return psApp.view.graph.u.data[0].indexOf(arguments[0]);", t[2]))
    browser.wait_js("new URLSearchParams(location.search).get('pid')", 10, "the point's profile id in the URL")
    s = state(browser)
    # the id is the one the server lists for that series at that time (its own API, not the page's)
    one = [p for p in ui_server.pushes(instance="a:6060", version="v1") if p.ts == t[2]]
    assert len(one) == 1
    ids = ui_server.query_json("/api/v1/profiles/ids", query=CPU_NS + '{instance="a:6060",job="api",version="v1"}',
                               start=str(t[2]), end=str(t[2]))["data"]
    assert [(d["id"], d["total"]) for d in ids] == [(s["pid"], README_TOTALS[one[0].file][1])]
    assert (s["sfrom"], s["sto"]) == ("%.3f" % t[2], "%.3f" % t[2])
    got = wait_panel(browser)
    assert int(got["total"]) == README_TOTALS[one[0].file][1]
    # shown by id: the panel's profile and its pprof link are /api/v1/profile?id=
    assert any("/api/v1/profile?" in r.url and "id=" + s["pid"] in r.url for r in browser.requests())
    link = browser.js("return psApp.view.panel.pprofLink.href;")
    assert urllib.parse.urlparse(link).path == "/api/v1/profile"
    assert urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["id"] == [s["pid"]]
    assert browser.wait_for(".selinfo .pid code").text == s["pid"]
    no_errors(browser)
    # a shared link (the URL as it is) opens the same profile by id in a fresh page
    url = browser.driver.current_url
    browser.open("about:blank")
    browser.reset_logs()
    browser.open(url)
    wait_graph(browser)
    assert int(wait_panel(browser)["total"]) == README_TOTALS[one[0].file][1]
    assert state(browser)["pid"] == s["pid"]
    assert any("/api/v1/profile?" in r.url and "id=" + s["pid"] in r.url for r in browser.requests())
    assert browser.js("return psApp.view.graph.sel;") == [float(t[2]), float(t[2])]
    # a range selection drops the id; clearing the selection too
    drag(browser, (t[1] + t[2]) / 2, (t[6] + t[7]) / 2)
    browser.wait_js("new URLSearchParams(location.search).get('sfrom') !== new URLSearchParams(location.search).get('sto')",
                    10, "a range in the URL")
    assert "pid" not in state(browser)
    wait_panel(browser)
    no_errors(browser)


def test_compare_diff_totals_match_profiles_diff(ui_server, browser):
    a, b = rng(ui_server)
    mid = (ui_server.t_first + ui_server.t_last) // 2 + 1
    # absolute values (norm=none): windows of different lengths compare rates by default
    # (test_query_aggregation.py checks those)
    params = dict(type=CPU_NS, bsel='job="api"', bfrom=a, bto=mid, csel='job="api",instance="a:6060"', cfrom=mid, cto=b,
                  norm="none")
    browser.open("/compare?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    browser.wait_js("psApp.view && psApp.view.diff", 15)
    left, right, diff = (wait_panel(browser, "psApp.view." + p) for p in ("left", "right", "diff"))
    base_q, cmp_q = CPU_NS + '{job="api"}', CPU_NS + '{job="api",instance="a:6060"}'
    want = api_fg(ui_server, "/api/v1/profiles/diff", base=base_q, base_start=a, base_end=mid,
                  compare=cmp_q, compare_start=mid, compare_end=b, normalize="none")
    assert diff["normalize"] == want["normalize"] == "none"
    base_p = [p for p in ui_server.pushes(job="api") if p.ts <= mid]
    cmp_p = [p for p in ui_server.pushes(instance="a:6060") if p.ts >= mid]
    assert int(diff["left"]) == want["left_ticks"] == cpu_total(base_p)
    assert int(diff["right"]) == want["right_ticks"] == cpu_total(cmp_p)
    assert int(left["total"]) == cpu_total(base_p)
    assert int(right["total"]) == cpu_total(cmp_p)
    # the table of largest changes is profiles/diff's format=top, in its order
    top = ui_server.query_json("/api/v1/profiles/diff", base=base_q, base_start=a, base_end=mid, compare=cmp_q,
                               compare_start=mid, compare_end=b, format="top", limit=500, normalize="none")
    names = browser.js("return psApp.view.diff.table.names.slice(0, 10);")
    assert names == [r["function"] for r in top["rows"][:10]]
    # the pprof link is the diff's
    href = browser.js("return psApp.view.diff.pprofLink.href;")
    assert urllib.parse.urlparse(href).path == "/api/v1/profiles/diff"
    # a window dragged on the baseline's graph: the baseline and the diff take it
    t = sorted({p.ts for p in ui_server.pushes(job="api")})
    browser.wait_js("psApp.view.bs.graph.u", 10, "the baseline's graph")
    drag(browser, (t[0] + t[1]) / 2, (t[3] + t[4]) / 2, "psApp.view.bs.graph")
    browser.wait_js("new URLSearchParams(location.search).get('bsto')", 10, "the baseline window in the URL")
    s = state(browser)
    browser.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left !== %d" % cpu_total(base_p), 10)
    left, diff = wait_panel(browser, "psApp.view.left"), wait_panel(browser, "psApp.view.diff")
    win = [p for p in ui_server.pushes(job="api") if float(s["bsfrom"]) <= p.ts <= float(s["bsto"])]
    assert sorted({p.ts for p in win}) == t[1:4]
    assert int(left["total"]) == int(diff["left"]) == cpu_total(win)
    assert int(diff["right"]) == cpu_total(cmp_p)
    assert browser.js("return psApp.view.bs.graph.sel;") == [float(s["bsfrom"]), float(s["bsto"])]
    browser.js("window.scrollTo(0, 0);")
    unhover(browser)
    browser.screenshot("compare")
    browser.js("psApp.view.diff.el.scrollIntoView({block: 'start'});")
    browser.screenshot("compare-diff")
    browser.set_width(800)
    browser.js("window.scrollTo(0, 0);")
    browser.screenshot("compare-800")
    no_errors(browser)


def test_label_breakdown_sums_to_the_whole_and_narrows(ui_server, browser):
    browser.open(graph_url(ui_server, sel='job="api"', bd="instance"))
    wait_graph(browser)
    total = int(wait_panel(browser)["total"])
    browser.wait_for("table.bd-table")
    rows = browser.js("return [...document.querySelectorAll('table.bd-table tbody tr')].map(r => [r.dataset.value, +r.dataset.total]);")
    assert rows == [[i, cpu_total(ui_server.pushes(job="api", instance=i))]
                    for i in sorted(["a:6060", "b:6060"], key=lambda i: -cpu_total(ui_server.pushes(job="api", instance=i)))]
    assert sum(r[1] for r in rows) == total == int(browser.js("return document.querySelector('table.bd-table').dataset.whole;"))
    browser.js("document.querySelector('.breakdown').scrollIntoView({block: 'end'});")
    browser.screenshot("breakdown")
    # a click narrows the selector; back restores it
    browser.js("document.querySelector('table.bd-table tbody tr[data-value=\"b:6060\"]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('sel') === 'job=\"api\", instance=\"b:6060\"'", 10)
    assert int(wait_panel(browser)["total"]) == cpu_total(ui_server.pushes(instance="b:6060"))
    browser.driver.back()
    browser.wait_js("new URLSearchParams(location.search).get('sel') === 'job=\"api\"'", 10)
    browser.wait_js("psApp.view.panel.fg && +psApp.view.panel.totalEl.dataset.total === %d" % total, 10)
    assert browser.js("return document.querySelector('input.selector').value;") == 'job="api"'
    no_errors(browser)


def test_reload_reproduces_the_view(ui_server, browser):
    t = sorted({p.ts for p in ui_server.pushes(job="api")})
    fg = api_fg(ui_server, query=CPU_NS + '{job="api"}', start=t[0], end=t[5])
    # the first child of the root and its first child: a zoom path
    lv1 = fg["levels"][1]
    name1 = fg["names"][lv1[3]]
    params = dict(sel='job="api"', sfrom="%.3f" % t[0], sto="%.3f" % t[5], zoom=json.dumps([name1]),
                  q="sort\\.", mode="both", inv="1", fn="sort.partition", bd="version")
    browser.open(graph_url(ui_server, **params))
    wait_graph(browser)
    wait_panel(browser)
    before = browser.driver.current_url

    def view():
        browser.wait_js("psApp.view.panel.applied && psApp.view.panel.applied.zoom", 10)
        browser.wait_for("table.bd-table")
        return browser.js(
            "const p = psApp.view.panel; return [p.flame.zoomed.path, p.flame.zoomed.total, p.flame.inverted,"
            " document.querySelector('input.search').value, p.el.dataset.mode, p.flame.hl, psApp.view.graph.sel,"
            " document.querySelector('select.bd-label').value, p.table.selected];")

    first = view()
    assert first[0] == [name1] and first[1] == lv1[1]
    assert first[2:] == [True, "sort\\.", "both", "sort.partition", [float(t[0]), float(t[5])], "version", "sort.partition"]
    browser.driver.refresh()
    wait_graph(browser)
    wait_panel(browser)
    assert browser.driver.current_url == before
    assert view() == first
    browser.screenshot("graph-zoomed")
    # the mode switch goes into the URL; back returns to the previous mode
    browser.js("document.querySelector('button.mode[data-mode=\"sandwich\"]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('mode') === 'sandwich'", 10)
    browser.wait_for(".psandwich .sandwich-callers canvas")
    browser.screenshot("sandwich")
    browser.driver.back()
    browser.wait_js("psApp.view.panel.el.dataset.mode === 'both'", 10)
    no_errors(browser)


def test_pprof_download_is_read_by_go_tool_pprof(ui_server, browser, tmp_path):
    import time
    t = sorted({p.ts for p in ui_server.pushes(job="api")})
    browser.open(graph_url(ui_server, sel='job="api"', sfrom="%.3f" % t[2], sto="%.3f" % t[4]))
    wait_graph(browser)
    want = int(wait_panel(browser)["total"])
    dl = tmp_path / "dl"
    dl.mkdir()
    browser.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(dl)})
    browser.js("document.querySelector('a.dl.pprof').click();")
    deadline = time.monotonic() + 10
    while not (dl / "profile.pb.gz").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    r = go_pprof(["-top", "-unit=ns", str(dl / "profile.pb.gz")], tmp_path)
    inside = [p for p in ui_server.pushes(job="api") if t[2] <= p.ts <= t[4]]
    assert want == cpu_total(inside)
    assert ("Total samples = %dns" % want) in r.stdout, r.stdout
    # the flame graph as SVG and PNG
    browser.js("document.querySelector('button.dl.svg').click(); document.querySelector('button.dl.png').click();")
    deadline = time.monotonic() + 10
    while not ((dl / "flamegraph.svg").exists() and (dl / "flamegraph.png").exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    import xml.etree.ElementTree as ET
    root = ET.fromstring((dl / "flamegraph.svg").read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (dl / "flamegraph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    no_errors(browser)


def test_loading_indicator_on_slow_requests(ui_server, browser):
    browser.open(graph_url(ui_server, sel='job="api"'))
    wait_graph(browser)
    wait_panel(browser)
    assert browser.js("return document.getElementById('loading').hidden;") is True
    # every request now takes 1 s: the indicator shows, then goes once all are answered
    browser.js("const f = window.fetch; window.fetch = (...a) => new Promise((r) => setTimeout(r, 1000)).then(() => f(...a));")
    browser.js("document.querySelector('button.run').click();")
    browser.wait_js("!document.getElementById('loading').hidden", 10, "the loading indicator")
    assert browser.js("return document.querySelector('.panel').classList.contains('busy');") is True
    browser.wait_js("document.getElementById('loading').hidden", 10, "the indicator to go")
    wait_panel(browser)
    no_errors(browser)


def test_empty_state_and_inline_errors(ui_server, browser):
    # a store with profiles: what matched nothing, not how to push (test_ui_types.py has more)
    browser.open(graph_url(ui_server, sel='job="nothing-here"'))
    box = browser.wait_for(".view-msg .empty.nodata")
    browser.wait_js("document.querySelector('.view-msg .empty.nodata .hint')", 10)
    assert box.text == ('No profiles of process_cpu — cpu (nanoseconds) per interval match {job="nothing-here"} in this range.\n'
                        "Nothing in this range matches the selector in any profile type: widen the range or change "
                        "the selector.")
    assert browser.find_all(".view-msg .empty pre.cmd") == []
    browser.screenshot("empty")
    no_errors(browser)
    # a bad selector: the server's own message, inline, at the column of the text typed
    bad = 'job=~"("'
    browser.open(graph_url(ui_server, sel=bad))
    err = browser.wait_for(".view-msg .error")
    st, _, body = browser.http_get("/api/v1/query?" + urllib.parse.urlencode(
        {"query": "%s{%s}[1s]" % (CPU_NS, bad)}, quote_via=urllib.parse.quote))
    assert st == 400
    pos = "1:%d: " % (len(CPU_NS) + 2)  # the matcher's first character in the query sent
    msg = json.loads(body)["error"]
    assert msg.startswith('invalid parameter "query": ' + pos)
    assert err.text == "query: selector, column 1: %s\n{%s}\n ^" % (msg.split(pos, 1)[1], bad)
    browser.screenshot("error")
    # Chromium logs each 400 as a console error; nothing else may be there
    assert [e for e in browser.console_errors() if "/api/v1/" not in e or "status of 400" not in e] == []
    assert [u for u, _ in browser.failed_requests() if "/api/" not in u] == []


@pytest.mark.parametrize("width", [1280, 800])
def test_every_view_renders(ui_server, browser, width):
    views = [("graph", ".panel canvas"), ("compare", ".sides canvas")]
    # the targets and status pages are uiinfra's modules (targets.js, status.js)
    views += [(v, "#view *") for v in ("targets", "status") if browser.http_get("/ui/js/%s.js" % v)[0] == 200]
    for view, css in views:
        browser.open("/" + view, width=width)
        browser.wait_for(css, 15)
        if view in ("graph", "compare"):
            browser.wait_js("psApp.view && (psApp.view.panel || psApp.view.diff).fg", 15)
        assert browser.js("return document.querySelector('nav a[aria-current=page]').dataset.view;") == view
        # nothing wider than the window
        assert browser.js("return document.documentElement.scrollWidth <= window.innerWidth;")
        browser.screenshot("%s-%d" % (view, width))
    # dark, as prefers-color-scheme asks
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        browser.open(graph_url(ui_server, sel='job="api"'), width=width)
        wait_graph(browser)
        wait_panel(browser)
        assert browser.js("return getComputedStyle(document.body).backgroundColor;") == "rgb(13, 17, 23)"
        browser.screenshot("graph-dark-%d" % width)
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    no_errors(browser)


def test_empty_store_says_what_to_do(server, browser):
    """A store with nothing in it: Graph and Compare say how to push a profile, no request fails."""
    for view in ("graph", "compare"):
        browser.open(server.url("/" + view))
        box = browser.wait_for("#view .empty")
        assert box.text.startswith("No profiles stored yet — scrape or push some:")
        assert "/api/v1/profiles/write" in browser.text("#view .empty pre.cmd")
    browser.screenshot("empty-store")
    no_errors(browser)
