"""Connect JSON as Pyroscope's server reads it: connect-go 1.19's JSON codec runs protojson with
UnmarshalOptions{DiscardUnknown: true} (google.golang.org/protobuf 1.36), and profstore must read
every body the same way (proto/pbjson.h says how).

- test_drilldown_bodies: the bodies Grafana Profiles Drilldown writes (its *ApiClient.ts, as
  JSON.stringify makes them, sent through Grafana's proxy unchanged) answered exactly as the same
  request in binary protobuf (protoc-generated classes), the JSON answer equal to protojson's
  mapping of the binary one (Python protobuf's json_format), with the fixtures' exact totals;
- test_encodings_agree: each querier request built with the protoc classes and written by Python
  protobuf's json_format (a real encoder) in every form protojson reads: lowerCamel names, proto
  names, both mixed at every level, int64 as strings, as numbers and as exponent strings ("1.7e12"),
  enums by name and by number, explicit nulls, unknown fields at every level: one answer, the binary
  one;
- test_protojson_rules: what the real server takes and refuses, with exact messages: a field by
  both names is a duplicate, an enum name the enum lacks is left out, numbers in strings are one
  JSON number token, the empty body, bytes in both base64 alphabets with and without padding (a
  push stored the same);
- test_known_selectors_refused: selector fields Pyroscope knows and profstore does not implement
  are invalid_argument naming them in both codecs (never skipped as unknown): async (unless
  DISABLED), trace_id_selector of SelectMergeProfile, go_pgo; unknown names are ignored.
"""

import base64
import json
import re

import pytest
from google.protobuf import json_format

from conftest import CPU_TYPE, QUERY_T0, fixture_bytes
from pyro_util import connect_call, cpu_push_request, pyro_pb

T0 = QUERY_T0
MS = 1000
Q = "querier.v1.QuerierService/"
PUSHES = [
    ("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 7),
    ("go/cpu-03.pb.gz", '{service_name="api",instance="b"}', 22),
    ("go/cpu-05.pb.gz", '{service_name="batch",instance="c"}', 37),
    ("go/cpu-seed2-01.pb.gz", '{service_name="api",instance="c"}', 3599),
]
SITE = ["main.main.func1.1", "main.main.func2"]
# README (tests/testdata): the cpu totals of cpu-01, -03, -05, -seed2-01
API_TOTAL = 2980000000 + 2890000000 + 2340000000
ALL_TOTAL = API_TOTAL + 2860000000
# the int64 fields of the requests (JSON names), to write as numbers
INT64_KEYS = {"start", "end", "maxNodes", "max_nodes", "limit"}


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="connectjson", retention="0")
    for rel, labels, dt in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, (rel, st)
    return s


def stringify(obj) -> bytes:
    """JSON.stringify's text: no spaces."""
    return json.dumps(obj, separators=(",", ":")).encode()


def call_json(srv, method, body, status=200):
    r = connect_call(srv.port, method, None, codec="json", body=body)
    assert r.status == status, (method, body[:300], r)
    return json.loads(r.body) if status == 200 else r.error


def call_bin(srv, method, msg, resp_type):
    r = connect_call(srv.port, method, msg, resp_type=resp_type)
    assert r.status == 200, (method, r)
    return r.msg


def as_json(msg):
    """protojson's mapping of an answer (Python protobuf's json_format: int64 as strings)."""
    return json_format.MessageToDict(msg)


def refused(srv, method, body, codec="json"):
    r = connect_call(srv.port, method, None, codec=codec, body=body)
    assert r.status == 400 and r.error["code"] == "invalid_argument", r
    return r.error["message"]


