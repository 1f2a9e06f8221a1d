"""The Graph view's heatmap of individual profiles (js/heatmap.js), Compare's quick comparisons (a day /
a week earlier, by label) and an uploaded profile's link opened in a fresh browser, in headless
Chromium against the ui_server fixture (ui_util.py: instances a and b of job "api", twelve CPU
profiles each, 5 min apart, version v1 then v2) plus, pushed here: instance a's profiles again a day
earlier, and a job "evil" whose label values are markup.

Expected values come from the fixtures (README totals of the pushed files) and the server's own
answers (SelectHeatmap, SelectMergeStacktraces with profile ids, /api/v1/profiles/diff), never from
the page.
"""

import json
import math
import urllib.parse

import pytest

from conftest import PPROF_DIR, README_TOTALS, fixture_bytes
from pyro_util import connect_call
from ui_util import CPU_NS, Browser, browser, chromium_driver, start_chromium, ui_server  # noqa: F401 (fixtures)
from ui_util import no_errors, state

DAY = 86400
DAY_FILES = ["go/cpu-04.pb.gz", "go/cpu-05.pb.gz"]
EVIL = "<img src=x onerror=window.__pwned=1>"
EVIL2 = "'><svg/onload=window.__pwned=2>"
NOTHING_INJECTED = ("!window.__pwned && document.querySelectorAll('img, iframe, object, embed, "
                    "[onerror], [onload], [onclick], [onmouseover]').length === 0")
Q = "querier.v1.QuerierService/"


@pytest.fixture(scope="module")
def ui(ui_server):
    """ui_server plus instance a's profiles a day earlier (instance b's files: something changed) and
    two series of job "evil"."""
    ui_server.earlier = []
    for i, p in enumerate(ui_server.pushes(instance="a:6060")):
        f = DAY_FILES[i % 2]
        q = urllib.parse.urlencode({"time": str(p.ts - DAY), "labels": 'job="api",instance="a:6060",version="v0"'},
                                   quote_via=urllib.parse.quote)
        st, _ = ui_server.srv.push(fixture_bytes(f), query=q)
        assert st == 200
        ui_server.earlier.append(f)
    for k, v in enumerate((EVIL, EVIL2)):
        q = urllib.parse.urlencode({"time": str(ui_server.t_last - 60 * k),
                                    "labels": 'job="evil",version=%s' % json.dumps(v)}, quote_via=urllib.parse.quote)
        st, _ = ui_server.srv.push(fixture_bytes("go/cpu-0%d.pb.gz" % (k + 1)), query=q)
        assert st == 200
    return ui_server


def rng(ui):
    return ui.t_first - 60, ui.t_last + 60


def total(p):
    return README_TOTALS[p.file][1]


def wait_panel(b, panel="psApp.view.panel"):
    b.wait_js("%s && %s.fg && !%s.el.classList.contains('busy')" % (panel, panel, panel), 15, panel)
    return b.js("return %s.totalEl.dataset;" % panel)


def wait_heat(b):
    b.wait_js("psApp.view.heat && psApp.view.heat.el.dataset.total !== undefined", 15, "the heatmap")
    return b.js("const h = psApp.view.heat; return {total: +h.el.dataset.total, step: h.step, yMin: h.yMin,"
                " cells: h.cells.map(c => [c.t, c.b, c.count])};")


def heatmap_api(ui, sel, start, end, step):
    body = json.dumps({"profileTypeID": CPU_NS, "labelSelector": "{%s}" % sel, "start": str((start + step) * 1000),
                       "end": str(end * 1000), "step": step, "queryType": "HEATMAP_QUERY_TYPE_INDIVIDUAL"}).encode()
    r = connect_call(ui.srv.port, Q + "SelectHeatmap", None, codec="json", body=body)
    assert r.status == 200, r
    return json.loads(r.body)


