"""Aggregation over time and a diff's normalisation (README "Aggregation over time"): a range merge
of an inuse/goroutine/threadcreate type is, per series, the mean of its profiles node by node, the
series' means summed; every other type sums. Known profiles at known times, exact node values
through every surface (flame graph JSON, top, folded, pprof read by `go tool pprof`, Pyroscope's
/render, the querier's SelectMergeStacktraces), `aggregation=sum|avg` overriding the type's rule,
the answer saying which; a diff of 5 and 3.4 minutes of the same workload shows no change by rate
(`normalize`), and its absolute values with normalize=none; bad values of both parameters are
400s naming them, and nothing stored changes."""

import json
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import CPU_TYPE, QUERY_T0, go_pprof
from ui_util import browser, chromium_driver  # noqa: F401 (fixtures)

T0 = QUERY_T0
INUSE = "memory:inuse_space:bytes:space:bytes"
ALLOC = "memory:alloc_space:bytes:space:bytes"
GOROUTINE = "goroutine:goroutine:count:goroutine:count"


def make_profile(sample_type, unit, period_type, period_unit, stacks, duration_s=10, period=1):
    """A pprof with one sample type; stacks: [(root-first frame names, value)]."""
    st = ["", sample_type, unit, period_type, period_unit]
    idx = {}

    def s(x):
        if x not in st:
            st.append(x)
        return st.index(x)

    p = pd.Profile(string_table=st)
    p.sample_type = [pd.ValueType(1, 2)]
    p.period_type = pd.ValueType(3, 4)
    p.period = period
    p.duration_nanos = duration_s * 10**9
    p.mapping = [pd.Mapping(id=1, has_functions=True)]
    for frames, v in stacks:
        locs = []
        for name in frames:
            if name not in idx:
                fid = len(idx) + 1
                p.function.append(pd.Function(id=fid, name=s(name), filename=s("main.go")))
                p.location.append(pd.Location(id=fid, mapping_id=1, address=0x1000 * fid,
                                              line=[pd.Line(function_id=fid, line=fid)]))
                idx[name] = fid
            locs.append(idx[name])
        p.sample.append(pd.Sample(location_id=list(reversed(locs)), value=[v]))
    return pd.encode(p)


def inuse(stacks):
    return make_profile("inuse_space", "bytes", "space", "bytes", stacks, duration_s=0, period=524288)


def cpu(stacks):
    return make_profile("cpu", "nanoseconds", "cpu", "nanoseconds", stacks, duration_s=10, period=10000000)


# series a: three snapshots; series b: two (README: per series the mean, the means summed)
A = [(10, [(["main", "f"], 100), (["main", "g"], 10)]),
     (20, [(["main", "f"], 200), (["main", "g"], 20)]),
     (30, [(["main", "f"], 301), (["main", "g"], 31)])]
B = [(15, [(["main", "f"], 50), (["main", "h"], 3)]),
     (25, [(["main", "f"], 70), (["main", "h"], 4)])]
# per series, node by node, rounded half away from zero: a f 200.33 -> 200, g 20.33 -> 20;
# b f 60, h 3.5 -> 4
AVG = {("main",): 284, ("main", "f"): 260, ("main", "g"): 20, ("main", "h"): 4}
SUM = {("main",): 789, ("main", "f"): 721, ("main", "g"): 61, ("main", "h"): 7}


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="aggregation", retention="0")

    def push(body, name, labels, ts):
        st, _ = s.push(body, name=name, labels=labels, time=str(ts))
        assert st == 200, (labels, ts, st, s.last_raw[:300])

    for ts, stacks in A:
        push(inuse(stacks), "memory", '{job="agg",pod="a"}', T0 + ts)
    for ts, stacks in B:
        push(inuse(stacks), "memory", '{job="agg",pod="b"}', T0 + ts)
    for ts, stacks in A:  # the same values as a cpu type: summed
        push(cpu(stacks), "process_cpu", '{job="agg",pod="a"}', T0 + ts)
    for ts in (10, 20):  # goroutine counts (Go's fixture, 26 goroutines) twice: the mean is one
        push("go/goroutine-01.pb.gz", "goroutine", '{job="agg"}', T0 + ts)
    # the same workload every 10 s for 10 minutes: 1 s of cpu in f, 0.5 s in g per 10 s profile
    for k in range(1, 61):
        push(cpu([(["main", "f"], 10**9), (["main", "g"], 5 * 10**8)]), "process_cpu", '{job="steady"}', T0 + 10 * k)
    return s


