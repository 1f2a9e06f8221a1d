"""Pyroscope's HTTP query API (web/api_pyroscope_query.c): /pyroscope/render (flamebearer JSON with
metadata and timeline) against profstore's own /api/v1/profiles/query?format=flamegraph of the same
selection, its numTicks against go tool pprof and the fixtures' totals, the timeline of a known push
schedule; /pyroscope/render-diff against /api/v1/profiles/diff?format=flamegraph; /label-values and
/labels as exact lists; every bad input with its exact status and message (Pyroscope's error JSON
{"code","message"}), the server serving on after each."""

import json
import re
import urllib.parse

import pytest

from conftest import PPROF_DIR, QUERY_T0, README_TOTALS, fixture_profile, go_pprof, pprof_quantity

T0 = QUERY_T0  # 2026-11-30T07:00:00Z
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"  # Pyroscope's id; stored as CPU + ":delta"
CPU_STORED = CPU + ":delta"
SAMPLES = "process_cpu:samples:count:cpu:nanoseconds"
# the render series: job="r", pushed at T0 + these offsets (seconds); cpu-05 at the very end
SCHEDULE = [("go/cpu-01.pb.gz", 0), ("go/cpu-02.pb.gz", 15), ("go/cpu-03.pb.gz", 16), ("go/cpu-04.pb.gz", 30),
            ("go/cpu-05.pb.gz", 3599)]
