"""The Prometheus query API (docs/protocols.md) through a real client, promtool 2.42 (Debian package
prometheus), and as raw HTTP JSON: range and instant queries over profile totals with Prometheus
3's semantics (a selector at t = each series' newest profile in (t-5m, t]; sum_over_time(x[r]) at
t = the sum of the totals with ts in (t-r, t]), sum / sum by / sum without, number arithmetic, labels,
series, metadata, buildinfo, and an unsupported query reported by promtool with the server's
message.

Expected values are computed here from the fixture totals in the pprof README, not read back
from the server."""

import json
import re
import subprocess
import urllib.parse

import pytest

from conftest import (CPU_SAMPLES_TYPE, CPU_TYPE, QUERY_T0, README_TOTALS, form_request, require_tool,
                      tool_env)

T0 = QUERY_T0
HEAP_TYPES = ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
              "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]

# (instance, fixture, time= in seconds): two instances, profiles 10 s apart, the second instance
# shifted by 5 s so that step boundaries and multi-profile buckets both occur
CPU_PUSHES = [
    ("a:6060", "go/cpu-01.pb.gz", T0 + 10),
    ("a:6060", "go/cpu-02.pb.gz", T0 + 20),
    ("a:6060", "go/cpu-03.pb.gz", T0 + 30),
    ("a:6060", "go/cpu-04.pb.gz", T0 + 40),
    ("a:6060", "go/cpu-05.pb.gz", T0 + 50),
    ("b:6060", "go/cpu-03.pb.gz", T0 + 15),
    ("b:6060", "go/cpu-04.pb.gz", T0 + 25),
    ("b:6060", "go/cpu-05.pb.gz", T0 + 35),
]
HEAP_PUSH = ("a:6060", "go/heap-01.pb.gz", T0 + 30)
LOOKBACK_MS = 5 * 60 * 1000
SPAN = ["--start=%d" % (T0 - 3600), "--end=%d" % (T0 + 3600)]


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="promtool", retention="0")
    for inst, rel, ts in CPU_PUSHES + [HEAP_PUSH]:
        st, js = s.push(rel, labels='{job="api",instance="%s"}' % inst, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


@pytest.fixture(scope="module")
def promtool():
    return require_tool("promtool")


# ---- expected values ----------------------------------------------------------------------------

def cpu_points(type_index=1):
    """{instance: [(ts_ms, total)]} of the CPU series (type_index 1 = cpu nanoseconds, 0 = samples)."""
    out = {}
    for inst, rel, ts in CPU_PUSHES:
        out.setdefault(inst, []).append((ts * 1000, README_TOTALS[rel][type_index]))
    return out


def expected_range(points, start_ms, end_ms, step_ms):
    """A bare selector over a range: [(t_ms, value)] for the steps t = start + k*step <= end with a
    profile in (t-5m, t], its value the newest one's."""
    out = []
    t = start_ms
    while t <= end_ms:
        v = expected_instant(points, t)
        if v is not None:
            out.append((t, v))
        t += step_ms
    return out


def expected_sum_over_time(points, start_ms, end_ms, step_ms, range_ms):
    """sum_over_time(x[range]) over a range: the totals with ts in (t-range, t] (left-open, as
    Prometheus 3), for the steps that have any."""
    out = []
    t = start_ms
    while t <= end_ms:
        vals = [v for ts, v in points if t - range_ms < ts <= t]
        if vals:
            out.append((t, sum(vals)))
        t += step_ms
    return out


def expected_instant(points, t_ms, lookback_ms=LOOKBACK_MS):
    inside = [(ts, v) for ts, v in points if t_ms - lookback_ms < ts <= t_ms]
    return max(inside)[1] if inside else None


def sum_points(series_list):
    acc = {}
    for pts in series_list:
        for t, v in pts:
            acc[t] = acc.get(t, 0) + v
    return sorted(acc.items())


def cpu_labels(inst, name=CPU_TYPE):
    return {"__name__": name, "instance": inst, "job": "api"}


# ---- promtool -----------------------------------------------------------------------------------

def run_promtool(promtool, tmp_path, *args, expect_rc=0):
    r = subprocess.run([promtool, "query"] + list(args), capture_output=True, text=True, timeout=60,
                       env=tool_env(tmp_path), stdin=subprocess.DEVNULL)
    if expect_rc is not None:
        assert r.returncode == expect_rc, "promtool query %s: exit %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(args), r.returncode, r.stdout, r.stderr)
    return r


_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metric(text):
    """'name{a="1", b="2"}' or '{a="1"}' -> label dict (name as __name__)."""
    m = re.fullmatch(r"([^{\s]*)\{(.*)\}", text.strip())
    assert m, "unexpected promtool metric %r" % text
    labels = {k: json.loads('"%s"' % v) for k, v in _PAIR.findall(m.group(2))}
    if m.group(1):
        labels["__name__"] = m.group(1)
    return labels


def parse_ts_ms(text):
    return round(float(text) * 1000)


def parse_range_output(out):
    """promtool range output -> [(labels, [(t_ms, value)])] in printed order."""
    res = []
    for line in out.splitlines():
        if not line.strip():
            continue
        if line.endswith(" =>"):
            res.append((parse_metric(line[:-3]), []))
            continue
        m = re.fullmatch(r"(\S+) @\[([0-9.]+)\]", line.strip())
        assert m and res, "unexpected promtool range line %r in:\n%s" % (line, out)
        res[-1][1].append((parse_ts_ms(m.group(2)), float(m.group(1))))
    return res


def parse_instant_output(out):
    """promtool instant output (vector) -> [(labels, value, t_ms)]."""
    res = []
    for line in out.splitlines():
        if not line.strip():
            continue
        m = re.fullmatch(r"(.*\}) => (\S+) @\[([0-9.]+)\]", line.strip())
        assert m, "unexpected promtool instant line %r in:\n%s" % (line, out)
        res.append((parse_metric(m.group(1)), float(m.group(2)), parse_ts_ms(m.group(3))))
    return res


def test_range_query_promtool(srv, promtool, tmp_path):
    start, end = T0, T0 + 60
    r = run_promtool(promtool, tmp_path, "range", "--start=%d" % start, "--end=%d" % end, "--step=10s", srv.url(""),
                     CPU_TYPE)
    got = parse_range_output(r.stdout)
    pts = cpu_points()
    want = [(cpu_labels(inst), [(t, float(v)) for t, v in expected_range(pts[inst], start * 1000, end * 1000, 10000)])
            for inst in sorted(pts)]
    assert got == want, r.stdout
    # b's first profile is at T0+15: its value from the step at +20 on, the newest within 5m at each step
    cpu = {rel: README_TOTALS[rel][1] for rel in ("go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz")}
    assert got[1][1] == [((T0 + 20) * 1000, cpu["go/cpu-03.pb.gz"]), ((T0 + 30) * 1000, cpu["go/cpu-04.pb.gz"]),
                         ((T0 + 40) * 1000, cpu["go/cpu-05.pb.gz"]), ((T0 + 50) * 1000, cpu["go/cpu-05.pb.gz"]),
                         ((T0 + 60) * 1000, cpu["go/cpu-05.pb.gz"])]


def test_range_query_promtool_multi_profile_buckets(srv, promtool, tmp_path):
    """sum_over_time(x[20s]) at a step of 20s from T0+5: several profiles per step, and window
    boundaries exactly on profile times, which count in the window they end ((t-20s, t], as
    Prometheus 3; 2.42 counted them in both)."""
    start, end = T0 + 5, T0 + 60
    r = run_promtool(promtool, tmp_path, "range", "--start=%d" % start, "--end=%d" % end, "--step=20s", srv.url(""),
                     'sum_over_time(%s{job="api"}[20s])' % CPU_TYPE)
    got = parse_range_output(r.stdout)
    pts = cpu_points()
    want = [({"instance": inst, "job": "api"},
             [(t, float(v)) for t, v in expected_sum_over_time(pts[inst], start * 1000, end * 1000, 20000, 20000)])
            for inst in sorted(pts)]
    assert got == want, r.stdout
    # T0+45 is the last step (T0+65 > end); b's profile at T0+25 is in (T0+5, T0+25] only
    cpu = {rel: README_TOTALS[rel][1] for rel in ("go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz")}
    assert want[1][1] == [((T0 + 25) * 1000, float(cpu["go/cpu-03.pb.gz"] + cpu["go/cpu-04.pb.gz"])),
                          ((T0 + 45) * 1000, float(cpu["go/cpu-05.pb.gz"]))]
    # sum(): one series without labels, per step the sum over both instances
    r = run_promtool(promtool, tmp_path, "range", "--start=%d" % start, "--end=%d" % end, "--step=20s", srv.url(""),
                     "sum(sum_over_time(%s[20s]))" % CPU_TYPE)
    got = parse_range_output(r.stdout)
    want_sum = sum_points([expected_sum_over_time(pts[i], start * 1000, end * 1000, 20000, 20000) for i in pts])
    assert got == [({}, [(t, float(v)) for t, v in want_sum])], r.stdout


def test_range_query_samples_type(srv, promtool, tmp_path):
    """The samples:count series of the same pushes carries the sample counts."""
    start, end = T0, T0 + 60
    r = run_promtool(promtool, tmp_path, "range", "--start=%d" % start, "--end=%d" % end, "--step=10s", srv.url(""),
                     '%s{instance="a:6060"}' % CPU_SAMPLES_TYPE)
    got = parse_range_output(r.stdout)
    pts = cpu_points(type_index=0)
    want = [(cpu_labels("a:6060", CPU_SAMPLES_TYPE),
             [(t, float(v)) for t, v in expected_range(pts["a:6060"], start * 1000, end * 1000, 10000)])]
    assert got == want, r.stdout


def test_instant_query_promtool(srv, promtool, tmp_path):
    t = T0 + 60
    pts = cpu_points()
    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % t, srv.url(""), CPU_TYPE)
    got = parse_instant_output(r.stdout)
    want = [(cpu_labels(i), float(expected_instant(pts[i], t * 1000)), t * 1000) for i in sorted(pts)]
    assert got == want, r.stdout
    # the newest profile only: a = cpu-05 (T0+50), b = cpu-05 (T0+35)
    assert [v for _, v, _ in got] == [README_TOTALS["go/cpu-05.pb.gz"][1]] * 2

    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % t, srv.url(""),
                     "sum by (instance) (%s)" % CPU_TYPE)
    got = parse_instant_output(r.stdout)
    assert got == [({"instance": i}, float(expected_instant(pts[i], t * 1000)), t * 1000) for i in sorted(pts)], \
        r.stdout

    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % (T0 + 30), srv.url(""), "sum(%s)" % CPU_TYPE)
    got = parse_instant_output(r.stdout)
    want_v = sum(expected_instant(pts[i], (T0 + 30) * 1000) for i in pts)
    assert want_v == README_TOTALS["go/cpu-03.pb.gz"][1] + README_TOTALS["go/cpu-04.pb.gz"][1]
    assert got == [({}, float(want_v), (T0 + 30) * 1000)], r.stdout

    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % t, srv.url(""),
                     "sum without (instance) (%s)" % CPU_TYPE)
    got = parse_instant_output(r.stdout)
    assert got == [({"job": "api"}, float(sum(expected_instant(pts[i], t * 1000) for i in pts)), t * 1000)], r.stdout


