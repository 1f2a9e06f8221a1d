"""The flame graph, top table and sandwich modules (web/ui/js/flame.js, table.js, sandwich.js) in headless
Chromium, through the test page web/ui/test/flame.html served (embedded) by the real server, against the
ui_server fixture's pushed profiles (ui_util.py). Expected values come from the server's own answers
(format=flamegraph / top decoded here in Python, independently of the JS) and from `go tool pprof -peek`.

The draw time of an 8,192-node graph (a synthetic profile of 12,420 call-tree nodes pushed here, merged
with max_nodes=8192) is printed and written to the test's tmp dir, never asserted."""

import base64
import colorsys
import json
import re
import struct
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

from conftest import go_pprof
from ui_util import CPU_NS, synthetic_profile
from ui_util import no_errors
from ui_util import browser, chromium_driver, ui_server  # noqa: F401 (fixtures)

PAGE = "/ui/test/flame.html"
MATCH_RGB = (0xd9, 0x46, 0xef)      # --flame-match (light scheme)
HIGHLIGHT_RGB = (0x25, 0x63, 0xeb)  # --flame-highlight
DIM_RGB = (0xd4, 0xd4, 0xd8)        # --flame-dim
LIGHT = 66                          # --flame-light
SYNTH_JOB = "synthetic"


# ---- helpers ------------------------------------------------------------------------------------

def py_nodes(fg, diff=False):
    """format=flamegraph -> [dict(level, x, w, name, parent, lt, rt)] in level order (own decoder)."""
    width = 7 if diff else 4
    nodes, prev_level = [], []
    for L, lv in enumerate(fg["levels"]):
        cur, le, re_ = [], 0, 0
        for k in range(0, len(lv), width):
            if diff:
                lx, rx = le + lv[k], re_ + lv[k + 3]
                le, re_ = lx + lv[k + 1], rx + lv[k + 4]
                n = dict(x=lx + rx, w=lv[k + 1] + lv[k + 4], lt=lv[k + 1], rt=lv[k + 4])
            else:
                x = le + lv[k]
                le = x + lv[k + 1]
                n = dict(x=x, w=lv[k + 1])
            n.update(level=L, name=fg["names"][lv[k + width - 1]], parent=None, idx=len(nodes))
            for p in prev_level:
                if p["x"] <= n["x"] < p["x"] + p["w"]:
                    n["parent"] = p["idx"]
                    break
            nodes.append(n)
            cur.append(n)
        prev_level = cur
    return nodes


def path_of(nodes, n):
    out = []
    while n["parent"] is not None:
        out.append(n["name"])
        n = nodes[n["parent"]]
    return out[::-1]


def rng(ui):
    return {"start": str(ui.t_first - 1), "end": str(ui.t_last + 1)}


def page(ui, **params):
    return PAGE + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def api_page(ui, browser, query, **extra):
    params = dict(query=query, unit="nanoseconds", **rng(ui))
    params.update(extra)
    browser.open(page(ui, **params))
    browser.wait_js("window.T && (window.T.ready || window.T.error)", 20)
    assert browser.js("return window.T.error") is None
    return params


def pixel(browser, x, y):
    """The canvas pixel at CSS (x, y) of the main flame graph (device scale 1)."""
    return tuple(browser.js("const c = window.T.flame.canvas.getContext('2d');"
                            "return Array.from(c.getImageData(arguments[0], arguments[1], 1, 1).data).slice(0, 3);",
                            int(x), int(y)))


def box_pixel(browser, path, graph="window.T.flame"):
    r = browser.js("return %s.rectOf(arguments[0]);" % graph, path)
    assert r is not None, path
    return pixel(browser, r["x"] + 1, r["y"] + 1)


def click_canvas(browser, canvas_js, x, y):
    from selenium.webdriver.common.action_chains import ActionChains
    el = browser.js("const c = %s; c.scrollIntoView({block: 'center'}); return c;" % canvas_js)
    size = browser.js("const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", el)
    ActionChains(browser.driver).move_to_element_with_offset(
        el, int(x - size[0] / 2), int(y - size[1] / 2)).click().perform()


def click_node(browser, path):
    r = browser.js("return window.T.flame.rectOf(arguments[0]);", path)
    assert r is not None, path
    click_canvas(browser, "window.T.flame.canvas", r["x"] + min(r["w"] / 2, 20), r["y"] + 9)


