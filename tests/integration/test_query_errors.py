"""Bad queries against the query APIs: every one is a 4xx in Prometheus' error shape with a
message that names the problem (selector errors with their line:column), never a 5xx or a crash.
Also the limits (--query.max-series -> 422 execution, 11,000 points, --max-body-size for POST
forms), the empty results the API documents, and GET/POST parity. After each test the server
must still be up and answering."""

import json
import re
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import CPU_SAMPLES_TYPE, CPU_TYPE, QUERY_T0, README_TOTALS, form_request

T0 = QUERY_T0
CPU01 = README_TOTALS["go/cpu-01.pb.gz"][1]
CPU02 = README_TOTALS["go/cpu-02.pb.gz"][1]
RANGE = {"start": T0, "end": T0 + 60, "step": "10s"}


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="qerrors", retention="0")
    for rel, labels, ts in (("go/cpu-01.pb.gz", '{job="api",instance="a:6060"}', T0 + 10),
                            ("go/cpu-02.pb.gz", '{job="api",instance="a:6060"}', T0 + 20),
                            ("go/heap-01.pb.gz", '{job="api",instance="a:6060"}', T0 + 10)):
        st, _ = s.push(rel, labels=labels, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def assert_alive(s):
    assert s.running(), "profstore exited (rc %s); log:\n%s" % (s.proc.poll(), s.log()[-3000:])
    assert s.get("/-/ready")[0] == 200
    st, _, body = form_request(s, "GET", "/api/v1/query", {"query": CPU_TYPE, "time": T0 + 60})
    assert st == 200, body[:300]
    res = json.loads(body)["data"]["result"]
    assert [r["value"][1] for r in res] == [str(CPU02)], res


@pytest.fixture(autouse=True)
def _alive_after(request):
    yield
    if "srv" in request.fixturenames:
        assert_alive(request.getfixturevalue("srv"))


def wants_pprof(path, params):
    """A profile query for pprof (format absent or pprof): its errors come as go tool pprof prints them."""
    fmt = dict(params.items() if isinstance(params, dict) else params).get("format", "")
    return path in ("/api/v1/profiles/query", "/api/v1/profiles/diff") and fmt in ("", "pprof")


def error_of(s, method, path, params, status=400, error_type="bad_data"):
    st, hdrs, body = form_request(s, method, path, params)
    assert st == status, (method, path, params, st, body[:500])
    if wants_pprof(path, params):
        # net/http/pprof's error shape: text/plain, X-Go-Pprof: 1, the message and a newline;
        # with Accept: application/json the same error in Prometheus' JSON
        assert hdrs.get("content-type") == "text/plain; charset=utf-8", hdrs
        assert hdrs.get("x-go-pprof") == "1", hdrs
        text = body.decode()
        assert text.endswith("\n") and "\n" not in text[:-1], text
        st2, hdrs2, body2 = s.request(method, path + "?" + urllib.parse.urlencode(
            list(params.items()) if isinstance(params, dict) else list(params), quote_via=urllib.parse.quote),
            headers={"Accept": "application/json"}) if method == "GET" else (None, None, None)
        if method == "GET":
            assert st2 == status and hdrs2.get("content-type", "").startswith("application/json"), hdrs2
            js = json.loads(body2)
            assert js == {"status": "error", "errorType": error_type, "error": text[:-1]}, js
        return text[:-1]
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    js = json.loads(body)
    assert js["status"] == "error" and js["errorType"] == error_type, js
    assert isinstance(js["error"], str) and js["error"], js
    assert "data" not in js
    return js["error"]


# ---- selectors ----------------------------------------------------------------------------------

BAD_SELECTORS = [
    # (selector, 1-based column of the error, what the message says)
    ('%s{job="api"' % CPU_TYPE, len(CPU_TYPE) + len('{job="api"') + 1, "unexpected end of input"),
    ('{job=~"("}', 2, "error parsing regexp: missing closing ): `^(?:()$`"),  # RE2's words, as Prometheus
    ('%s{1abc="x"}' % CPU_TYPE, len(CPU_TYPE) + 2, "unexpected character"),
    ('%s{job!"x"}' % CPU_TYPE, len(CPU_TYPE) + 5, "unexpected character"),
    ('%s{job="x"}}' % CPU_TYPE, len(CPU_TYPE) + 10, "unexpected character"),
    ('{job="a\\q"}', 6, "unknown escape sequence U+0071 'q'"),  # at the string, as Prometheus 2.42
    ('{job=~".*"}', 1, "at least one non-empty matcher"),
    ('{job="x" instance="y"}', 10, "parse error"),
]


@pytest.mark.parametrize("sel,col,what", BAD_SELECTORS, ids=range(len(BAD_SELECTORS)))
def test_invalid_selectors(srv, sel, col, what):
    cases = [
        ("/api/v1/query", {"query": sel, "time": T0 + 60}, 'invalid parameter "query": '),
        ("/api/v1/query_range", dict(RANGE, query=sel), 'invalid parameter "query": '),
        ("/api/v1/series", [("match[]", sel)], 'invalid parameter "match[]": '),
        ("/api/v1/labels", [("match[]", sel)], 'invalid parameter "match[]": '),
        ("/api/v1/label/job/values", [("match[]", sel)], 'invalid parameter "match[]": '),
        ("/api/v1/profiles/query", {"query": sel, "time": T0 + 60}, 'invalid parameter "query": '),
        ("/api/v1/profiles/diff", {"base": sel, "compare": CPU_TYPE, "base_time": T0, "compare_time": T0},
         'invalid parameter "base": '),
        ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": sel, "base_time": T0, "compare_time": T0},
         'invalid parameter "compare": '),
    ]
    for path, params, prefix in cases:
        msg = error_of(srv, "GET", path, params)
        assert msg.startswith(prefix), (path, msg)
        assert re.match(r"1:%d: " % col, msg[len(prefix):]), "%s: want position 1:%d in %r" % (path, col, msg)
        assert what in msg, (path, msg)


