"""PromQL that agrees with Prometheus (issue 8, item 6): a real Prometheus 2.42 scrapes two real Go
targets (gotarget; the second is stopped halfway, so its series end with stale markers and its `up`
turns 0) and itself (its histograms and summaries; only a few families kept) every second, and
remote_writes everything to profstore. After ~20 s, every query of QUERIES is asked of both over
the same window: /api/v1/query_range (step 1 s and 2.5 s) and /api/v1/query at fixed times, and the
answers must agree (same series, same timestamps, values within 1e-9 relative, NaN == NaN; order
too where Prometheus defines it). promtool query instant/range gives the same output against both.
A second Prometheus with no scrape jobs and remote_read pointed at profstore answers the same.

Every test runs twice (the window fixture's params): against Prometheus 2.42 with profstore in
--promql.compat=2 (2.42's semantics), and against Prometheus 3 (3.16.0, remote_write 2.0, its own
promtool) with profstore in its default, Prometheus 3's semantics. The Prometheus 3 half runs when
Prometheus 3 is cached (else an allowed skip), always in `make test-peers`.

"""

from __future__ import annotations

import math
import os
import time
from typing import Optional

import pytest

from conftest import fixture_bytes
from prom_util import (PromConfig, Prometheus, diff_answers, diff_kselect, diff_promtool, promtool, promtool_binary,
                       prometheus3_binary, prometheus_binary)
from scrape_util import GoTarget, gotarget_binary

# PS_PROMQL_PEER=1: the "profstore" side is a second Prometheus 2.42 with
# --web.enable-remote-write-receiver fed by the same remote_write (a check of this harness and of
# the query list: every query must agree there)
PEER = os.environ.get("PS_PROMQL_PEER") == "1"

WINDOW = 20.0  # seconds of scraping compared
STOP_B_AFTER = 9.0  # the second target stops this long after the first scrape

