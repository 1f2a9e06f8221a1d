"""Grafana's function details and progressive flame graph: stack_trace_selector.call_site (a stack
prefix of function names, root first) in SelectMergeStacktraces and SelectMergeProfile,
format = PROFILE_FORMAT_PPROF, and the protojson google.v1.Profile answer.

The expected merges are computed from `go tool pprof -raw` of the fixtures (a client that is not
ours): a sample is under the call site when its frames, root first (a location's lines outermost
first, inlined functions included), begin with the call site's names; its whole stack is kept.
The answers are read back by protoc-generated classes (binary and Connect JSON) and, for the pprof
bytes, by `go tool pprof -raw` again.
"""

import json
import tempfile
from pathlib import Path

import pytest

from conftest import CPU_TYPE, PPROF_DIR, QUERY_T0, pprof_raw_samples
from pyro_util import connect_call, pyro_pb
from test_pyroscope_querier import call, err, flamegraph_dict, tree_from_bytes, tree_from_flamegraph

T0 = QUERY_T0
START, END = T0, T0 + 3600
MS = 1000
PUSHES = [
    ("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 7),
    ("go/cpu-02.pb.gz", '{service_name="api",instance="a"}', 67),
    ("go/cpu-03.pb.gz", '{service_name="api",instance="b"}', 22),
]
SITE = ["main.main.func1.1", "main.main.func2"]
# through sort.Ints, inlined into main.kernelSort (one location, two lines)
DEEP = SITE + ["main.cpuWorker", "runtime/pprof.Do", "main.cpuWorker.func1", "main.viaBackgroundJob",
               "main.kernelSort", "sort.Ints"]


_RAW: dict = {}


def pprof_raw(path):
    """`go tool pprof -raw`: [(the last value, frames root first)], once per file."""
    if path not in _RAW:
        _RAW[path] = pprof_raw_samples(path, Path(tempfile.mkdtemp(prefix="callsite_pprof_")))
    return _RAW[path]


def under(files, site):
    return sum(v for f in files for v, fr in pprof_raw(PPROF_DIR / f) if fr[:len(site)] == site)


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="callsite", retention="0")
    for rel, labels, dt in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


def sts(pb, names, **kw):
    return pb.types.StackTraceSelector(call_site=[pb.types.Location(name=n) for n in names], **kw)


def merge(pb, sel, start, end, site, **kw):
    return pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, label_selector=sel, start=start * MS,
                                                    end=end * MS, max_nodes=16384,
                                                    stack_trace_selector=sts(pb, site), **kw)


def test_fixture_totals():
    """The expected values, by hand from `go tool pprof -raw` (pinned: a change of fixture shows here)."""
    assert under(["go/cpu-01.pb.gz"], []) == 2980000000
    assert under(["go/cpu-01.pb.gz"], SITE) == 2100000000
    assert under(["go/cpu-01.pb.gz"], DEEP) == 810000000
    assert under(["go/cpu-01.pb.gz"], DEEP[:-1]) == 830000000  # ends between two lines of one location


def test_flamegraph_under_call_site(srv, pb):
    # cpu-01 alone (instance a, the first 30 s)
    r = call(srv, "SelectMergeStacktraces", merge(pb, '{instance="a"}', START, START + 30, SITE),
             pb.querier.SelectMergeStacktracesResponse)
    assert r.msg.flamegraph.total == 2100000000
    # the flame graph is the whole one's branch under the call site, call site frames kept
    whole = call(srv, "SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
        profile_typeID=CPU_TYPE, label_selector='{instance="a"}', start=START * MS, end=(START + 30) * MS,
        max_nodes=16384), pb.querier.SelectMergeStacktracesResponse)
    full = tree_from_flamegraph(flamegraph_dict(whole.msg.flamegraph))
    assert full["main.main.func1.1"][0] == 0 and len(full["main.main.func1.1"][1]) == len(
        {fr[1] for _, fr in pprof_raw(PPROF_DIR / "go/cpu-01.pb.gz") if fr[0] == SITE[0]}) == 4
    assert tree_from_flamegraph(flamegraph_dict(r.msg.flamegraph)) == \
        {"main.main.func1.1": [0, {"main.main.func2": full["main.main.func1.1"][1]["main.main.func2"]}]}
    # PROFILE_FORMAT_TREE: Pyroscope's tree bytes of the same branch
    t = call(srv, "SelectMergeStacktraces", merge(pb, '{instance="a"}', START, START + 30, SITE, format=2),
             pb.querier.SelectMergeStacktracesResponse)
    assert tree_from_bytes(t.msg.tree) == tree_from_flamegraph(flamegraph_dict(r.msg.flamegraph))
    # every api profile in the hour, and a call site ending inside an inlined location
    for site in (SITE, DEEP[:-1], DEEP):
        r = call(srv, "SelectMergeStacktraces", merge(pb, '{service_name="api"}', START, END, site),
                 pb.querier.SelectMergeStacktracesResponse)
        assert r.msg.flamegraph.total == under([p[0] for p in PUSHES], site)
    assert r.msg.flamegraph.total == under(["go/cpu-01.pb.gz"], DEEP) + under(["go/cpu-02.pb.gz", "go/cpu-03.pb.gz"],
                                                                             DEEP)


