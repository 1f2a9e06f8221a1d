"""POST /api/v1/profiles/write with the real fixture profiles: status, inferred names and profile
types, stored totals (debug/series) against the README, time= override, raw vs gzip, duplicate,
conflict, out of order, retention cut-off, label syntax."""

import time
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import (ALL_FILES, README_SAMPLES, README_TOTALS, fixture_bytes, fixture_profile, name_param,
                      series_snapshot)

CPU_TYPES = ["process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"]
HEAP_TYPES = ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
              "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]

# __name__ of every series each fixture creates, in sample type order (written out, not derived)
EXPECTED_TYPES = {
    "go/cpu-01.pb.gz": CPU_TYPES,
    "go/cpu-01.pb": CPU_TYPES,
    "go/cpu-02.pb.gz": CPU_TYPES,
    "go/cpu-03.pb.gz": CPU_TYPES,
    "go/cpu-04.pb.gz": CPU_TYPES,
    "go/cpu-05.pb.gz": CPU_TYPES,
    "go/cpu-seed2-01.pb.gz": CPU_TYPES,
    "go/heap-01.pb.gz": HEAP_TYPES,
    "go/heap-gc-01.pb.gz": HEAP_TYPES,
    "go/allocs-01.pb.gz": HEAP_TYPES,
    "go/goroutine-01.pb.gz": ["goroutine:goroutine:count:goroutine:count"],
    "go/block-01.pb.gz": ["block:contentions:count:contentions:count", "block:delay:nanoseconds:contentions:count"],
    "go/mutex-01.pb.gz": ["mutex:contentions:count:contentions:count", "mutex:delay:nanoseconds:contentions:count"],
    "go/threadcreate-01.pb.gz": ["threadcreate:threadcreate:count:threadcreate:count"],
    "node/cpu-01.pb.gz": ["process_cpu:sample:count:wall:nanoseconds:delta",
                          "process_cpu:wall:nanoseconds:wall:nanoseconds:delta",
                          "process_cpu:cpu:nanoseconds:wall:nanoseconds:delta"],
    "node/wall-01.pb.gz": ["wall:sample:count:wall:nanoseconds:delta", "wall:wall:nanoseconds:wall:nanoseconds:delta"],
    "node/heap-01.pb.gz": ["memory:inuse_objects:count:inuse_space:bytes",
                           "memory:inuse_space:bytes:inuse_space:bytes"],
}

NOW_S = int(time.time())


def _series_of(srv, labels_subset):
    return [s for s in srv.series() if all(s["labels"].get(k) == v for k, v in labels_subset.items())]