def test_drilldown_bodies(srv, pb):
    start, end = T0 * MS, (T0 + 3600) * MS
    # the onboarding check (statsApiClient.ts): JSON.stringify({})
    got = call_json(srv, Q + "GetProfileStats", b"{}")
    assert got == as_json(call_bin(srv, Q + "GetProfileStats", pb.types.GetProfileStatsRequest(),
                                   pb.types.GetProfileStatsResponse)) == {
        "dataIngested": True, "oldestProfileTime": str((T0 + 7) * MS), "newestProfileTime": str((T0 + 3599) * MS)}
    # the service list (SeriesApiClient.ts): start, end as numbers, labelNames, matchers []
    got = call_json(srv, Q + "Series", stringify({"start": start, "end": end,
                                                  "labelNames": ["service_name", "__profile_type__"], "matchers": []}))
    want = call_bin(srv, Q + "Series", pb.querier.SeriesRequest(start=start, end=end,
                                                                label_names=["service_name", "__profile_type__"]),
                    pb.querier.SeriesResponse)
    assert got == as_json(want) and len(got["labelsSet"]) == 4
    # labels (LabelsApiClient.ts): a matcher on __profile_type__ made from the query
    matchers = ['{__profile_type__="%s", service_name="api"}' % CPU_TYPE]
    got = call_json(srv, Q + "LabelNames", stringify({"matchers": matchers, "start": start, "end": end}))
    want = call_bin(srv, Q + "LabelNames", pb.types.LabelNamesRequest(matchers=matchers, start=start, end=end),
                    pb.types.LabelNamesResponse)
    assert got == as_json(want) and "instance" in got["names"]
    got = call_json(srv, Q + "LabelValues", stringify({"name": "instance", "matchers": matchers, "start": start,
                                                       "end": end}))
    assert got == {"names": ["a", "b", "c"]}
    # function details (PprofApiClient.ts selectMergeProfileJson): proto names, a lowerCamel
    # stackTraceSelector holding a proto-named call_site, maxNodes; the answer protojson's Profile
    body = stringify({"profile_typeID": CPU_TYPE, "label_selector": '{service_name="api"}', "start": start,
                      "end": end, "stackTraceSelector": {"call_site": [{"name": n} for n in SITE]},
                      "maxNodes": 16384})
    got = call_json(srv, Q + "SelectMergeProfile", body)
    want = call_bin(srv, Q + "SelectMergeProfile", pb.querier.SelectMergeProfileRequest(
        profile_typeID=CPU_TYPE, label_selector='{service_name="api"}', start=start, end=end, max_nodes=16384,
        stack_trace_selector=pb.types.StackTraceSelector(call_site=[pb.types.Location(name=n) for n in SITE])),
        pb.google.Profile)
    assert got == as_json(want)
    assert all(got["stringTable"][int(f["name"])] != "" for f in got["function"])
    # the query tooltip (queryAnalysisApiClient.ts)
    q = '%s{service_name="api"}' % CPU_TYPE
    got = call_json(srv, Q + "AnalyzeQuery", stringify({"start": start, "end": end, "query": q}))
    assert got == as_json(call_bin(srv, Q + "AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=start, end=end,
                                                                                           query=q),
                                   pb.querier.AnalyzeQueryResponse))
    assert got["queryImpact"]["totalQueriedSeries"] == "3"
    # the flame graph's settings (settingsApiClient.ts)
    assert call_json(srv, "settings.v1.SettingsService/Get", b"{}") == {}


# ---- every form protojson reads ------------------------------------------------------------------