def keys(browser, *ks):
    """Key presses to the focused element (element.send_keys would click it first)."""
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).send_keys(*ks).perform()


def hsl_rgb(h, s, l):
    r, g, b = colorsys.hls_to_rgb(h / 360.0, l / 100.0, s / 100.0)
    return tuple(round(v * 255) for v in (r, g, b))


@pytest.fixture(scope="module")
def flame_data(ui_server):
    """The api job's merged CPU profile over the whole pushed range: flamegraph, top and pprof."""
    q = CPU_NS + '{job="api"}'
    fg = ui_server.query_json("/api/v1/profiles/query", query=q, format="flamegraph", **rng(ui_server))
    top = ui_server.query_json("/api/v1/profiles/query", query=q, format="top", **rng(ui_server))
    st, _, pprof = ui_server.srv.get("/api/v1/profiles/query?" + urllib.parse.urlencode(
        dict(query=q, **rng(ui_server)), quote_via=urllib.parse.quote))
    assert st == 200
    return dict(query=q, fg=fg, top=top, pprof=pprof, nodes=py_nodes(fg))


# ---- tests --------------------------------------------------------------------------------------

def test_page_loads_root_total(ui_server, browser, flame_data):
    api_page(ui_server, browser, flame_data["query"])
    browser.wait_for(".flame-canvas")
    assert browser.js("return window.T.flame.zoomed.total") == flame_data["fg"]["total"]
    assert browser.text(".flame-summary") != ""
    assert browser.js("return document.querySelector('#flame .flame-summary').dataset.total") == \
        str(flame_data["fg"]["total"])
    assert [b.text for b in browser.find_all("#flame .flame-crumb")] == ["total"]
    assert browser.js("return window.T.flame.lastDrawMs") > 0
    no_errors(browser)
    browser.screenshot("flame")


def test_click_zooms_and_breadcrumb_zooms_out(ui_server, browser, flame_data):
    nodes = flame_data["nodes"]
    # the widest node at level 2 whose parent is not the widest child of the root
    target = max((n for n in nodes if n["level"] == 2), key=lambda n: (n["w"], n["name"]))
    path = path_of(nodes, target)
    api_page(ui_server, browser, flame_data["query"])
    click_node(browser, path)
    z = browser.js("return window.T.flame.zoomed")
    assert z["path"] == path
    assert z["total"] == target["w"]
    assert browser.js("return document.querySelector('#flame .flame-summary').dataset.total") == str(target["w"])
    assert [b.text for b in browser.find_all("#flame .flame-crumb")] == ["total"] + path
    assert browser.js("return window.T.zooms") == [path]
    assert browser.js("return window.T.selects") == [target["name"]]
    # the zoomed node spans the canvas; its parent, dimmed above it, too
    r = browser.js("return window.T.flame.rectOf(arguments[0]);", path)
    width = browser.js("return window.T.flame.canvas.getBoundingClientRect().width")
    assert (r["x"], r["w"], r["y"]) == (0, width, 36)
    browser.screenshot("flame-zoomed")
    # Escape zooms out one level (keyboard), the breadcrumb's "total" to the root
    browser.js("window.T.flame.canvas.focus()")
    from selenium.webdriver.common.keys import Keys
    keys(browser, Keys.ESCAPE)
    assert browser.js("return window.T.flame.zoomed.path") == path[:1]
    browser.find_all("#flame .flame-crumb")[0].click()
    assert browser.js("return window.T.flame.zoomed.total") == flame_data["fg"]["total"]
    assert browser.js("return window.T.zooms") == [path, path[:1], []]
    browser.js("window.T.flame.canvas.focus()")
    # keyboard: ArrowDown moves to the root's first child, Enter zooms into it
    first_child = next(n for n in nodes if n["level"] == 1)
    keys(browser, Keys.ARROW_DOWN, Keys.ENTER)
    assert browser.js("return window.T.flame.zoomed.path") == [first_child["name"]]
    assert browser.js("return window.T.flame.zoomed.total") == first_child["w"]
    keys(browser, Keys.ESCAPE)
    assert browser.js("return window.T.flame.zoomed.path") == []
    # the API: zoom(path) and an unknown path
    assert browser.js("return window.T.flame.zoom(arguments[0])", path) is True
    assert browser.js("return window.T.flame.zoomed.total") == target["w"]
    assert browser.js("return window.T.flame.zoom(['no such frame'])") is False
    no_errors(browser)