# Every PromQL feature of issue 8 item 3. (id, expression, ordered): ordered means the order of an
# instant vector must be Prometheus' too.
QUERIES = [
    # selectors, lookback, staleness (gotarget B stops halfway: its series end, its up turns 0)
    ("selector", "gotarget_goroutines", False),
    ("selector_matchers", 'gotarget_kernel_iterations_total{kernel=~"sort|fib",instance!=""}', False),
    ("up", "up", False),
    ("up_eq_0", "up == 0", False),
    ("offset", "gotarget_uptime_seconds offset 5s", False),
    # range functions
    ("rate", "rate(gotarget_kernel_iterations_total[5s])", False),
    ("irate", "irate(gotarget_channel_messages_total[5s])", False),
    ("increase", "increase(gotarget_mutex_acquisitions_total[10s])", False),
    ("delta", "delta(gotarget_heap_inuse_bytes[10s])", False),
    ("idelta", "idelta(gotarget_goroutines[5s])", False),
    ("resets", "resets(gotarget_heap_inuse_bytes[10s])", False),
    ("changes", "changes(gotarget_goroutines[10s])", False),
    ("deriv", "deriv(gotarget_heap_inuse_bytes[10s])", False),
    ("predict_linear", "predict_linear(gotarget_uptime_seconds[10s], 60)", False),
    ("avg_over_time", "avg_over_time(scrape_duration_seconds[10s])", False),
    ("min_over_time", "min_over_time(gotarget_heap_inuse_bytes[10s])", False),
    ("max_over_time", "max_over_time(scrape_samples_scraped[10s])", False),
    ("sum_over_time", "sum_over_time(gotarget_goroutines[10s])", False),
    ("count_over_time", "count_over_time(up[10s])", False),
    ("last_over_time", "last_over_time(gotarget_uptime_seconds[10s])", False),
    ("quantile_over_time", "quantile_over_time(0.9, scrape_duration_seconds[10s])", False),
    ("rate_offset", "rate(gotarget_kernel_iterations_total[5s] offset 3s)", False),
    # aggregations
    ("sum_by", "sum by (job) (rate(gotarget_kernel_iterations_total[5s]))", False),
    ("avg_without", "avg without (kernel) (gotarget_kernel_iterations_total)", False),
    ("min_max", "min by (instance) (gotarget_kernel_iterations_total) - max by (instance) "
                "(gotarget_kernel_iterations_total)", False),
    ("count", "count by (job) (up)", False),
    ("stddev", "stddev by (instance) (rate(gotarget_kernel_iterations_total[5s]))", False),
    ("topk", "topk(2, rate(gotarget_kernel_iterations_total[5s]))", True),
    ("bottomk", "bottomk(1, gotarget_kernel_iterations_total)", True),  # ties at 0: Prometheus' heap picks
    ("bottomk_nonzero", "bottomk(2, gotarget_kernel_iterations_total > 0)", True),
    ("quantile", "quantile(0.5, rate(gotarget_kernel_iterations_total[5s]))", False),
    ("count_values", 'count_values("value", gotarget_goroutines)', False),
    # operators
    ("arith_scalar", "gotarget_heap_inuse_bytes / 1024 + 2 ^ 3 * 2 - 7 % 3", False),
    ("unary_minus", "-gotarget_goroutines", False),
    ("compare_filter", "gotarget_goroutines > 5", False),
    ("compare_bool", "gotarget_goroutines >= bool 10", False),
    ("scalar_compare_bool", "sum(up) == bool 3", False),
    ("vector_vector", "gotarget_channel_messages_total / gotarget_mutex_acquisitions_total", False),
    ("on", "rate(gotarget_channel_messages_total[5s]) / on (instance) "
           "group_left gotarget_uptime_seconds", False),
    ("ignoring_group_left", "gotarget_kernel_iterations_total / ignoring (kernel) group_left "
                            "gotarget_uptime_seconds", False),
    ("group_right", "gotarget_uptime_seconds * on (instance, job) group_right "
                    "gotarget_kernel_iterations_total", False),
    ("div_by_zero", "gotarget_goroutines / (gotarget_goroutines - gotarget_goroutines)", False),
    # functions
    ("abs_ceil_floor", "abs(delta(gotarget_heap_inuse_bytes[5s])) + ceil(gotarget_uptime_seconds) "
                       "- floor(gotarget_uptime_seconds)", False),
    ("ceil_floor_rate", "ceil(rate(gotarget_kernel_iterations_total[5s])) * 1000 "
                        "+ floor(rate(gotarget_kernel_iterations_total[5s]))", False),
    ("round", "round(scrape_duration_seconds, 0.001)", False),
    ("round_plain", "round(rate(gotarget_kernel_iterations_total[5s]))", False),
    ("clamp", "clamp(gotarget_goroutines, 8, 12)", False),
    ("clamp_min_max", "clamp_min(gotarget_goroutines, 10) + clamp_max(gotarget_goroutines, 10)", False),
    ("time", "time()", False),
    ("time_minus", "time() - gotarget_uptime_seconds", False),
    ("vector", "vector(1)", False),
    ("scalar", "scalar(sum(up))", False),
    ("scalar_of_many", "scalar(up)", False),
    ("label_replace", 'label_replace(up, "host", "$1", "instance", "(.*):.*")', False),
    ("label_join", 'label_join(up, "id", "/", "job", "instance")', False),
    ("histogram_quantile", "histogram_quantile(0.9, sum by (le) "
                           "(rate(prometheus_http_request_duration_seconds_bucket[10s])))", False),
    ("histogram_quantile_by", "histogram_quantile(0.5, sum by (le, handler) "
                              "(rate(prometheus_http_request_duration_seconds_bucket[10s])))", False),
    ("summary_quantile", 'go_gc_duration_seconds{quantile="0.5"} * 1000', False),
]

# topk/bottomk: series that tie at the k-th place may be picked either way (Prometheus picks by the
# order its storage hands series over: its head's is creation order), so these are checked with
# diff_kselect against the selected expression, whose values must then be what was picked
KSELECT = {"topk": "rate(gotarget_kernel_iterations_total[5s])",
           "bottomk": "gotarget_kernel_iterations_total",
           "bottomk_nonzero": "gotarget_kernel_iterations_total > 0"}

# the queries also run through promtool (instant and range), against both
PROMTOOL_QUERIES = ["up", "rate(gotarget_kernel_iterations_total[5s])", "sum by (job) (up)",
                    "histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[10s])))",
                    "scalar(sum(up))"]

KEEP_SELF = ("prometheus_http_request_duration_seconds_.*|go_gc_duration_seconds.*|go_goroutines|"
             "prometheus_build_info")


class Window:
    """What the module's tests share: the two servers and the window that was compared."""

    def __init__(self, prom: Prometheus, ps, t0: float, t1: float, t_stop: float, targets, binary=None):
        self.prom, self.ps, self.t0, self.t1, self.t_stop, self.targets = prom, ps, t0, t1, t_stop, targets
        self.binary = binary  # the Prometheus binary (None: Debian's 2.42)

    def times(self):
        """instant query times: early, after B stopped (B's series stale, up 0), the end, off-grid."""
        return [self.t0 + 4, self.t_stop + 2.5, self.t1, round((self.t0 + self.t1) / 2, 3) + 0.123]