def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def transform(obj, fn, depth=0):
    """Applies fn(key, value, index, depth) -> [(key, value)] to every object member, recursively."""
    if isinstance(obj, list):
        return [transform(v, fn, depth + 1) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = []
    for i, (k, v) in enumerate(obj.items()):
        out.extend(fn(k, transform(v, fn, depth + 1), i, depth))
    return dict(out) if len({k for k, _ in out}) == len(out) else out


def pairs_json(p) -> bytes:
    """JSON text of nested dicts / lists of (key, value) pairs (duplicate keys kept)."""
    if isinstance(p, dict):
        p = list(p.items())
    if isinstance(p, list) and p and all(isinstance(e, tuple) for e in p):
        return b"{" + b",".join(json.dumps(k).encode() + b":" + pairs_json(v) for k, v in p) + b"}"
    if isinstance(p, list):
        return b"[" + b",".join(pairs_json(v) for v in p) + b"]"
    return json.dumps(p).encode()


def variants(msg):
    """The request msg as JSON in every form protojson reads, each written by json_format."""
    camel_d = json_format.MessageToDict(msg)
    proto_d = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    enum_n = json_format.MessageToDict(msg, use_integers_for_enums=True)
    out = {"lowerCamel": camel_d, "proto names": proto_d, "enum numbers": enum_n}
    # mixed: every other member by its proto name, at every level (as Grafana's Drilldown writes)
    out["mixed names"] = transform(camel_d, lambda k, v, i, d: [(k if i % 2 else re.sub(
        r"[A-Z]", lambda m: "_" + m.group(0).lower(), k).replace("profile_type_i_d", "profile_typeID"), v)])
    out["int64 numbers"] = transform(camel_d, lambda k, v, i, d: [
        (k, int(v) if k in INT64_KEYS and isinstance(v, str) else v)])
    out["int64 exponent strings"] = transform(camel_d, lambda k, v, i, d: [
        (k, "%se%d" % (v[:-3], 3) if k in INT64_KEYS and isinstance(v, str) and v.endswith("000") else v)])
    out["nulls and unknown fields"] = transform(camel_d, lambda k, v, i, d: [
        (k, v), ("futureField%d" % i, [("nested", [1, {"x": None}]), ("twice", 1), ("twice", 2)]),
        ("unsetThing", None)] + ([("spanSelector", None)] if d == 0 and i == 0 else []))
    return {name: pairs_json(v) for name, v in out.items()}


def test_encodings_agree(srv, pb):
    start, end = T0 * MS, (T0 + 3600) * MS
    site = pb.types.StackTraceSelector(call_site=[pb.types.Location(name=n) for n in SITE])
    cases = [
        ("SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
            profile_typeID=CPU_TYPE, label_selector='{service_name="api"}', start=start, end=end, max_nodes=16384,
            format=pb.querier.PROFILE_FORMAT_FLAMEGRAPH), pb.querier.SelectMergeStacktracesResponse),
        ("SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
            profile_typeID=CPU_TYPE, label_selector="{}", start=start, end=end, max_nodes=100,
            stack_trace_selector=site, format=pb.querier.PROFILE_FORMAT_TREE), pb.querier.SelectMergeStacktracesResponse),
        ("SelectMergeProfile", pb.querier.SelectMergeProfileRequest(
            profile_typeID=CPU_TYPE, label_selector='{instance="a"}', start=start, end=end, stack_trace_selector=site),
         pb.google.Profile),
        ("SelectSeries", pb.querier.SelectSeriesRequest(
            profile_typeID=CPU_TYPE, label_selector="{}", start=start, end=end, step=60, group_by=["service_name"],
            aggregation=pb.types.TIME_SERIES_AGGREGATION_TYPE_AVERAGE, limit=5, stack_trace_selector=site,
            exemplar_type=pb.types.EXEMPLAR_TYPE_NONE), pb.querier.SelectSeriesResponse),
        ("Series", pb.querier.SeriesRequest(matchers=['{service_name="api"}'], label_names=["instance"], start=start,
                                            end=end), pb.querier.SeriesResponse),
        ("LabelNames", pb.types.LabelNamesRequest(matchers=["{}"], start=start, end=end), pb.types.LabelNamesResponse),
        ("LabelValues", pb.types.LabelValuesRequest(name="service_name", matchers=["{}"], start=start, end=end),
         pb.types.LabelValuesResponse),
        ("ProfileTypes", pb.querier.ProfileTypesRequest(start=start, end=end), pb.querier.ProfileTypesResponse),
        ("Diff", pb.querier.DiffRequest(
            left=pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, label_selector='{instance="a"}',
                                                          start=start, end=end, max_nodes=1000),
            right=pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, label_selector='{instance="b"}',
                                                           start=start, end=end)), pb.querier.DiffResponse),
        ("SelectHeatmap", pb.querier.SelectHeatmapRequest(
            profile_typeID=CPU_TYPE, label_selector="{}", start=start, end=end, step=600, group_by=["instance"],
            query_type=pb.querier.HEATMAP_QUERY_TYPE_INDIVIDUAL, exemplar_type=pb.types.EXEMPLAR_TYPE_NONE, limit=2),
         pb.querier.SelectHeatmapResponse),
        ("AnalyzeQuery", pb.querier.AnalyzeQueryRequest(start=start, end=end, query=CPU_TYPE + "{}"),
         pb.querier.AnalyzeQueryResponse),
    ]
    for method, msg, resp_type in cases:
        want = as_json(call_bin(srv, Q + method, msg, resp_type))
        assert want, (method, "an empty answer proves nothing")
        for name, body in variants(msg).items():
            got = call_json(srv, Q + method, body)
            assert got == want, (method, name, body)
    # exact figures of two of them
    r = call_json(srv, Q + "SelectMergeStacktraces", variants(cases[0][1])["mixed names"])
    assert r["flamegraph"]["total"] == str(API_TOTAL)
    r = call_json(srv, Q + "SelectSeries", variants(pb.querier.SelectSeriesRequest(
        profile_typeID=CPU_TYPE, label_selector="{}", start=start, end=end, step=3600))["int64 numbers"])
    assert r == {"series": [{"points": [{"value": ALL_TOTAL, "timestamp": str(end)}]}]}