@pytest.mark.parametrize("expr", ["exp(%s)" % CPU_TYPE, "sum(rate(ln(%s)[5m:1m]))" % CPU_TYPE,
                                  "1 + cos(vector(1))", "log2(%s)" % CPU_TYPE, "absent(nope)"])
def test_every_function_is_evaluated(srv, expr):
    """Every function of Prometheus 2.42 is evaluated: no 400 for a well-formed query."""
    for path, params in (("/api/v1/query", {"query": expr, "time": T0 + 60}),
                         ("/api/v1/query_range", dict(RANGE, query=expr))):
        st, _, body = form_request(srv, "GET", path, params)
        assert st == 200, (path, st, body[:300])


@pytest.mark.parametrize("expr,col,what", [
    ("sum(1)", 5, "parse error"),
    ("1 +", 4, "unexpected end of input"),
    ("sum by (instance (%s)" % CPU_TYPE, 18, "parse error"),
    ("rate(%s)" % CPU_TYPE, 6, 'expected type range vector in call to function "rate", got instant vector'),
    ("rate(x[1000000d])", 8, "duration out of range"),
])
def test_parse_errors(srv, expr, col, what):
    for path, params in (("/api/v1/query", {"query": expr, "time": T0 + 60}),
                         ("/api/v1/query_range", dict(RANGE, query=expr))):
        msg = error_of(srv, "GET", path, params)
        assert msg.startswith('invalid parameter "query": 1:%d: ' % col) and what in msg, (path, msg)
    # the profile endpoints take a selector only
    msg = error_of(srv, "GET", "/api/v1/profiles/query", {"query": expr, "time": T0 + 60})
    assert msg.startswith('invalid parameter "query": 1:'), msg


# ---- parameters -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path,params,name", [
    ("/api/v1/query", {"query": CPU_TYPE, "time": "abc"}, "time"),
    ("/api/v1/query", {"query": CPU_TYPE, "time": "2026-13-01T00:00:00Z"}, "time"),
    ("/api/v1/query", {"query": CPU_TYPE, "time": T0, "lookback_delta": "5x"}, "lookback_delta"),
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE, start="yesterday"), "start"),
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE, end="1e"), "end"),
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE, step="ten"), "step"),
    ("/api/v1/series", [("match[]", CPU_TYPE), ("start", "abc")], "start"),
    ("/api/v1/labels", [("end", "abc")], "end"),
    ("/api/v1/label/job/values", [("start", "--")], "start"),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "time": "abc"}, "time"),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "start": "abc", "end": T0}, "start"),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "time": T0, "lookback": "forever"}, "lookback"),
    ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": CPU_TYPE, "base_time": "abc", "compare_time": T0},
     "base_time"),
    ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": CPU_TYPE, "base_time": T0, "compare_start": T0,
                               "compare_end": "x"}, "compare_end"),
])
def test_unparseable_time_and_duration(srv, path, params, name):
    msg = error_of(srv, "GET", path, params)
    assert msg.startswith('invalid parameter "%s"' % name), msg
    assert "cannot parse" in msg, msg