def test_instant_query_lookback_window(srv, promtool, tmp_path):
    """(t-5m, t] (Prometheus 3): a's newest profile (T0+50) is in at t = T0+349.999 and out at
    T0+350; b's (T0+35) is out."""
    pts = cpu_points()
    r = run_promtool(promtool, tmp_path, "instant", "--time=%.3f" % (T0 + 349.999), srv.url(""), CPU_TYPE)
    assert parse_instant_output(r.stdout) == [
        (cpu_labels("a:6060"), float(expected_instant(pts["a:6060"], (T0 + 350) * 1000 - 1)), (T0 + 350) * 1000 - 1)
    ], r.stdout
    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % (T0 + 350), srv.url(""), CPU_TYPE)
    assert r.stdout.strip() == "", "an empty vector prints nothing: %r" % r.stdout
    # before the first profile: nothing either
    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % (T0 + 5), srv.url(""), CPU_TYPE)
    assert r.stdout.strip() == ""


def test_scalar_promtool(srv, promtool, tmp_path):
    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % (T0 + 60), srv.url(""), "1+1")
    assert r.stdout.strip() == "scalar: 2 @[%d]" % (T0 + 60), r.stdout
    r = run_promtool(promtool, tmp_path, "instant", "--time=%d" % (T0 + 60), srv.url(""), "(2 * 3 - 1) / 2")
    assert r.stdout.strip() == "scalar: 2.5 @[%d]" % (T0 + 60), r.stdout


