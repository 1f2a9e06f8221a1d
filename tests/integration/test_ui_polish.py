"""Issue 26's polish, in headless Chromium against a real server (and the API it relies on):

  - format=flamegraph&top=N: the top table of the same merge inside the flame graph answer, equal to
    format=top&limit=N (with and without filters, by profile id, shared profiles); the panel asks
    that one request (one merge) instead of two;
  - the frame menu's filters in Compare (every side and the diff take them; the chips and the line
    view on the diff panel) and in the shared view, driving the URL and the answers;
  - CPU as cores: the flame graph's total, tooltips and the top table in cores (value / seconds of
    the range), as the graph;
  - the heatmap redraws when the window is resized.

Expected values come from the server's own HTTP answers (test_query_focus.py checks those against
go tool pprof), never from the page. Hostile names stay text."""

import json
import re
import urllib.parse

import pytest

import test_ui_focus as tf
from conftest import PPROF_DIR
from ui_util import CPU_NS, browser, chromium_driver, ui_server  # noqa: F401 (fixtures)


def rng(ui):
    return ui.t_first - 60, ui.t_last + 60


def state(browser):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(browser.driver.current_url).query))


def exact_re(name):
    return "^" + re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", name) + "$"


def no_errors(browser):
    assert browser.console_errors() == []
    assert browser.failed_requests() == []


def wait_panel(browser, panel="psApp.view.panel"):
    browser.wait_js("%s && %s.fg && !%s.el.classList.contains('busy')" % (panel, panel, panel), 20, panel)
    return browser.js("return Object.assign({}, %s.totalEl.dataset);" % panel)


