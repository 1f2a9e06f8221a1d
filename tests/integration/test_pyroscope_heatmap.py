"""querier.v1.QuerierService/SelectHeatmap and AnalyzeQuery over Connect, with protoc-generated
classes from proto/pyroscope_*.proto (pyro_util.py), binary and JSON.

Six CPU profiles with known totals (the fixtures' README = `go tool pprof`'s) are pushed at known
times; the heatmap with step 60 s over (T0, T0 + 180 s] puts them in three slots (T0 + 60 s holds
[T0, T0 + 60 s], Pyroscope's first slot ending at start) and 20 linear y buckets from the smallest
total (2340000000) to the largest (2980000000): 32000000 wide, so 2980000000 is in bucket 19,
2930000000 in 18, 2890000000 in 17, 2860000000 in 16, 2340000000 in 0.
"""

import json

import pytest

from conftest import CPU_TYPE, QUERY_T0
from pyro_util import connect_call, pyro_pb

T0 = QUERY_T0
MS = 1000
Q = "querier.v1.QuerierService/"
# (fixture, labels, seconds after T0, total cpu ns)
PUSHES = [
    ("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 7, 2980000000),
    ("go/cpu-02.pb.gz", '{service_name="api",instance="a"}', 67, 2930000000),
    ("go/cpu-03.pb.gz", '{service_name="api",instance="b"}', 22, 2890000000),
    ("go/cpu-04.pb.gz", '{service_name="api",instance="b"}', 120, 2890000000),
    ("go/cpu-05.pb.gz", '{service_name="batch",instance="c"}', 37, 2860000000),
    ("go/cpu-seed2-01.pb.gz", '{service_name="api",instance="c"}', 179, 2340000000),
]
START, END = (T0 + 60) * MS, (T0 + 180) * MS
Y_MIN = [2340000000.0 + i * 32000000 for i in range(20)]


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="heatmap", retention="0")
    for rel, labels, dt, _ in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


def call(srv, method, msg, resp_type, codec="proto", body=None):
    r = connect_call(srv.port, Q + method, msg, codec=codec, resp_type=resp_type, body=body)
    assert r.status == 200, (method, r)
    return r


def err(srv, method, msg=None, body=None, codec="proto", status=400, code="invalid_argument"):
    r = connect_call(srv.port, Q + method, msg, codec=codec, body=body)
    assert r.status == status, r
    assert r.error["code"] == code, r.error
    return r.error["message"]


def counts(**buckets):
    """20 counts, bucket b<i>=n."""
    c = [0] * 20
    for k, v in buckets.items():
        c[int(k[1:])] = v
    return c


def slots(series):
    return [(s.timestamp, list(s.counts)) for s in series.slots]


def heatmap_req(pb, **kw):
    args = dict(profile_typeID=CPU_TYPE, label_selector="{}", start=START, end=END, step=60, query_type=1)
    args.update(kw)
    return pb.querier.SelectHeatmapRequest(**args)


def test_heatmap_one_series(srv, pb):
    r = call(srv, "SelectHeatmap", heatmap_req(pb), pb.querier.SelectHeatmapResponse)
    assert len(r.msg.series) == 1
    s = r.msg.series[0]
    assert list(s.labels) == []
    assert slots(s) == [
        ((T0 + 60) * MS, counts(b16=1, b17=1, b19=1)),   # cpu-05, cpu-03, cpu-01 (before start: first slot)
        ((T0 + 120) * MS, counts(b17=1, b18=1)),          # cpu-04 (on the edge), cpu-02
        ((T0 + 180) * MS, counts(b0=1)),                  # cpu-seed2-01
    ]
    assert all(list(sl.y_min) == Y_MIN for sl in s.slots)
    assert all(len(sl.exemplars) == 0 for sl in s.slots)  # exemplar_type absent
    # JSON: the same answer; int64 as strings, yMin doubles
    rj = call(srv, "SelectHeatmap", heatmap_req(pb), pb.querier.SelectHeatmapResponse, codec="json")
    assert rj.msg == r.msg
    js = json.loads(rj.body)
    assert js["series"][0]["slots"][2] == {"timestamp": str((T0 + 180) * MS), "yMin": Y_MIN,
                                           "counts": counts(b0=1)}