def test_labels_and_series_promtool(srv, promtool, tmp_path):
    r = run_promtool(promtool, tmp_path, "labels", *SPAN, srv.url(""), "instance")
    assert r.stdout.split() == ["a:6060", "b:6060"], r.stdout
    r = run_promtool(promtool, tmp_path, "labels", *SPAN, srv.url(""), "__name__")
    assert r.stdout.split() == sorted(HEAP_TYPES + [CPU_TYPE, CPU_SAMPLES_TYPE]), r.stdout

    # (explicit ranges: without them promtool sends now -/+ 9999 h, and the fixtures' day would
    # fall out of that window in 2028)
    r = run_promtool(promtool, tmp_path, "series", "--match=%s" % CPU_TYPE, *SPAN, srv.url(""))
    got = [parse_metric(line) for line in r.stdout.splitlines() if line.strip()]
    assert got == [cpu_labels("a:6060"), cpu_labels("b:6060")], r.stdout

    # everything of job api: 2 CPU types x 2 instances + 4 heap types of a
    r = run_promtool(promtool, tmp_path, "series", '--match={job="api"}', *SPAN, srv.url(""))
    got = [parse_metric(line) for line in r.stdout.splitlines() if line.strip()]
    want = sorted([cpu_labels(i, n) for i in ("a:6060", "b:6060") for n in (CPU_TYPE, CPU_SAMPLES_TYPE)] +
                  [cpu_labels("a:6060", n) for n in HEAP_TYPES], key=lambda d: sorted(d.items()))
    assert got == want, r.stdout

    # with a time range: only series with a profile in [start, end] (b's last is T0+35, heap T0+30)
    r = run_promtool(promtool, tmp_path, "series", '--match={job="api"}', "--start=%d" % (T0 + 36),
                     "--end=%d" % (T0 + 60), srv.url(""))
    got = [parse_metric(line) for line in r.stdout.splitlines() if line.strip()]
    assert got == [cpu_labels("a:6060", CPU_TYPE), cpu_labels("a:6060", CPU_SAMPLES_TYPE)], r.stdout

    # label values with match[] and a time range: only the series with data in it (without match[]
    # too: test_labels_time_range_without_match)
    r = run_promtool(promtool, tmp_path, "labels", '--match={job="api"}', "--start=%d" % (T0 + 36),
                     "--end=%d" % (T0 + 60), srv.url(""), "instance")
    assert r.stdout.split() == ["a:6060"], r.stdout
    r = run_promtool(promtool, tmp_path, "labels", "--match=%s" % CPU_TYPE, *SPAN, srv.url(""), "instance")
    assert r.stdout.split() == ["a:6060", "b:6060"], r.stdout