def test_pprof_format_and_select_merge_profile(srv, pb, tmp_path):
    sel = '{service_name="api"}'
    r = call(srv, "SelectMergeStacktraces", merge(pb, sel, START, END, SITE, format=4),
             pb.querier.SelectMergeStacktracesResponse)
    assert not r.msg.HasField("flamegraph") and r.msg.tree == b""
    raw = r.msg.pprof.profile.SerializeToString()
    f = tmp_path / "site.pb"
    f.write_bytes(raw)
    got = pprof_raw(f)
    assert all(fr[:2] == SITE for _, fr in got)
    assert sum(v for v, _ in got) == under([p[0] for p in PUSHES], SITE)
    # SelectMergeProfile: the same profile, its bytes the binary answer itself
    req = pb.querier.SelectMergeProfileRequest(profile_typeID=CPU_TYPE, label_selector=sel, start=START * MS,
                                               end=END * MS, stack_trace_selector=sts(pb, SITE))
    r2 = call(srv, "SelectMergeProfile", req, pb.google.Profile)
    assert r2.body == raw
    # only what the kept samples refer to (as Pyroscope's answer)
    prof = r2.msg
    used_locs = {l for smp in prof.sample for l in smp.location_id}
    assert sorted(used_locs) == [loc.id for loc in prof.location]
    used_fns = {ln.function_id for loc in prof.location for ln in loc.line}
    assert sorted(used_fns) == [f.id for f in prof.function]
    assert {loc.mapping_id for loc in prof.location} == {m.id for m in prof.mapping}
    whole = call(srv, "SelectMergeProfile", pb.querier.SelectMergeProfileRequest(
        profile_typeID=CPU_TYPE, label_selector=sel, start=START * MS, end=END * MS), pb.google.Profile).msg
    assert len(prof.function) < len(whole.function) and len(prof.location) < len(whole.location)
    # Connect JSON: protojson's google.v1.Profile, int64 fields as strings
    r3 = call(srv, "SelectMergeProfile", req, pb.google.Profile, codec="json")
    assert r3.msg == r2.msg
    doc = json.loads(r3.body)
    assert doc["timeNanos"] == str(r2.msg.time_nanos) and doc["period"] == "10000000"
    assert doc["sample"][0]["value"] == [str(r2.msg.sample[0].value[0])]
    assert all(isinstance(v, str) for s in doc["sample"] for v in s["value"])
    assert doc["stringTable"][0] == "" and "main.main.func2" in doc["stringTable"]


def test_drilldown_json(srv, pb):
    """The request as Grafana's function details panel sends it through its proxy (JSON, field
    names as protojson writes them or as declared): the same answer as the binary one."""
    body = json.dumps({"profile_typeID": CPU_TYPE, "labelSelector": '{service_name="api"}',
                       "start": str(START * MS), "end": str(END * MS), "maxNodes": "16384",
                       "stackTraceSelector": {"callSite": [{"name": n} for n in SITE]}}).encode()
    r = connect_call(srv.port, "querier.v1.QuerierService/SelectMergeStacktraces", None, codec="json", body=body,
                     resp_type=pb.querier.SelectMergeStacktracesResponse)
    assert r.status == 200, r
    b = call(srv, "SelectMergeStacktraces", merge(pb, '{service_name="api"}', START, END, SITE),
             pb.querier.SelectMergeStacktracesResponse)
    assert r.msg == b.msg and r.msg.flamegraph.total == under([p[0] for p in PUSHES], SITE)
    assert json.loads(r.body)["flamegraph"]["total"] == str(r.msg.flamegraph.total)