def merge_ids_api(ui, sel, start, end, ids):
    """SelectMergeStacktraces of exactly these profile ids -> (names, levels, total) as the flame graph has them."""
    body = json.dumps({"profileTypeID": CPU_NS, "labelSelector": "{%s}" % sel, "start": str(start * 1000),
                       "end": str(end * 1000), "maxNodes": 8192, "profileIdSelector": ids}).encode()
    r = connect_call(ui.srv.port, Q + "SelectMergeStacktraces", None, codec="json", body=body)
    assert r.status == 200, r
    fg = json.loads(r.body)["flamegraph"]
    return fg["names"], [[int(v) for v in lv.get("values", [])] for lv in fg["levels"]], int(fg["total"])


def click_cell(b, t_ms, bucket):
    """Clicks the heatmap cell of slot t (ms) and y bucket."""
    from selenium.webdriver.common.action_chains import ActionChains
    cv = b.js("const c = psApp.view.heat.canvas; c.scrollIntoView({block: 'center'}); return c;")
    w, h, x, y = b.js(
        "const hm = psApp.view.heat, g = hm.geometry(), r = hm.canvas.getBoundingClientRect();"
        "const c = hm.cells.find(c => c.t === arguments[0] && c.b === arguments[1]);"
        "return [r.width, r.height, (g.x0(c.k) + g.x0(c.k + 1)) / 2, 6 + (19 - c.b + 0.5) * g.ch];", t_ms, bucket)
    ActionChains(b.driver).move_to_element_with_offset(cv, int(x - w / 2), int(y - h / 2)).pause(0.1).click().perform()