@pytest.mark.parametrize("expr,msg", [
    ('%s{job="api"' % CPU_TYPE, r'invalid parameter "query": 1:%d: parse error' % (len(CPU_TYPE) + len('{job="api"') + 1)),
])
def test_invalid_query_promtool(srv, promtool, tmp_path, expr, msg):
    st, _, body = srv.get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    assert st == 400
    js = json.loads(body)
    assert js["status"] == "error" and js["errorType"] == "bad_data" and re.search(msg, js["error"]), js
    for mode in (["instant", "--time=%d" % (T0 + 60)],
                 ["range", "--start=%d" % T0, "--end=%d" % (T0 + 60), "--step=10s"]):
        r = run_promtool(promtool, tmp_path, *(mode + [srv.url(""), expr]), expect_rc=1)
        assert "bad_data" in r.stderr and js["error"] in r.stderr, r.stderr
        assert r.stdout.strip() == ""
    assert srv.running()


# ---- the same answers as HTTP JSON ----------------------------------------------------------------

def get_json_raw(srv, path, params):
    st, hdrs, body = form_request(srv, "GET", path, params)
    assert st == 200, (path, params, st, body[:500])
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    return json.loads(body), body.decode()


def test_range_query_json(srv):
    start, end = T0, T0 + 60
    js, raw = get_json_raw(srv, "/api/v1/query_range", {"query": CPU_TYPE, "start": start, "end": end, "step": "10s"})
    assert js["status"] == "success" and set(js) == {"status", "data"}, js
    assert js["data"]["resultType"] == "matrix"
    pts = cpu_points()
    want = [{"metric": cpu_labels(i),
             "values": [[t // 1000, str(v)] for t, v in expected_range(pts[i], start * 1000, end * 1000, 10000)]}
            for i in sorted(pts)]
    assert js["data"]["result"] == want
    # timestamps are JSON numbers (whole seconds without a fraction), values strings
    assert '[%d,"%d"]' % (T0 + 10, README_TOTALS["go/cpu-01.pb.gz"][1]) in raw, raw
    # step as a float number of seconds gives the same answer, POST form too
    js2, _ = get_json_raw(srv, "/api/v1/query_range", {"query": CPU_TYPE, "start": start, "end": end, "step": "10"})
    assert js2 == js
    st, _, body = form_request(srv, "POST", "/api/v1/query_range",
                               {"query": CPU_TYPE, "start": start, "end": end, "step": "10s"})
    assert st == 200 and json.loads(body) == js


def test_range_query_json_ms_timestamps(srv):
    """A start with a fraction: steps at .500; timestamps written sec.mmm (3 digits, as Prometheus)."""
    js, raw = get_json_raw(srv, "/api/v1/query_range",
                           {"query": CPU_TYPE + '{instance="a:6060"}', "start": "%d.5" % T0, "end": T0 + 60,
                            "step": "10s"})
    pts = cpu_points()["a:6060"]
    want = expected_range(pts, T0 * 1000 + 500, (T0 + 60) * 1000, 10000)
    assert [[round(t * 1000), v] for t, v in js["data"]["result"][0]["values"]] == [[t, str(v)] for t, v in want]
    assert "[%d.500,\"%d\"]" % (T0 + 10, README_TOTALS["go/cpu-01.pb.gz"][1]) in raw, raw
    # RFC3339 start works as well and means the same instant
    js2, _ = get_json_raw(srv, "/api/v1/query_range",
                          {"query": CPU_TYPE + '{instance="a:6060"}', "start": "2026-11-30T07:00:00.5Z",
                           "end": T0 + 60, "step": "10s"})
    assert js2 == js


def test_instant_query_json(srv):
    t = T0 + 60
    pts = cpu_points()
    js, raw = get_json_raw(srv, "/api/v1/query", {"query": CPU_TYPE, "time": t})
    assert js["data"]["resultType"] == "vector"
    assert js["data"]["result"] == [{"metric": cpu_labels(i), "value": [t, str(expected_instant(pts[i], t * 1000))]}
                                    for i in sorted(pts)]
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "sum by (instance) (%s)" % CPU_TYPE, "time": t})
    assert js["data"] == {"resultType": "vector", "result": [
        {"metric": {"instance": i}, "value": [t, str(expected_instant(pts[i], t * 1000))]} for i in sorted(pts)]}
    # lookback_delta narrows the window: (t-20s, t] holds a's T0+50 only
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": CPU_TYPE, "time": t, "lookback_delta": "20s"})
    assert js["data"]["result"] == [{"metric": cpu_labels("a:6060"),
                                     "value": [t, str(README_TOTALS["go/cpu-05.pb.gz"][1])]}]
    # empty result
    js, raw = get_json_raw(srv, "/api/v1/query", {"query": CPU_TYPE, "time": T0 + 1000})
    assert js["data"] == {"resultType": "vector", "result": []}, raw
    # a selector that matches nothing
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": '%s{job="nope"}' % CPU_TYPE, "time": t})
    assert js["data"] == {"resultType": "vector", "result": []}


def test_scalar_json(srv):
    js, raw = get_json_raw(srv, "/api/v1/query", {"query": "1+1", "time": T0 + 60})
    assert js == {"status": "success", "data": {"resultType": "scalar", "result": [T0 + 60, "2"]}}, raw
    js, raw = get_json_raw(srv, "/api/v1/query", {"query": "1/0", "time": "%d.25" % T0})
    assert js["data"]["result"] == [T0 + 0.25, "+Inf"] and "%d.250" % T0 in raw, raw
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "-1/0", "time": T0})
    assert js["data"]["result"][1] == "-Inf"
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "0/0", "time": T0})
    assert js["data"]["result"][1] == "NaN"
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "1/3", "time": T0})
    assert js["data"]["result"][1] == "0.3333333333333333"  # shortest round-trip, as Go prints it
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "1e-7", "time": T0})
    assert js["data"]["result"][1] == "1e-07"
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "1e21", "time": T0})
    assert js["data"]["result"][1] == "1e+21"
    js, _ = get_json_raw(srv, "/api/v1/query", {"query": "123456789012", "time": T0})
    assert js["data"]["result"][1] == "123456789012"
    # a scalar over a range: one label-less series with a point at every step
    js, _ = get_json_raw(srv, "/api/v1/query_range", {"query": "1+1", "start": T0, "end": T0 + 20, "step": 10})
    assert js["data"] == {"resultType": "matrix",
                          "result": [{"metric": {}, "values": [[T0, "2"], [T0 + 10, "2"], [T0 + 20, "2"]]}]}