def test_unknown_and_bad_call_sites(srv, pb):
    empty = call(srv, "SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
        profile_typeID=CPU_TYPE, label_selector='{instance="zz"}', start=START * MS, end=END * MS, max_nodes=16384),
        pb.querier.SelectMergeStacktracesResponse)
    assert empty.msg.flamegraph.total == 0
    # unknown names, a prefix not from the root, 1,000 frames: Pyroscope's empty answer
    for site in (["main.main.func1.1", "no.such.function"], ["main.main.func2"], SITE * 500):
        r = call(srv, "SelectMergeStacktraces", merge(pb, "{}", START, END, site),
                 pb.querier.SelectMergeStacktracesResponse)
        assert r.msg == empty.msg, site
        req = pb.querier.SelectMergeProfileRequest(profile_typeID=CPU_TYPE, start=START * MS, end=END * MS,
                                                   stack_trace_selector=sts(pb, site))
        assert len(call(srv, "SelectMergeProfile", req, pb.google.Profile).msg.sample) == 0
    # a call site of 10,000 long names: bounded by the request size limit or answered empty
    big = merge(pb, "{}", START, END, ["f%0100d" % i for i in range(10000)])
    r = connect_call(srv.port, "querier.v1.QuerierService/SelectMergeStacktraces", big,
                     resp_type=pb.querier.SelectMergeStacktracesResponse)
    assert r.status == 200 and r.msg == empty.msg, r
    # go_pgo is not implemented: refused, named
    req = merge(pb, "{}", START, END, [])
    req.stack_trace_selector.go_pgo.keep_locations = 1
    assert err(srv, "SelectMergeStacktraces", msg=req) == "stack_trace_selector.go_pgo is not supported by profstore"
    req = pb.querier.SelectMergeProfileRequest(profile_typeID=CPU_TYPE, start=START * MS, end=END * MS,
                                               stack_trace_selector=sts(pb, SITE))
    req.stack_trace_selector.go_pgo.aggregate_callees = True
    assert err(srv, "SelectMergeProfile", msg=req) == "stack_trace_selector.go_pgo is not supported by profstore"
    # a Diff side with a call site
    d = pb.querier.DiffRequest(left=merge(pb, "{}", START, END, []), right=merge(pb, "{}", START, END, SITE))
    assert err(srv, "Diff", msg=d) == "right.stack_trace_selector.call_site is not supported in a Diff"
    # formats
    assert err(srv, "SelectMergeStacktraces", msg=merge(pb, "{}", START, END, SITE, format=99)) == \
        "format: an unknown format (99) is not supported: ask for PROFILE_FORMAT_FLAMEGRAPH (the default), " \
        "PROFILE_FORMAT_TREE or PROFILE_FORMAT_PPROF"
    # an enum name the enum lacks is left out, as Pyroscope's protojson (DiscardUnknown) does: the
    # default format, the same answer as without it
    answers = []
    for extra in ({"format": "PROFILE_FORMAT_NOPE"}, {}):
        body = json.dumps(dict({"profileTypeID": CPU_TYPE, "start": START * MS, "end": END * MS}, **extra)).encode()
        r = connect_call(srv.port, "querier.v1.QuerierService/SelectMergeStacktraces", None, codec="json", body=body)
        assert r.status == 200, r
        answers.append(json.loads(r.body))
    assert answers[0] == answers[1] and int(answers[0]["flamegraph"]["total"]) > 0, answers[0]
    # the server still serves
    r = call(srv, "SelectMergeStacktraces", merge(pb, '{instance="a"}', START, START + 30, SITE),
             pb.querier.SelectMergeStacktracesResponse)
    assert r.msg.flamegraph.total == 2100000000