@pytest.mark.parametrize("path,params", [
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE, start=T0 + 60, end=T0)),
    ("/api/v1/series", [("match[]", CPU_TYPE), ("start", T0 + 60), ("end", T0)]),
    ("/api/v1/labels", [("start", T0 + 60), ("end", T0)]),
    ("/api/v1/label/job/values", [("start", T0 + 60), ("end", T0)]),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "start": T0 + 60, "end": T0}),
    ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": CPU_TYPE, "base_start": T0 + 60, "base_end": T0,
                               "compare_time": T0}),
])
def test_start_after_end(srv, path, params):
    msg = error_of(srv, "GET", path, params)
    assert "end timestamp must not be before start time" in msg, msg
    assert msg.startswith('invalid parameter "'), msg


@pytest.mark.parametrize("step,what", [
    ("0", "zero or negative query resolution step widths are not accepted"),
    ("-1", "zero or negative query resolution step widths are not accepted"),
    ("0s", "zero or negative query resolution step widths are not accepted"),
    ("-10s", 'invalid parameter "step": cannot parse'),  # as Prometheus: a duration has no sign
])
def test_bad_step(srv, step, what):
    msg = error_of(srv, "GET", "/api/v1/query_range", dict(RANGE, query=CPU_TYPE, step=step))
    assert what in msg, msg


@pytest.mark.parametrize("path,params,what", [
    ("/api/v1/query", {"time": T0}, 'invalid parameter "query"'),
    ("/api/v1/query_range", {"query": CPU_TYPE, "start": T0, "end": T0 + 60}, 'invalid parameter "step"'),
    ("/api/v1/query_range", {"query": CPU_TYPE, "end": T0 + 60, "step": 10}, 'invalid parameter "start"'),
    ("/api/v1/series", {"start": T0}, "no match[] parameter provided"),
    ("/api/v1/profiles/query", {"time": T0}, 'invalid parameter "query"'),
    ("/api/v1/profiles/diff", {"base": CPU_TYPE, "base_time": T0}, 'invalid parameter "compare"'),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "time": T0, "start": T0}, "not both"),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "start": T0}, "go together"),
    ("/api/v1/series", [("match[]", CPU_TYPE), ("limit", "-1")], 'invalid parameter "limit"'),
])
def test_missing_or_conflicting_parameters(srv, path, params, what):
    msg = error_of(srv, "GET", path, params)
    assert what in msg, msg


@pytest.mark.parametrize("params,name", [
    ({"format": "svg"}, "format"),
    ({"format": "FLAMEGRAPH"}, "format"),
    ({"format": "flamegraph", "max_nodes": "-1"}, "max_nodes"),
    ({"format": "flamegraph", "max_nodes": "ten"}, "max_nodes"),
    ({"format": "top", "limit": "x"}, "limit"),
])
def test_bad_format_parameters(srv, params, name):
    for path, base in (("/api/v1/profiles/query", {"query": CPU_TYPE, "time": T0 + 60}),
                       ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": CPU_TYPE, "base_time": T0 + 10,
                                                  "compare_time": T0 + 20})):
        msg = error_of(srv, "GET", path, dict(base, **params))
        assert msg.startswith('invalid parameter "%s"' % name), msg
    if params.get("format") == "svg":
        assert "pprof, flamegraph, folded, top" in msg, "the message lists the formats: %r" % msg


# ---- profile types ----------------------------------------------------------------------------------

def test_unknown_profile_type(srv):
    """README: "a profile type never stored is a 404" (not_found, naming it), for query and both
    diff sides. (Before 50596da the answer was 200 with an empty profile of that type.)"""
    ghost = "process_cpu:cycles:count:cpu:nanoseconds:delta"
    for path, params, pname in (
            ("/api/v1/profiles/query", {"query": ghost, "time": T0 + 60}, "query"),
            ("/api/v1/profiles/query", {"query": '{__name__="%s",job="api"}' % ghost, "start": T0, "end": T0 + 60},
             "query"),
            ("/api/v1/profiles/query", {"query": ghost, "time": T0 + 60, "format": "flamegraph"}, "query"),
            ("/api/v1/profiles/diff", {"base": ghost, "compare": CPU_TYPE, "base_time": T0 + 60,
                                       "compare_time": T0 + 60}, "base"),
            ("/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": ghost, "base_time": T0 + 60,
                                       "compare_time": T0 + 60}, "compare")):
        msg = error_of(srv, "GET", path, params, status=404, error_type="not_found")
        assert ghost in msg and 'parameter "%s"' % pname in msg and "unknown profile type" in msg, msg
    # a name that is not a profile type id at all
    msg = error_of(srv, "GET", "/api/v1/profiles/query", {"query": "up", "time": T0 + 60})
    assert '"up" is not a profile type' in msg, msg


