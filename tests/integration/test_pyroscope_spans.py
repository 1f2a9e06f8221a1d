"""Span profiles (traces to profiles): SelectMergeSpanProfile and span_selector in
SelectMergeStacktraces merge just the samples whose span_id label (or the legacy profile_id label
pyroscope-go's older otel integration wrote) is selected, through the span index and the span parts
(docs/FORMAT.md "Span index and span parts"). Plain merges have no span_id and trace_id labels (as
Pyroscope's); one stored profile downloaded gives every sample back with its labels as pushed.

A hand-built pprof pushed through push.v1 (as pyroscope-go's otel integration sends them) whose
samples carry two span ids, a legacy profile_id, an invalid span id and none; every answer is
compared with the sum computed by hand, over the Connect binary and JSON forms, read by
protoc-generated classes.
"""

import json

import pytest

from conftest import QUERY_T0
from pyro_util import connect_call, pyro_pb
from test_pyroscope_querier import call, err, flamegraph_dict, tree_from_bytes, tree_from_flamegraph

T0 = QUERY_T0
MS = 1000
NS = 1000000000
TYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
SPAN1, SPAN2, SPAN3 = "9a517183f26a089d", "5A4FE264A9C987FE", "00000000000000ff"
TRACE = "7c9e66797425440de944be07fc1f90ae"
UUID1 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

STRINGS = ["", "cpu", "nanoseconds", "span_id", SPAN1, SPAN2, "main", "work", "idle", "profile_id", SPAN3,
           "trace_id", TRACE, "xyz", "span_name", "GET /"]
S = {s: i for i, s in enumerate(STRINGS)}
MAIN, WORK, IDLE = 1, 2, 3  # location ids (= function ids)

# (stack leaf first, cpu ns, labels)
SAMPLES_1 = [
    ([WORK, MAIN], 100, [("span_id", SPAN1), ("span_name", "GET /")]),
    ([MAIN], 30, [("span_id", SPAN1)]),
    ([WORK, MAIN], 200, [("span_id", SPAN2)]),
    ([IDLE, MAIN], 70, [("trace_id", TRACE), ("span_id", SPAN2)]),
    ([IDLE, MAIN], 1000, []),
    ([WORK, MAIN], 500, [("span_id", "xyz")]),  # not a span id: in no span's merge
    ([MAIN], 11, [("profile_id", SPAN3)]),  # the legacy label
]
SAMPLES_2 = [([MAIN], 5, [("span_id", SPAN1)]), ([WORK, MAIN], 9, [])]


def pprof(pb, samples, t):
    p = pb.google.Profile(string_table=STRINGS, time_nanos=t * NS, duration_nanos=10 * NS, period=10000000)
    p.sample_type.add(type=S["cpu"], unit=S["nanoseconds"])
    p.period_type.type, p.period_type.unit = S["cpu"], S["nanoseconds"]
    for i, name in ((MAIN, "main"), (WORK, "work"), (IDLE, "idle")):
        p.function.add(id=i, name=S[name])
        p.location.add(id=i, address=0x1000 * i).line.add(function_id=i, line=i)
    for stack, v, labels in samples:
        s = p.sample.add(location_id=stack, value=[v])
        for k, val in labels:
            s.label.add(key=S[k], str=S[val])
    return p.SerializeToString()


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


@pytest.fixture(scope="module")
def srv(module_server_factory, pb):
    s = module_server_factory(name="spans", retention="0")
    req = pb.push.PushRequest()
    ser = req.series.add()
    for k, v in (("__name__", "process_cpu"), ("service_name", "api")):
        lp = ser.labels.add()
        lp.name, lp.value = k, v
    ser.samples.add(raw_profile=pprof(pb, SAMPLES_1, T0), ID=UUID1)
    ser.samples.add(raw_profile=pprof(pb, SAMPLES_2, T0 + 60))
    r = connect_call(s.port, "push.v1.PusherService/Push", req, resp_type=pb.push.PushResponse)
    assert r.status == 200, r
    return s


def span_req(pb, spans, start=T0, end=T0 + 3600, **kw):
    return pb.querier.SelectMergeSpanProfileRequest(profile_typeID=TYPE, label_selector='{service_name="api"}',
                                                    span_selector=spans, start=start * MS, end=end * MS, **kw)


def tree(fg):
    return tree_from_flamegraph(flamegraph_dict(fg))


# the expected merges, by hand from the samples above: {name: [self, {children}]}
ONLY_1 = {"main": [30, {"work": [100, {}]}]}
BOTH_HOUR_1 = {"main": [35, {"work": [100, {}]}]}
ONLY_2 = {"main": [0, {"work": [200, {}], "idle": [70, {}]}]}
BOTH = {"main": [30, {"work": [300, {}], "idle": [70, {}]}]}