HEAP_TYPES = ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
              "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="pyrender", retention="0")
    pushes = [(rel, '{job="r",pyroscope_spy="gospy",service_name="render"}', T0 + off) for rel, off in SCHEDULE]
    pushes += [("go/cpu-seed2-01.pb.gz", '{job="mixed",pyroscope_spy="gospy"}', T0 + 10),
               ("go/cpu-01.pb.gz", '{job="mixed",pyroscope_spy="nodespy"}', T0 + 10),
               ("go/heap-01.pb.gz", '{job="heap",service_name="heapy"}', T0 + 20),
               ("go/cpu-01.pb.gz", '{job="d",side="left"}', T0 + 100),
               ("go/cpu-02.pb.gz", '{job="d",side="right"}', T0 + 200)]
    for rel, labels, ts in pushes:
        st, _ = s.push(rel, labels=labels, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def get(srv, path, params, expect=200):
    url = path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    st, hdrs, body = srv.get(url, timeout=30)
    assert st == expect, (url, st, body[:500])
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    return json.loads(body), body


def render(srv, query, frm=T0, until=T0 + 3600, **more):
    params = {"query": query, "from": str(frm), "until": str(until)}
    params.update(more)
    return get(srv, "/pyroscope/render", params)[0]


def own_flamegraph(srv, sel, start, end, max_nodes):
    return get(srv, "/api/v1/profiles/query", {"query": sel, "start": str(start), "end": str(end),
                                               "format": "flamegraph", "max_nodes": str(max_nodes)})[0]


def cpu_total(rels):
    """The fixtures' cpu (nanoseconds) total, summed over the samples here."""
    total = 0
    for rel in rels:
        p = fixture_profile(rel)
        k = [t for t, _ in p.type_names()].index("cpu")
        total += sum(smp.value[k] for smp in p.sample)
    return total


# ---- render ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_nodes", [None, "5", "1024"])
def test_render_equals_own_flamegraph(srv, max_nodes):
    more = {"maxNodes": max_nodes} if max_nodes else {}
    fb = render(srv, CPU + '{job="r"}', **more)
    own = own_flamegraph(srv, CPU_STORED + '{job="r"}', T0, T0 + 3600, max_nodes or 8192)
    assert fb["version"] == 1
    assert fb["flamebearer"]["names"] == own["names"]
    assert fb["flamebearer"]["levels"] == own["levels"]
    assert fb["flamebearer"]["numTicks"] == own["total"]
    assert fb["flamebearer"]["maxSelf"] == own["max_self"]
    assert fb["flamebearer"]["names"][0] == "total"
    assert fb["groups"] is None and fb["heatmap"] is None
    assert "leftTicks" not in fb and "rightTicks" not in fb


def test_render_max_nodes_spelling(srv):
    """max-nodes works too; a nonzero maxNodes wins when both are given (Pyroscope reads both, in that order)."""
    a = render(srv, CPU + '{job="r"}', **{"max-nodes": "5"})
    b = render(srv, CPU + '{job="r"}', maxNodes="5")
    c = render(srv, CPU + '{job="r"}', **{"max-nodes": "1024", "maxNodes": "5"})
    d = render(srv, CPU + '{job="r"}', maxNodes="0")  # 0: the default, 8192
    e = render(srv, CPU + '{job="r"}', **{"max-nodes": "5", "maxNodes": "0"})  # a 0 sets nothing
    assert a == b == c == e
    assert a["flamebearer"]["names"] == ["total", "main.main.func1.1", "main.main.func2", "main.cpuWorker",
                                         "runtime/pprof.Do", "main.cpuWorker.func1", "other"]
    assert d["flamebearer"] == render(srv, CPU + '{job="r"}')["flamebearer"]


def test_render_num_ticks_is_pprof_total(srv, tmp_path):
    rels = [rel for rel, _ in SCHEDULE]
    fb = render(srv, CPU + '{job="r"}')
    want = cpu_total(rels)
    assert want == sum(README_TOTALS[r][1] for r in rels) == 14550000000
    assert fb["flamebearer"]["numTicks"] == want
    ref = go_pprof(["-top", "-nodecount=1", "-symbolize=none", "-sample_index=cpu"] + [str(PPROF_DIR / r) for r in rels],
                   tmp_path)
    m = re.search(r"of ([0-9.]+[a-z]*) total", ref.stdout)
    assert m, ref.stdout
    assert round(pprof_quantity(m.group(1))) == want
    # the samples type (count) is the pprof sample count
    fbs = render(srv, SAMPLES + '{job="r"}')
    assert fbs["flamebearer"]["numTicks"] == sum(README_TOTALS[r][0] for r in rels) == 1455


def test_render_accepts_profstore_id_verbatim(srv):
    assert render(srv, CPU_STORED + '{job="r"}') == render(srv, CPU + '{job="r"}')


def test_render_metadata(srv):
    # Pyroscope's fields, then profstore's aggregation over time (README "Aggregation over time")
    assert render(srv, CPU + '{job="r"}')["metadata"] == {
        "format": "single", "spyName": "gospy", "sampleRate": 1000000000, "units": "samples", "name": "cpu",
        "aggregation": "sum"}
    assert render(srv, SAMPLES + '{job="r"}')["metadata"] == {
        "format": "single", "spyName": "gospy", "sampleRate": 100, "units": "objects", "name": "samples",
        "aggregation": "sum"}
    # two series with different spies: no one spy name
    assert render(srv, CPU + '{job="mixed"}')["metadata"]["spyName"] == ""
    want = {"memory:alloc_objects:count:space:bytes": ("objects", "alloc_objects"),
            "memory:alloc_space:bytes:space:bytes": ("bytes", "alloc_space"),
            "memory:inuse_objects:count:space:bytes": ("objects", "inuse_objects"),
            "memory:inuse_space:bytes:space:bytes": ("bytes", "inuse_space")}
    for t, (units, name) in want.items():
        md = render(srv, t + '{job="heap"}')["metadata"]
        assert md == {"format": "single", "spyName": "", "sampleRate": 100, "units": units, "name": name,
                      "aggregation": "avg" if name.startswith("inuse") else "sum"}, t


def test_render_heap_totals(srv):
    """A cumulative (non-delta) type is stored under Pyroscope's own 5-part id."""
    for k, t in enumerate(HEAP_TYPES):
        fb = render(srv, t + '{service_name="heapy"}')
        assert fb["flamebearer"]["numTicks"] == README_TOTALS["go/heap-01.pb.gz"][k], t


def test_render_timeline(srv):
    fb = render(srv, CPU + '{job="r"}')
    tl = fb["timeline"]
    # 1h / 1500 = 2.4 s, under the 15 s minimum: 240 steps of 15 s from T0
    assert tl["startTime"] == T0 and tl["durationDelta"] == 15 and tl["watermarks"] is None
    want = [0] * 240
    want[0] = 2980000000               # cpu-01 at T0: step 0
    want[1] = 2930000000               # cpu-02 at T0+15: (T0, T0+15]
    want[2] = 2890000000 + 2890000000  # cpu-03 at T0+16 and cpu-04 at T0+30: (T0+15, T0+30]
    # cpu-05 at T0+3599 belongs to the step ending at until: dropped, as Pyroscope drops it
    assert tl["samples"] == want
    assert fb["flamebearer"]["numTicks"] == sum(want) + 2860000000
    avg = render(srv, CPU + '{job="r"}', aggregation="avg")["timeline"]["samples"]
    assert avg[:4] == [2980000000, 2930000000, 2890000000, 0]
    assert render(srv, CPU + '{job="r"}', aggregation="sum")["timeline"]["samples"] == want


# (span, step, the step of cpu-05 at T0+3599 = ceil(3599 / step)): 6h / 1500 = 14.4 s and 7h: 16.8 s round
# to 15 s; 12h: 28.8 s -> 30 s; 24h: 57.6 s -> 1 m; 7d: 403.2 s -> 5 m
STEPS = [(6 * 3600, 15, 240), (7 * 3600, 15, 240), (12 * 3600, 30, 120), (86400, 60, 60), (7 * 86400, 300, 12)]


@pytest.mark.parametrize("span,step,last", STEPS)
def test_render_timeline_steps(srv, span, step, last):
    tl = render(srv, CPU + '{job="r"}', frm=T0, until=T0 + span)["timeline"]
    assert (tl["startTime"], tl["durationDelta"]) == (T0, step)
    want = [0] * (span // step)
    want[0] = 2980000000
    if step == 15:
        want[1], want[2] = 2930000000, 2 * 2890000000
    else:  # cpu-02, -03 and -04 (T0+15, +16, +30) all in (T0, T0+step]
        want[1] = 2930000000 + 2 * 2890000000
    want[last] = 2860000000
    assert tl["samples"] == want


def test_render_group_by(srv):
    """groupBy: one timeline per value of the (first) label, "*" for series without it."""
    fb = render(srv, CPU + "{}", frm=T0, until=T0 + 300, groupBy="service_name")
    assert list(fb["groups"]) == ["*", "render"]
    star, rend = [0] * 20, [0] * 20
    star[1] = 2340000000 + 2980000000  # job="mixed" at T0+10: cpu-seed2-01 and cpu-01
    star[7] = 2980000000               # job="d" side=left at T0+100: (T0+90, T0+105]
    star[14] = 2930000000              # side=right at T0+200: (T0+195, T0+210]
    rend[0], rend[1], rend[2] = 2980000000, 2930000000, 2 * 2890000000
    assert fb["groups"]["*"] == {"startTime": T0, "samples": star, "durationDelta": 15, "watermarks": None}
    assert fb["groups"]["render"] == {"startTime": T0, "samples": rend, "durationDelta": 15, "watermarks": None}
    assert fb["timeline"]["samples"] == [a + b for a, b in zip(star, rend)]
    # the first groupBy only, as Pyroscope
    st, _, body = srv.request("GET", "/pyroscope/render?" + urllib.parse.urlencode(
        [("query", CPU + '{job="r"}'), ("from", str(T0)), ("until", str(T0 + 300)), ("groupBy", "job"),
         ("groupBy", "service_name")]))
    assert st == 200 and list(json.loads(body)["groups"]) == ["r"]
    assert render(srv, CPU + '{job="nothing"}', groupBy="job")["groups"] == {}


def test_render_from_until_forms(srv):
    """ms, us and ns digit counts, YYYYMMDD; now-relative forms are checked by their range."""
    base = render(srv, CPU + '{job="r"}')
    for frm, until in [(str(T0 * 1000), str((T0 + 3600) * 1000)), (str(T0 * 10**6), str((T0 + 3600) * 10**6)),
                       (str(T0 * 10**9), str((T0 + 3600) * 10**9))]:
        assert render(srv, CPU + '{job="r"}', frm=frm, until=until) == base
    day = render(srv, CPU + '{job="r"}', frm="20261130", until="20261201")
    assert day["timeline"]["startTime"] == T0 - 7 * 3600 and day["timeline"]["durationDelta"] == 60
    assert day["flamebearer"]["numTicks"] == 14550000000
    # now-1h..now (the defaults) has none of the fixtures' data (their day is over)
    empty = get(srv, "/pyroscope/render", {"query": CPU + '{job="r"}'})[0]
    assert empty["flamebearer"]["numTicks"] == 0
    assert empty["timeline"]["durationDelta"] == 15 and len(empty["timeline"]["samples"]) == 240
    assert sum(empty["timeline"]["samples"]) == 0


def test_render_empty_selection(srv):
    fb = render(srv, CPU + '{job="nothing"}')
    own = own_flamegraph(srv, CPU_STORED + '{job="nothing"}', T0, T0 + 3600, 8192)
    assert fb["flamebearer"] == {"names": own["names"], "levels": own["levels"], "numTicks": 0, "maxSelf": 0}
    assert fb["metadata"]["spyName"] == ""


def test_render_body_shape(srv):
    """Field order and the trailing newline of Go's json.Encoder."""
    _, body = get(srv, "/pyroscope/render", {"query": CPU + '{job="r"}', "from": str(T0), "until": str(T0 + 60)})
    assert body.endswith(b"}\n")
    keys = list(json.loads(body, object_pairs_hook=lambda kv: kv))
    assert [k for k, _ in keys] == ["version", "flamebearer", "metadata", "timeline", "groups", "heatmap"]


# ---- render-diff -------------------------------------------------------------------------------------

def diff_params(left, right, lf=T0, lu=T0 + 150, rf=T0 + 150, ru=T0 + 300, **more):
    p = {"leftQuery": left, "leftFrom": str(lf), "leftUntil": str(lu), "rightQuery": right,
         "rightFrom": str(rf), "rightUntil": str(ru)}
    p.update(more)
    return p


@pytest.mark.parametrize("max_nodes", [None, "6"])
def test_render_diff_equals_own_diff(srv, max_nodes):
    more = {"maxNodes": max_nodes} if max_nodes else {}
    fb = get(srv, "/pyroscope/render-diff", diff_params(CPU + '{job="d"}', CPU + '{job="d"}', **more))[0]
    own = get(srv, "/api/v1/profiles/diff", {
        "base": CPU_STORED + '{job="d"}', "base_start": str(T0), "base_end": str(T0 + 150),
        "compare": CPU_STORED + '{job="d"}', "compare_start": str(T0 + 150), "compare_end": str(T0 + 300),
        "format": "flamegraph", "max_nodes": max_nodes or "8192"})[0]
    assert fb["flamebearer"]["names"] == own["names"]
    assert fb["flamebearer"]["levels"] == own["levels"]
    assert all(len(lv) % 7 == 0 for lv in fb["flamebearer"]["levels"])
    assert fb["flamebearer"]["numTicks"] == own["total"] == 2980000000 + 2930000000
    assert fb["flamebearer"]["maxSelf"] == own["max_self"]
    assert (fb["leftTicks"], fb["rightTicks"]) == (2980000000, 2930000000)
    assert fb["metadata"] == {"format": "double", "spyName": "", "sampleRate": 1000000000, "units": "samples",
                              "name": "cpu", "aggregation": "sum", "normalize": "none"}
    assert fb["timeline"] is None and fb["groups"] is None and fb["heatmap"] is None


def test_render_diff_by_labels(srv):
    """Left and right by selector, same range."""
    fb = get(srv, "/pyroscope/render-diff", diff_params(CPU + '{side="left"}', CPU + '{side="right"}',
                                                         lf=T0, lu=T0 + 300, rf=T0, ru=T0 + 300))[0]
    assert (fb["leftTicks"], fb["rightTicks"]) == (2980000000, 2930000000)


def test_render_diff_empty_side_leaves_ticks_out(srv):
    fb = get(srv, "/pyroscope/render-diff", diff_params(CPU + '{job="d"}', CPU + '{job="nothing"}'))[0]
    assert fb["leftTicks"] == 2980000000 and "rightTicks" not in fb


# ---- label-values, labels --------------------------------------------------------------------------

def test_label_values_names(srv):
    got = get(srv, "/pyroscope/label-values", {"label": "__name__"})[0]
    assert got == sorted(HEAP_TYPES + [CPU, SAMPLES])


def test_label_values(srv):
    assert get(srv, "/pyroscope/label-values", {"label": "job"})[0] == ["d", "heap", "mixed", "r"]
    assert get(srv, "/pyroscope/label-values", {"label": "pyroscope_spy"})[0] == ["gospy", "nodespy"]
    assert get(srv, "/pyroscope/label-values", {"label": "service_name"})[0] == ["heapy", "render"]
    assert get(srv, "/pyroscope/label-values", {"label": "nope"})[0] == []
    # restricted by a query (with or without a profile type) and a range
    assert get(srv, "/pyroscope/label-values", {"label": "job", "query": '{pyroscope_spy="gospy"}'})[0] == ["mixed", "r"]
    assert get(srv, "/pyroscope/label-values", {"label": "job", "query": HEAP_TYPES[0] + "{}"})[0] == ["heap"]
    assert get(srv, "/pyroscope/label-values", {"label": "job", "from": str(T0 + 50),
                                                "until": str(T0 + 3600)})[0] == ["d", "r"]
    assert get(srv, "/pyroscope/label-values", {"label": "__name__", "query": '{job="heap"}'})[0] == HEAP_TYPES


def test_labels(srv):
    assert get(srv, "/pyroscope/labels", {})[0] == ["__name__", "job", "pyroscope_spy", "service_name", "side"]
    assert get(srv, "/pyroscope/labels", {"query": '{job="d"}'})[0] == ["__name__", "job", "side"]
    assert get(srv, "/pyroscope/labels", {"query": CPU + '{job="heap"}'})[0] == []


def test_labels_leave_float_series_out(make_server):
    """A remote_write float series shares the label index; Pyroscope's lists show profile series only."""
    from conftest import TESTDATA
    s = make_server(retention="0")
    body = (TESTDATA / "prometheus" / "remote-write-01.bin").read_bytes()
    st, _, data = s.request("POST", "/api/v1/write", body=body,
                            headers={"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"})
    assert st == 204, data
    st, _ = s.push("go/cpu-01.pb.gz", labels='{job="p"}', time=str(T0))
    assert st == 200
    assert "kernel" in s.get_json("/api/v1/labels")["data"]
    assert get(s, "/pyroscope/labels", {})[0] == ["__name__", "job"]
    assert get(s, "/pyroscope/label-values", {"label": "job"})[0] == ["p"]
    assert get(s, "/pyroscope/label-values", {"label": "job", "query": '{job=~".+"}'})[0] == ["p"]
    assert get(s, "/pyroscope/label-values", {"label": "__name__"})[0] == [CPU, SAMPLES]


# ---- bad input ---------------------------------------------------------------------------------------

GOOD = CPU + '{job="r"}'
PROFILE_ID = "<name>:<sample-type>:<sample-unit>:<period-type>:<period-unit>[:delta]"
BAD_RENDER = [
    ({"from": "now-1h"}, 400, 'invalid parameter "query": missing (a profile type id and a selector, e.g. '
                              'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"})'),
    ({"query": ""}, 400, 'invalid parameter "query": missing (a profile type id and a selector, e.g. '
                         'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"})'),
    ({"query": "bad_query"}, 400, 'invalid parameter "query": "bad_query" is not a profile type id: expected '
                                  + PROFILE_ID + ', e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds'),
    ({"query": 'invalid_format{service_name="test"}'}, 400,
     'invalid parameter "query": "invalid_format" is not a profile type id: expected ' + PROFILE_ID
     + ', e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds'),
    ({"query": "a:b:c:d:e:f"}, 400, 'invalid parameter "query": "a:b:c:d:e:f" is not a profile type id: expected '
                                    + PROFILE_ID + ', e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds'),
    ({"query": 'myapp.cpu{env="prod"}'}, 400,
     'invalid parameter "query": "myapp.cpu" is the legacy <app>.<type> form, which is not supported: give a profile '
     'type id and select the app by its label, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="myapp"}'),
    ({"query": '{service_name="test"}'}, 400,
     'invalid parameter "query": the query must contain a profile-type selection, e.g. '
     'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}'),
    ({"query": '{__name__=~"process_cpu.*"}'}, 400,
     'invalid parameter "query": the profile type must be selected with "=" (its id before the braces), not a '
     'negation or a regex'),
    ({"query": CPU + '{__name__="' + CPU + '"}'}, 400, 'invalid parameter "query": more than one profile-type selection'),
    ({"query": CPU + '{job="r"'}, 400, 'invalid parameter "query": 1:52: parse error: unexpected end of input inside '
                                       'braces'),
    ({"query": "x:y:z:w:v{}"}, 404, 'invalid parameter "query": unknown profile type "x:y:z:w:v" (GET '
                                    '/api/v1/profiles/types lists the stored ones)'),
    ({"query": GOOD, "from": "garbage"}, 400, 'invalid parameter "from": cannot parse time "garbage" (want unix '
                                              'seconds, ms, us or ns, YYYYMMDD, RFC3339, or now-1h)'),
    ({"query": GOOD, "until": "now-1x"}, 400, 'invalid parameter "until": time "now-1x": unknown unit "x" at character 6 '
                                              '(s, m/min, h, d, w, M/mon, y)'),
    ({"query": GOOD, "until": "now-5x"}, 400, 'invalid parameter "until": time "now-5x": unknown unit "x" at character 6 '
                                              '(s, m/min, h, d, w, M/mon, y)'),
    ({"query": GOOD, "from": "now-h"}, 400, 'invalid parameter "from": time "now-h": want a number at character 5'),
    ({"query": GOOD, "from": "0", "until": "0"}, 400, 'invalid parameter "from": 1970-01-01T00:00:00Z is not after the '
                                                      'Unix epoch'),
    ({"query": GOOD, "from": "0", "until": str(T0)}, 400, 'invalid parameter "from": 1970-01-01T00:00:00Z is not after '
                                                          'the Unix epoch'),
    ({"query": GOOD, "from": str(T0), "until": str(T0)}, 400,
     'invalid time range: "until" (2026-11-30T07:00:00Z) must be after "from" (2026-11-30T07:00:00Z)'),
    ({"query": GOOD, "from": str(T0 + 60), "until": str(T0)}, 400,
     'invalid time range: "until" (2026-11-30T07:00:00Z) must be after "from" (2026-11-30T07:01:00Z)'),
    ({"query": GOOD, "from": "1000000000", "until": str(T0)}, 400,
     'invalid time range: 2001-09-09T01:46:40Z to 2026-11-30T07:00:00Z is 9213d5h13m20s long, more than the 366d '
     'allowed'),
    ({"query": GOOD, "from": str(T0), "until": "9223372036854775807"}, 400,
     'invalid time range: 2026-11-30T07:00:00Z to 2262-04-11T23:47:16.854775807Z is 85964d16h47m16s854ms long, more '
     'than the 366d allowed'),
    ({"query": GOOD, "maxNodes": str(2 ** 62)}, 400,
     'invalid parameter "maxNodes": 4611686018427387904 is over the limit of 1048576 nodes'),
    ({"query": GOOD, "max-nodes": "1048577"}, 400,
     'invalid parameter "max-nodes": 1048577 is over the limit of 1048576 nodes'),
    ({"query": GOOD, "maxNodes": "99999999999999999999"}, 400,
     'invalid parameter "maxNodes": "99999999999999999999" is not a non-negative integer'),
    ({"query": GOOD, "maxNodes": "-1"}, 400, 'invalid parameter "maxNodes": "-1" is not a non-negative integer'),
    ({"query": GOOD, "maxNodes": "ten"}, 400, 'invalid parameter "maxNodes": "ten" is not a non-negative integer'),
    ({"query": GOOD, "aggregation": "max"}, 400, 'invalid parameter "aggregation": "max" is neither "sum" nor "avg" '
     '(the aggregation over time; absent: the profile type\'s own)'),
    ({"query": GOOD, "format": "dot"}, 400, 'invalid parameter "format": "dot" is not supported (json)'),
]


@pytest.mark.parametrize("params,status,msg", BAD_RENDER, ids=[str(i) for i in range(len(BAD_RENDER))])
def test_render_bad_input(srv, params, status, msg):
    params = dict(params)
    params.setdefault("from", str(T0))
    got = get(srv, "/pyroscope/render", params, expect=status)[0]
    code = {400: "invalid_argument", 404: "not_found"}[status]
    assert got == {"code": code, "message": msg}
    # the server serves on
    assert render(srv, GOOD)["flamebearer"]["numTicks"] == 14550000000


def test_render_series_limit(make_server):
    """More series than --query.max-series: 422 resource_exhausted, as /api/v1/profiles/query says it."""
    s = make_server(retention="0", extra_args=["--query.max-series", "1"])
    for i, rel in enumerate(["go/cpu-01.pb.gz", "go/cpu-02.pb.gz"]):
        st, _ = s.push(rel, labels='{job="x",instance="%d"}' % i, time=str(T0 + 10))
        assert st == 200
    got = get(s, "/pyroscope/render", {"query": CPU + '{job="x"}', "from": str(T0), "until": str(T0 + 60)},
              expect=422)[0]
    own = s.get_json("/api/v1/profiles/query?" + urllib.parse.urlencode(
        {"query": CPU_STORED + '{job="x"}', "start": str(T0), "end": str(T0 + 60), "format": "flamegraph"}), expect=422)
    assert got == {"code": "resource_exhausted", "message": own["error"]}
    assert got["message"] == "the selector matches more than 1 series (the limit, --query.max-series); narrow it"
    assert render(s, CPU + '{job="x",instance="0"}', until=T0 + 60)["flamebearer"]["numTicks"] == 2980000000


BAD_DIFF = [
    (diff_params(CPU + "{}", CPU + "{}", leftQuery=""), 400,
     'invalid parameter "leftQuery": missing (a profile type id and a selector, e.g. '
     'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"})'),
    ({k: v for k, v in diff_params(CPU + "{}", CPU + "{}").items() if k != "rightQuery"}, 400,
     'invalid parameter "rightQuery": missing (a profile type id and a selector, e.g. '
     'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"})'),
    (diff_params("bad_query", CPU + "{}"), 400, 'invalid parameter "leftQuery": "bad_query" is not a profile type id: '
                                                'expected ' + PROFILE_ID + ', e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds'),
    (diff_params(CPU + "{}", '{service_name="test"}'), 400,
     'invalid parameter "rightQuery": the query must contain a profile-type selection, e.g. '
     'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}'),
    (diff_params(CPU + "{}", HEAP_TYPES[0] + "{}"), 400,
     "profile types must match: leftQuery selects " + CPU_STORED + ", rightQuery " + HEAP_TYPES[0]),
    (diff_params(CPU + "{}", CPU + "{}", leftFrom="0"), 400,
     'invalid parameter "leftFrom": 1970-01-01T00:00:00Z is not after the Unix epoch'),
    (diff_params(CPU + "{}", CPU + "{}", rightUntil=str(T0)), 400,
     'invalid time range: "rightUntil" (2026-11-30T07:00:00Z) must be after "rightFrom" (2026-11-30T07:02:30Z)'),
    (diff_params(CPU + "{}", CPU + "{}", maxNodes=str(2 ** 62)), 400,
     'invalid parameter "maxNodes": 4611686018427387904 is over the limit of 1048576 nodes'),
]


@pytest.mark.parametrize("params,status,msg", BAD_DIFF, ids=[str(i) for i in range(len(BAD_DIFF))])
def test_render_diff_bad_input(srv, params, status, msg):
    got = get(srv, "/pyroscope/render-diff", params, expect=status)[0]
    assert got == {"code": "invalid_argument", "message": msg}
    assert get(srv, "/pyroscope/render-diff", diff_params(CPU + '{job="d"}', CPU + '{job="d"}'))[0]["leftTicks"] == \
        2980000000


BAD_LABELS = [
    ("/pyroscope/label-values", {}, 'invalid parameter "label": missing: the label parameter is required'),
    ("/pyroscope/label-values", {"label": ""}, 'invalid parameter "label": missing: the label parameter is required'),
    ("/pyroscope/label-values", {"label": "job", "query": "{job="}, 'invalid parameter "query": 1:6: parse error: '
                                                                     'unexpected end of input inside braces'),
    ("/pyroscope/labels", {"query": "app.cpu{}"},
     'invalid parameter "query": "app.cpu" is the legacy <app>.<type> form, which is not supported: give a profile '
     'type id and select the app by its label, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}'),
    ("/pyroscope/labels", {"from": "now", "until": "now-1h"}, None),
]


@pytest.mark.parametrize("path,params,msg", BAD_LABELS, ids=[str(i) for i in range(len(BAD_LABELS))])
def test_labels_bad_input(srv, path, params, msg):
    got = get(srv, path, params, expect=400)[0]
    assert got["code"] == "invalid_argument"
    if msg is None:  # "now" in the message: its shape
        assert re.fullmatch(r'invalid time range: "until" \(\S+Z\) must be after "from" \(\S+Z\)', got["message"]), got
    else:
        assert got["message"] == msg
    assert get(srv, "/pyroscope/label-values", {"label": "job"})[0] == ["d", "heap", "mixed", "r"]


@pytest.mark.parametrize("path", ["/pyroscope/render", "/pyroscope/render-diff", "/pyroscope/label-values",
                                  "/pyroscope/labels"])
def test_get_only(srv, path):
    st, hdrs, body = srv.request("POST", path, body=b"")
    assert st == 405 and hdrs.get("allow") == "GET"
    assert json.loads(body)["error"] == "method POST not allowed on %s (use GET)" % path