def series(srv, pb, site, codec="proto", **kw):
    """SelectSeries of the api profiles over the hour with stack_trace_selector.call_site = site
    (None: no selector): {labels tuple: [(t ms, value)]}."""
    req = pb.querier.SelectSeriesRequest(profile_typeID=CPU_TYPE, label_selector='{service_name="api"}',
                                         start=START * MS, end=END * MS, **kw)
    if site is not None:
        req.stack_trace_selector.CopyFrom(sts(pb, site))
    r = call(srv, "SelectSeries", req, pb.querier.SelectSeriesResponse, codec=codec)
    return {tuple((lp.name, lp.value) for lp in s.labels): [(p.timestamp, p.value) for p in s.points]
            for s in r.msg.series}


def test_select_series_under_call_site(srv, pb):
    """SelectSeries with a call site: each profile's value is the sum of its samples under the call
    site (Pyroscope's querier: CallSiteValues.Total per profile), a point per profile even when 0."""
    a1, a2, b1 = (under([f], SITE) for f in ("go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz"))
    assert (a1, a2, b1) == (2100000000, under(["go/cpu-02.pb.gz"], SITE), under(["go/cpu-03.pb.gz"], SITE))
    # step 60 s from T0: cpu-01 (T0+7) and cpu-03 (T0+22) in the step ending T0+60, cpu-02 (T0+67) at T0+120
    t1, t2 = (START + 60) * MS, (START + 120) * MS
    assert series(srv, pb, SITE, step=60, group_by=["instance"]) == {
        (("instance", "a"),): [(t1, a1), (t2, a2)], (("instance", "b"),): [(t1, b1)]}
    assert series(srv, pb, SITE, step=60) == {(): [(t1, a1 + b1), (t2, a2)]}
    # deeper, ending inside an inlined location; one step of an hour: SUM and AVERAGE of 3 profiles
    deep = under([p[0] for p in PUSHES], DEEP[:-1])
    assert series(srv, pb, DEEP[:-1], step=3600) == {(): [((START + 3600) * MS, deep)]}
    assert series(srv, pb, DEEP[:-1], step=3600, aggregation=pb.types.TIME_SERIES_AGGREGATION_TYPE_AVERAGE) == \
        {(): [((START + 3600) * MS, deep / 3)]}
    # nothing under it: every profile is a point of 0
    assert series(srv, pb, ["main.main.func2"], step=60, group_by=["instance"]) == {
        (("instance", "a"),): [(t1, 0), (t2, 0)], (("instance", "b"),): [(t1, 0)]}
    # an empty call site, or go_pgo alone (Pyroscope's series read the call site only): the totals
    whole = series(srv, pb, None, step=60, group_by=["instance"])
    assert whole == {(("instance", "a"),): [(t1, 2980000000), (t2, 2930000000)],
                     (("instance", "b"),): [(t1, 2890000000)]}
    assert series(srv, pb, [], step=60, group_by=["instance"]) == whole
    req = pb.querier.SelectSeriesRequest(profile_typeID=CPU_TYPE, label_selector='{service_name="api"}',
                                         start=START * MS, end=END * MS, step=60, group_by=["instance"])
    req.stack_trace_selector.go_pgo.keep_locations = 2
    r = call(srv, "SelectSeries", req, pb.querier.SelectSeriesResponse)
    assert {tuple((lp.name, lp.value) for lp in s.labels): [(p.timestamp, p.value) for p in s.points]
            for s in r.msg.series} == whole
    # Connect JSON, mixed names as Grafana's proxy passes them, int64 as numbers
    body = json.dumps({"profile_typeID": CPU_TYPE, "labelSelector": '{service_name="api"}', "start": START * MS,
                       "end": END * MS, "step": 60, "group_by": ["instance"],
                       "stackTraceSelector": {"call_site": [{"name": n} for n in SITE]}}).encode()
    r = connect_call(srv.port, "querier.v1.QuerierService/SelectSeries", None, codec="json", body=body)
    assert r.status == 200, r
    assert json.loads(r.body) == {"series": [
        {"labels": [{"name": "instance", "value": "a"}], "points": [{"value": a1, "timestamp": str(t1)},
                                                                   {"value": a2, "timestamp": str(t2)}]},
        {"labels": [{"name": "instance", "value": "b"}], "points": [{"value": b1, "timestamp": str(t1)}]}]}
