"""Time parameters as Grafana and Pyroscope write them, in every query API: RFC3339, unix seconds,
unix milliseconds, `now`, `now-5m`, `now-1h30m` (core/timeutil.h ps_parse_time; Pyroscope's render
keeps its attime forms and takes RFC3339 too). Each form gives exactly the answer of the absolute
time it names; nonsense is a 400 that says what is wrong and at which character. Without any time a
profile query merges every profile of the last lookback (5m); `time=` keeps one profile per series.
Errors of a pprof request reach `go tool pprof`'s output.

The profiles are pushed relative to the wall clock (N: the fixture's now, whole seconds), 17 s off
every minute boundary so that a request's few ms of skew between its `now` and the test's never
moves a profile across a window's edge."""

import json
import subprocess
import time
import urllib.parse
from datetime import datetime, timezone

import pytest

import pprof_decode as pd
from conftest import CPU_TYPE, README_TOTALS, form_request, go_pprof, require_tool, tool_env
from pyro_util import connect_call

TOT = {k: v[1] for k, v in README_TOTALS.items() if k.startswith("go/cpu")}
C1, C2, C3 = TOT["go/cpu-01.pb.gz"], TOT["go/cpu-02.pb.gz"], TOT["go/cpu-03.pb.gz"]
# (fixture, job, seconds before N)
PUSHES = [("go/cpu-01.pb.gz", "api", 2417), ("go/cpu-02.pb.gz", "api", 1517), ("go/cpu-01.pb.gz", "api", 437),
          ("go/cpu-03.pb.gz", "api", 257), ("go/cpu-02.pb.gz", "api", 137), ("go/cpu-04.pb.gz", "old", 2417)]
API = '%s{job="api"}' % CPU_TYPE  # for requests that fail before they select anything


@pytest.fixture(scope="module")
def srv(module_server_factory):
    return module_server_factory(name="qtimes", retention="0")


_runs = iter(range(1, 1000))


@pytest.fixture
def d(srv):
    """PUSHES for this test alone (run="<k>"), relative to the wall clock now (N)."""
    k = next(_runs)
    srv.N = int(time.time())
    srv.API = '%s{job="api",run="%d"}' % (CPU_TYPE, k)
    srv.RUN = '{run="%d"}' % k
    for rel, job, ago in PUSHES:
        st, _ = srv.push(rel, labels='{job="%s",run="%d"}' % (job, k), time=str(srv.N - ago))
        assert st == 200, (rel, st, srv.last_raw[:300])
    return srv


def now():
    return int(time.time())