def test_search_highlights_matching_frames(ui_server, browser, flame_data):
    nodes = flame_data["nodes"]
    rx = r"^compress/flate\."
    hit = [n for n in nodes[1:] if re.search(rx, n["name"])]
    outer = [n for n in hit if not any(re.search(rx, a) for a in path_of(nodes, n)[:-1])]
    total = sum(n["w"] for n in outer)
    assert len(hit) > 1 and total > 0
    api_page(ui_server, browser, flame_data["query"])
    box = browser.wait_for("#flame .flame-search")
    box.send_keys(rx)
    info = browser.text("#flame .flame-search-info")
    assert info.startswith("%d frames, " % len(hit))
    assert info.endswith("(%.2f%%)" % (100.0 * total / flame_data["fg"]["total"]))
    r = browser.js("return window.T.flame.search(arguments[0])", rx)
    assert r == {"matches": len(hit), "total": total, "share": total / flame_data["fg"]["total"]}
    wide_hit = max(hit, key=lambda n: n["w"])
    assert box_pixel(browser, path_of(nodes, wide_hit)) == MATCH_RGB
    miss = max((n for n in nodes[1:] if not re.search(rx, n["name"])), key=lambda n: n["w"])
    assert box_pixel(browser, path_of(nodes, miss)) == DIM_RGB
    browser.screenshot("flame-search")
    bad = browser.js("return window.T.flame.search('(')")
    assert bad["matches"] == 0 and "error" in bad
    assert browser.js("return window.T.flame.search('')") == {"matches": 0, "total": 0, "share": 0}
    assert box_pixel(browser, path_of(nodes, miss)) != DIM_RGB
    no_errors(browser)


def test_top_table_sorts_and_filters(ui_server, browser, flame_data):
    rows = flame_data["top"]["rows"]
    api_page(ui_server, browser, flame_data["query"])
    # the rendered texts in one round trip (a WebDriver call per cell took seconds)
    names = lambda: browser.js(  # noqa: E731
        "return Array.from(document.querySelectorAll('#table tbody td.fn'), td => td.innerText)")
    by = lambda key, desc: [r["function"] for r in sorted(  # noqa: E731
        rows, key=lambda r: ((-r[key] if desc else r[key]), r["function"]))]
    assert names() == by("flat", True)
    assert browser.text("#table .toptable-count") == "%d functions" % len(rows)
    browser.wait_for('#table th[data-key="cum"] button').click()
    assert names() == by("cum", True)
    assert browser.js("return document.querySelector('#table th[data-key=\"cum\"]').getAttribute('aria-sort')") \
        == "descending"
    browser.wait_for('#table th[data-key="cum"] button').click()
    assert names() == by("cum", False)
    browser.wait_for('#table th[data-key="function"] button').click()
    assert names() == sorted(r["function"] for r in rows)
    browser.js("window.T.table.sort('flat%', true)")
    assert names() == by("flat%", True)
    # the first row's values as the server sent them
    first = next(r for r in rows if r["function"] == names()[0])
    tds = browser.find_all("#table tbody tr:first-child td.num")
    assert [float(td.get_attribute("data-value")) for td in tds] == [first[k] for k in ("flat", "flat%", "cum", "cum%")]
    # filter: case-insensitive substring of function or file
    browser.wait_for("#table .toptable-filter").send_keys("FLATE")
    want = [r for r in rows if "flate" in r["function"].lower() or "flate" in r["file"].lower()]
    assert len(want) > 0 and len(want) < len(rows)
    assert sorted(names()) == sorted(r["function"] for r in want)
    assert browser.text("#table .toptable-count") == "%d of %d functions" % (len(want), len(rows))
    no_errors(browser)


def test_row_select_highlights_and_opens_sandwich(ui_server, browser, flame_data):
    nodes = flame_data["nodes"]
    name = "runtime.mallocgc"
    api_page(ui_server, browser, flame_data["query"])
    browser.js("window.T.table.filter(arguments[0])", name)
    row = next(tr for tr in browser.find_all("#table tbody tr") if tr.get_attribute("data-name") == name)
    row.click()
    assert browser.js("return window.T.selected") == name
    assert "selected" in row.get_attribute("class")
    frames = [n for n in nodes if n["name"] == name]
    widest = max(frames, key=lambda n: n["w"])
    assert box_pixel(browser, path_of(nodes, widest)) == HIGHLIGHT_RGB
    other = max((n for n in nodes[1:] if n["name"] != name), key=lambda n: n["w"])
    assert box_pixel(browser, path_of(nodes, other)) not in (HIGHLIGHT_RGB, DIM_RGB)
    assert browser.text("#sandwich .sandwich-head") == name
    browser.screenshot("flame-table-select")
    browser.js("window.T.flame.highlight(null)")
    assert box_pixel(browser, path_of(nodes, widest)) != HIGHLIGHT_RGB
    no_errors(browser)