def test_labels_series_json(srv):
    js, _ = get_json_raw(srv, "/api/v1/labels", {})
    assert js == {"status": "success", "data": ["__name__", "instance", "job"]}
    js, _ = get_json_raw(srv, "/api/v1/label/instance/values", {})
    assert js == {"status": "success", "data": ["a:6060", "b:6060"]}
    js, _ = get_json_raw(srv, "/api/v1/label/instance/values", [("match[]", '%s{instance="b:6060"}' % CPU_TYPE)])
    assert js["data"] == ["b:6060"]
    js, _ = get_json_raw(srv, "/api/v1/label/__name__/values", {})
    assert js["data"] == sorted(HEAP_TYPES + [CPU_TYPE, CPU_SAMPLES_TYPE])
    # with match[], start/end apply: the heap profile (T0+30) is outside [T0+36, T0+60]
    js, _ = get_json_raw(srv, "/api/v1/label/__name__/values",
                         [("match[]", '{job="api"}'), ("start", T0 + 36), ("end", T0 + 60)])
    assert js["data"] == [CPU_TYPE, CPU_SAMPLES_TYPE]
    js, _ = get_json_raw(srv, "/api/v1/labels", [("match[]", '{instance="b:6060"}'), ("start", T0 + 36),
                                                 ("end", T0 + 60)])
    assert js["data"] == []
    js, _ = get_json_raw(srv, "/api/v1/series", [("match[]", CPU_TYPE), ("match[]", '{__name__=~"memory:inuse.*"}')])
    assert js["data"] == [cpu_labels("a:6060", HEAP_TYPES[2]), cpu_labels("a:6060", HEAP_TYPES[3]),
                          cpu_labels("a:6060"), cpu_labels("b:6060")]
    js, _ = get_json_raw(srv, "/api/v1/series", [("match[]", CPU_TYPE), ("limit", "1")])
    assert js["data"] == [cpu_labels("a:6060")]
    assert js.get("warnings"), "a truncated answer says so"


