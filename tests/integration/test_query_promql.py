"""PromQL over HTTP (/api/v1/query, /api/v1/query_range) on profile totals: functions whose values
are computed here from the fixture totals with Prometheus 2.42's formulas (extrapolatedRate for
rate and increase), every result type in Prometheus' JSON shape, execution errors as 422 with
Prometheus' message, unsupported parts as 400 that name them, and PromQL bombs (a huge range, a
huge k, deep nesting, many steps) answered quickly while the server keeps serving and what is
stored stays as it was. The evaluator's numbers are checked against Prometheus 2.42 itself in
tests/unit/query (promql_cases.test) and bench/promql.c; here the wiring is."""

import json
import time

import pytest

from conftest import CPU_TYPE, QUERY_T0, README_TOTALS, form_request

T0 = QUERY_T0
# instance a: a profile every 10 s from T0+10 (cpu-01 .. cpu-05); b: three from T0+15
PUSHES = [("a", "go/cpu-0%d.pb.gz" % (i + 1), T0 + 10 * (i + 1)) for i in range(5)] + \
         [("b", "go/cpu-0%d.pb.gz" % (i + 3), T0 + 15 + 10 * i) for i in range(3)]


def cpu(rel):
    return float(README_TOTALS[rel][1])


def points(inst):
    return [(ts * 1000, cpu(rel)) for i, rel, ts in PUSHES if i == inst]


def extrapolated_rate(pts, range_start, range_end, range_s, is_counter, is_rate):
    """Prometheus 3's extrapolatedRate, the same float operations in the same order (the start's
    extrapolation is cut to half an interval before the zero point is looked at)."""
    if len(pts) < 2:
        return None
    result = pts[-1][1] - pts[0][1]
    if is_counter:
        last = 0.0
        for _, v in pts:
            if v < last:
                result += last
            last = v
    to_start = (pts[0][0] - range_start) / 1000
    to_end = (range_end - pts[-1][0]) / 1000
    sampled = (pts[-1][0] - pts[0][0]) / 1000
    avg = sampled / (len(pts) - 1)
    threshold = avg * 1.1
    if to_start >= threshold:
        to_start = avg / 2
    if is_counter and result > 0 and pts[0][1] >= 0:
        to_zero = sampled * (pts[0][1] / result)
        if to_zero < to_start:
            to_start = to_zero
    if to_end >= threshold:
        to_end = avg / 2
    factor = (sampled + to_start + to_end) / sampled
    if is_rate:
        factor /= range_s
    return result * factor