def test_protojson_rules(srv, pb):
    rng = '"start":%d,"end":%d' % (T0 * MS, (T0 + 3600) * MS)
    smt = Q + "SelectMergeStacktraces"
    # a field by its two names is a duplicate (also when one is null); by one name twice too
    assert refused(srv, smt, ('{"profileTypeID":"%s","profile_typeID":"%s",%s}' % (CPU_TYPE, CPU_TYPE, rng)).encode()) \
        == ('querier.v1.SelectMergeStacktracesRequest: json: profile_typeID: duplicate field (given as '
            '"profileTypeID" and as "profile_typeID")')
    assert refused(srv, smt, ('{"profileTypeID":"%s","maxNodes":null,"max_nodes":5,%s}' % (CPU_TYPE, rng)).encode()) \
        == ('querier.v1.SelectMergeStacktracesRequest: json: max_nodes: duplicate field (given as "maxNodes" and as '
            '"max_nodes")')
    assert refused(srv, smt, ('{"profileTypeID":"%s","stackTraceSelector":{"callSite":[{"name":"a","name":"b"}]},%s}'
                              % (CPU_TYPE, rng)).encode()) == \
        ('querier.v1.SelectMergeStacktracesRequest: json: stack_trace_selector.call_site[0].name: duplicate field '
         '(given as "name" and as "name")')
    # an enum name the enum lacks is left out: the default format, the default aggregation
    base = call_json(srv, smt, ('{"profileTypeID":"%s",%s}' % (CPU_TYPE, rng)).encode())
    assert base["flamegraph"]["total"] == str(ALL_TOTAL)
    assert call_json(srv, smt, ('{"profileTypeID":"%s","format":"PROFILE_FORMAT_FUTURE",%s}'
                                % (CPU_TYPE, rng)).encode()) == base
    ser = '"profileTypeID":"%s",%s,"step":3600' % (CPU_TYPE, rng)
    assert call_json(srv, Q + "SelectSeries", ('{%s,"aggregation":"TIME_SERIES_AGGREGATION_TYPE_MEDIAN"}'
                                               % ser).encode()) == call_json(srv, Q + "SelectSeries",
                                                                             ('{%s}' % ser).encode())
    # numbers in strings: one JSON number token; numbers with exponents that are whole
    assert call_json(srv, smt, ('{"profileTypeID":"%s","start":"%de3","end":%d.0e3,"maxNodes":"1.6384e4"}'
                                % (CPU_TYPE, T0, T0 + 3600)).encode()) == base
    for bad, what in (('"0x10"', '"0x10" is not a number'), ('" 16"', '" 16" is not a number'),
                      ('"16.5"', '"16.5" is not an integer in range'), ('"+16"', '"+16" is not a number')):
        assert refused(srv, smt, ('{"profileTypeID":"%s","maxNodes":%s,%s}' % (CPU_TYPE, bad, rng)).encode()) == \
            "querier.v1.SelectMergeStacktracesRequest: json: max_nodes: " + what
    # start/end strings that are no number: profstore's extension (times as /api/v1 takes them)
    assert refused(srv, smt, ('{"profileTypeID":"%s","start":"yesterday","end":1}' % CPU_TYPE).encode()).startswith(
        "querier.v1.SelectMergeStacktracesRequest: json: start: ")
    # the body
    assert refused(srv, smt, b"") == \
        "querier.v1.SelectMergeStacktracesRequest: json: zero-length payload is not a valid JSON object"
    assert refused(srv, smt, b"null").startswith("querier.v1.SelectMergeStacktracesRequest: json: line 1 column 4: ")