def test_types(srv, pb):
    r = call(srv, "ProfileTypes", pb.querier.ProfileTypesRequest(start=T0 * MS, end=(T0 + 3600) * MS),
             pb.querier.ProfileTypesResponse)
    assert [t.ID for t in r.msg.profile_types] == [TYPE]


@pytest.mark.parametrize("codec", ["proto", "json"])
def test_span_profile(srv, pb, codec):
    def fg(spans, start=T0, end=T0 + 3600, **kw):
        r = call(srv, "SelectMergeSpanProfile", span_req(pb, spans, start, end, **kw),
                 pb.querier.SelectMergeStacktracesResponse, codec=codec)
        return r.msg.flamegraph

    # each span in the first profile's time only, then over the hour (span 1 is in both profiles)
    g = fg([SPAN1], T0, T0 + 30)
    assert (g.total, tree(g)) == (130, ONLY_1)
    g = fg([SPAN1])
    assert (g.total, tree(g)) == (135, BOTH_HOUR_1)
    g = fg([SPAN2])  # written in capitals in the pprof: the same span
    assert (g.total, tree(g)) == (270, ONLY_2)
    assert fg([SPAN2.lower()]).total == 270
    g = fg([SPAN1, SPAN2], T0, T0 + 30)
    assert (g.total, tree(g)) == (400, BOTH)
    assert fg([SPAN2, SPAN1, SPAN1]).total == 405  # each once
    # the legacy profile_id label
    g = fg([SPAN3])
    assert (g.total, tree(g)) == (11, {"main": [11, {}]})
    # an unknown span: the empty merge
    g = fg(["0123456789abcdef"])
    assert (g.total, list(g.names)) == (0, ["total"])
    # a span outside the range (span 2 is only at T0; span 1 at T0 and T0 + 60)
    assert fg([SPAN2], T0 + 1, T0 + 3600).total == 0
    assert fg([SPAN1], T0 + 1, T0 + 3600).total == 5
    assert fg([SPAN1], T0 - 3600, T0 - 1).total == 0
    # another label selector: nothing
    r = call(srv, "SelectMergeSpanProfile", pb.querier.SelectMergeSpanProfileRequest(
        profile_typeID=TYPE, label_selector='{service_name="other"}', span_selector=[SPAN1], start=T0 * MS,
        end=(T0 + 3600) * MS), pb.querier.SelectMergeStacktracesResponse, codec=codec)
    assert r.msg.flamegraph.total == 0
    # PROFILE_FORMAT_TREE: Pyroscope's tree bytes of the same merge
    r = call(srv, "SelectMergeSpanProfile", span_req(pb, [SPAN1, SPAN2], T0, T0 + 30, format=2),
             pb.querier.SelectMergeStacktracesResponse, codec=codec)
    assert tree_from_bytes(r.msg.tree) == BOTH


@pytest.mark.parametrize("codec", ["proto", "json"])
def test_span_selector_in_merges(srv, pb, codec):
    """span_selector (field 11) in SelectMergeStacktraces: the same merges, flame graph and pprof."""
    def req(spans, start=T0, end=T0 + 3600, **kw):
        return pb.querier.SelectMergeStacktracesRequest(profile_typeID=TYPE, label_selector='{service_name="api"}',
                                                        start=start * MS, end=end * MS, span_selector=spans, **kw)

    r = call(srv, "SelectMergeStacktraces", req([SPAN1, SPAN2], T0, T0 + 30), pb.querier.SelectMergeStacktracesResponse,
             codec=codec)
    assert (r.msg.flamegraph.total, tree(r.msg.flamegraph)) == (400, BOTH)
    # without a selector: every sample of the hour
    r = call(srv, "SelectMergeStacktraces", req([]), pb.querier.SelectMergeStacktracesResponse, codec=codec)
    assert r.msg.flamegraph.total == 100 + 30 + 200 + 70 + 1000 + 500 + 11 + 5 + 9
    # the pprof answer: the span's samples, without their span_id, profile_id and trace_id labels
    # (as Pyroscope, which keeps span ids apart from labels); the other labels stay
    r = call(srv, "SelectMergeStacktraces", req([SPAN2, SPAN3], format=4), pb.querier.SelectMergeStacktracesResponse,
             codec=codec)
    p = r.msg.pprof.profile
    st = list(p.string_table)
    fn = {f.id: st[f.name] for f in p.function}
    loc = {l.id: fn[l.line[0].function_id] for l in p.location}
    got = sorted((tuple(loc[x] for x in s.location_id), s.value[0],
                  tuple(sorted((st[l.key], st[l.str]) for l in s.label))) for s in p.sample)
    assert got == [(("idle", "main"), 70, ()), (("main",), 11, ()), (("work", "main"), 200, ())]