def test_heatmap_group_by_limit_exemplars(srv, pb):
    req = heatmap_req(pb, group_by=["service_name"], exemplar_type=2)
    r = call(srv, "SelectHeatmap", req, pb.querier.SelectHeatmapResponse)
    got = [([(l.name, l.value) for l in s.labels], slots(s)) for s in r.msg.series]
    assert got == [
        ([("service_name", "api")], [((T0 + 60) * MS, counts(b17=1, b19=1)),
                                     ((T0 + 120) * MS, counts(b17=1, b18=1)),
                                     ((T0 + 180) * MS, counts(b0=1))]),
        ([("service_name", "batch")], [((T0 + 60) * MS, counts(b16=1))]),
    ]
    # one exemplar per non-empty bucket, in bucket order: its profile's time, total and the labels
    # that are not the series' (its profile id: test_pyroscope_exemplars.py checks them)
    ex = [[(e.timestamp, e.value, [(l.name, l.value) for l in e.labels]) for e in sl.exemplars]
          for sl in r.msg.series[0].slots]
    assert ex == [
        [((T0 + 22) * MS, 2890000000, [("instance", "b")]), ((T0 + 7) * MS, 2980000000, [("instance", "a")])],
        [((T0 + 120) * MS, 2890000000, [("instance", "b")]), ((T0 + 67) * MS, 2930000000, [("instance", "a")])],
        [((T0 + 179) * MS, 2340000000, [("instance", "c")])],
    ]
    assert all(len(e.profile_id) == 36 for sl in r.msg.series[0].slots for e in sl.exemplars)
    # limit 1: the series with the most counts (api: 5)
    r = call(srv, "SelectHeatmap", heatmap_req(pb, group_by=["service_name"], limit=1),
             pb.querier.SelectHeatmapResponse)
    assert [[(l.name, l.value) for l in s.labels] for s in r.msg.series] == [[("service_name", "api")]]
    # JSON as Grafana writes it: enums by name
    body = json.dumps({"profileTypeID": CPU_TYPE, "labelSelector": '{service_name="batch"}', "start": str(START),
                       "end": str(END), "step": 60, "queryType": "HEATMAP_QUERY_TYPE_INDIVIDUAL",
                       "exemplarType": "EXEMPLAR_TYPE_NONE"}).encode()
    r = call(srv, "SelectHeatmap", None, pb.querier.SelectHeatmapResponse, codec="json", body=body)
    # one value v: Pyroscope takes the range [v, v + 1): buckets 0-18 start and end at v, 19 holds it
    assert [slots(s) for s in r.msg.series] == [[((T0 + 60) * MS, counts(b19=1))]]
    assert list(r.msg.series[0].slots[0].y_min) == [2860000000.0] * 19 + [2860000000.0]


def test_heatmap_empty_and_bad_input(srv, pb):
    r = call(srv, "SelectHeatmap", heatmap_req(pb, label_selector='{service_name="none"}'),
             pb.querier.SelectHeatmapResponse)
    assert r.body == b""
    # 10^6 buckets: 50000 slots of 20
    assert err(srv, "SelectHeatmap", heatmap_req(pb, start=START, end=START + 49999 * MS, step=1)) == \
        ("the heatmap would have 50000 time slots of 1000 ms x 20 buckets = 1000000 buckets, more than 11000 slots "
         "(220000 buckets): use a larger step or a shorter range")
    assert err(srv, "SelectHeatmap", heatmap_req(pb, start=END, end=START)) == \
        "start (%d ms) must be before end (%d ms)" % (END, START)
    assert err(srv, "SelectHeatmap", heatmap_req(pb, step=0)) == \
        "step: must be at least 0.001 seconds (1 ms), got 0"
    assert err(srv, "SelectHeatmap", heatmap_req(pb, limit=-1)) == "limit: -1 is negative"
    assert err(srv, "SelectHeatmap", heatmap_req(pb, query_type=0)) == \
        "query_type: missing (HEATMAP_QUERY_TYPE_INDIVIDUAL; HEATMAP_QUERY_TYPE_SPAN is not supported)"
    assert err(srv, "SelectHeatmap", heatmap_req(pb, query_type=2)) == \
        "query_type: HEATMAP_QUERY_TYPE_SPAN is not supported by profstore (span profiles: SelectMergeSpanProfile)"
    assert err(srv, "SelectHeatmap", heatmap_req(pb, exemplar_type=3)) == \
        "exemplar_type: EXEMPLAR_TYPE_SPAN needs query_type HEATMAP_QUERY_TYPE_SPAN"
    assert err(srv, "SelectHeatmap", heatmap_req(pb, profile_typeID="")) == \
        "profile_typeID: missing (a profile type id, as ProfileTypes lists them)"
    m = err(srv, "SelectHeatmap", body=b"\x0a\xff\xff\xff\xff\x0f")
    assert m.startswith("querier.v1.SelectHeatmapRequest: protobuf: "), m
    # still answering
    r = call(srv, "SelectHeatmap", heatmap_req(pb), pb.querier.SelectHeatmapResponse)
    assert len(r.msg.series) == 1