def parse_peek(text, name):
    """go tool pprof -unit=ns -peek output -> (callers {name: ns}, callees {name: ns}, cum of name)."""
    callers, callees, cum, seen = {}, {}, None, False
    for line in text.splitlines():
        if "|" not in line or line.startswith("-") or "calls%" in line:
            continue
        left, _, right = line.partition("|")
        fn = right.strip().replace(" (inline)", "")
        if left.strip().count("%") >= 2:  # the function's own line: flat flat% sum% cum cum%
            assert fn == name, line
            cum = int(left.split()[3].rstrip("ns"))
            seen = True
            continue
        v = int(left.split()[0].rstrip("ns"))
        (callees if seen else callers)[fn] = v
    return callers, callees, cum


def level1(tree):
    nodes = py_nodes(tree)
    return nodes[0], {n["name"]: n["w"] for n in nodes if n["level"] == 1}


@pytest.mark.parametrize("name", ["runtime.mallocgc", "compress/flate.(*compressor).deflate", "runtime.gcBgMarkWorker"])
def test_sandwich_equals_pprof_peek(ui_server, browser, flame_data, tmp_path, name):
    f = tmp_path / "merged.pb.gz"
    f.write_bytes(flame_data["pprof"])
    out = go_pprof(["-unit=ns", "-peek", "^" + re.escape(name) + "$", str(f)], tmp_path).stdout
    callers, callees, cum = parse_peek(out, name)
    assert cum is not None and callees
    api_page(ui_server, browser, flame_data["query"])
    browser.js("window.T.select(arguments[0])", name)
    data = browser.js("return window.T.sandwich.data")
    root, got_callers = level1(data["callers"])
    assert (root["name"], root["w"]) == (name, cum)
    assert got_callers == callers
    root, got_callees = level1(data["callees"])
    assert (root["name"], root["w"]) == (name, cum)
    assert got_callees == callees
    # drawn: callers inverted (the function on the bottom row), callees from the top
    shown = browser.js("const s = window.T.sandwich; return [s.callersGraph.inverted, s.calleesGraph.inverted,"
                       " s.callersGraph.zoomed.total, s.calleesGraph.zoomed.total]")
    assert shown == [True, False, cum, cum]
    if name == "runtime.mallocgc":
        browser.screenshot("flame-sandwich")
    if not callers:  # runtime.gcBgMarkWorker: a goroutine's first frame, called by no one
        assert data["callers"]["levels"] == [[0, cum, cum, 0]]
        return
    # clicking a caller in the sandwich shows that function
    caller = max(callers, key=callers.get)
    r = browser.js("return window.T.sandwich.callersGraph.rectOf(arguments[0])", [caller])
    click_canvas(browser, "window.T.sandwich.callersGraph.canvas", r["x"] + min(r["w"] / 2, 20), r["y"] + 9)
    assert browser.js("return window.T.selected") == caller
    assert browser.text("#sandwich .sandwich-head") == caller
    no_errors(browser)