def get(srv, endpoint="/api/v1/profiles/query", expect=200, **params):
    path = endpoint + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    st, hdrs, body = srv.get(path, timeout=30)
    assert st == expect, (path, st, body[:500])
    return hdrs, body


def get_json(srv, endpoint="/api/v1/profiles/query", expect=200, **params):
    hdrs, body = get(srv, endpoint, expect, **params)
    return hdrs, json.loads(body)


def flame_nodes(fg):
    """{root-first path of frame names (without "total"): total} of a flame graph JSON."""
    names, out, prev = fg["names"], {}, []
    for li, lv in enumerate(fg["levels"]):
        cur, x = [], 0
        for i in range(0, len(lv), 4):
            x += lv[i]
            total, name = lv[i + 1], names[lv[i + 3]]
            parent = ()
            for (px, pw, ppath) in prev:
                if px <= x < px + pw or (pw == 0 and px == x):
                    parent = ppath
                    break
            path = parent + (name,) if li else ()
            cur.append((x, total, path))
            if li:
                out[path] = total
            x += total
        prev = cur
    return out


def folded(body):
    out = {}
    for line in body.decode().splitlines():
        stack, v = line.rsplit(" ", 1)
        out[tuple(stack.split(";"))] = int(v)
    return out


def pprof_nodes(body):
    """{root-first path: total} of a pprof answer (every prefix of every sample's stack)."""
    p = pd.decode(body)
    names = {f.id: p.s(f.name) for f in p.function}
    locs = {l.id: names[l.line[0].function_id] for l in p.location}
    out = {}
    for smp in p.sample:
        path = tuple(locs[i] for i in reversed(smp.location_id))
        for k in range(1, len(path) + 1):
            out[path[:k]] = out.get(path[:k], 0) + smp.value[0]
    return out, [p.s(c) for c in p.comment]


RANGE = dict(start=T0, end=T0 + 60)


def test_inuse_range_is_per_series_time_average(srv):
    sel = INUSE + '{job="agg"}'
    hdrs, fg = get_json(srv, query=sel, format="flamegraph", **RANGE)
    assert flame_nodes(fg) == AVG
    assert fg["total"] == 284 and fg["aggregation"] == "avg"
    assert hdrs["x-profstore-aggregation"] == "avg"
    _, body = get(srv, query=sel, format="folded", **RANGE)
    assert folded(body) == {("main", "f"): 260, ("main", "g"): 20, ("main", "h"): 4}
    _, top = get_json(srv, query=sel, format="top", **RANGE)
    assert top["total"] == 284 and top["aggregation"] == "avg"
    assert {r["function"]: (r["flat"], r["cum"]) for r in top["rows"]} == {"f": (260, 260), "g": (20, 20), "h": (4, 4), "main": (0, 284)}
    _, body = get(srv, query=sel, **RANGE)
    nodes, comments = pprof_nodes(body)
    assert nodes == AVG
    assert comments == ["profstore: inuse_space: aggregation=avg: each series' profiles averaged over time, node by "
                        "node, and the series' means summed"]
    # one series: its mean, which is what the graph's points (one per profile) average to
    _, fg = get_json(srv, query=INUSE + '{pod="a"}', format="flamegraph", **RANGE)
    assert flame_nodes(fg) == {("main",): 220, ("main", "f"): 200, ("main", "g"): 20}
    _, pts = get_json(srv, "/api/v1/query", query="avg_over_time(%s[61s])" % (INUSE + '{pod="a"}'), time=T0 + 60)
    # 662 / 3: Prometheus 3 divides the sum (2.42's running mean gave 220.66666666666669); each node's
    # mean rounds
    assert pts["data"]["result"][0]["value"][1] == "220.66666666666666"


def test_aggregation_param_overrides(srv):
    sel = INUSE + '{job="agg"}'
    _, fg = get_json(srv, query=sel, format="flamegraph", aggregation="sum", **RANGE)
    assert flame_nodes(fg) == SUM and fg["aggregation"] == "sum"
    # a cpu type sums by its own rule, averages when asked
    csel = CPU_TYPE + '{job="agg"}'
    _, fg = get_json(srv, query=csel, format="flamegraph", **RANGE)
    assert flame_nodes(fg) == {("main",): 662, ("main", "f"): 601, ("main", "g"): 61} and fg["aggregation"] == "sum"
    _, fg = get_json(srv, query=csel, format="flamegraph", aggregation="avg", **RANGE)
    assert flame_nodes(fg) == {("main",): 220, ("main", "f"): 200, ("main", "g"): 20} and fg["aggregation"] == "avg"