@pytest.fixture(scope="module")
def ranged(module_server_factory):
    """Two series: job="old" (with a label of its own, zone) only has data an hour before T0,
    job="new" only at T0+10."""
    s = module_server_factory(name="labelrange", retention="0")
    for rel, labels, ts in (("go/cpu-01.pb.gz", '{job="old",zone="eu1"}', T0 - 3600),
                            ("go/cpu-02.pb.gz", '{job="new"}', T0 + 10)):
        st, _ = s.push(rel, labels=labels, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def test_labels_time_range_without_match(ranged, promtool, tmp_path):
    """Prometheus applies start/end to /api/v1/labels and /api/v1/label/<n>/values without match[]
    too: only series with data in [start, end] count. (Before, without match[], every series did.)"""
    s = ranged
    now = [("start", T0), ("end", T0 + 60)]
    js, _ = get_json_raw(s, "/api/v1/labels", now)
    assert js == {"status": "success", "data": ["__name__", "job"]}
    js, _ = get_json_raw(s, "/api/v1/label/job/values", now)
    assert js == {"status": "success", "data": ["new"]}
    js, _ = get_json_raw(s, "/api/v1/label/zone/values", now)
    assert js == {"status": "success", "data": []}
    # only the old range; only start (end open); only end (start open)
    js, _ = get_json_raw(s, "/api/v1/label/job/values", [("start", T0 - 3660), ("end", T0 - 3540)])
    assert js["data"] == ["old"]
    js, _ = get_json_raw(s, "/api/v1/labels", [("start", T0 - 3660), ("end", T0 - 3540)])
    assert js["data"] == ["__name__", "job", "zone"]
    js, _ = get_json_raw(s, "/api/v1/label/job/values", [("start", T0)])
    assert js["data"] == ["new"]
    js, _ = get_json_raw(s, "/api/v1/label/job/values", [("end", T0)])
    assert js["data"] == ["old"]
    # no range: the label index, every series
    js, _ = get_json_raw(s, "/api/v1/labels", {})
    assert js["data"] == ["__name__", "job", "zone"]
    js, _ = get_json_raw(s, "/api/v1/label/job/values", {})
    assert js["data"] == ["new", "old"]
    # promtool query labels --start/--end sends them as start/end
    r = run_promtool(promtool, tmp_path, "labels", "--start=%d" % T0, "--end=%d" % (T0 + 60), s.url(""), "job")
    assert r.stdout.split() == ["new"], r.stdout
    r = run_promtool(promtool, tmp_path, "labels", "--start=%d" % (T0 - 3660), "--end=%d" % (T0 - 3540), s.url(""),
                     "zone")
    assert r.stdout.split() == ["eu1"], r.stdout


def test_metadata_and_buildinfo_json(srv):
    js, _ = get_json_raw(srv, "/api/v1/metadata", {})
    assert js["status"] == "success"
    assert set(js["data"]) == set(HEAP_TYPES + [CPU_TYPE, CPU_SAMPLES_TYPE])
    for name, entries in js["data"].items():
        assert isinstance(entries, list) and len(entries) == 1, (name, entries)
        assert set(entries[0]) == {"type", "help", "unit"} and all(isinstance(v, str) for v in entries[0].values())
    assert js["data"][CPU_TYPE][0]["unit"] == "nanoseconds"
    assert js["data"][HEAP_TYPES[1]][0]["unit"] == "bytes"
    js, _ = get_json_raw(srv, "/api/v1/metadata", {"metric": CPU_TYPE})
    assert list(js["data"]) == [CPU_TYPE]
    js, _ = get_json_raw(srv, "/api/v1/status/buildinfo", {})
    assert js["status"] == "success"
    d = js["data"]
    assert {"version", "revision", "branch", "buildUser", "buildDate", "goVersion"} <= set(d), d
    assert all(isinstance(v, str) for v in d.values()), d
    assert "features" not in d, "with features Grafana takes the server for Mimir"