def samples_of(p):
    """[(stack root first... as leaf first names, value, sorted labels)] of a pprof, sorted."""
    st = list(p.string_table)
    fn = {f.id: st[f.name] for f in p.function}
    loc = {l.id: fn[l.line[0].function_id] for l in p.location}
    return sorted((tuple(loc[x] for x in s.location_id), s.value[0],
                   tuple(sorted((st[l.key], st[l.str]) for l in s.label))) for s in p.sample)


# the hour merged without a span selector: no span_id, profile_id or trace_id label (an invalid
# span id is no span: its label stays), the values of each stack summed as without span labels
PLAIN_HOUR = sorted([(("idle", "main"), 70 + 1000, ()), (("main",), 30 + 11 + 5, ()), (("work", "main"), 200 + 9, ()),
              (("work", "main"), 100, (("span_name", "GET /"),)), (("work", "main"), 500, (("span_id", "xyz"),))])
# the first profile alone: every sample as pushed
PUSHED_1 = sorted((tuple({MAIN: "main", WORK: "work", IDLE: "idle"}[x] for x in stack), v, tuple(sorted(labels)))
                  for stack, v, labels in SAMPLES_1)


def profiles_api_pprof(srv, pb, **params):
    import gzip
    import urllib.parse
    q = urllib.parse.urlencode(dict(query=TYPE + '{service_name="api"}', format="pprof", **params))
    st, _, body = srv.get("/api/v1/profiles/query?" + q)
    assert st == 200, body[:300]
    p = pb.google.Profile()
    p.ParseFromString(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    return p


def test_plain_merges_and_one_profile(srv, pb):
    """Plain merges show no span labels and sum as if there were none; one stored profile keeps
    them per sample, exactly as pushed (the span parts added back to the stacks)."""
    r = call(srv, "SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
        profile_typeID=TYPE, label_selector='{service_name="api"}', start=T0 * MS, end=(T0 + 3600) * MS, format=4),
        pb.querier.SelectMergeStacktracesResponse)
    assert samples_of(r.msg.pprof.profile) == PLAIN_HOUR
    r = call(srv, "SelectMergeProfile", pb.querier.SelectMergeProfileRequest(
        profile_typeID=TYPE, label_selector='{service_name="api"}', start=T0 * MS, end=(T0 + 3600) * MS),
        pb.google.Profile)
    assert samples_of(r.msg) == PLAIN_HOUR
    assert samples_of(profiles_api_pprof(srv, pb, start=T0, end=T0 + 3600)) == PLAIN_HOUR
    # one profile: the profiles API's download of the first, by range or by time
    assert samples_of(profiles_api_pprof(srv, pb, start=T0, end=T0 + 30)) == PUSHED_1
    assert samples_of(profiles_api_pprof(srv, pb, time=T0)) == PUSHED_1
    assert samples_of(profiles_api_pprof(srv, pb, time=T0 + 60)) == [(("main",), 5, (("span_id", SPAN1),)),
                                                                     (("work", "main"), 9, ())]
    # by its id (/api/v1/profiles/ids, then /api/v1/profile?id=): the same
    import gzip
    import urllib.parse
    js = srv.get_json("/api/v1/profiles/ids?" + urllib.parse.urlencode(
        {"query": TYPE + '{service_name="api"}', "start": str(T0), "end": str(T0 + 30)}))
    assert len(js["data"]) == 1, js
    st, _, body = srv.get("/api/v1/profile?format=pprof&id=" + js["data"][0]["id"])
    assert st == 200, body[:300]
    p = pb.google.Profile()
    p.ParseFromString(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    assert samples_of(p) == PUSHED_1
    # the debug read of each stored profile: the same
    import gzip
    ser = [x for x in srv.series() if x["labels"].get("service_name") == "api"]
    assert len(ser) == 1 and [p["ts"] for p in ser[0]["profiles"]] == [T0 * NS, (T0 + 60) * NS], ser
    p = pb.google.Profile()
    p.ParseFromString(gzip.decompress(srv.profile_bytes(ser[0]["id"], T0 * NS)))
    assert samples_of(p) == PUSHED_1
    # a span merge equals the one profile's samples of that span, summed
    for span in (SPAN1, SPAN2, SPAN3):
        want = sum(v for _, v, labels in PUSHED_1 if dict(labels).get("span_id", dict(labels).get("profile_id")) == span)
        r = call(srv, "SelectMergeSpanProfile", span_req(pb, [span], T0, T0 + 30), pb.querier.SelectMergeStacktracesResponse)
        assert r.msg.flamegraph.total == want, span


def test_bad_span_ids(srv, pb):
    for bad in ("xyz", "9a517183f26a089", "9a517183f26a089dd", "9a517183f26a089g", "0000000000000000", ""):
        m = err(srv, "SelectMergeSpanProfile", msg=span_req(pb, [SPAN1, bad]))
        assert m == 'span_selector[1]: "%s" is not a span id (16 hex digits, not all zero)' % bad, m
        m = err(srv, "SelectMergeStacktraces", msg=pb.querier.SelectMergeStacktracesRequest(
            profile_typeID=TYPE, start=T0 * MS, end=(T0 + 60) * MS, span_selector=[bad]))
        assert m == 'span_selector[0]: "%s" is not a span id (16 hex digits, not all zero)' % bad, m
    # at most 10,000 span ids a request
    many = ["%016x" % (i + 0x1000000) for i in range(10001)]  # none of them stored
    assert err(srv, "SelectMergeSpanProfile", msg=span_req(pb, many)) == \
        "span_selector: 10001 span ids, at most 10000 may be selected in one request"
    r = call(srv, "SelectMergeSpanProfile", span_req(pb, many[:9999] + [SPAN1]), pb.querier.SelectMergeStacktracesResponse)
    assert r.msg.flamegraph.total == 135
    # no span: SelectMergeSpanProfile needs one
    assert err(srv, "SelectMergeSpanProfile", msg=span_req(pb, [])) == \
        "span_selector: missing (at least one span id, 16 hex digits)"
    assert err(srv, "SelectMergeSpanProfile", msg=span_req(pb, [SPAN1], format=4)).startswith(
        "format: PROFILE_FORMAT_PPROF is not an answer of SelectMergeSpanProfile")
    # a Diff side may not select spans
    side = pb.querier.SelectMergeStacktracesRequest(profile_typeID=TYPE, start=T0 * MS, end=(T0 + 60) * MS,
                                                    span_selector=[SPAN1])
    assert err(srv, "Diff", msg=pb.querier.DiffRequest(left=side, right=side)) == \
        "left.span_selector is not supported in a Diff (1 span ids)"
    # JSON as Grafana's proxy sends it (camelCase, int64 as numbers)
    body = json.dumps({"profileTypeID": TYPE, "labelSelector": "{}", "spanSelector": [SPAN1], "start": T0 * MS,
                       "end": (T0 + 3600) * MS}).encode()
    r = connect_call(srv.port, "querier.v1.QuerierService/SelectMergeSpanProfile", None, codec="json", body=body,
                     resp_type=pb.querier.SelectMergeStacktracesResponse)
    assert r.status == 200 and r.msg.flamegraph.total == 135, r


def test_after_compaction(srv, pb):
    """The same answers once the profiles are in a chunk (the index holds (series, time), not where
    the profile is stored)."""
    st, _, body = srv.request("POST", "/api/v1/admin/compact")
    assert st == 200, body
    for codec in ("proto", "json"):
        r = call(srv, "SelectMergeSpanProfile", span_req(pb, [SPAN1, SPAN2], T0, T0 + 30),
                 pb.querier.SelectMergeStacktracesResponse, codec=codec)
        assert (r.msg.flamegraph.total, tree(r.msg.flamegraph)) == (400, BOTH)
        r = call(srv, "SelectMergeSpanProfile", span_req(pb, [SPAN1]), pb.querier.SelectMergeStacktracesResponse,
                 codec=codec)
        assert (r.msg.flamegraph.total, tree(r.msg.flamegraph)) == (135, BOTH_HOUR_1)
        assert call(srv, "SelectMergeSpanProfile", span_req(pb, [SPAN1], T0 + 1, T0 + 3600),
                    pb.querier.SelectMergeStacktracesResponse, codec=codec).msg.flamegraph.total == 5


@pytest.mark.parametrize("codec", ["proto", "json"])
def test_client_profile_id_selects_its_profile(srv, pb, codec):
    """The push's RawSample.ID (UUID1, on the first profile only) is a profile id too:
    profile_id_selector with it merges just that profile (every sample: 1,911 ns), in any of the forms
    Go's uuid.Parse reads; outside the range it selects nothing."""
    def total(ids, start=T0, end=T0 + 3600):
        req = pb.querier.SelectMergeStacktracesRequest(profile_typeID=TYPE, label_selector='{service_name="api"}',
                                                       start=start * MS, end=end * MS, profile_id_selector=ids)
        return call(srv, "SelectMergeStacktraces", req, pb.querier.SelectMergeStacktracesResponse,
                    codec=codec).msg.flamegraph.total

    whole = sum(v for _, v, _ in SAMPLES_1)
    assert whole == 1911
    assert total([UUID1]) == whole
    assert total(["{%s}" % UUID1.upper()]) == whole
    assert total(["urn:uuid:" + UUID1]) == whole
    assert total([UUID1.replace("-", "")]) == whole
    assert total([UUID1], T0 + 1, T0 + 3600) == 0