def test_heatmap_cells_sum_to_the_graph_and_a_cell_merges_its_profiles(ui, browser):
    b = browser
    a, z = rng(ui)
    b.open("/graph?" + urllib.parse.urlencode({"type": CPU_NS, "from": a, "to": z, "sel": 'job="api"', "hm": "1"},
                                               quote_via=urllib.parse.quote))
    b.wait_js("psApp.view.graph.u", 15, "the graph")
    hm = wait_heat(b)
    pushes = ui.pushes(job="api")
    # the heatmap's cells sum to the graph's points: one per stored profile of the range
    points = b.js("return psApp.view.graph.u.data.slice(1).reduce((n, s) => n + s.filter(v => v !== null).length, 0);")
    assert hm["total"] == points == len(pushes) == 24
    # the cells are SelectHeatmap's, and each is where the fixtures put it: slot (t - step, t] of
    # start + step + k step, bucket of its total among 20 from the smallest total to the largest
    step = hm["step"]
    assert step == 30  # the range is 3720 s: about 150 slots of a round length
    api = heatmap_api(ui, 'job="api"', a, z, step)
    assert [[int(s["timestamp"]), i, c] for s in api["series"][0]["slots"] for i, c in enumerate(s["counts"]) if c] \
        == hm["cells"]
    lo, hi = min(total(p) for p in pushes), max(total(p) for p in pushes)
    ymin = [lo + (i * (hi - lo)) // 20 for i in range(20)]
    assert hm["yMin"] == ymin
    want = {}
    for p in pushes:
        t = (a + step) * 1000 + math.ceil((p.ts * 1000 - (a + step) * 1000) / (step * 1000)) * step * 1000
        bk = max(i for i in range(20) if ymin[i] <= total(p))
        want[(t, bk)] = want.get((t, bk), 0) + 1
    assert sorted(want.items()) == sorted(((t, bk), c) for t, bk, c in hm["cells"])
    # click the fullest cell: exactly its profiles merged, as SelectMergeStacktraces merges their ids
    t, bk, cnt = max(hm["cells"], key=lambda c: (c[2], -c[0]))
    assert cnt == 2
    click_cell(b, t, bk)
    b.wait_js("new URLSearchParams(location.search).get('tmin') === '%d'" % ymin[bk], 10, "the cell in the URL")
    s = state(b)
    assert (s["sfrom"], s["sto"]) == ("%d.001" % (t / 1000 - step), "%d.000999999" % (t / 1000))
    assert s["tmax"] == str(ymin[bk + 1] - 1) if bk < 19 else "tmax" not in s
    cell = [p for p in pushes if t / 1000 - step < p.ts <= t / 1000 and ymin[bk] <= total(p)
            and (bk == 19 or total(p) < ymin[bk + 1])]
    assert len(cell) == cnt
    got = wait_panel(b)
    assert int(got["total"]) == sum(total(p) for p in cell)
    listed = ui.query_json("/api/v1/profiles/ids", query=CPU_NS + '{job="api"}', start=a, end=z)["data"]
    ids = [e["id"] for e in listed if (round(float(e["time"])), e["labels"]["instance"]) in
           {(p.ts, p.labels["instance"]) for p in cell}]
    assert len(ids) == cnt
    names, levels, tot = merge_ids_api(ui, 'job="api"', a, z, ids)
    fg = b.js("const f = psApp.view.panel.fg; return [f.names, f.levels, f.total];")
    assert (fg[0], fg[1], fg[2]) == (names, levels, tot) and tot == int(got["total"])
    # the selection line says what is merged; the pprof download is the same selection
    assert "%d profiles" % cnt in b.text(".selinfo")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(b.driver).move_to_element(b.wait_for("header.top .brand")).perform()
    b.js("window.scrollTo(0, 0);")
    b.screenshot("heatmap")
    href = urllib.parse.urlparse(b.js("return psApp.view.panel.pprofLink.href;"))
    assert dict(urllib.parse.parse_qsl(href.query))["total_min"] == str(ymin[bk])
    b.set_width(800)
    b.wait_js("psApp.view.heat.draw() || true", 5)
    b.js("psApp.view.heat.canvas.scrollIntoView({block: 'center'});")
    b.screenshot("heatmap-800")
    b.set_width(1280)
    b.js("psApp.view.heat.draw();")
    # jump to the cell's largest profile on its own (its id), and back to the cell
    b.wait_for("button.openlargest").click()
    b.wait_js("new URLSearchParams(location.search).get('pid')", 10, "the profile's id")
    s = state(b)
    big = max(cell, key=lambda p: (total(p), -p.ts))
    assert s["sfrom"] == s["sto"] == "%d.000" % big.ts and "tmin" not in s
    assert s["pid"] == [e["id"] for e in listed if round(float(e["time"])) == big.ts
                        and e["labels"]["instance"] == big.labels["instance"]][0]
    b.wait_js("psApp.view.panel.fg && +psApp.view.panel.totalEl.dataset.total === %d" % total(big), 10)
    b.driver.back()
    b.wait_js("new URLSearchParams(location.search).get('tmin') === '%d'" % ymin[bk], 10, "back at the cell")
    b.wait_js("psApp.view.panel.fg && +psApp.view.panel.totalEl.dataset.total === %d" % sum(total(p) for p in cell), 10)
    # keyboard: the canvas takes focus, arrows move between cells, Enter merges the one reached
    from selenium.webdriver.common.keys import Keys
    b.js("psApp.view.heat.cursor = null; psApp.view.heat.canvas.focus();")
    first = b.js("return psApp.view.heat.selectedCell().k;")
    b.driver.switch_to.active_element.send_keys(Keys.ARROW_RIGHT, Keys.ENTER)
    b.wait_js("psApp.view.heat.selectedCell() && psApp.view.heat.selectedCell().k > %d" % first, 10, "the next cell")
    no_errors(b)


def test_heatmap_hostile_labels_stay_text(ui, browser):
    b = browser
    a, z = rng(ui)
    b.open("/graph?" + urllib.parse.urlencode({"type": CPU_NS, "from": a, "to": z, "sel": 'job="evil"', "hm": "1"},
                                               quote_via=urllib.parse.quote))
    hm = wait_heat(b)
    assert hm["total"] == 2
    # a cell's largest profile: its labels become the selector, as text
    t, bk, _ = hm["cells"][-1]
    click_cell(b, t, bk)
    b.wait_for("button.openlargest").click()
    b.wait_js("new URLSearchParams(location.search).get('pid')", 10)
    assert state(b)["ssel"] in ['job="evil", version=%s' % json.dumps(v) for v in (EVIL, EVIL2)]
    b.wait_js("document.querySelector('.selinfo').textContent.includes('onerror') || "
              "document.querySelector('.selinfo').textContent.includes('onload')", 10)
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    # compare by label with hostile values: the options hold them as text
    b.open("/compare?" + urllib.parse.urlencode({"type": CPU_NS, "bfrom": a, "bto": z, "cfrom": a, "cto": z,
                                                  "bsel": 'job="evil"', "csel": 'job="evil"'}, quote_via=urllib.parse.quote))
    b.wait_js("psApp.view.diff && psApp.view.diff.fg", 15)
    b.wait_js("[...document.querySelectorAll('select.bylabel-name option')].some(o => o.value === 'version')", 10)
    from selenium.webdriver.support.ui import Select
    Select(b.wait_for("select.bylabel-name")).select_by_value("version")
    b.wait_js("document.querySelectorAll('select.bylabel-a option').length === 2", 10)
    assert sorted(b.js("return [...document.querySelectorAll('select.bylabel-a option')].map(o => o.textContent);")) \
        == sorted([EVIL, EVIL2])
    b.wait_for("button.bylabel-go").click()
    b.wait_js("new URLSearchParams(location.search).get('csel') !== 'job=\"evil\"'", 10)
    b.wait_js("psApp.view.diff.fg && !psApp.view.diff.el.classList.contains('busy')", 10)
    assert b.js("return %s;" % NOTHING_INJECTED) is True
    no_errors(b)


def diff_api(ui, bq, bs, be, cq, cs, ce, norm=None):
    p = dict(base=CPU_NS + "{%s}" % bq, base_start=bs, base_end=be, compare=CPU_NS + "{%s}" % cq, compare_start=cs,
             compare_end=ce, format="flamegraph", max_nodes=8192)
    if norm:
        p["normalize"] = norm
    return ui.query_json("/api/v1/profiles/diff", **p)


def test_compare_a_day_earlier_and_by_label(ui, browser):
    b = browser
    a, z = rng(ui)
    sel = 'job="api", instance="a:6060"'
    b.open("/compare?" + urllib.parse.urlencode({"type": CPU_NS, "bsel": 'job="api"', "csel": sel, "bfrom": a, "bto": z,
                                                  "cfrom": a, "cto": z}, quote_via=urllib.parse.quote))
    b.wait_js("psApp.view.diff && psApp.view.diff.fg", 15)
    # the diff comes first, above the two sides
    assert b.js("const d = psApp.view.diff.el, s = document.querySelector('.sides');"
                "return !!(d.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING);") is True
    assert b.js("return psApp.view.diff.el.getBoundingClientRect().top;") < 900
    # one click: the same selector and range a day earlier as the baseline (boff=1d in the URL)
    b.wait_for("button.shift[data-off='1d']").click()
    b.wait_js("new URLSearchParams(location.search).get('boff') === '1d'", 10, "boff in the URL")
    s = state(b)
    assert (s["bsel"], s["csel"], s["cfrom"], s["cto"]) == (sel, sel, str(a), str(z))
    assert not {"bfrom", "bto", "brange"} & set(s)
    mine = ui.pushes(instance="a:6060")
    before = sum(README_TOTALS[f][1] for f in ui.earlier)
    b.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left === %d" % before, 15)
    got = wait_panel(b, "psApp.view.diff")
    want = diff_api(ui, sel, a - DAY, z - DAY, sel, a, z)
    assert (int(got["left"]), int(got["right"])) == (want["left_ticks"], want["right_ticks"]) \
        == (before, sum(total(p) for p in mine))
    assert got["normalize"] == want["normalize"] == "none"  # windows of one length: absolute values
    assert b.js("return psApp.view.diff.fg.names;") == want["names"]
    assert "a day earlier" in b.text(".offnote")
    assert b.js("return psApp.view.bs.graph.range;") == [a - DAY, z - DAY]
    b.js("window.scrollTo(0, 0);")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(b.driver).move_to_element(b.wait_for("header.top .brand")).perform()
    b.screenshot("compare-day-earlier")
    # a reload gives the same view
    b.driver.refresh()
    b.wait_js("psApp.view.diff && psApp.view.diff.fg && !psApp.view.diff.el.classList.contains('busy')", 15)
    assert int(b.js("return psApp.view.diff.totalEl.dataset.left;")) == want["left_ticks"]
    # a week earlier: nothing stored then, the whole comparison is new
    b.wait_for("button.shift[data-off='7d']").click()
    b.wait_js("new URLSearchParams(location.search).get('boff') === '7d'", 10, "boff=7d")
    b.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left === 0", 15)
    want7 = diff_api(ui, sel, a - 7 * DAY, z - 7 * DAY, sel, a, z)
    assert (want7["left_ticks"], want7["right_ticks"]) == (0, sum(total(p) for p in mine))
    assert int(wait_panel(b, "psApp.view.diff")["right"]) == want7["right_ticks"]
    assert b.js("return [...document.querySelectorAll('button.shift')].map(x => x.getAttribute('aria-pressed'));") \
        == ["false", "true"]
    b.driver.back()
    b.wait_js("new URLSearchParams(location.search).get('boff') === '1d'", 10, "back to a day earlier")
    b.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.left === %d" % before, 15)
    # compare by label: version v1 vs v2 over the comparison's range (the deploy question)
    from selenium.webdriver.support.ui import Select
    b.wait_js("[...document.querySelectorAll('select.bylabel-name option')].some(o => o.value === 'version')", 10)
    Select(b.wait_for("select.bylabel-name")).select_by_value("version")
    b.wait_js("[...document.querySelectorAll('select.bylabel-b option')].map(o => o.value).join() === 'v1,v2'", 10)
    Select(b.wait_for("select.bylabel-a")).select_by_value("v1")
    Select(b.wait_for("select.bylabel-b")).select_by_value("v2")
    b.wait_for("button.bylabel-go").click()
    b.wait_js("new URLSearchParams(location.search).get('csel') === 'job=\"api\", instance=\"a:6060\", version=\"v2\"'", 10)
    s = state(b)
    assert s["bsel"] == 'job="api", instance="a:6060", version="v1"'
    assert (s["bfrom"], s["bto"]) == (str(a), str(z)) and "boff" not in s
    v1 = [p for p in mine if p.labels["version"] == "v1"]
    v2 = [p for p in mine if p.labels["version"] == "v2"]
    b.wait_js("psApp.view.diff.fg && +psApp.view.diff.totalEl.dataset.right === %d" % sum(total(p) for p in v2), 15)
    got = wait_panel(b, "psApp.view.diff")
    want = diff_api(ui, s["bsel"], a, z, s["csel"], a, z)
    assert (int(got["left"]), int(got["right"])) == (want["left_ticks"], want["right_ticks"]) \
        == (sum(total(p) for p in v1), sum(total(p) for p in v2))
    assert b.js("return [psApp.view.diff.fg.names, psApp.view.diff.fg.levels];") == [want["names"], want["levels"]]
    # the measure is switchable and named: rates
    b.wait_for("button.mode[data-norm='rate']").click()
    b.wait_js("new URLSearchParams(location.search).get('norm') === 'rate'", 10)
    b.wait_js("psApp.view.diff.totalEl.dataset.normalize === 'rate'", 10)
    assert "rates" in b.text(".normnote")
    b.js("window.scrollTo(0, 0);")
    ActionChains(b.driver).move_to_element(b.wait_for("header.top .brand")).perform()
    b.screenshot("compare-by-label")
    b.set_width(800)
    b.js("window.scrollTo(0, 0);")
    b.screenshot("compare-by-label-800")
    no_errors(b)


def test_upload_link_opens_the_same_flame_graph_in_a_fresh_browser(ui, browser, tmp_path):
    b = browser
    series = len(ui.srv.get_json("/api/v1/series?match[]=" + urllib.parse.quote('{__name__=~".+"}'))["data"])
    b.open("/upload")
    b.wait_for("#adhoc-file").send_keys(str(PPROF_DIR / "go" / "cpu-03.pb.gz"))
    b.wait_js("location.pathname === '/shared' && psApp.view.panel && psApp.view.panel.fg", 15, "the shared view")
    pid = state(b)["id"]
    fg = b.js("const f = psApp.view.panel.fg; return [f.names, f.levels, f.total];")
    want = ui.query_json("/api/v1/profiles/adhoc", id=pid, format="flamegraph", max_nodes=8192)
    assert fg == [want["names"], want["levels"], want["total"]]
    assert fg[2] == README_TOTALS["go/cpu-03.pb.gz"][0]  # the first sample type: samples
    # no server-side series was made
    assert len(ui.srv.get_json("/api/v1/series?match[]=" + urllib.parse.quote('{__name__=~".+"}'))["data"]) == series
    b.wait_for("button.adhoc-share").click()
    link = b.wait_js("document.querySelector('input.adhoc-link').value", 10)
    assert link == b.driver.current_url
    # a fresh browser (its own profile: nothing shared with this one) opens the same flame graph
    drv = start_chromium()
    try:
        fresh = Browser(drv, ui.srv.url(""), tmp_path)
        drv.get(link)
        fresh.wait_js("window.psApp && psApp.view && psApp.view.panel && psApp.view.panel.fg", 20, "the shared view")
        assert fresh.js("const f = psApp.view.panel.fg; return [f.names, f.levels, f.total];") == fg
        fresh.drain()
        assert fresh.console_errors() == []
    finally:
        drv.quit()
    no_errors(b)


def test_profiles_query_total_bounds(ui):
    """/api/v1/profiles/query total_min/total_max (what a heatmap cell merges): the range's profiles
    whose total is within both bounds, summed; bad bounds are a 400 naming them."""
    a, z = rng(ui)
    q = CPU_NS + '{job="api"}'
    pushes = ui.pushes(job="api")
    for lo, hi in ((None, None), (2900000000, None), (None, 2890000000), (2890000000, 2930000000), (1, 2)):
        p = dict(query=q, start=a, end=z, format="flamegraph")
        if lo is not None:
            p["total_min"] = lo
        if hi is not None:
            p["total_max"] = hi
        want = sum(total(x) for x in pushes if (lo is None or total(x) >= lo) and (hi is None or total(x) <= hi))
        assert ui.query_json("/api/v1/profiles/query", **p)["total"] == want, (lo, hi)
    # the pprof answer is the same merge (go tool pprof reads the cell's download)
    st, _, body = ui.srv.request("GET", "/api/v1/profiles/query?" + urllib.parse.urlencode(
        dict(query=q, start=a, end=z, total_min=2900000000)))
    assert st == 200 and body[:2] == b"\x1f\x8b"
    for params, msg in (
            (dict(start=a, end=z, total_min="x"), 'invalid parameter "total_min": "x" is not a non-negative integer'),
            (dict(start=a, end=z, total_max="-1"), 'invalid parameter "total_max": "-1" is not a non-negative integer'),
            (dict(start=a, end=z, total_max="99999999999999999999"),
             'invalid parameter "total_max": "99999999999999999999" is not a non-negative integer'),
            (dict(time=z, total_min=1), "total_min and total_max need start and end (a range), not time"),
            (dict(start=a, end=z, total_min=1, sample_types="all"),
             "total_min and total_max select profiles of one sample type: not with sample_types=all")):
        st, _, body = ui.srv.request("GET", "/api/v1/profiles/query?" + urllib.parse.urlencode(
            dict(query=q, format="flamegraph", **params)))
        assert (st, json.loads(body)["error"]) == (400, msg)