def test_types_say_their_aggregation(srv):
    _, js = get_json(srv, "/api/v1/profiles/types")
    agg = {t["id"]: t["aggregation"] for t in js["data"]}
    assert agg == {INUSE: "avg", CPU_TYPE: "sum", GOROUTINE: "avg"}


def test_goroutine_snapshots_average(srv):
    """Go's goroutine fixture pushed at two times: the range merge is the one profile, not twice
    it."""
    sel = GOROUTINE + '{job="agg"}'
    _, one = get_json(srv, query=sel, format="flamegraph", start=T0 + 10, end=T0 + 10)
    _, fg = get_json(srv, query=sel, format="flamegraph", **RANGE)
    assert fg["aggregation"] == "avg"
    assert flame_nodes(fg) == flame_nodes(one) and fg["total"] == one["total"] == 26  # 26 as go tool pprof counts: one goroutine sample has an empty stack
    _, fg = get_json(srv, query=sel, format="flamegraph", aggregation="sum", **RANGE)
    assert fg["total"] == 52 and flame_nodes(fg) == {k: 2 * v for k, v in flame_nodes(one).items()}


def test_go_tool_pprof_reads_the_average(srv, tmp_path):
    url = "http://127.0.0.1:%d/api/v1/profiles/query?%s" % (srv.port, urllib.parse.urlencode(
        dict(query=INUSE + '{job="agg"}', **RANGE), quote_via=urllib.parse.quote))
    r = go_pprof(["-top", "-nodecount=10", url], tmp_path)
    assert "Showing nodes accounting for 284B, 100% of 284B total" in r.stdout, r.stdout
    flat = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[-1] in ("f", "g", "h", "main"):
            flat[parts[-1]] = parts[0]
    assert flat == {"f": "260B", "g": "20B", "h": "4B", "main": "0"}, r.stdout
    r = go_pprof(["-comments", url], tmp_path)
    assert "profstore: inuse_space: aggregation=avg" in r.stdout, r.stdout


def test_pyroscope_render_and_querier_average(srv):
    q = INUSE + '{job="agg"}'
    _, fb = get_json(srv, "/pyroscope/render", query=q, **{"from": str(T0), "until": str(T0 + 60)})
    assert fb["flamebearer"]["numTicks"] == 284
    assert fb["metadata"]["aggregation"] == "avg"
    # the timeline by the same rule: 15 s steps; (T0, T0+15]: a 110 + b 53; (T0+15, T0+30]: a's
    # mean of 220 and 332, 276, + b 74
    assert fb["timeline"]["samples"] == [0, 163, 350, 0]
    _, fb = get_json(srv, "/pyroscope/render", query=q, aggregation="sum", **{"from": str(T0), "until": str(T0 + 60)})
    assert fb["flamebearer"]["numTicks"] == 789 and fb["metadata"]["aggregation"] == "sum"
    assert fb["timeline"]["samples"] == [0, 163, 626, 0]
    # the querier (Grafana): SelectMergeStacktraces over Connect's JSON codec
    body = json.dumps({"profile_typeID": INUSE, "label_selector": '{job="agg"}', "start": T0 * 1000,
                       "end": (T0 + 60) * 1000}).encode()
    st, hdrs, data = srv.request("POST", "/querier.v1.QuerierService/SelectMergeStacktraces", body=body,
                                 headers={"Content-Type": "application/json"})
    assert st == 200, data[:300]
    assert int(json.loads(data)["flamegraph"]["total"]) == 284
    assert hdrs["x-profstore-aggregation"] == "avg"


def steady_diff(**params):
    # base: 5 minutes (30 profiles at T0+10..T0+300), compare: 3.4 minutes (20 at T0+310..T0+500)
    d = dict(base=CPU_TYPE + '{job="steady"}', base_start=T0 + 5, base_end=T0 + 305,
             compare=CPU_TYPE + '{job="steady"}', compare_start=T0 + 305, compare_end=T0 + 509)
    d.update(params)
    return d