def test_diff_colours_and_totals(ui_server, browser):
    # instance a pushes cpu-01..03, b cpu-04..05: different programs' phases, a real diff
    r = rng(ui_server)
    params = dict(base=CPU_NS + '{instance="a:6060"}', base_start=r["start"], base_end=r["end"],
                  compare=CPU_NS + '{instance="b:6060"}', compare_start=r["start"], compare_end=r["end"])
    fg = ui_server.query_json("/api/v1/profiles/diff", format="flamegraph", **params)
    top = ui_server.query_json("/api/v1/profiles/diff", format="top", **params)
    browser.open(page(ui_server, diff="1", unit="nanoseconds", **params))
    browser.wait_js("window.T && (window.T.ready || window.T.error)", 20)
    assert browser.js("return window.T.error") is None
    assert browser.js("return window.T.flame.zoomed.total") == fg["total"] == fg["left_ticks"] + fg["right_ticks"]
    nodes = py_nodes(fg, diff=True)
    lt, rt = fg["left_ticks"], fg["right_ticks"]

    def change(n):  # of the node's value, in the diff answer's measure (its headline's and table's)
        return (0.0 if n["rt"] == 0 else float("inf")) if n["lt"] == 0 else (n["rt"] - n["lt"]) / n["lt"]

    def expected(n):
        ch = change(n)
        if ch == 0:
            return (0xc7, 0xc7, 0xc7)  # hsl(0, 0%, 78%)
        k = min(1.0, abs(ch))
        return hsl_rgb(0 if ch > 0 else 130, round(20 + 65 * k), round(LIGHT + 14 * (1 - k)))

    visible = [n for n in nodes[1:] if browser.js("return window.T.flame.rectOf(arguments[0])",
                                                  path_of(nodes, n)) is not None
               and n["w"] * 1100 > fg["total"] * 8]
    grew = max((n for n in visible if change(n) > 0), key=lambda n: n["w"])
    shrank = max((n for n in visible if change(n) < 0), key=lambda n: n["w"])
    for n in (grew, shrank):
        got = box_pixel(browser, path_of(nodes, n))
        want = expected(n)
        assert all(abs(a - b) <= 1 for a, b in zip(got, want)), (n["name"], change(n), got, want)
    g, s = box_pixel(browser, path_of(nodes, grew)), box_pixel(browser, path_of(nodes, shrank))
    assert g[0] > g[1] and s[1] > s[0]  # red grew, green shrank
    info = browser.js("return window.T.flame.info(window.T.flame.m ? arguments[0] : -1)", grew["idx"])
    assert (info["baseTotal"], info["compareTotal"]) == (grew["lt"], grew["rt"])
    # the table of changes: signed, coloured
    rows = browser.find_all("#table tbody tr")
    assert len(rows) == len(top["rows"])
    first = sorted(top["rows"], key=lambda r: (-abs(r["flat"]), r["function"]))[0]
    tds = browser.find_all("#table tbody tr:first-child td.num")
    assert float(tds[0].get_attribute("data-value")) == first["flat"]
    assert ("grew" if first["flat"] > 0 else "shrank") in tds[0].get_attribute("class")
    browser.screenshot("flame-diff")
    # the sandwich of a diff keeps both sides: the outermost occurrences' sums
    name = "runtime.mallocgc"
    occ = [n for n in nodes if n["name"] == name and name not in path_of(nodes, n)[:-1]]
    browser.js("window.T.select(arguments[0])", name)
    callees = browser.js("return window.T.sandwich.data.callees")
    assert callees["levels"][0][1] == sum(n["lt"] for n in occ) and callees["levels"][0][4] == sum(n["rt"] for n in occ)
    assert (callees["left_ticks"], callees["right_ticks"]) == (lt, rt)
    assert browser.js("return window.T.sandwich.calleesGraph.zoomed.compareTotal") == sum(n["rt"] for n in occ)
    no_errors(browser)