def go_float(v):
    """Prometheus' value strings for the values used here."""
    return json.dumps(v) if v != int(v) else str(int(v))


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="promql", retention="0")
    for inst, rel, ts in PUSHES:
        st, _ = s.push(rel, labels='{job="api",instance="%s"}' % inst, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def query(srv, expr, t, **extra):
    st, _, body = form_request(srv, "GET", "/api/v1/query", dict({"query": expr, "time": t}, **extra))
    return st, json.loads(body)


def test_rate_and_increase(srv):
    t = T0 + 60
    for fn, counter, is_rate in (("rate", True, True), ("increase", True, False), ("delta", False, False)):
        st, js = query(srv, "%s(%s[1m])" % (fn, CPU_TYPE), t)
        assert st == 200, js
        got = {r["metric"]["instance"]: r["value"] for r in js["data"]["result"]}
        for inst in ("a", "b"):
            pts = [p for p in points(inst) if (t - 60) * 1000 <= p[0] <= t * 1000]
            want = extrapolated_rate(pts, (t - 60) * 1000, t * 1000, 60.0, counter, is_rate)
            assert got[inst] == [t, repr(want) if want != int(want) else str(int(want))], (fn, inst, got, want)
        # functions drop the metric name
        assert all("__name__" not in r["metric"] for r in js["data"]["result"])


def test_range_functions_over_a_range(srv):
    """sum by (job) (increase(x[30s])) at steps of 10 s: each step its own window (t-30s, t]
    (Prometheus 3: left-open)."""
    start, end = T0 + 30, T0 + 60
    st, _, body = form_request(srv, "GET", "/api/v1/query_range",
                               {"query": "sum by (job) (increase(%s[30s]))" % CPU_TYPE, "start": start, "end": end,
                                "step": 10})
    assert st == 200, body[:300]
    res = json.loads(body)["data"]["result"]
    assert [r["metric"] for r in res] == [{"job": "api"}]
    want = []
    for t in range(start, end + 1, 10):
        acc, seen = 0.0, False
        for inst in ("a", "b"):
            pts = [p for p in points(inst) if (t - 30) * 1000 < p[0] <= t * 1000]
            v = extrapolated_rate(pts, (t - 30) * 1000, t * 1000, 30.0, True, False)
            if v is not None:
                acc = acc + v if seen else v
                seen = True
        if seen:
            want.append([t, go_float(acc)])
    assert res[0]["values"] == want


def test_result_types(srv):
    t = T0 + 60
    st, js = query(srv, '"profiles"', t)
    assert (st, js["data"]) == (200, {"resultType": "string", "result": [t, "profiles"]})
    st, js = query(srv, "time()", t)
    assert js["data"] == {"resultType": "scalar", "result": [t, str(t)]}
    # a range selector: the samples of [t - 25s, t] with their own timestamps, __name__ kept
    st, js = query(srv, '%s{instance="a"}[25s]' % CPU_TYPE, t)
    assert js["data"]["resultType"] == "matrix"
    assert js["data"]["result"] == [{"metric": {"__name__": CPU_TYPE, "instance": "a", "job": "api"},
                                     "values": [[T0 + 40, str(int(cpu("go/cpu-04.pb.gz")))],
                                                [T0 + 50, str(int(cpu("go/cpu-05.pb.gz")))]]}]
    st, js = query(srv, "0/0 * %s" % CPU_TYPE, t)
    assert [r["value"][1] for r in js["data"]["result"]] == ["NaN", "NaN"]
    # topk keeps the metric name and answers in descending order
    st, js = query(srv, "topk(2, %s)" % CPU_TYPE, T0 + 30)
    vals = [float(r["value"][1]) for r in js["data"]["result"]]
    assert vals == sorted(vals, reverse=True) and len(vals) == 2
    assert all(r["metric"]["__name__"] == CPU_TYPE for r in js["data"]["result"])
    st, js = query(srv, 'label_replace(%s, "host", "$1-x", "instance", "(.*)")' % CPU_TYPE, t)
    assert sorted(r["metric"]["host"] for r in js["data"]["result"]) == ["a-x", "b-x"]
    # a range query of a range selector is refused as Prometheus refuses it
    st, _, body = form_request(srv, "GET", "/api/v1/query_range",
                               {"query": "%s[1m]" % CPU_TYPE, "start": T0, "end": T0 + 60, "step": 10})
    assert st == 400 and json.loads(body)["error"] == \
        'invalid expression type "range vector" for range query, must be Scalar or instant Vector'


def test_execution_errors_are_422(srv):
    for expr, msg in (("%s + on() %s" % (CPU_TYPE, CPU_TYPE), "many-to-many matching not allowed"),
                      ("%s * on(job) %s" % (CPU_TYPE, CPU_TYPE), "many-to-many matching not allowed"),
                      ('label_replace(%s, "instance", "x", "instance", ".*")' % CPU_TYPE,
                       "vector cannot contain metrics with the same labelset"),
                      ("topk(NaN, %s)" % CPU_TYPE, "Parameter value is NaN"),  # Prometheus 3's words
                      ("topk(1e19, %s)" % CPU_TYPE, "Scalar value 1e+19 overflows int64")):
        st, js = query(srv, expr, T0 + 60)
        assert st == 422, (expr, js)
        assert js["errorType"] == "execution" and msg in js["error"], js


def test_subqueries_and_the_last_functions(srv):
    # subqueries: steps in (T0+30, T0+60] (Prometheus 3: left-open), T0+40 .. T0+60: a: cpu-04, -05,
    # -05; b: cpu-05 (T0+35) at each
    st, js = query(srv, "max_over_time(%s[30s:10s])" % CPU_TYPE, T0 + 60)
    want = {"a": max(cpu("go/cpu-0%d.pb.gz" % i) for i in (4, 5)), "b": cpu("go/cpu-05.pb.gz")}
    assert st == 200 and {r["metric"]["instance"]: float(r["value"][1]) for r in js["data"]["result"]} == want
    # exp, ln and the trigonometric functions too (within 1e-15 of Go's math: the last bit may differ)
    st, js = query(srv, "ln(exp(%s * 0 + 2))" % CPU_TYPE, T0 + 60)
    assert st == 200 and [float(r["value"][1]) for r in js["data"]["result"]] == [2.0, 2.0], js
    st, js = query(srv, 'absent(%s{job="nope"})' % CPU_TYPE, T0 + 60)
    assert js["data"]["result"] == [{"metric": {"job": "nope"}, "value": [T0 + 60, "1"]}], js


NESTED = 'invalid parameter "query": 1:%d: expression is too deeply nested (the limit is 128 levels)'


def test_bombs(srv):
    """Each answers within seconds with a 2xx or a clear 4xx/422; the server keeps serving."""
    deep = "(" * 200 + "1" + ")" * 200
    minus = "-" * 5000 + "1"
    cases = [
        ({"query": "rate(%s[100000d])" % CPU_TYPE, "time": T0 + 60}, 200),
        ({"query": "rate(%s[1000000d])" % CPU_TYPE, "time": T0 + 60}, 400),  # out of time.Duration, as 2.42
        ({"query": "topk(1e9, %s)" % CPU_TYPE, "time": T0 + 60}, 200),
        ({"query": "topk(1e300, %s)" % CPU_TYPE, "time": T0 + 60}, 422),
        ({"query": deep, "time": T0 + 60}, (413, NESTED % 129)),
        ({"query": minus, "time": T0 + 60}, (413, NESTED % 129)),
        ({"query": "sum(" * 300 + CPU_TYPE + ")" * 300, "time": T0 + 60}, (413, NESTED % 513)),
    ]
    for params, want in cases:
        t0 = time.monotonic()
        st, _, body = form_request(srv, "GET", "/api/v1/query", params)
        assert time.monotonic() - t0 < 5, params["query"][:60]
        if isinstance(want, tuple):
            assert (st, json.loads(body)) == (want[0], {"status": "error", "errorType": "bad_data",
                                                         "error": want[1]}), (params["query"][:60], body[:300])
        else:
            assert st == want, (params["query"][:60], st, body[:300])
    # 11,001 steps of a rate over all time: a point from T0+20 on (two profiles by then)
    t0 = time.monotonic()
    st, _, body = form_request(srv, "GET", "/api/v1/query_range",
                               {"query": "sum(rate(%s[100000d]))" % CPU_TYPE, "start": T0 - 11000 + 60,
                                "end": T0 + 60, "step": 1})
    assert st == 200 and time.monotonic() - t0 < 10, (st, body[:300])
    assert len(json.loads(body)["data"]["result"][0]["values"]) == 41
    # what is stored is as it was
    st, js = query(srv, "count_over_time(%s[1h])" % CPU_TYPE, T0 + 60)
    assert sorted((r["metric"]["instance"], r["value"][1]) for r in js["data"]["result"]) == [("a", "5"), ("b", "3")]
    assert srv.running()


def test_timeout_and_limits_parameters(srv):
    st, js = query(srv, CPU_TYPE, T0 + 60, timeout="soon")
    assert st == 400 and 'invalid parameter "timeout"' in js["error"], js
    st, js = query(srv, CPU_TYPE, T0 + 60, timeout="30s")
    assert st == 200 and len(js["data"]["result"]) == 2


@pytest.fixture(scope="module")
def small(module_server_factory):
    s = module_server_factory(name="promql-small", retention="0", extra_args=["--query.max-samples", "5"])
    for inst, rel, ts in PUSHES:
        st, _ = s.push(rel, labels='{job="api",instance="%s"}' % inst, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def test_max_samples_flag(small):
    st, js = query(small, "count_over_time(%s[1h])" % CPU_TYPE, T0 + 60)  # 8 samples
    assert st == 422 and js["error"].startswith(
        "query processing would load too many samples into memory in query execution"), js
    st, js = query(small, '%s{instance="b"}' % CPU_TYPE, T0 + 60)  # b's 3, and one answered
    assert st == 200 and len(js["data"]["result"]) == 1, js


@pytest.fixture(scope="module")
def compat2(module_server_factory):
    """The same profiles in a profstore with Prometheus 2.42's semantics."""
    s = module_server_factory(name="promql-compat2", retention="0", extra_args=["--promql.compat=2"])
    for inst, rel, ts in PUSHES:
        st, _ = s.push(rel, labels='{job="api",instance="%s"}' % inst, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def test_prometheus_3_by_default_and_2_42_with_compat_2(srv, compat2, module_server_factory):
    """Prometheus 3's semantics by default, 2.42's with --promql.compat=2: a's profiles are 10 s
    apart (T0+10, T0+20, ...), so x[10s] at T0+20 holds one of them in (T0+10, T0+20] and two in
    [T0+10, T0+20]; the lookback of 5m at T0+310 leaves out a's T0+10 ... and so on."""
    a = CPU_TYPE + '{instance="a"}'
    for q, t, want3, want2 in [
            ("count_over_time(%s[10s])" % a, T0 + 20, "1", "2"),
            ("sum_over_time(%s[10s])" % a, T0 + 20, go_float(cpu("go/cpu-02.pb.gz")),
             go_float(cpu("go/cpu-01.pb.gz") + cpu("go/cpu-02.pb.gz"))),
            ("count_over_time(%s[30s:10s])" % a, T0 + 50, "3", "4"),  # subquery steps (T0+20, T0+50]
            ("count(%s)" % a, T0 + 350, None, "1")]:  # the lookback: (T0+50, T0+350] is empty
        for s, want in ((srv, want3), (compat2, want2)):
            st, js = query(s, q, t)
            assert st == 200, (q, js)
            got = [r["value"][1] for r in js["data"]["result"]]
            assert got == ([want] if want is not None else []), (q, s is compat2, got)
    # holt_winters is 2.42's; Prometheus 3's double_exponential_smoothing is experimental
    hw, des = "holt_winters(%s[1m], 0.5, 0.5)" % a, "double_exponential_smoothing(%s[1m], 0.5, 0.5)" % a
    st, js = query(srv, hw, T0 + 60)
    assert (st, js["error"]) == (400, 'invalid parameter "query": 1:1: parse error: unknown function with name '
                                      '"holt_winters"'), js
    st, js = query(srv, des, T0 + 60)
    assert (st, js["error"]) == (400, 'invalid parameter "query": 1:1: parse error: function '
                                      '"double_exponential_smoothing" is not enabled'), js
    st, js2 = query(compat2, hw, T0 + 60)
    assert st == 200 and len(js2["data"]["result"]) == 1, js2
    st, js = query(compat2, des, T0 + 60)
    assert (st, js["error"]) == (400, 'invalid parameter "query": 1:1: parse error: unknown function with name '
                                      '"double_exponential_smoothing"'), js
    exp = module_server_factory(name="promql-experimental", retention="0",
                                extra_args=["--enable-feature=promql-experimental-functions"])
    for inst, rel, ts in PUSHES:
        assert exp.push(rel, labels='{job="api",instance="%s"}' % inst, time=str(ts))[0] == 200
    st, js3 = query(exp, des, T0 + 60)
    # the same function under its new name; the window (T0, T0+60] holds the same samples as [T0, T0+60]
    assert st == 200 and js3["data"]["result"] == js2["data"]["result"], (js3, js2)
    # quoted names (Prometheus 3): the same selector; 2.42 refuses them
    st, js = query(srv, '{"%s", "instance"="a"}' % CPU_TYPE, T0 + 60)
    assert st == 200 and [r["value"][1] for r in js["data"]["result"]] == [go_float(cpu("go/cpu-05.pb.gz"))], js
    st, js = query(srv, 'sum by ("instance") (%s)' % CPU_TYPE, T0 + 60)
    assert st == 200 and sorted(r["metric"]["instance"] for r in js["data"]["result"]) == ["a", "b"], js
    st, js = query(compat2, '{"%s"}' % CPU_TYPE, T0 + 60)
    assert st == 400 and "parse error" in js["error"], js
    st, _, body = form_request(srv, "GET", "/api/v1/format_query", {"query": 'sum by ("k8s.pod") ({"a.b"="x"})'})
    assert (st, json.loads(body)["data"]) == (200, 'sum by ("k8s.pod") ({"a.b"="x"})')
    # and match[] (Prometheus 3's ParseMetricSelector)
    st, _, body = form_request(srv, "GET", "/api/v1/series", {"match[]": '{"%s", "instance"="b"}' % CPU_TYPE})
    assert st == 200 and json.loads(body)["data"] == [{"__name__": CPU_TYPE, "instance": "b", "job": "api"}], body


def test_annotations_as_prometheus_3(srv, compat2):
    """Prometheus 3's warnings and infos next to the data (each with the position of what it is
    about); none with --promql.compat=2, as 2.42 had none of these."""
    st, js = query(srv, "quantile(2, %s)" % CPU_TYPE, T0 + 60)
    assert st == 200 and js["warnings"] == ["PromQL warning: quantile value should be between 0 and 1, got 2 (1:10)"]
    assert "infos" not in js and len(js["data"]["result"]) == 1, js
    st, js = query(srv, "rate(%s[1m])" % CPU_TYPE, T0 + 60)
    assert st == 200 and js["infos"] == [
        'PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "%s" (1:6)'
        % CPU_TYPE], js
    assert "warnings" not in js and len(js["data"]["result"]) == 2, js
    st, _, body = form_request(srv, "GET", "/api/v1/query_range", {"query": "sort(%s)" % CPU_TYPE, "start": T0 + 30,
                                                                    "end": T0 + 60, "step": 10})
    js = json.loads(body)
    assert st == 200 and js["warnings"] == [
        "PromQL warning: sort is ineffective for range queries since results are always ordered by labels (1:1)"], js
    st, js = query(srv, "sum(%s)" % CPU_TYPE, T0 + 60)
    assert st == 200 and "warnings" not in js and "infos" not in js, js
    for q in ("quantile(2, %s)" % CPU_TYPE, "rate(%s[1m])" % CPU_TYPE):
        st, js = query(compat2, q, T0 + 60)
        assert st == 200 and "warnings" not in js and "infos" not in js, js
