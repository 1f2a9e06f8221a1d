"""Pushed values near the ends of int64 are summed saturating (core/sat.h), never wrapped to the
other sign: identical stacks of one profile, a profile's total, merges over head records and
chunks, diffs; times int64 nanoseconds cannot hold (after 2262-04-11, before 1677-09-21) are
refused with a 400 that says so, not stored at about now."""

import json
import time
import urllib.parse

import pytest

import pprof_decode as pd

MAX = 2**63 - 1
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
T0 = int(time.time()) - 600
RANGE = "out of range (before 1678 or after 2262)"


@pytest.fixture(scope="module")
def srv(module_server_factory):
    # chunks of 2 profiles: a merge sums chunk columns and head records
    return module_server_factory(name="overflow", extra_args=["--storage.compact-max-profiles", "2"])


def big_profile(values):
    """minimal_profile with one sample per value on the same stack [2, 1], as type 1 (cpu)."""
    p = pd.minimal_profile()
    p.sample = [pd.Sample(location_id=[2, 1], value=[1, v]) for v in values]
    return p


def merged(srv, sel, start, end, endpoint="/api/v1/profiles/query", **extra):
    q = dict(query=sel, start=start, end=end, **extra)
    st, _, body = srv.get(endpoint + "?" + urllib.parse.urlencode(q), timeout=30)
    assert st == 200, body[:300]
    return pd.decode(body)


def test_identical_stacks_and_total_saturate(srv):
    p = big_profile([MAX - 1, MAX - 1, 5])
    st, js = srv.push(pd.encode(p), time=str(T0), labels='{job="dup"}')
    assert st == 200, srv.last_raw
    sid = js["data"]["series"][1]["id"]
    got = pd.decode(srv.profile_bytes(sid, T0 * 10**9))
    assert [s.value for s in got.sample] == [[MAX]]  # was -2 + 5 = 3 (wrapped)
    stored = [s for s in srv.series() if s["id"] == sid][0]
    assert [pr["total"] for pr in stored["profiles"]] == [MAX]


def test_merge_over_chunks_and_head_saturates(srv):
    """5 profiles of MAX / 2 + 1 each: two chunks of 2 and a head record; their merged value and
    totals are MAX, not negative; the diff of the merge against a small one stays positive."""
    for i in range(5):
        st, _ = srv.push(pd.encode(big_profile([MAX // 2 + 1])), time=str(T0 + 10 * i), labels='{job="sum"}')
        assert st == 200, srv.last_raw
    st, _, body = srv.request("POST", "/api/v1/admin/compact", timeout=30)
    assert st == 200, body
    cpu = CPU + '{job="sum"}'
    m = merged(srv, cpu, T0 - 1, T0 + 100)
    assert [s.value for s in m.sample] == [[MAX]]
    # two profiles (one chunk): MAX / 2 + 1 twice is MAX + 1: saturated
    m = merged(srv, cpu, T0 - 1, T0 + 15)
    assert [s.value for s in m.sample] == [[MAX]]
    # PromQL over the profile totals: every profile's total is MAX / 2 + 1, their sum is a float
    st, _, body = srv.get("/api/v1/query?" + urllib.parse.urlencode(
        {"query": 'sum_over_time(%s[2m])' % cpu, "time": T0 + 50}), timeout=30)
    assert st == 200, body
    (res,) = json.loads(body)["data"]["result"]
    assert float(res["value"][1]) == 5 * float(MAX // 2 + 1)
    # a diff: the saturated merge minus a profile of -10 (base) is MAX, not wrapped
    st, _ = srv.push(pd.encode(big_profile([-10])), time=str(T0 + 5), labels='{job="neg"}')
    assert st == 200, srv.last_raw
    st, _, body = srv.get("/api/v1/profiles/diff?" + urllib.parse.urlencode(
        {"compare": cpu, "compare_start": T0 - 1, "compare_end": T0 + 100,
         "base": CPU + '{job="neg"}', "base_start": T0 - 1, "base_end": T0 + 100}), timeout=30)
    assert st == 200, body[:300]
    d = pd.decode(body)
    assert [s.value for s in d.sample] == [[MAX]]


@pytest.mark.parametrize("when", ["2300-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "9223372037", "1e19"])
def test_push_time_out_of_range_refused(srv, when):
    before = {s["id"] for s in srv.series()}
    st, js = srv.push(pd.encode(big_profile([7])), time=when, labels='{job="when"}')
    assert st == 400
    assert js == {"status": "error", "errorType": "bad_data",
                  "error": 'time: cannot parse "%s" to a valid timestamp: %s' % (when, RANGE)}
    assert {s["id"] for s in srv.series()} == before  # nothing stored (was: at about now)


@pytest.mark.parametrize("path,param", [("/api/v1/query", "time"), ("/api/v1/query_range", "start"),
                                        ("/api/v1/series", "end")])
def test_query_time_out_of_range_refused(srv, path, param):
    q = {"query": "1", "match[]": "up", "start": T0, "end": T0 + 60, "step": 15, "time": T0}
    q[param] = "2262-04-11T23:47:16.854775808Z"
    st, _, body = srv.get(path + "?" + urllib.parse.urlencode(q))
    assert st == 400, body
    js = json.loads(body)
    assert js["errorType"] == "bad_data"
    assert js["error"] == 'invalid parameter "%s": cannot parse "2262-04-11T23:47:16.854775808Z" to a valid ' \
                          'timestamp: %s' % (param, RANGE), js


def test_extreme_query_times_answer(srv):
    """Times at the ends of what the APIs take, and PromQL's @ past int64 ms (Prometheus takes it as
    INT64_MIN): answered, not undefined behaviour on the way (make integration-asan aborts the
    server on that)."""
    lo, hi = "-9199999999", "9199999999"  # seconds, the widest the APIs take
    cases = [
        ("/api/v1/query", {"query": "rate(f[5m] @ 9.3e15)", "time": T0}),
        ("/api/v1/query", {"query": "sum_over_time(%s[5m] @ -9.3e15)" % CPU, "time": T0}),
        ("/api/v1/query_range", {"query": "up", "start": lo, "end": hi, "step": "1e9"}),
        ("/api/v1/query_range", {"query": "sum(%s)" % CPU, "start": lo, "end": hi, "step": "1e9"}),
    ]
    for path, q in cases:
        st, _, body = srv.get(path + "?" + urllib.parse.urlencode(q), timeout=30)
        assert st == 200, (path, q, body[:300])
        assert json.loads(body)["data"]["result"] == [], (q, body[:300])
    for q in ({"time": lo, "lookback": "200y"}, {"time": hi, "lookback": "200y"}, {"start": lo, "end": hi}):
        q["query"] = CPU + '{job="nothing"}'
        st, _, body = srv.get("/api/v1/profiles/query?" + urllib.parse.urlencode(q), timeout=30)
        assert st == 200, (q, body[:300])
        assert pd.decode(body).sample == []
    assert srv.running()