def test_dark_scheme(ui_server, browser, flame_data):
    """prefers-color-scheme: dark switches the CSS variables, and the graph redraws with them."""
    nodes = flame_data["nodes"]
    miss = max((n for n in nodes[1:] if not n["name"].startswith("runtime.")), key=lambda n: n["w"])
    api_page(ui_server, browser, flame_data["query"])
    assert browser.js("return window.T.flame.search(arguments[0]).matches", r"^runtime\.") == \
        sum(1 for n in nodes[1:] if n["name"].startswith("runtime."))
    assert box_pixel(browser, path_of(nodes, miss)) == DIM_RGB
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                   {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        browser.wait_js("getComputedStyle(document.documentElement).getPropertyValue('--flame-dim').trim()"
                        " === '#3f3f46'")
        browser.wait_js("(() => { const c = window.T.flame.canvas.getContext('2d'), r = window.T.flame.rectOf("
                        "arguments[0]); return Array.from(c.getImageData(r.x + 1, r.y + 1, 1, 1).data).slice(0, 3)"
                        ".join() === '63,63,70'; })()".replace("arguments[0]", json.dumps(path_of(nodes, miss))))
        browser.screenshot("flame-dark")
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    no_errors(browser)


def test_svg_and_png_export(ui_server, browser, flame_data):
    api_page(ui_server, browser, flame_data["query"])
    svg = browser.js("return window.T.flame.toSVG()")
    doc = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    rects = doc.findall(".//%srect" % ns)
    assert len(rects) == browser.js("return window.T.flame.lastDrawNodes")
    titles = [t.text for t in doc.findall(".//%stitle" % ns)]
    assert titles[0].startswith("total: ") and titles[0].endswith("(100.00%)")
    width = browser.js("return window.T.flame.canvas.width")
    height = browser.js("return window.T.flame.canvas.height")
    assert (doc.get("width"), doc.get("height")) == (str(width), str(len(flame_data["fg"]["levels"]) * 18))
    b64 = browser.js_async("const done = arguments[arguments.length - 1];"
                           "window.T.flame.toPNG().then((b) => { const r = new FileReader();"
                           " r.onload = () => done(r.result.split(',')[1]); r.readAsDataURL(b); });")
    png = base64.b64decode(b64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (width, height)
    no_errors(browser)


def test_narrow_window_and_hover(ui_server, browser, flame_data):
    api_page(ui_server, browser, flame_data["query"])
    browser.set_width(800)
    browser.wait_js("window.T.flame.canvas.getBoundingClientRect().width <= 800 - 16")
    w = browser.js("return document.getElementById('flame').getBoundingClientRect().width")
    browser.wait_js("Math.abs(window.T.flame.canvas.getBoundingClientRect().width - %f) < 1" % w)
    nodes = flame_data["nodes"]
    child = max((n for n in nodes if n["level"] == 1), key=lambda n: n["w"])
    r = browser.js("return window.T.flame.rectOf(arguments[0]);", path_of(nodes, child))
    from selenium.webdriver.common.action_chains import ActionChains
    el = browser.js("return window.T.flame.canvas")
    size = browser.js("const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", el)
    ActionChains(browser.driver).move_to_element_with_offset(
        el, int(r["x"] + 5 - size[0] / 2), int(r["y"] + 9 - size[1] / 2)).perform()
    tip = browser.wait_for("#flame .flame-tip")
    assert tip.find_element("css selector", ".flame-tip-name").text == child["name"]
    top_file = {r["function"]: r["file"] for r in flame_data["top"]["rows"]}.get(child["name"], "")
    if top_file:
        assert tip.find_element("css selector", ".flame-tip-file").text == top_file
    pct = "(%.2f%%)" % (100.0 * child["w"] / flame_data["fg"]["total"])
    assert pct in tip.text
    browser.screenshot("flame-800-hover")
    no_errors(browser)


# ---- 8,192 nodes --------------------------------------------------------------------------------

def drawn_count(nodes, width, zoom=0):
    """The boxes FlameGraph draws at width CSS px, zoomed on nodes[zoom]: the part of each node inside
    the zoomed node's span, when at least half a pixel wide (flame.js's MIN_PX)."""
    zx, zw = nodes[zoom]["x"], nodes[zoom]["w"] or 1
    scale = width / zw
    return sum(1 for n in nodes if (min(n["x"] + n["w"], zx + zw) - max(n["x"], zx)) * scale >= 0.5)


def test_draw_8192_nodes(ui_server, browser):
    srv = ui_server.srv
    ts = ui_server.t_last
    labels = 'job="%s",instance="synth:1"' % SYNTH_JOB
    st, js = srv.push(synthetic_profile(ts), query=urllib.parse.urlencode({"time": str(ts), "labels": labels}))
    assert st == 200, srv.last_raw[:300]
    q = CPU_NS + '{job="%s"}' % SYNTH_JOB
    fg = ui_server.query_json("/api/v1/profiles/query", query=q, format="flamegraph", max_nodes="8192",
                              start=str(ts - 1), end=str(ts + 1))
    nodes = py_nodes(fg)
    assert sum(1 for n in nodes[1:] if n["name"] != "other") == 8192
    browser.open(page(ui_server, query=q, unit="nanoseconds", max_nodes="8192", start=str(ts - 1), end=str(ts + 1)))
    browser.wait_js("window.T && (window.T.ready || window.T.error)", 20)
    assert browser.js("return window.T.error") is None
    assert browser.js("return window.T.flame.m.n") == len(nodes)
    width = browser.js("return window.T.flame.wrap.clientWidth")
    assert browser.js("return window.T.flame.lastDrawNodes") == drawn_count(nodes, width)
    assert browser.js("const f = window.T.flame; f.zoom(arguments[0]); return f.lastDrawNodes;",
                      path_of(nodes, nodes[1])) == drawn_count(nodes, width, zoom=1)
    browser.screenshot("flame-8192")
    no_errors(browser)