def test_diff_of_5_and_3_4_minutes_of_one_workload_shows_no_change(srv):
    hdrs, fg = get_json(srv, "/api/v1/profiles/diff", **steady_diff(format="flamegraph"))
    assert fg["normalize"] == "rate" and hdrs["x-profstore-normalize"] == "rate"
    assert fg["base_profiled_seconds"] == 300 and fg["compare_profiled_seconds"] == 200
    assert fg["left_ticks"] == fg["right_ticks"] == 30 * 10**9  # 20 x 1.5 s each side
    _, top = get_json(srv, "/api/v1/profiles/diff", **steady_diff(format="top"))
    assert all(r["flat"] == 0 for r in top["rows"]) and top["total"] == 30 * 10**9
    _, body = get(srv, "/api/v1/profiles/diff", **steady_diff())
    nodes, comments = pprof_nodes(body)
    assert set(nodes.values()) <= {0}
    assert comments[-1] == ("profstore: normalize=rate: base profiled 300.000 s, compare profiled 200.000 s (the "
                            "base's summed values scaled to the compare side's profiled time)")
    # absolute values when asked: 45 s against 30 s
    _, fg = get_json(srv, "/api/v1/profiles/diff", **steady_diff(format="flamegraph", normalize="none"))
    assert fg["normalize"] == "none"
    assert (fg["left_ticks"], fg["right_ticks"]) == (45 * 10**9, 30 * 10**9)
    # windows of one length: absolute by default
    _, fg = get_json(srv, "/api/v1/profiles/diff", **steady_diff(format="flamegraph", compare_end=T0 + 605))
    assert fg["normalize"] == "none" and (fg["left_ticks"], fg["right_ticks"]) == (45 * 10**9, 45 * 10**9)


def test_normalize_leaves_averages_alone(srv):
    """An inuse diff of windows of different lengths: the means do not depend on the length, so
    normalize=rate scales nothing and the answer says none."""
    p = dict(base=INUSE + '{pod="a"}', base_start=T0, base_end=T0 + 20, compare=INUSE + '{pod="a"}',
             compare_start=T0 + 25, compare_end=T0 + 30, format="flamegraph")
    _, fg = get_json(srv, "/api/v1/profiles/diff", normalize="rate", **p)
    assert fg["normalize"] == "none" and fg["aggregation"] == "avg"
    assert (fg["left_ticks"], fg["right_ticks"]) == (165, 332)  # mean of 110 and 220; 332


@pytest.mark.parametrize("endpoint,params,msg", [
    ("/api/v1/profiles/query", dict(query=INUSE, aggregation="median", format="top"),
     'invalid parameter "aggregation": "median" is neither "sum" nor "avg" (the aggregation over time; absent: the '
     'profile type\'s own)'),
    ("/api/v1/profiles/diff", dict(base=INUSE, compare=INUSE, aggregation="Avg", format="top"),
     'invalid parameter "aggregation": "Avg" is neither "sum" nor "avg" (the aggregation over time; absent: the '
     'profile type\'s own)'),
    ("/api/v1/profiles/diff", dict(base=INUSE, compare=INUSE, normalize="per_second", format="top"),
     'invalid parameter "normalize": "per_second" is neither "rate" nor "none" (rate: value per second of profiled '
     'time; absent: rate when the windows\' lengths differ)'),
])
def test_bad_values_are_400s_naming_the_parameter(srv, endpoint, params, msg):
    _, js = get_json(srv, endpoint, expect=400, **params)
    assert js["error"] == msg and js["errorType"] == "bad_data"


@pytest.mark.parametrize("params,msg", [
    (dict(aggregation="median"), 'invalid parameter "aggregation": "median" is neither "sum" nor "avg"'),
    (dict(normalize="x"), 'invalid parameter "normalize": "x" is neither "rate" nor "none"'),
])
def test_pyroscope_bad_values(srv, params, msg):
    q = dict(leftQuery=INUSE + "{}", rightQuery=INUSE + "{}", **params)
    _, js = get_json(srv, "/pyroscope/render-diff", expect=400, **q)
    assert js["code"] == "invalid_argument" and js["message"].startswith(msg), js


def test_nothing_stored_changes(srv):
    """Averaged answers read the store; the stored profiles stay as pushed."""
    for agg in ("avg", "sum", "avg"):
        get(srv, query=INUSE + '{job="agg"}', aggregation=agg, **RANGE)
    _, fg = get_json(srv, query=INUSE + '{pod="a"}', format="flamegraph", start=T0 + 30, end=T0 + 30)
    assert flame_nodes(fg) == {("main",): 332, ("main", "f"): 301, ("main", "g"): 31}
    _, fg = get_json(srv, query=INUSE + '{job="agg"}', format="flamegraph", aggregation="sum", **RANGE)
    assert flame_nodes(fg) == SUM