def test_selector_over_several_types(srv):
    msg = error_of(srv, "GET", "/api/v1/profiles/query", {"query": '{job="api"}', "start": T0, "end": T0 + 60})
    for t in (CPU_TYPE, CPU_SAMPLES_TYPE, "memory:inuse_space:bytes:space:bytes"):
        assert t in msg, msg
    assert "6 profile types" in msg
    msg = error_of(srv, "GET", "/api/v1/profiles/diff", {"base": CPU_TYPE, "compare": CPU_SAMPLES_TYPE,
                                                         "base_time": T0 + 60, "compare_time": T0 + 60})
    assert CPU_TYPE in msg and CPU_SAMPLES_TYPE in msg, msg


def test_documented_empty_results(srv):
    """A stored type with nothing in the window, or a selector matching no series: 200, empty."""
    for params in ({"query": CPU_TYPE, "time": T0 + 1000},
                   {"query": CPU_TYPE + '{job="nope"}', "time": T0 + 60},
                   {"query": CPU_TYPE, "start": T0 + 100, "end": T0 + 200}):
        st, _, body = form_request(srv, "GET", "/api/v1/profiles/query", params)
        assert st == 200, (params, st, body[:300])
        p = pd.decode(body)
        assert p.sample == [] and p.type_names() == [("cpu", "nanoseconds")], params
        st, _, body = form_request(srv, "GET", "/api/v1/profiles/query", dict(params, format="top"))
        assert st == 200 and json.loads(body) == {"total": 0, "rows": [], "aggregation": "sum"}, body[:300]
        st, _, body = form_request(srv, "GET", "/api/v1/profiles/query", dict(params, format="folded"))
        assert st == 200 and body == b"", body[:300]
        st, _, body = form_request(srv, "GET", "/api/v1/profiles/query", dict(params, format="flamegraph"))
        fg = json.loads(body)
        assert st == 200 and fg["total"] == 0 and fg["names"] == ["total"] and fg["levels"] == [[0, 0, 0, 0]], fg
    # Prometheus side: empty vector / matrix, not an error
    st, _, body = form_request(srv, "GET", "/api/v1/query_range", dict(RANGE, query=CPU_TYPE + '{job="nope"}'))
    assert st == 200 and json.loads(body)["data"] == {"resultType": "matrix", "result": []}
    st, _, body = form_request(srv, "GET", "/api/v1/series", [("match[]", '{job="nope"}')])
    assert st == 200 and json.loads(body) == {"status": "success", "data": []}


# ---- limits -----------------------------------------------------------------------------------------

def test_too_many_points(srv):
    # (end - start) / step up to 11,000 is fine (11,001 points, as Prometheus), one more is not;
    # sum_over_time(...[999ms]) at whole seconds holds the profile of that second only
    q = "sum_over_time(%s[999ms])" % CPU_TYPE
    st, _, body = form_request(srv, "GET", "/api/v1/query_range", {"query": q, "start": T0 - 11000 + 20,
                                                                 "end": T0 + 20, "step": 1})
    assert st == 200, body[:300]
    res = json.loads(body)["data"]["result"]
    assert [v for r in res for v in r["values"]] == [[T0 + 10, str(CPU01)], [T0 + 20, str(CPU02)]]
    msg = error_of(srv, "GET", "/api/v1/query_range", {"query": q, "start": T0 - 11001 + 20,
                                                       "end": T0 + 20, "step": 1})
    assert "exceeded maximum resolution of 11,000 points per timeseries" in msg, msg
    msg = error_of(srv, "GET", "/api/v1/query_range", {"query": "1+1", "start": 0, "end": T0, "step": "1s"})
    assert "exceeded maximum resolution" in msg, msg


@pytest.fixture(scope="module")
def limited(module_server_factory):
    s = module_server_factory(name="qlimits", retention="0", max_body_size="64KiB",
                              extra_args=["--query.max-series", "2"])
    for inst in ("a", "b", "c"):
        st, _ = s.push("go/cpu-01.pb.gz", labels='{job="api",instance="%s:6060"}' % inst, time=str(T0 + 10))
        assert st == 200, s.last_raw[:300]
    return s