def get(srv, path, **params):
    st, _, body = srv.get(path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    return st, json.loads(body) if body[:1] == b"{" else body


def trim(x):
    """dom.js trim: how the graph writes cores (and flame.js formatValue's cores)"""
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 1:
        return "%.2f" % x
    return "%#.3g" % x  # JS toPrecision(3) for 1e-6 <= |x| < 1


# ---- the API: format=flamegraph&top= ------------------------------------------------------------

@pytest.mark.parametrize("filters", [{}, {"focus": "^sort\\."}, {"ignore": "^runtime\\."}, {"hide": "^sort\\."}])
def test_flamegraph_top_is_format_top(ui_server, filters):
    a, b = rng(ui_server)
    q = dict(query=CPU_NS + '{job="api"}', start=str(a), end=str(b), **filters)
    st, fg = get(ui_server.srv, "/api/v1/profiles/query", format="flamegraph", max_nodes="8192", top="500", **q)
    assert st == 200, fg
    st, plain = get(ui_server.srv, "/api/v1/profiles/query", format="flamegraph", max_nodes="8192", **q)
    st2, top = get(ui_server.srv, "/api/v1/profiles/query", format="top", limit="500", **q)
    assert st == st2 == 200
    assert fg.pop("top") == top
    assert fg == plain
    assert len(top["rows"]) > 5 and top["total"] > 0


def test_flamegraph_top_by_id_and_errors(ui_server):
    a, b = rng(ui_server)
    srv = ui_server.srv
    ids = srv.get_json("/api/v1/profiles/ids?" + urllib.parse.urlencode(
        {"query": CPU_NS + '{job="api"}', "start": str(a), "end": str(b)}))["data"]
    pid = ids[0]["id"]
    st, fg = get(srv, "/api/v1/profile", id=pid, format="flamegraph", top="7", ignore="^sort\\.")
    st2, top = get(srv, "/api/v1/profile", id=pid, format="top", limit="7", ignore="^sort\\.")
    assert st == st2 == 200
    assert fg["top"] == top and len(top["rows"]) == 7
    q = dict(query=CPU_NS + '{job="api"}', start=str(a), end=str(b))
    both = ('invalid parameter "top": goes with format=flamegraph of one selection only (the top table\'s rows inside '
            'the flame graph answer; a diff asks format=top itself)')
    for path, params, msg in [
        ("/api/v1/profiles/query", dict(q, format="top", top="5"), both),
        ("/api/v1/profiles/query", dict(q, format="flamegraph", top="-1"),
         'invalid parameter "top": "-1" is not a non-negative integer'),
        ("/api/v1/profiles/query", dict(q, format="flamegraph", top="5x"),
         'invalid parameter "top": "5x" is not a non-negative integer'),
        ("/api/v1/profiles/diff", dict(base=q["query"], base_start=q["start"], base_end=q["end"], compare=q["query"],
                                       compare_start=q["start"], compare_end=q["end"], format="flamegraph", top="5"), both),
    ]:
        st, body = get(srv, path, **params)
        assert st == 400 and body["error"] == msg, (path, params, body)


def test_panel_asks_one_merge(ui_server, browser):
    a, b = rng(ui_server)
    browser.open(tf.graph_url(ui_server, focus="^sort\\."))
    wait_panel(browser)
    reqs = [urllib.parse.parse_qs(urllib.parse.urlparse(r.url).query) for r in browser.requests()
            if "/api/v1/profiles/query?" in r.url]
    formats = sorted((r["format"][0], r.get("top", [""])[0]) for r in reqs if "format" in r)
    assert formats == [("flamegraph", "500")]
    st, top = get(ui_server.srv, "/api/v1/profiles/query", query=CPU_NS + '{job="api"}', start=str(a), end=str(b),
                  format="top", limit="500", focus="^sort\\.")
    assert st == 200
    assert browser.js("return psApp.view.panel.top;") == top
    assert browser.js("return 'top' in psApp.view.panel.fg;") is False
    assert browser.js("return psApp.view.panel.table.names.length;") == len(top["rows"])
    no_errors(browser)


# ---- Compare: the menu's filters ----------------------------------------------------------------

def test_compare_filters_drive_every_panel(ui_server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    srv = ui_server.srv
    a, b = rng(ui_server)
    mid = (ui_server.t_first + ui_server.t_last) // 2 + 1
    params = dict(type=CPU_NS, bsel='job="api"', bfrom=a, bto=mid, csel='job="api",instance="a:6060"', cfrom=mid, cto=b,
                  norm="none")
    browser.open("/compare?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    browser.wait_js("psApp.view && psApp.view.diff", 15)
    q, cq = CPU_NS + '{job="api"}', CPU_NS + '{job="api",instance="a:6060"}'

    def want(**f):
        _, d = get(srv, "/api/v1/profiles/diff", base=q, base_start=str(a), base_end=str(mid), compare=cq,
                   compare_start=str(mid), compare_end=str(b), normalize="none", format="flamegraph", **f)
        _, l = get(srv, "/api/v1/profiles/query", query=q, start=str(a), end=str(mid), format="flamegraph", **f)
        _, r = get(srv, "/api/v1/profiles/query", query=cq, start=str(mid), end=str(b), format="flamegraph", **f)
        return d["left_ticks"], d["right_ticks"], l["total"], r["total"]

    def got():
        left, right, diff = (wait_panel(browser, "psApp.view." + p) for p in ("left", "right", "diff"))
        return int(diff["left"]), int(diff["right"]), int(left["total"]), int(right["total"])

    whole = got()
    assert whole == want()
    # the diff's table: a row's menu has every item
    name = browser.js("return [...document.querySelectorAll('.ptable tbody tr')].map(r => r.dataset.name)"
                      ".find(n => n.startsWith('sort.'));")
    assert name
    tf.right_click_row(browser, name)
    assert tf.menu_items(browser) == ["focus", "ignore", "hide", "show_from", "sandwich", "copy", "source"]
    browser.js("document.querySelector('.ctx-menu [data-action=ignore]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('ignore')", 10, "ignore in the URL")
    assert state(browser)["ignore"] == exact_re(name)
    browser.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left !== %d" % whole[0], 10)
    ign = got()
    assert ign == want(ignore=exact_re(name)) and ign[0] < whole[0]
    # one row of chips, on the diff panel
    assert browser.js("return [...document.querySelectorAll('.chips')].filter(c => !c.hidden).length;") == 1
    assert browser.js("return psApp.view.diff.chipsEl.querySelector('.chip-re').textContent;") == exact_re(name)
    # a side's flame graph: its menu by Shift+F10 on a frame has the filters (no sandwich, no line view)
    browser.js("const c = psApp.view.left.flame.canvas; c.scrollIntoView({block: 'center'}); c.focus();")
    ActionChains(browser.driver).send_keys(Keys.ARROW_DOWN).perform()
    child = browser.js("const p = psApp.view.left.flame; return p.m.names[p.m.name[p.focusIdx]];")
    assert child
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.F10).key_up(Keys.SHIFT).perform()
    assert browser.wait_for(".ctx-menu .ctx-title").text == child
    assert tf.menu_items(browser) == ["focus", "ignore", "hide", "show_from", "copy"]
    browser.js("document.querySelector('.ctx-menu [data-action=focus]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('focus')", 10, "focus in the URL")
    s = state(browser)
    assert (s["focus"], s["ignore"]) == (exact_re(child), exact_re(name))
    browser.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left !== %d" % ign[0], 10)
    assert got() == want(focus=exact_re(child), ignore=exact_re(name))
    assert sorted(browser.js("return [...psApp.view.diff.chipsEl.querySelectorAll('.chip')].map(c => c.dataset.kind);")) \
        == ["focus", "ignore"]
    # the pprof links carry them
    for p in ("left", "right", "diff"):
        link = urllib.parse.parse_qs(urllib.parse.urlparse(browser.js("return psApp.view.%s.pprofLink.href;" % p)).query)
        assert (link["focus"], link["ignore"]) == ([exact_re(child)], [exact_re(name)]), p
    browser.js("window.scrollTo(0, 0);")
    browser.screenshot("ui-compare-focus")
    # the line view of the diff, from its menu
    tf.right_click_row(browser, browser.js("return psApp.view.diff.table.names[0];"))
    browser.js("document.querySelector('.ctx-menu [data-action=source]').click();")
    browser.wait_js("document.querySelector('.source-view:not([hidden]) .source-lines')", 15, "the line view")
    # clear all: every panel unfiltered again
    browser.js("psApp.view.diff.chipsEl.querySelector('.chips-clear').click();")
    browser.wait_js("!new URLSearchParams(location.search).get('focus') && !new URLSearchParams(location.search).get('ignore')",
                    10, "filters cleared")
    browser.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left === %d" % whole[0], 10)
    assert got() == whole
    no_errors(browser)


# ---- the shared view ----------------------------------------------------------------------------

def adhoc_rows(srv, **params):
    st, body = get(srv, "/api/v1/profiles/adhoc", format="top", limit="500", **params)
    assert st == 200, body
    return body


def test_shared_view_filters_and_lines(make_server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    srv = make_server(retention="0")
    browser.base_url = srv.url("")
    browser.open("/upload")
    browser.wait_for(".dropzone")
    browser.driver.find_element(By.CSS_SELECTOR, "#adhoc-file").send_keys(str(PPROF_DIR / "go" / "cpu-01.pb.gz"))
    browser.wait_js("location.pathname === '/shared'", what="the shared view")
    pid = state(browser)["id"]
    wait_panel(browser)
    whole = adhoc_rows(srv, id=pid, type="samples")
    assert browser.js("return psApp.view.panel.top;") == whole
    name = [r["function"] for r in whole["rows"] if r["function"].startswith("compress/flate.")][1]
    tf.right_click_row(browser, name)
    assert tf.menu_items(browser) == ["focus", "ignore", "hide", "show_from", "sandwich", "copy", "source"]
    browser.js("document.querySelector('.ctx-menu [data-action=focus]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('focus')", 10, "focus in the URL")
    assert state(browser)["focus"] == exact_re(name)
    browser.wait_js("psApp.view.panel && psApp.view.panel.fg && +psApp.view.panel.totalEl.dataset.total !== %d"
                    % whole["total"], 15, "the focused answer")
    wait_panel(browser)
    foc = adhoc_rows(srv, id=pid, type="samples", focus=exact_re(name))
    assert browser.js("return psApp.view.panel.top;") == foc
    st, fg = get(srv, "/api/v1/profiles/adhoc", id=pid, type="samples", format="flamegraph", focus=exact_re(name))
    assert int(browser.js("return psApp.view.panel.totalEl.dataset.total;")) == fg["total"] < whole["total"]
    assert browser.js("return document.querySelector('.chips .chip[data-kind=focus] .chip-re').textContent;") == exact_re(name)
    # the line view: the adhoc answer's format=list
    tf.right_click_row(browser, name)
    browser.js("document.querySelector('.ctx-menu [data-action=source]').click();")
    browser.wait_js("document.querySelector('.source-view:not([hidden]) .source-lines')", 15, "the line view")
    assert state(browser)["src"] == name
    _, lst = get(srv, "/api/v1/profiles/adhoc", id=pid, type="samples", format="list", list=exact_re(name),
                 focus=exact_re(name))
    got = browser.js("return [...document.querySelectorAll('.source-view .source-fn')].map(f => [f.dataset.name, f.dataset.file,"
                     " [...f.querySelectorAll('tbody tr')].map(r => [+r.dataset.line, +r.dataset.flat, +r.dataset.cum])]);")
    assert got == [[f["name"], f["file"], [[l["line"], l["flat"], l["cum"]] for l in f["lines"]]] for f in lst["functions"]]
    assert got
    browser.js("window.scrollTo(0, 0);")
    browser.screenshot("ui-shared-focus")
    # the chip's x: the whole profile again
    browser.js("document.querySelector('.chips .chip[data-kind=focus] .chip-x').click();")
    browser.wait_js("!new URLSearchParams(location.search).get('focus')", 10, "focus gone")
    browser.wait_js("psApp.view.panel && psApp.view.panel.fg && +psApp.view.panel.totalEl.dataset.total === %d"
                    % whole["total"], 15, "the whole answer")
    no_errors(browser)


def test_shared_view_hostile_names_stay_text(make_server, browser, tmp_path):
    import time
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    srv = make_server(retention="0")
    f = tmp_path / "evil.pb.gz"
    f.write_bytes(tf.evil_profile(int(time.time()) - 60))
    browser.base_url = srv.url("")
    browser.open("/upload")
    browser.wait_for(".dropzone")
    browser.driver.find_element(By.CSS_SELECTOR, "#adhoc-file").send_keys(str(f))
    browser.wait_js("location.pathname === '/shared'", what="the shared view")
    pid = state(browser)["id"]
    q = {"id": pid, "st": "cpu", "focus": tf.EVIL_FN, "src": tf.EVIL_FN}
    browser.open("/shared?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
    wait_panel(browser)
    browser.wait_js("document.querySelector('.source-view .source-lines')", 15, "the line view")
    assert browser.js("return document.querySelector('.chips .chip-re').textContent;") == tf.EVIL_FN
    assert browser.js("return document.querySelector('.source-view .source-fn').dataset.file;") == tf.EVIL_FILE
    tr = tf.row(browser, tf.EVIL_FN)
    ActionChains(browser.driver).context_click(tr).perform()
    assert browser.wait_for(".ctx-menu .ctx-title").text == tf.EVIL_FN
    assert browser.js("return %s;" % tf.NOTHING_INJECTED) is True
    browser.js("document.querySelector('.ctx-menu [data-action=ignore]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('ignore')", 10, "ignore in the URL")
    assert state(browser)["ignore"] == exact_re(tf.EVIL_FN)
    wait_panel(browser)
    assert browser.js("return %s;" % tf.NOTHING_INJECTED) is True
    assert browser.console_errors() == []


# ---- CPU as cores -------------------------------------------------------------------------------

def fmt_ns(ns):
    """flame.js formatValue of nanoseconds"""
    def fix(x):
        return "%.0f" % x if x >= 100 else "%.1f" % x if x >= 10 else "%.2f" % x
    for div, unit in ((3600e9, "h"), (60e9, "min"), (1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= div:
            return "%s %s" % (fix(ns / div), unit)
    return "%.0f ns" % ns


def test_cores_in_flame_graph_and_table(ui_server, browser):
    a, b = rng(ui_server)
    browser.open(tf.graph_url(ui_server, bd="instance"))
    total = int(wait_panel(browser)["total"])
    assert browser.js("return psApp.view.panel.totalEl.textContent;") == "total " + fmt_ns(total)
    bd = "return [...document.querySelectorAll('.bd-table tbody tr')].map(r => [r.dataset.total, r.querySelector('td.num').textContent]);"
    browser.wait_js("document.querySelector('.bd-table tbody tr')", 15, "the breakdown")
    rows = browser.js(bd)
    assert len(rows) == 2 and all(t == fmt_ns(float(v)) for v, t in rows), rows
    # the graph's cores button: the panel's values too, per second of the range
    browser.js("document.querySelector('.graph-head button.unit[data-unit=cores]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('cpu') === 'cores'", 10, "cpu=cores in the URL")
    browser.wait_js("psApp.view.panel.totalEl.textContent.endsWith(' cores')", 15, "the total in cores")
    wait_panel(browser)
    p = browser.js("return psApp.view.panel.query.params;")
    secs = float(p["end"]) - float(p["start"])
    assert secs == b - a
    assert int(browser.js("return psApp.view.panel.totalEl.dataset.total;")) == total
    assert browser.js("return psApp.view.panel.totalEl.textContent;") == "total %s cores" % trim(total / 1e9 / secs)
    assert browser.js("return psApp.view.panel.flame.unit;") == {"sample": "nanoseconds", "perSecond": b - a}
    # the top table's first row and the flame graph's tooltip of the root
    first = browser.js("return psApp.view.panel.table.names[0];")
    row = [r for r in browser.js("return psApp.view.panel.top.rows;") if r["function"] == first][0]
    cells = browser.js("return [...tf.querySelectorAll('td.num')].map(td => td.textContent);".replace(
        "tf", "document.querySelector('.ptable tbody tr')"))
    assert cells[0] == "%s cores" % trim(row["flat"] / 1e9 / secs), (cells, row)
    assert cells[2] == "%s cores" % trim(row["cum"] / 1e9 / secs), (cells, row)
    tip = browser.js("const f = psApp.view.panel.flame; f._tipText(f.info(0));"
                     "return [...f.tip.querySelectorAll('dd')].map(d => d.textContent);")
    assert tip[0] == "%s cores (100.00%%)" % trim(total / 1e9 / secs)
    # the label breakdown too
    browser.wait_js("[...document.querySelectorAll('.bd-table tbody td.num')].some(td => td.textContent.endsWith(' cores'))",
                    15, "the breakdown in cores")
    rows = browser.js(bd)
    assert len(rows) == 2 and all(t == "%s cores" % trim(float(v) / 1e9 / secs) for v, t in rows), rows
    browser.js("psApp.view.panel.flame.tip.hidden = true; window.scrollTo(0, 0);")
    browser.screenshot("ui-cores")
    # seconds again
    browser.js("document.querySelector('.graph-head button.unit[data-unit=seconds]').click();")
    browser.wait_js("psApp.view.panel.totalEl.textContent === %s" % json.dumps("total " + fmt_ns(total)), 15, "seconds")
    no_errors(browser)


# ---- the heatmap follows the window's width -----------------------------------------------------

def test_heatmap_redraws_on_resize(ui_server, browser):
    browser.open(tf.graph_url(ui_server, hm="1"))
    browser.wait_js("psApp.view.heat && psApp.view.heat.loadedAt && psApp.view.graph.u", 20, "the heatmap")
    w0 = browser.js("return psApp.view.heat.canvas.style.width;")
    assert w0 == "%dpx" % browser.js("return psApp.view.heat.el.clientWidth;")
    try:
        browser.set_width(900)
        browser.wait_js("psApp.view.heat.canvas.style.width === psApp.view.heat.el.clientWidth + 'px'"
                        " && psApp.view.heat.canvas.style.width !== %s" % json.dumps(w0), 10, "the heatmap redrawn")
        w = browser.js("return psApp.view.heat.el.clientWidth;")
        assert w < int(w0[:-2])
        assert browser.js("return psApp.view.heat.canvas.width;") == browser.js(
            "return Math.round(psApp.view.heat.el.clientWidth * (window.devicePixelRatio || 1));")
        # its columns still under the graph's time axis: the plot area it draws in is the graph's
        g = browser.js("const h = psApp.view.heat, g = h.geometry(), b = h.plotBox(); return [g.left, g.pw, b.left, b.width];")
        assert g[0] == g[2] and g[1] == min(g[3], w - g[0])
    finally:
        browser.set_width(1280)
    no_errors(browser)