# ---- the UI: the compare view's one measure, the flame headline ---------------------------------

def wait_panel(browser, panel):
    browser.wait_js("%s && %s.fg && !%s.el.classList.contains('busy')" % (panel, panel, panel), 15, panel)
    return browser.js("return Object.assign({text: %s.totalEl.textContent}, %s.totalEl.dataset);" % (panel, panel))


def test_ui_compare_of_5_and_3_4_minutes_shows_no_change(srv, browser):
    browser.base_url = srv.url("")
    params = dict(type=CPU_TYPE, bsel='job="steady"', bfrom=T0 + 5, bto=T0 + 305, csel='job="steady"', cfrom=T0 + 305,
                  cto=T0 + 509)
    browser.open("/compare?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    d = wait_panel(browser, "psApp.view.diff")
    assert (d["normalize"], d["left"], d["right"]) == ("rate", str(30 * 10**9), str(30 * 10**9))
    assert d["text"] == "rate: base 150 ms/s → 150 ms/s (no change)"
    assert browser.js("return psApp.view.normBtns.rate.getAttribute('aria-checked')") == "true"
    assert browser.text(".normnote") == "shown: rates, both sides per second of their profiled time (300 s and 200 s)"
    # colours and table: the same measure, so nothing changed anywhere
    changes = browser.js("const f = psApp.view.diff.flame; return [...Array(f.m.n).keys()].map((i) => f.info(i).change);")
    assert changes and set(changes) == {0}
    assert browser.js("return psApp.view.diff.top.rows;") == []  # nothing changed: no row
    browser.screenshot("compare-rate")
    # the switch: absolute values, 45 s against 30 s, everywhere
    browser.js("psApp.view.normBtns.none.click();")
    browser.wait_js("new URLSearchParams(location.search).get('norm') === 'none'", 10)
    browser.wait_js("psApp.view.diff.totalEl.dataset.normalize === 'none' && !psApp.view.diff.el.classList.contains('busy')", 15)
    d = wait_panel(browser, "psApp.view.diff")
    assert (d["left"], d["right"]) == (str(45 * 10**9), str(30 * 10**9))
    assert d["text"] == "absolute: base 45.0 s → 30.0 s (−15.0 s -33.3%)"
    changes = browser.js("const f = psApp.view.diff.flame; return [...Array(f.m.n).keys()].map((i) => f.info(i).change);")
    assert all(abs(c + 1 / 3) < 1e-12 for c in changes), changes
    assert browser.js("return psApp.view.normBtns.none.getAttribute('aria-checked')") == "true"
    assert browser.text(".normnote") == "shown: absolute values"
    rows = browser.js("return psApp.view.diff.top.rows.map((r) => [r.function, r.flat]);")
    assert sorted(rows) == [["f", -10 * 10**9], ["g", -5 * 10**9], ["main", 0]]
    browser.screenshot("compare-absolute")
    assert browser.console_errors() == [] and browser.failed_requests() == []


def test_ui_flame_headline_says_avg(srv, browser):
    browser.base_url = srv.url("")
    params = dict(type=INUSE, sel='pod="a"', **{"from": T0, "to": T0 + 60})
    browser.open("/graph?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    p = wait_panel(browser, "psApp.view.panel")
    assert (p["aggregation"], p["total"], p["text"]) == ("avg", "220", "avg 220 B")
    # the graph's points: each profile's total (110, 220, 332); their mean is the flame's total
    browser.wait_js("psApp.view.graph.u", 15, "the graph")
    pts = browser.js("return psApp.view.graph.result.map((r) => r.values.map((v) => +v[1]));")
    assert pts == [[110, 220, 332]]
    # "sum by": each 15 s step is each series' mean there (avg_over_time), as the flame graph's
    params = dict(type=INUSE, sel='job="agg"', by="pod", **{"from": T0, "to": T0 + 60})
    browser.open("/graph?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.step", 15, "the graph by pod")
    pts = browser.js("return Object.fromEntries(psApp.view.graph.result.map((r) => [r.metric.pod, "
                     "r.values.map((v) => +v[1])]));")
    assert pts == {"a": [110, 276], "b": [53, 74]}
    assert browser.console_errors() == [] and browser.failed_requests() == []