def analyze(srv, pb, query, start=T0 * MS, end=(T0 + 180) * MS, codec="proto"):
    r = call(srv, "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=start, end=end, query=query),
             pb.querier.AnalyzeQueryResponse, codec=codec)
    assert len(r.msg.query_scopes) == 1
    sc = r.msg.query_scopes[0]
    assert (sc.component_type, sc.component_count, sc.block_count, sc.sample_count, sc.index_bytes,
            sc.symbol_bytes) == ("profstore", 1, 0, 0, 0, 0)  # nothing compacted yet: all head records
    assert r.msg.query_impact.total_bytes_in_time_range == sc.profile_bytes
    assert r.msg.query_impact.total_queried_series == sc.series_count
    assert not r.msg.query_impact.deduplication_needed
    return sc.series_count, sc.profile_count, sc.profile_bytes


def test_analyze_query(srv, pb):
    all_ = analyze(srv, pb, CPU_TYPE + "{}")
    assert all_[:2] == (4, 6)  # api/a, api/b, api/c, batch/c
    api = analyze(srv, pb, CPU_TYPE + '{service_name="api"}')
    batch = analyze(srv, pb, CPU_TYPE + '{service_name="batch"}', codec="json")
    assert api[:2] == (3, 5) and batch[:2] == (1, 1)
    assert api[2] + batch[2] == all_[2] and batch[2] > 0
    # Pyroscope's label for the type; one profile in [T0 + 100 s, T0 + 150 s]
    one = analyze(srv, pb, '{__profile_type__="%s",instance="b"}' % CPU_TYPE, start=(T0 + 100) * MS,
                  end=(T0 + 150) * MS)
    b = analyze(srv, pb, '{__profile_type__="%s",instance="b"}' % CPU_TYPE)
    assert one[:2] == (1, 1) and b[:2] == (1, 2) and 0 < one[2] < b[2]
    # both profile types: the samples type too
    assert analyze(srv, pb, '{service_name="batch"}')[:2] == (2, 2)
    assert analyze(srv, pb, '{service_name="none"}') == (0, 0, 0)
    m = err(srv, "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=2000, end=1000, query="{}"))
    assert m == "range: start (2000 ms) is after end (1000 ms)"
    m = err(srv, "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=1000, end=2000, query='{a="b"'))
    assert m == "query: 1:7: parse error: unexpected end of input inside braces"


def test_after_compaction(module_server_factory, pb):
    """The same heatmap from chunks (their totals column) as from head records; AnalyzeQuery counts
    the chunks a query reads whole."""
    s = module_server_factory(name="heatmap_compact", retention="0")
    for rel, labels, dt, _ in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, (rel, st, s.last_raw[:300])
    before = call(s, "SelectHeatmap", heatmap_req(pb, group_by=["instance"], exemplar_type=2),
                  pb.querier.SelectHeatmapResponse).body
    assert s.post_json("/api/v1/admin/compact")["status"] == "success"
    assert s.metrics()["profstore_storage_chunks"] == 8  # 4 series of each CPU type, one chunk each
    after = call(s, "SelectHeatmap", heatmap_req(pb, group_by=["instance"], exemplar_type=2),
                 pb.querier.SelectHeatmapResponse)
    assert after.body == before
    assert [[(l.name, l.value) for l in x.labels] for x in after.msg.series] == \
        [[("instance", "a")], [("instance", "b")], [("instance", "c")]]
    r = call(s, "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=T0 * MS, end=(T0 + 180) * MS,
                                                                 query=CPU_TYPE + "{}"), pb.querier.AnalyzeQueryResponse)
    sc = r.msg.query_scopes[0]
    assert (sc.block_count, sc.series_count, sc.profile_count) == (4, 4, 6)
    assert sc.profile_bytes == r.msg.query_impact.total_bytes_in_time_range and sc.profile_bytes > 0
    # a range that touches only cpu-04's chunk (api/b: 22 s and 120 s): the whole chunk, both profiles
    r = call(s, "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=(T0 + 100) * MS, end=(T0 + 150) * MS,
                                                                 query=CPU_TYPE + "{}"), pb.querier.AnalyzeQueryResponse)
    sc = r.msg.query_scopes[0]
    assert (sc.block_count, sc.series_count, sc.profile_count) == (1, 1, 2)