def rfc3339(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def forms(t):
    """The absolute spellings of unix second t: RFC3339, RFC3339 with an offset, seconds, float
    seconds, milliseconds."""
    return [rfc3339(t), datetime.fromtimestamp(t + 7200, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+02:00"),
            str(t), "%d.000" % t, str(t * 1000)]


def get(srv, path, params, status=200):
    st, hdrs, body = form_request(srv, "GET", path, params)
    assert st == status, (path, params, st, body[:500])
    return body


def total(body):
    return pd.totals(pd.decode(body))[0]


# ---- the default: the last lookback, merged ----------------------------------------------------------

def test_no_time_merges_the_last_lookback(d):
    q = "/api/v1/profiles/query"
    # [now-5m, now] holds N-257 (cpu-03) and N-137 (cpu-02): both merged, not only the newest
    assert total(get(d, q, {"query": d.API})) == C3 + C2
    assert total(get(d, q, {"query": d.API, "lookback": "10m"})) == C1 + C3 + C2
    assert total(get(d, q, {"query": d.API, "lookback": "1h"})) == 2 * C1 + 2 * C2 + C3
    # time= keeps its meaning: each series' newest profile in (time - lookback, time]
    assert total(get(d, q, {"query": d.API, "time": "now"})) == C2
    assert total(get(d, q, {"query": d.API, "time": "now-5m"})) == C1
    assert total(get(d, q, {"query": d.API, "time": "now", "lookback": "1h"})) == C2
    # a diff side without a time is the same window: compare (the last 5m) minus base (at now-5m),
    # in absolute values (the sides' lengths differ: rates by default)
    diff = {"base": d.API, "compare": d.API, "base_time": "now-5m", "normalize": "none"}
    assert total(get(d, "/api/v1/profiles/diff", diff)) == C3 + C2 - C1
    t = now()
    assert get(d, "/api/v1/profiles/diff", dict(diff, format="top")) == get(d, "/api/v1/profiles/diff", {
        "base": d.API, "compare": d.API, "base_time": t - 300, "compare_start": t - 300, "compare_end": t + 1,
        "format": "top", "normalize": "none"})


# ---- every form means the same time -------------------------------------------------------------------

def same_everywhere(srv, path, base, name, ago, relative, check=None):
    """path's answer with parameter name in each absolute form of now - ago is the same body; the
    relative form's is the absolute one's (as check(relative body, absolute body) says, else equal)."""
    t = now() - ago
    bodies = {f: get(srv, path, dict(base, **{name: f})) for f in forms(t)}
    assert len(set(bodies.values())) == 1, {f: b[:200] for f, b in bodies.items()}
    want = next(iter(bodies.values()))
    rel = get(srv, path, dict(base, **{name: relative}))
    if check:
        check(rel, want)
    else:
        assert rel == want, (relative, rel[:300], want[:300])
    return want


@pytest.mark.parametrize("fmt", ["pprof", "folded"])
def test_profiles_query_time_forms(d, fmt):
    q = {"query": d.API, "format": fmt}
    b = same_everywhere(d, "/api/v1/profiles/query", q, "time", 300, "now-5m")
    assert fmt != "pprof" or total(b) == C1
    b = same_everywhere(d, "/api/v1/profiles/query", dict(q, lookback="1h"), "time", 5400, "now-1h30m")
    assert b == (b"" if fmt == "folded" else b) and (fmt != "pprof" or total(b) == 0)
    b = same_everywhere(d, "/api/v1/profiles/query", q, "time", -1, "now")
    assert fmt != "pprof" or total(b) == C2


def test_profiles_range_and_diff_time_forms(d):
    q = "/api/v1/profiles/query"
    b = same_everywhere(d, q, {"query": d.API, "end": now() + 60}, "start", 5400, "now-1h30m")
    assert total(b) == 2 * C1 + 2 * C2 + C3
    b = same_everywhere(d, q, {"query": d.API, "start": now() - 5400}, "end", 300, "now-5m")
    assert total(b) == 2 * C1 + C2
    b = same_everywhere(d, "/api/v1/profiles/diff", {"base": d.API, "compare": d.API, "compare_time": now() + 60},
                        "base_time", 300, "now-5m")
    assert total(b) == C2 - C1
    b = same_everywhere(d, "/api/v1/profiles/diff", {"base": d.API, "compare": d.API, "base_time": now() - 300,
                                                     "compare_end": now() + 60, "normalize": "none"},
                        "compare_start", 1800, "now-30m")
    assert total(b) == C2 + C1 + C3 + C2 - C1


def prom_check(rel, want):
    """The same series and values; each timestamp the relative time's, within 5 s of the absolute one."""
    a, b = json.loads(rel), json.loads(want)
    assert len(a["data"]["result"]) == len(b["data"]["result"]), (a, b)
    for x, y in zip(a["data"]["result"], b["data"]["result"]):
        assert x["metric"] == y["metric"]
        xs, ys = x.get("values", [x.get("value")]), y.get("values", [y.get("value")])
        assert [v for _, v in xs] == [v for _, v in ys], (xs, ys)
        assert all(abs(p - q) < 5 for (p, _), (q, _) in zip(xs, ys)), (xs, ys)


def test_prometheus_time_forms(d):
    # a PromQL instant query at now-5m sees N-437's profile (cpu-01) within the 5m lookback
    inst = {"query": "sum(%s)" % d.API}
    b = same_everywhere(d, "/api/v1/query", inst, "time", 300, "now-5m", prom_check)
    assert json.loads(b)["data"]["result"][0]["value"][1] == str(C1)
    b = same_everywhere(d, "/api/v1/query", inst, "time", 5400, "now-1h30m", prom_check)
    assert json.loads(b)["data"]["result"] == []
    # query_range from now-1h30m by the minute
    end = now() + 150  # between two points of the grid (start now-1h30m, step 1m): both end at the same one
    b = same_everywhere(d, "/api/v1/query_range", dict(inst, step="60", end=end), "start", 5400, "now-1h30m",
                        prom_check)
    vals = json.loads(b)["data"]["result"][0]["values"]
    # the grid's points from 40 minutes before the first with a value (all after now-1h30m)
    seen = [t for t in range(int(vals[0][0]) - 2400, end + 1, 60) if any(d.N - ago <= t < d.N - ago + 300 for _, j, ago in
                                                              PUSHES if j == "api")]
    assert [v[0] for v in vals] == seen
    assert [v[1] for v in vals if v[0] < d.N - 2000] == [str(C1)] * 5
    same_everywhere(d, "/api/v1/query_range", dict(inst, step="60", start=now() - 5400), "end", -1, "now", prom_check)


@pytest.mark.parametrize("path", ["/api/v1/series", "/api/v1/labels", "/api/v1/label/job/values"])
def test_series_and_labels_time_forms(d, path):
    m = {"match[]": d.RUN}
    body = same_everywhere(d, path, m, "start", 300, "now-5m")
    if path.endswith("values"):
        assert json.loads(body)["data"] == ["api"]  # job="old" has no data in the last 5 minutes
    body = same_everywhere(d, path, m, "start", 5400, "now-1h30m")
    if path.endswith("values"):
        assert json.loads(body)["data"] == ["api", "old"]
    body = same_everywhere(d, path, dict(m, start=now() - 5400), "end", 1800, "now-30m")
    if path.endswith("values"):
        assert json.loads(body)["data"] == ["api", "old"]


def render_check(rel, want):
    a, b = json.loads(rel), json.loads(want)
    assert a["flamebearer"] == b["flamebearer"]
    assert sum(a["timeline"]["samples"]) == sum(b["timeline"]["samples"])


def test_pyroscope_render_time_forms(d):
    b = same_everywhere(d, "/pyroscope/render", {"query": d.API, "until": now() + 60}, "from", 5400, "now-1h30m",
                        render_check)
    assert json.loads(b)["flamebearer"]["numTicks"] == 2 * C1 + 2 * C2 + C3
    b = same_everywhere(d, "/pyroscope/render", {"query": d.API, "from": now() - 5400}, "until", 300, "now-5m",
                        render_check)
    assert json.loads(b)["flamebearer"]["numTicks"] == 2 * C1 + C2


Q = "querier.v1.QuerierService/SelectMergeStacktraces"


def smst(d, start, end, status=200):
    body = json.dumps({"profileTypeID": CPU_TYPE, "labelSelector": d.API[len(CPU_TYPE):], "start": start,
                       "end": end}).encode()
    r = connect_call(d.port, Q, None, codec="json", body=body)
    assert r.status == status, r
    return r


def test_querier_json_time_strings(d):
    end = (now() + 60) * 1000
    t = now() - 5400
    answers = [smst(d, x, end).body for x in (t * 1000, str(t * 1000), rfc3339(t), forms(t)[1])]
    assert len(set(answers)) == 1
    assert smst(d, "now-1h30m", end).body == answers[0]
    assert smst(d, "now-1h30m", "now").body == answers[0]
    assert int(json.loads(answers[0])["flamegraph"]["total"]) == 2 * C1 + 2 * C2 + C3
    assert int(json.loads(smst(d, "now-5m", "now").body)["flamegraph"]["total"]) == C3 + C2
    r = smst(d, "now-5x", end, status=400)
    assert r.error == {"code": "invalid_argument", "message":
                       'querier.v1.SelectMergeStacktracesRequest: json: start: cannot parse "now-5x" to a valid '
                       'timestamp: unknown unit "x" at character 6 (ms, s, m, h, d, w, y)'}
    r = smst(d, t * 1000, "yesterday", status=400)
    assert r.error["message"] == 'querier.v1.SelectMergeStacktracesRequest: json: end: cannot parse "yesterday" ' \
                                 'to a valid timestamp'


# ---- nonsense: a 400 with what and where ---------------------------------------------------------------

OWN = 'cannot parse "%s" to a valid timestamp: '
BAD = [  # (value, what our parser says after OWN)
    ("now-5x", 'unknown unit "x" at character 6 (ms, s, m, h, d, w, y)'),
    ("now-", "a duration after '-' is missing at character 5, as in now-5m"),
    ("now5m", "want '-' or '+' after \"now\" at character 4, as in now-5m"),
    ("now-1h30", "want a unit (ms, s, m, h, d, w, y) at character 9"),
    ("now-30m1h", 'unit "h" at character 9 is out of order (y, w, d, h, m, s, ms: each once, the larger first)'),
]
PARAMS = [  # (path, other parameters, the time parameter)
    ("/api/v1/profiles/query", {"query": API}, "time"),
    ("/api/v1/profiles/query", {"query": API, "format": "top", "end": "now"}, "start"),
    ("/api/v1/profiles/diff", {"base": API, "compare": API, "format": "flamegraph"}, "compare_time"),
    ("/api/v1/profiles/diff", {"base": API, "compare": API, "base_start": "now-1h"}, "base_end"),
    ("/api/v1/query", {"query": API}, "time"),
    ("/api/v1/query_range", {"query": API, "end": "now", "step": "60"}, "start"),
    ("/api/v1/series", {"match[]": API}, "end"),
    ("/api/v1/labels", {}, "start"),
    ("/api/v1/label/job/values", {}, "end"),
    ("/api/v1/query_exemplars", {"query": API, "end": "now"}, "start"),
]


@pytest.mark.parametrize("value,what", BAD)
@pytest.mark.parametrize("path,params,name", PARAMS)
def test_bad_relative_time(srv, path, params, name, value, what):
    st, hdrs, body = form_request(srv, "GET", path, dict(params, **{name: value}))
    assert st == 400, (st, body[:300])
    msg = 'invalid parameter "%s": ' % name + OWN % value + what
    if path.startswith("/api/v1/profiles/") and params.get("format", "pprof") == "pprof":
        assert hdrs["content-type"] == "text/plain; charset=utf-8" and hdrs["x-go-pprof"] == "1", hdrs
        assert body.decode() == msg + "\n"
    else:
        assert json.loads(body) == {"status": "error", "errorType": "bad_data", "error": msg}


@pytest.mark.parametrize("name", ["from", "until"])
def test_bad_render_time(srv, name):
    for path in ("/pyroscope/render", "/pyroscope/label-values"):
        st, _, body = form_request(srv, "GET", path, {"query": API, "label": "job", name: "now-5x"})
        assert st == 400, body
        assert json.loads(body) == {"code": "invalid_argument", "message": 'invalid parameter "%s": time "now-5x": '
                                    'unknown unit "x" at character 6 (s, m/min, h, d, w, M/mon, y)' % name}


def test_prometheus_nonsense_keeps_its_words(srv):
    # values that are not relative keep Prometheus' own message, with nothing appended
    for v in ("abc", "2026-13-01T00:00:00Z", "1e"):
        st, _, body = form_request(srv, "GET", "/api/v1/query", {"query": API, "time": v})
        assert st == 400
        assert json.loads(body)["error"] == 'invalid parameter "time": cannot parse "%s" to a valid timestamp' % v


# ---- go tool pprof shows the message --------------------------------------------------------------------

@pytest.mark.parametrize("params,msg,status", [
    ({"query": API, "time": "now-5x"}, 'invalid parameter "time": ' + OWN % "now-5x" + BAD[0][1], "400 Bad Request"),
    ({"query": "nosuch:cpu:nanoseconds:cpu:nanoseconds"},
     'invalid parameter "query": unknown profile type "nosuch:cpu:nanoseconds:cpu:nanoseconds" (GET '
     '/api/v1/profiles/types lists the stored ones)', "404 Not Found"),
])
def test_go_tool_pprof_prints_the_error(d, tmp_path, params, msg, status):
    go = require_tool("go")
    url = "http://127.0.0.1:%d/api/v1/profiles/query?%s" % (d.port, urllib.parse.urlencode(params))
    r = subprocess.run([go, "tool", "pprof", "-top", url], capture_output=True, text=True, env=tool_env(tmp_path),
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r.stdout
    assert "server response: %s - %s\n" % (status, msg) in r.stderr, r.stderr
    # and a good one loads: the last 5 minutes merged
    ok = go_pprof(["-raw", "http://127.0.0.1:%d/api/v1/profiles/query?%s" % (
        d.port, urllib.parse.urlencode({"query": d.API}))], tmp_path)
    assert "Samples:" in ok.stdout