@pytest.mark.parametrize("rel", ALL_FILES)
def test_push_fixture(server, rel):
    p = fixture_profile(rel)
    assert pd.totals(p) == README_TOTALS[rel], "decoder disagrees with the README"
    st, js = server.push(rel, name=name_param(rel), labels='{job="api",instance="a:6060"}')
    assert st == 200, (st, server.last_raw)
    assert js["status"] == "success"
    d = js["data"]
    assert d["duplicate"] is False
    assert d["samples"] == README_SAMPLES[rel]
    assert d["timestamp_ns"] == p.time_nanos, "no time=: the profile's time_nanos is the timestamp"
    assert d["timestamp"].startswith(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(p.time_nanos // 10**9)))
    types = [s["profile_type"] for s in d["series"]]
    assert types == EXPECTED_TYPES[rel]
    for i, s in enumerate(d["series"]):
        assert s["labels"] == {"__name__": EXPECTED_TYPES[rel][i], "job": "api", "instance": "a:6060"}
        assert s["stacks"] == len(pd.canonical(p, i)), "distinct non-zero (stack, labels) rows"
    assert len({s["id"] for s in d["series"]}) == len(types)

    stored = {s["id"]: s for s in server.series()}
    assert len(stored) == len(types), "one series per sample type and nothing else"
    for i, s in enumerate(d["series"]):
        ss = stored[s["id"]]
        assert ss["labels"] == s["labels"]
        assert len(ss["profiles"]) == 1
        prof = ss["profiles"][0]
        assert prof["ts"] == p.time_nanos
        assert prof["total"] == README_TOTALS[rel][i], (EXPECTED_TYPES[rel][i], prof)
        assert prof["duration"] == p.duration_nanos
        assert prof["period"] == p.period


@pytest.mark.parametrize("rel", [f for f in ALL_FILES if f.startswith("go/cpu")] + ["node/cpu-01.pb.gz"])
def test_stacks_counts_merged_rows(server, rel):
    """"stacks" = distinct non-zero (stack, sample labels) rows after summing, as pprof shows them.
    pprof sample labels are a set: Go writes the labels of one sample in map order (random), so
    {kernel, worker, seed} and {seed, kernel, worker} are the same labels and must be merged."""
    p = fixture_profile(rel)
    st, js = server.push(rel, labels='{job="api"}')
    assert st == 200, server.last_raw
    got = [s["stacks"] for s in js["data"]["series"]]
    want = [len(pd.canonical(p, i)) for i in range(len(p.sample_type))]
    assert got == want, "stacks per series %s, want %s (rows after merging identical stack+labels)" % (got, want)


def test_sample_labels_are_a_set(server):
    """Two samples with the same stack and the same labels written in a different order are one row."""
    p = pd.minimal_profile()
    p.string_table += ["worker", "1"]
    p.sample = [
        pd.Sample(location_id=[2, 1], value=[1, 10], label=[pd.Label(key=9, str=10), pd.Label(key=11, str=12)]),
        pd.Sample(location_id=[2, 1], value=[2, 20], label=[pd.Label(key=11, str=12), pd.Label(key=9, str=10)]),
    ]
    st, js = server.push(pd.encode(p), time=str(NOW_S), labels='{job="set"}')
    assert st == 200, server.last_raw
    assert [s["stacks"] for s in js["data"]["series"]] == [1, 1]
    sid = js["data"]["series"][1]["id"]
    got = pd.decode(server.profile_bytes(sid, NOW_S * 10**9))
    assert len(got.sample) == 1, got.sample
    assert got.sample[0].value == [30]


@pytest.mark.parametrize("rel,name", [("go/block-01.pb.gz", "block"), ("go/mutex-01.pb.gz", "mutex")])
def test_block_mutex_need_name(server, rel, name):
    st, js = server.push(rel, labels='{job="x"}')
    assert st == 400, (st, server.last_raw)
    assert js["status"] == "error" and js["errorType"] == "bad_data"
    assert "name" in js["error"], js
    assert server.series() == [], "a refused push stores nothing"
    st, js = server.push(rel, name=name, labels='{job="x"}')
    assert st == 200
    assert [s["profile_type"].split(":")[0] for s in js["data"]["series"]] == [name, name]


def test_explicit_name_and_delta(server):
    st, js = server.push("go/cpu-01.pb.gz", name="myapp_cpu", labels='{job="a"}')
    assert st == 200, server.last_raw
    assert [s["profile_type"] for s in js["data"]["series"]] == [
        "myapp_cpu:samples:count:cpu:nanoseconds", "myapp_cpu:cpu:nanoseconds:cpu:nanoseconds"]
    st, js = server.push("go/cpu-01.pb.gz", delta="false", labels='{job="b"}')
    assert st == 200, server.last_raw
    assert [s["profile_type"] for s in js["data"]["series"]] == [t[: -len(":delta")] for t in CPU_TYPES]
    st, js = server.push("go/heap-01.pb.gz", delta="true", labels='{job="c"}')
    assert st == 200, server.last_raw
    assert [s["profile_type"] for s in js["data"]["series"]] == [t + ":delta" for t in HEAP_TYPES]


def test_utf8_label_names(server):
    """labels= takes Prometheus 3's quoted UTF-8 names; the same quoted syntax selects the series."""
    st, js = server.push("go/cpu-01.pb.gz", labels='{"service.name"="checkout", job="u"}')
    assert st == 200, server.last_raw
    js = server.get_json("/api/v1/series?" + urllib.parse.urlencode({"match[]": '{"service.name"="checkout"}'}))
    assert sorted(s["__name__"] for s in js["data"]) == sorted(CPU_TYPES)
    assert all(s["service.name"] == "checkout" and s["job"] == "u" for s in js["data"])


def _rfc3339(sec, frac=""):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + frac + "Z"


@pytest.mark.parametrize("kind", ["rfc3339", "rfc3339_frac_offset", "unix", "unix_float"])
def test_time_override(server, kind):
    base = NOW_S - 3600
    if kind == "rfc3339":
        t, want = _rfc3339(base), base * 10**9
    elif kind == "rfc3339_frac_offset":
        # 2h ahead of UTC: local 12:00 +02:00 is 10:00Z
        tm = time.gmtime(base + 7200)
        t = time.strftime("%Y-%m-%dT%H:%M:%S", tm) + ".123456789+02:00"
        want = base * 10**9 + 123456789
    elif kind == "unix":
        t, want = str(base), base * 10**9
    else:
        t, want = "%d.5" % base, base * 10**9 + 500_000_000
    st, js = server.push("go/cpu-02.pb.gz", time=t, labels='{job="t"}')
    assert st == 200, server.last_raw
    assert js["data"]["timestamp_ns"] == want
    assert js["data"]["timestamp_ns"] != fixture_profile("go/cpu-02.pb.gz").time_nanos
    snap = series_snapshot(server)
    assert len(snap) == 2
    for profs in snap.values():
        assert [p[0] for p in profs] == [want]


def test_time_from_profile_else_now(server):
    # a profile without time_nanos gets the server's clock
    p = pd.minimal_profile()
    p.time_nanos = 0
    before = time.time_ns()
    st, js = server.push(pd.encode(p, gzip_level=6), labels='{job="now"}')
    after = time.time_ns()
    assert st == 200, server.last_raw
    assert before - 10**9 <= js["data"]["timestamp_ns"] <= after + 10**9


def test_raw_and_gzip_store_the_same(server):
    st, js_gz = server.push("go/cpu-01.pb.gz", labels='{job="gz"}')
    assert st == 200, server.last_raw
    st, js_raw = server.push("go/cpu-01.pb", labels='{job="raw"}')
    assert st == 200, server.last_raw
    assert fixture_bytes("go/cpu-01.pb")[:2] != b"\x1f\x8b"
    assert js_gz["data"]["samples"] == js_raw["data"]["samples"] == 272
    by_job = {}
    for s in server.series():
        by_job.setdefault(s["labels"]["job"], {})[s["labels"]["__name__"]] = s
    assert set(by_job) == {"gz", "raw"}
    for typ in CPU_TYPES:
        a, b = by_job["gz"][typ], by_job["raw"][typ]
        assert [(p["ts"], p["total"], p["duration"], p["period"]) for p in a["profiles"]] == \
               [(p["ts"], p["total"], p["duration"], p["period"]) for p in b["profiles"]]
        ts = a["profiles"][0]["ts"]
        ca = pd.canonical(pd.decode(server.profile_bytes(a["id"], ts)), 0)
        cb = pd.canonical(pd.decode(server.profile_bytes(b["id"], ts)), 0)
        assert ca == cb
    assert [p["total"] for p in (by_job["raw"][t]["profiles"][0] for t in CPU_TYPES)] == [298, 2980000000]


def test_duplicate_push(server):
    t = str(NOW_S - 600)
    st, js1 = server.push("go/heap-01.pb.gz", time=t, labels='{job="dup"}')
    assert st == 200 and js1["data"]["duplicate"] is False, server.last_raw
    snap = series_snapshot(server)
    st, js2 = server.push("go/heap-01.pb.gz", time=t, labels='{job="dup"}')
    assert st == 200, server.last_raw
    assert js2["data"]["duplicate"] is True
    assert [s["id"] for s in js2["data"]["series"]] == [s["id"] for s in js1["data"]["series"]]
    assert series_snapshot(server) == snap
    for profs in snap.values():
        assert len(profs) == 1
    m = server.metrics()
    assert m["profstore_writer_duplicates_total"] == 1
    # the gzipped and the raw encoding of the same profile are the same content: a retry too
    st, js3 = server.push("go/cpu-01.pb.gz", time=t, labels='{job="dup2"}')
    assert st == 200
    st, js4 = server.push("go/cpu-01.pb", time=t, labels='{job="dup2"}')
    assert st == 200 and js4["data"]["duplicate"] is True, server.last_raw


def test_different_content_same_timestamp_conflicts(server):
    t = str(NOW_S - 600)
    st, _ = server.push("go/cpu-01.pb.gz", time=t, labels='{job="c"}')
    assert st == 200
    snap = series_snapshot(server)
    st, js = server.push("go/cpu-02.pb.gz", time=t, labels='{job="c"}')
    assert st == 409, (st, server.last_raw)
    assert js["status"] == "error" and js["error"]
    assert series_snapshot(server) == snap
    assert sorted(p[0][3] for p in snap.values()) == [298, 2980000000]


def test_older_profile_is_out_of_order(server):
    st, _ = server.push("go/cpu-02.pb.gz", time=str(NOW_S - 600), labels='{job="o"}')
    assert st == 200
    snap = series_snapshot(server)
    st, js = server.push("go/cpu-01.pb.gz", time=str(NOW_S - 601), labels='{job="o"}')
    assert st == 400, (st, server.last_raw)
    assert "out of order" in js["error"]
    assert series_snapshot(server) == snap
    # other labels: a different series, not out of order
    st, _ = server.push("go/cpu-01.pb.gz", time=str(NOW_S - 601), labels='{job="o2"}')
    assert st == 200
    # newer: fine
    st, _ = server.push("go/cpu-03.pb.gz", time=str(NOW_S - 599), labels='{job="o"}')
    assert st == 200
    profs = [p for k, v in series_snapshot(server).items() if ("job", "o") in k for p in v]
    assert sorted(p[0] for p in profs) == [(NOW_S - 600) * 10**9] * 2 + [(NOW_S - 599) * 10**9] * 2


def test_older_than_retention_refused(make_server):
    srv = make_server()  # default retention: 15d
    st, js = srv.push("go/cpu-01.pb.gz", time=str(NOW_S - 16 * 86400), labels='{job="r"}')
    assert st == 400, (st, srv.last_raw)
    assert "retention" in js["error"]
    assert srv.series() == []
    st, js = srv.push("go/cpu-01.pb.gz", time=str(NOW_S - 14 * 86400), labels='{job="r"}')
    assert st == 200, srv.last_raw


@pytest.mark.parametrize("labels,want", [
    ('{job="api",instance="a:6060"}', {"job": "api", "instance": "a:6060"}),
    ("{job='api', instance='a:6060'}", {"job": "api", "instance": "a:6060"}),
    ("{job=`api`,instance=`a:6060`}", {"job": "api", "instance": "a:6060"}),
    (r'{a="q\"d\\b\n\t", b=' + r"'s\'q', c=`raw\n\"`}", {"a": 'q"d\\b\n\t', "b": "s'q", "c": 'raw\\n\\"'}),
    (r'{u="\u00e9\U0001F600\x41\101", e="caf' + "\u00e9" + '"}', {"u": "\u00e9\U0001F600AA", "e": "caf\u00e9"}),
    ('{ job = "api" , env="prod", }', {"job": "api", "env": "prod"}),
    ('{}', {}),
])
def test_curl_style_labels(server, labels, want):
    st, js = server.push("go/goroutine-01.pb.gz", labels=labels)
    assert st == 200, (st, server.last_raw)
    got = dict(js["data"]["series"][0]["labels"])
    assert got.pop("__name__") == "goroutine:goroutine:count:goroutine:count"
    assert got == want
    stored = server.series()
    assert len(stored) == 1
    assert {k: v for k, v in stored[0]["labels"].items() if k != "__name__"} == want


GOROUTINE_TYPES = "goroutine/count"
CPU_SAMPLE_TYPES = "samples/count, cpu/nanoseconds"
CONTENTION_TYPES = "contentions/count, delay/nanoseconds"


@pytest.mark.parametrize("rel,name,types,kind", [
    ("go/goroutine-01.pb.gz", "cpu", GOROUTINE_TYPES, "goroutine"),
    ("go/goroutine-01.pb.gz", "process_cpu", GOROUTINE_TYPES, "goroutine"),
    ("go/goroutine-01.pb.gz", "memory", GOROUTINE_TYPES, "goroutine"),
    ("go/cpu-01.pb.gz", "heap", CPU_SAMPLE_TYPES, "process_cpu"),
    ("go/cpu-01.pb.gz", "goroutine", CPU_SAMPLE_TYPES, "process_cpu"),
    ("go/cpu-01.pb.gz", "block", CPU_SAMPLE_TYPES, "process_cpu"),
    ("go/heap-01.pb.gz", "process_cpu",
     "alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes", "memory"),
    ("go/threadcreate-01.pb.gz", "goroutine", "threadcreate/count", "threadcreate"),
    ("node/wall-01.pb.gz", "process_cpu", "sample/count, wall/nanoseconds", "wall"),
    ("node/heap-01.pb.gz", "wall", "inuse_objects/count, inuse_space/bytes", "memory"),
])
def test_name_contradicting_sample_types_refused(server, rel, name, types, kind):
    st, js = server.push(rel, name=name, labels='{job="n"}')
    assert st == 400, (st, server.last_raw)
    assert js["status"] == "error" and js["errorType"] == "bad_data"
    assert js["error"] == ('name "%s" contradicts the profile\'s sample types (%s): this is a "%s" profile; '
                           'send name=%s or leave name out' % (name, types, kind, kind))
    assert server.series() == []


@pytest.mark.parametrize("rel", ["go/block-01.pb.gz", "go/mutex-01.pb.gz"])
def test_name_contradicting_block_mutex_refused(server, rel):
    st, js = server.push(rel, name="cpu", labels='{job="n"}')
    assert st == 400, (st, server.last_raw)
    assert js["error"] == ('name "cpu" contradicts the profile\'s sample types (%s): this is a "block" or '
                           '"mutex" profile; send name=block or name=mutex' % CONTENTION_TYPES)
    assert server.series() == []


@pytest.mark.parametrize("rel,name,want", [
    # the name fits the sample types
    ("go/cpu-01.pb.gz", "cpu", ["cpu:samples:count:cpu:nanoseconds", "cpu:cpu:nanoseconds:cpu:nanoseconds"]),
    ("go/goroutine-01.pb.gz", "goroutine", ["goroutine:goroutine:count:goroutine:count"]),
    ("go/heap-01.pb.gz", "heap", ["heap:" + t.split(":", 1)[1] for t in HEAP_TYPES]),
    ("node/cpu-01.pb.gz", "wall", ["wall:sample:count:wall:nanoseconds:delta",
                                   "wall:wall:nanoseconds:wall:nanoseconds:delta",
                                   "wall:cpu:nanoseconds:wall:nanoseconds:delta"]),
    # block and mutex cannot be told apart
    ("go/mutex-01.pb.gz", "block", ["block:contentions:count:contentions:count",
                                    "block:delay:nanoseconds:contentions:count"]),
    # not a well-known name
    ("go/goroutine-01.pb.gz", "myapp_goroutines", ["myapp_goroutines:goroutine:count:goroutine:count"]),
])
def test_name_that_fits_or_cannot_contradict_accepted(server, rel, name, want):
    st, js = server.push(rel, name=name, labels='{job="n"}')
    assert st == 200, (st, server.last_raw)
    assert [s["profile_type"] for s in js["data"]["series"]] == want


def test_well_known_name_on_unknown_sample_types_accepted(server):
    """Sample types that are not recognised: any name is accepted, a well-known one too."""
    p = pd.minimal_profile()
    p.string_table[1], p.string_table[3] = "requests", "latency"  # sample types requests/count, latency/nanoseconds
    st, js = server.push(pd.encode(p), name="cpu", time=str(NOW_S), labels='{job="custom"}')
    assert st == 200, (st, server.last_raw)
    assert [s["profile_type"] for s in js["data"]["series"]] == [
        "cpu:requests:count:latency:nanoseconds", "cpu:latency:nanoseconds:latency:nanoseconds"]