def ms(t: float) -> float:
    return math.floor(t * 1000) / 1000


@pytest.fixture(scope="module", params=["prom2", "prom3"])
def window(request, module_server_factory, tmp_path_factory):
    v3 = request.param == "prom3"
    binary = prometheus3_binary() if v3 else prometheus_binary()
    gotarget_binary()
    wd = tmp_path_factory.mktemp("promql-" + request.param)
    if PEER:
        # checks the harness itself: a Prometheus receiving the same remote_write must agree
        ps = Prometheus(wd / "peer", PromConfig(), receiver=True, binary=binary).start()
    else:
        # 2.42 against profstore with 2.x's semantics; Prometheus 3 against profstore's default
        ps = module_server_factory(name="promql-ps-" + request.param, retention="0",
                                   extra_args=[] if v3 else ["--promql.compat=2"])
    a = GoTarget(wd / "a", seed=1).start()
    b = GoTarget(wd / "b", seed=2).start()
    cfg = PromConfig(jobs={"gotarget": [a.address, b.address]}, job_labels={"gotarget": {"env": "test"}},
                     remote_write=ps.url("/api/v1/write"), self_job="prometheus",
                     keep={"prometheus": KEEP_SELF},
                     remote_write_extra=["protobuf_message: io.prometheus.write.v2.Request"] if v3 else ())
    prom = Prometheus(wd / "prom", cfg, binary=binary)
    try:
        prom.start()
        started = time.time()
        time.sleep(STOP_B_AFTER)
        b.stop()
        t_stop = time.time()
        time.sleep(max(0.0, started + WINDOW + 2 - time.time()))
        t0 = ms(started + 2)
        t1 = ms(time.time() - 1.5)
        prom.wait_sent(t1 + 0.5)
        time.sleep(0.5)  # the last request's answer (profstore commits before answering)
        yield Window(prom, ps, t0, t1, t_stop, (a, b), binary=binary if v3 else None)
    finally:
        prom.stop()
        a.kill()
        b.kill()
        if PEER:
            ps.stop()


def ps_api(w: Window, path: str, **params) -> dict:
    from prom_util import api_get
    return api_get(w.ps.port, path, params)


def agree(w: Window, qid: str, want: dict, got: dict, ordered: bool, **at) -> Optional[str]:
    """diff_answers, or for topk/bottomk diff_kselect against the selected expression's answer."""
    if qid not in KSELECT:
        return diff_answers(want, got, ordered=ordered)
    if "time" in at:
        inner = w.prom.query(KSELECT[qid], at["time"])
    else:
        inner = w.prom.query_range(KSELECT[qid], at["start"], at["end"], at["step"])
    return diff_kselect(want, got, inner)


def compare(w: Window, qid: str, expr: str, ordered: bool):
    problems = []
    for step in (1, 2.5):
        want = w.prom.query_range(expr, w.t0, w.t1, step)
        got = ps_api(w, "/api/v1/query_range", query=expr, start=w.t0, end=w.t1, step=step)
        assert want["status"] == "success", want  # the query itself is right
        assert want["data"]["result"], "Prometheus has no data for %s: the comparison would be empty" % expr
        d = agree(w, qid, want, got, False, start=w.t0, end=w.t1, step=step)
        if d:
            problems.append("query_range step=%s: %s" % (step, d))
    for t in w.times():
        want = w.prom.query(expr, t)
        got = ps_api(w, "/api/v1/query", query=expr, time=t)
        assert want["status"] == "success", want
        d = agree(w, qid, want, got, ordered, time=t)
        if d:
            problems.append("query time=%.3f: %s" % (t, d))
    return problems


def test_window_has_data(window):
    """The comparison is about something: both targets' series, B's end and its up 0 are in it."""
    w = window
    up = w.prom.query_range("up", w.t0, w.t1, 1)["data"]["result"]
    assert sorted(s["metric"]["instance"] for s in up) == sorted(
        [w.targets[0].address, w.targets[1].address, w.prom.address])
    b_up = [s for s in up if s["metric"]["instance"] == w.targets[1].address][0]["values"]
    assert b_up[0][1] == "1" and b_up[-1][1] == "0"
    buckets = w.prom.query("count(prometheus_http_request_duration_seconds_bucket)", w.t1)["data"]["result"]
    assert buckets and int(buckets[0]["value"][1]) > 10
    # profstore holds the same series
    want = w.prom.api("/api/v1/series", **{"match[]": "up", "start": w.t0, "end": w.t1})
    got = ps_api(w, "/api/v1/series", **{"match[]": "up", "start": w.t0, "end": w.t1})
    assert got["status"] == "success", got
    assert sorted(map(sorted_items, got["data"])) == sorted(map(sorted_items, want["data"]))