def test_too_many_series(limited):
    s = limited
    for path, params in (("/api/v1/query", {"query": CPU_TYPE, "time": T0 + 60}),
                         ("/api/v1/query", {"query": "sum(%s)" % CPU_TYPE, "time": T0 + 60}),
                         ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE)),
                         ("/api/v1/series", [("match[]", CPU_TYPE)]),
                         ("/api/v1/label/instance/values", [("match[]", CPU_TYPE)]),
                         ("/api/v1/profiles/query", {"query": CPU_TYPE, "time": T0 + 60}),
                         ("/api/v1/profiles/query", {"query": CPU_TYPE, "start": T0, "end": T0 + 60,
                                                     "format": "flamegraph"})):
        msg = error_of(s, "GET", path, params, status=422, error_type="execution")
        assert "more than 2 series" in msg, (path, msg)
    # two series are within the limit
    st, _, body = form_request(s, "GET", "/api/v1/query", {"query": '%s{instance=~"a.*|b.*"}' % CPU_TYPE,
                                                            "time": T0 + 60})
    assert st == 200 and len(json.loads(body)["data"]["result"]) == 2, body[:300]
    # labels without match[] read the index, not series
    st, _, body = form_request(s, "GET", "/api/v1/label/instance/values", {})
    assert st == 200 and json.loads(body)["data"] == ["a:6060", "b:6060", "c:6060"]
    assert s.running() and s.get("/-/ready")[0] == 200


def test_post_body_too_big(limited):
    s = limited
    pad = "x" * (100 * 1024)
    for path, params in (("/api/v1/query", {"query": CPU_TYPE, "time": T0 + 60}),
                         ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE)),
                         ("/api/v1/series", {"match[]": CPU_TYPE}),
                         ("/api/v1/profiles/query", {"query": CPU_TYPE, "time": T0 + 60})):
        st, _, body = form_request(s, "POST", path, dict(params, pad=pad))
        assert st == 413, (path, st, body[:300])
        assert s.running()
    # a form just under the limit is served
    st, _, body = form_request(s, "POST", "/api/v1/query",
                               {"query": '%s{instance="a:6060"}' % CPU_TYPE, "time": T0 + 60, "pad": "x" * (60 * 1024)})
    assert st == 200, body[:300]
    assert json.loads(body)["data"]["result"][0]["value"] == [T0 + 60, str(CPU01)]
    assert s.get("/-/ready")[0] == 200


# ---- GET / POST parity --------------------------------------------------------------------------

@pytest.mark.parametrize("path,params", [
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE)),
    ("/api/v1/query_range", dict(RANGE, query="sum by (instance) (%s)" % CPU_TYPE)),
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE + "{")),                       # an error
    ("/api/v1/query_range", dict(RANGE, query=CPU_TYPE, step=0)),                     # an error
    ("/api/v1/series", [("match[]", CPU_TYPE), ("match[]", '{__name__=~"memory:.*"}')]),
    ("/api/v1/series", [("match[]", '{job="api"}'), ("start", T0 + 15), ("end", T0 + 60)]),
    ("/api/v1/series", [("match[]", '{job="api"}'), ("limit", 2)]),
    ("/api/v1/series", []),                                                           # an error
    ("/api/v1/query", {"query": CPU_TYPE, "time": T0 + 60}),
    ("/api/v1/labels", [("match[]", CPU_TYPE)]),
    ("/api/v1/profiles/query", {"query": CPU_TYPE, "start": T0, "end": T0 + 60, "format": "flamegraph"}),
])
def test_get_post_parity(srv, path, params):
    g = form_request(srv, "GET", path, params)
    p = form_request(srv, "POST", path, params)
    assert g[0] == p[0], (g[0], p[0], g[2][:300], p[2][:300])
    assert g[2] == p[2], "GET and POST differ:\n%r\n%r" % (g[2][:500], p[2][:500])
    assert g[1].get("content-type") == p[1].get("content-type")
    # with a charset in the content type, too (some clients send it)
    items = list(params.items()) if isinstance(params, dict) else list(params)
    st, _, body = srv.request("POST", path, body=urllib.parse.urlencode(items).encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded; charset=UTF-8"})
    assert (st, body) == (g[0], g[2])
    json.loads(g[2])