def test_bytes_base64(make_server):
    """A push's raw_profile in the standard and the URL alphabet, padded or not, with line breaks:
    stored alike (its own server: the profile's time is inside the other tests' hour)."""
    srv = make_server(retention="0")
    smt = Q + "SelectMergeStacktraces"
    raw = fixture_bytes("go/cpu-02.pb.gz")
    req = json_format.MessageToDict(cpu_push_request(raw, service="b64"))
    std = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    assert req["series"][0]["samples"][0]["rawProfile"] == std and ("-" in url or "_" in url)
    forms = {"std": std, "url unpadded": url.rstrip("="), "url": url, "std with line breaks": "\r\n".join(
        std[i:i + 76] for i in range(0, len(std), 76))}
    for i, (name, text) in enumerate(forms.items()):
        if name == "std with line breaks" and len(text) % 4:
            text += "\n" * (4 - len(text) % 4)  # Go picks padding by the length, line breaks included
        req["series"][0]["labels"].append({"name": "form", "value": str(i)})
        req["series"][0]["samples"][0]["rawProfile"] = text
        r = connect_call(srv.port, "push.v1.PusherService/Push", None, codec="json", body=stringify(req))
        assert r.status == 200, (name, r)
        req["series"][0]["labels"].pop()
    for i in range(len(forms)):
        sel = '{service_name="b64",form="%d"}' % i
        got = call_json(srv, smt, ('{"profileTypeID":"%s","labelSelector":%s}' % (CPU_TYPE, json.dumps(sel))).encode())
        assert got["flamegraph"]["total"] == "2930000000", (i, got)  # cpu-02's README total
    # both alphabets in one string: '_' makes it the URL alphabet, where '+' and '/' are invalid
    bad = req["series"][0]["samples"][0]["rawProfile"] = std[:-4] + "+_" + std[-2:]
    assert refused(srv, "push.v1.PusherService/Push", stringify(req)) == \
        "json: series[0].samples[0].raw_profile: invalid base64 character at offset %d" % min(
            i for i, c in enumerate(bad) if c in "+/")


def test_known_selectors_refused(srv, pb):
    start, end = T0 * MS, (T0 + 3600) * MS
    # async (field 9): served when DISABLED, refused otherwise (Pyroscope: unimplemented unless enabled)
    body = '{"profileTypeID":"%s","start":%d,"end":%d,"async":{%s}}'
    assert call_json(srv, Q + "SelectMergeStacktraces", (body % (CPU_TYPE, start, end, '"type":"ASYNC_QUERY_TYPE_'
                                                                 'DISABLED"')).encode())["flamegraph"]["total"] == \
        str(ALL_TOTAL)
    msg = ("async is not supported by profstore (no asynchronous queries: "
           "leave it out or send ASYNC_QUERY_TYPE_DISABLED)")
    assert refused(srv, Q + "SelectMergeStacktraces", (body % (CPU_TYPE, start, end, '"type":1')).encode()) == msg
    req = pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, start=start, end=end)
    getattr(req, "async").type = pb.querier.ASYNC_QUERY_TYPE_FORCE  # a Python keyword: no attribute syntax
    assert refused(srv, Q + "SelectMergeStacktraces", req.SerializeToString(), codec="proto") == msg
    # trace_id_selector of SelectMergeProfile (field 8), both codecs
    req = pb.querier.SelectMergeProfileRequest(profile_typeID=CPU_TYPE, start=start, end=end,
                                               trace_id_selector=["7c9e66797425440de944be07fc1f90ae"])
    want = "trace_id_selector is not supported by profstore (1 trace ids)"
    assert refused(srv, Q + "SelectMergeProfile", req.SerializeToString(), codec="proto") == want
    assert refused(srv, Q + "SelectMergeProfile", stringify(json_format.MessageToDict(req))) == want
    # go_pgo, by its proto names inside lowerCamel ones
    assert refused(srv, Q + "SelectMergeStacktraces", stringify(
        {"profileTypeID": CPU_TYPE, "start": start, "end": end,
         "stackTraceSelector": {"go_pgo": {"keep_locations": 1}}})) == \
        "stack_trace_selector.go_pgo is not supported by profstore"
    # a name Pyroscope does not know is ignored, at the top and inside a selector
    assert call_json(srv, Q + "SelectMergeStacktraces", stringify(
        {"profileTypeID": CPU_TYPE, "start": start, "end": end, "spanSelectorV2": ["x"],
         "stackTraceSelector": {"callSite": [{"name": SITE[0], "file": "main.go"}], "goPgoV2": {}}}))[
        "flamegraph"]["total"] == str(call_bin(srv, Q + "SelectMergeStacktraces", pb.querier.SelectMergeStacktracesRequest(
            profile_typeID=CPU_TYPE, start=start, end=end, stack_trace_selector=pb.types.StackTraceSelector(
                call_site=[pb.types.Location(name=SITE[0])])), pb.querier.SelectMergeStacktracesResponse).flamegraph.total)