def sorted_items(d):
    return sorted(d.items())


@pytest.mark.parametrize("qid,expr,ordered", QUERIES, ids=[q[0] for q in QUERIES])
def test_query_agrees(window, qid, expr, ordered):
    problems = compare(window, qid, expr, ordered)
    assert not problems, "%s\n  " % expr + "\n  ".join(problems)


def test_enough_queries():
    assert len(QUERIES) >= 30


@pytest.mark.parametrize("expr", PROMTOOL_QUERIES)
def test_promtool_agrees(window, expr, tmp_path):
    promtool_binary()
    w = window
    tool = os.path.join(os.path.dirname(w.binary), "promtool") if w.binary else None  # Prometheus 3's own
    env = {"HOME": str(tmp_path), "TZ": "UTC", "PATH": "/usr/bin:/bin"}
    t = "%.3f" % w.t1
    outs = []
    for url in (w.prom.url(""), w.ps.url("")):
        ri = promtool("query", "instant", "--time=" + t, url, expr, env=env, tool=tool)
        rr = promtool("query", "range", "--start=%.3f" % w.t0, "--end=%.3f" % w.t1, "--step=1s", url, expr, env=env,
                      tool=tool)
        assert ri.returncode == 0 and rr.returncode == 0, (url, ri.stderr, rr.stderr)
        outs.append((ri.stdout, rr.stdout))
    assert outs[0][0].strip() and outs[0][1].strip(), outs[0]
    for k, what in enumerate(("instant", "range")):
        d = diff_promtool(outs[0][k], outs[1][k])
        assert d is None, "%s %s: %s" % (what, expr, d)


# ---- a second Prometheus reading profstore through remote_read --------------------------------

@pytest.fixture(scope="module")
def reader(window, tmp_path_factory):
    p = Prometheus(tmp_path_factory.mktemp("reader"), PromConfig(remote_read=window.ps.url("/api/v1/read")),
                   binary=window.binary)
    p.start()
    yield p
    p.stop()


@pytest.mark.parametrize("qid,expr,ordered", QUERIES[:12] + QUERIES[22:32] + QUERIES[-4:],
                         ids=[q[0] for q in QUERIES[:12] + QUERIES[22:32] + QUERIES[-4:]])
def test_remote_read_agrees(window, reader, qid, expr, ordered):
    w = window
    for t in w.times():
        d = agree(w, qid, w.prom.query(expr, t), reader.query(expr, t), ordered, time=t)
        assert d is None, "query %s time=%.3f: %s" % (expr, t, d)
    d = agree(w, qid, w.prom.query_range(expr, w.t0, w.t1, 1), reader.query_range(expr, w.t0, w.t1, 1), False,
              start=w.t0, end=w.t1, step=1)
    assert d is None, "query_range %s: %s" % (expr, d)


def test_remote_read_profile_totals(window, reader):
    """Profile totals through remote_read: what profstore answers itself."""
    w = window
    if PEER:
        pytest.skip("profile totals: profstore only")
    base = int(w.t0) + 1
    for i, f in enumerate(["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz"]):
        st, js = w.ps.push(fixture_bytes(f), time=str(base + 3 * i), labels='{instance="a:6060",job="api"}')
        assert st == 200, js
    expr = 'sum by (instance) (sum_over_time({__name__=~"process_cpu:cpu:.*"}[1m]))'
    t = base + 10
    want = ps_api(w, "/api/v1/query", query=expr, time=t)
    assert want["data"]["result"] == [{"metric": {"instance": "a:6060"},
                                       "value": [t, str(2980000000 + 2930000000 + 2890000000)]}], want
    d = diff_answers(want, reader.query(expr, t))
    assert d is None, d


def test_kselect_check_accepts_only_ties():
    """diff_kselect lets tied series trade places at the k-th place, nothing else."""
    def vec(*pts):
        return {"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"k": k}, "value": [10, v]} for k, v in pts]}}
    inner = vec(("a", "1"), ("b", "2"), ("c", "2"), ("d", "3"))
    want = vec(("a", "1"), ("b", "2"))
    assert diff_kselect(want, vec(("a", "1"), ("c", "2")), inner) is None  # b and c tie
    assert "values picked differ" in diff_kselect(want, vec(("a", "1"), ("d", "3")), inner)
    assert "values picked differ" in diff_kselect(want, vec(("c", "2"), ("a", "1")), inner)  # order
    assert "in the input" in diff_kselect(want, vec(("a", "1"), ("e", "2")), inner)
