"""POST /push.v1.PusherService/Push (Connect), with requests built by Python's protobuf (classes
generated at test time by protoc from proto/pyroscope_*.proto): binary and JSON pushes of the real
pprof fixtures land in exactly the series, with exactly the totals, that the native push of the same
bytes gives; gzip bodies; several series and samples in one push; every label validation error with
its exact Connect code, status and message (nothing stored); the Connect protocol's errors (unknown
methods, wrong content types, protocol versions, encodings, gzip bombs, garbage protobuf and JSON,
huge label counts) while the server keeps serving; a kill -9 after the 200 loses nothing."""

import gzip
import json
import urllib.parse

import pytest

from conftest import fixture_bytes, series_snapshot
from pyro_util import connect_call, pyro_pb

PUSH = "push.v1.PusherService/Push"

# the profile name each fixture is pushed under (what the native push infers for it)
NAMES = {
    "go/cpu-01.pb.gz": "process_cpu",
    "go/cpu-01.pb": "process_cpu",
    "go/heap-01.pb.gz": "memory",
    "go/goroutine-01.pb.gz": "goroutine",
    "go/block-01.pb.gz": "block",
    "node/cpu-01.pb.gz": "process_cpu",
    "node/wall-01.pb.gz": "wall",
    "node/heap-01.pb.gz": "memory",
}


def push_request(series):
    """series: [(labels as [(name, value)], [raw bytes, ...]), ...] -> push.v1.PushRequest."""
    pb = pyro_pb()
    req = pb.push.PushRequest()
    for labels, raws in series:
        s = req.series.add()
        for k, v in labels:
            lp = s.labels.add()
            lp.name = k
            lp.value = v
        for raw in raws:
            smp = s.samples.add()
            smp.raw_profile = raw
            smp.ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    return req


def push(srv, series, codec="proto", gzip_body=False, **kw):
    return connect_call(srv.port, PUSH, push_request(series), codec=codec, gzip=gzip_body,
                        resp_type=pyro_pb().push.PushResponse, **kw)


def renamed(snap, old, new):
    """The snapshot with service_name old replaced by new."""
    out = {}
    for labels, profiles in snap.items():
        out[tuple((k, new if (k == "service_name" and v == old) else v) for k, v in labels)] = profiles
    return out


def query_total(srv, selector, t):
    q = urllib.parse.urlencode({"query": selector, "time": t, "format": "top"})
    js = srv.get_json("/api/v1/profiles/query?" + q)
    return js["data"]["total"] if "data" in js else js["total"]


# ---- what is stored ---------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", sorted(NAMES))
@pytest.mark.parametrize("codec", ["proto", "json"])
def test_push_stores_what_the_native_push_stores(server, fixture, codec):
    raw = fixture_bytes(fixture)
    st, js = server.push(raw, labels='{service_name="native"}', name=NAMES[fixture] if "block" in fixture else None)
    assert st == 200, js
    r = push(server, [([("__name__", NAMES[fixture]), ("service_name", "connect")], [raw])], codec=codec)
    assert r.status == 200, r.error
    assert r.headers["content-type"] == ("application/json" if codec == "json" else "application/proto")
    assert r.body == (b"{}" if codec == "json" else b"")
    snap = series_snapshot(server)
    native = {k: v for k, v in snap.items() if ("service_name", "native") in k}
    connect = {k: v for k, v in snap.items() if ("service_name", "connect") in k}
    assert len(native) == len(fixture_types(fixture))
    assert renamed(connect, "connect", "native") == native


def fixture_types(fixture):
    from test_push import EXPECTED_TYPES
    return EXPECTED_TYPES[fixture]


def test_push_cpu_exact_labels_and_totals(server):
    raw = fixture_bytes("go/cpu-01.pb.gz")
    labels = [("service_name", "app"), ("__name__", "process_cpu"), ("k8s.pod.name", "p-1"), ("env", "prod"),
              ("__session_id__", "123"), ("empty", "")]
    r = push(server, [(labels, [raw])], codec="json", gzip_body=True)
    assert r.status == 200, r.error
    got = sorted(tuple(sorted(s["labels"].items())) for s in server.series())
    assert got == [
        (("__name__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"), ("env", "prod"),
         ("k8s_pod_name", "p-1"), ("service_name", "app")),
        (("__name__", "process_cpu:samples:count:cpu:nanoseconds:delta"), ("env", "prod"),
         ("k8s_pod_name", "p-1"), ("service_name", "app")),
    ]
    t = 1796022364.647593488 + 1  # the profile's time_nanos, plus a second
    assert query_total(server, 'process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{service_name="app"}', t) == 2980000000
    assert query_total(server, 'process_cpu:samples:count:cpu:nanoseconds:delta{k8s_pod_name="p-1"}', t) == 298


def test_several_series_and_samples_in_one_push(server):
    cpu = [fixture_bytes("go/cpu-0%d.pb.gz" % i) for i in (3, 1, 2)]  # not in time order
    heap = fixture_bytes("go/heap-01.pb.gz")
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "a")], cpu),
                      ([("__name__", "memory"), ("service_name", "a")], [heap])])
    assert r.status == 200, r.error
    snap = series_snapshot(server)
    assert len(snap) == 2 + 4
    cpu_series = snap[(("__name__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"), ("service_name", "a"))]
    assert [p[3] for p in cpu_series] == [2980000000, 2930000000, 2890000000]
    heap_series = snap[(("__name__", "memory:inuse_space:bytes:space:bytes"), ("service_name", "a"))]
    assert [p[3] for p in heap_series] == [1048832]
    m = server.metrics()
    assert m['profstore_http_requests_total{handler="/push.v1.PusherService/Push",code="200"}'] == 1


def test_node_raw_pprof_from_pyroscope_capture(server):
    """The Node SDK 0.6.4 capture's body, gunzipped: a raw (not gzipped) pprof in raw_profile."""
    from conftest import TESTDATA
    raw = gzip.decompress((TESTDATA / "pyroscope" / "nodejs-0.6.4" / "ingest-01.bin").read_bytes())
    st, js = server.push(raw, labels='{service_name="native"}', name="wall")
    assert st == 200, js
    r = push(server, [([("__name__", "wall"), ("service_name", "connect")], [raw])])
    assert r.status == 200, r.error
    snap = series_snapshot(server)
    native = {k: v for k, v in snap.items() if ("service_name", "native") in k}
    assert len(native) == 2
    assert renamed({k: v for k, v in snap.items() if ("service_name", "connect") in k}, "connect", "native") == native


def test_same_push_twice_is_a_duplicate_and_answered_200(server):
    series = [([("__name__", "process_cpu"), ("service_name", "a")], [fixture_bytes("go/cpu-01.pb.gz")])]
    assert push(server, series).status == 200
    before = series_snapshot(server)
    r = push(server, series, codec="json")
    assert r.status == 200, r.error
    assert series_snapshot(server) == before


def test_empty_push_is_200(server):
    r = push(server, [])
    assert (r.status, r.body) == (200, b"")
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "a")], [])], codec="json")
    assert (r.status, r.body) == (200, b"{}")
    assert server.series() == []


def test_durable_before_200_kill9(make_server):
    srv = make_server(retention="0")
    raw = fixture_bytes("go/heap-01.pb.gz")
    r = push(srv, [([("__name__", "memory"), ("service_name", "a")], [raw])], gzip_body=True)
    assert r.status == 200, r.error
    srv.restart(kill=True)
    snap = series_snapshot(srv)
    assert snap[(("__name__", "memory:alloc_space:bytes:space:bytes"), ("service_name", "a"))][0][3] == 12417316511


# ---- label validation (Pyroscope's rules and messages) ------------------------------------------

CPU = None


def cpu_raw():
    global CPU
    if CPU is None:
        CPU = fixture_bytes("go/cpu-01.pb.gz")
    return CPU


BAD_LABELS = [
    ([], "series[0]: error at least one label pair is required per profile"),
    ([("service_name", "a")], "series[0]: invalid labels '{service_name=\"a\"}' with error: invalid metric name"),
    ([("__name__", "1cpu"), ("service_name", "a")],
     "series[0]: invalid labels '{__name__=\"1cpu\", service_name=\"a\"}' with error: invalid metric name"),
    ([("__name__", "a:b"), ("service_name", "a")],
     "series[0]: invalid labels '{__name__=\"a:b\", service_name=\"a\"}' with error: invalid metric name (a profile "
     "name has no ':' and at most 64 bytes: it is the first part of the profile type id)"),
    ([("__name__", "process_cpu")], "series[0]: error service_name label is required"),
    ([("__name__", "process_cpu"), ("service_name", "")], "series[0]: error service_name label is required"),
    ([("__name__", "process_cpu"), ("service_name", "a"), ("service_name", "b")],
     "series[0]: profile with labels '{__name__=\"process_cpu\", service_name=\"a\", service_name=\"b\"}' has "
     "duplicate label name: 'service_name'"),
    ([("__name__", "process_cpu"), ("service_name", "a"), ("k8s.pod", "x"), ("k8s_pod", "y")],
     "series[0]: profile with labels '{__name__=\"process_cpu\", k8s.pod=\"x\", k8s_pod=\"y\", service_name=\"a\"}' "
     "has duplicate label name: 'k8s_pod'"),
    ([("__name__", "process_cpu"), ("service_name", "a"), ("a-b", "x")],
     "series[0]: invalid labels '{__name__=\"process_cpu\", a-b=\"x\", service_name=\"a\"}' with error: invalid label "
     "name 'a-b'"),
    ([("__name__", "process_cpu"), ("service_name", "a"), ("v", "x" * 361)],
     "series[0]: profile with labels '{__name__=\"process_cpu\", service_name=\"a\", v=\"" + "x" * 150 + "...' has "
     "label value too long: '" + "x" * 64 + "...'"),
    ([("__name__", "memory"), ("service_name", "a")],
     None),  # the name contradicts the cpu profile's sample types: the native push's message
]


@pytest.mark.parametrize("labels,msg", BAD_LABELS)
def test_bad_labels(server, labels, msg):
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "ok")], [cpu_raw()]), (labels, [cpu_raw()])])
    assert r.status == 400, r
    assert r.error["code"] == "invalid_argument"
    if msg is None:
        st, js = server.push(cpu_raw(), name="memory")
        assert st == 400
        msg = "series[0].samples[0]: " + js["error"]
    assert r.error["message"] == msg.replace("series[0]", "series[1]", 1)
    assert server.series() == []  # all or nothing: the good first series is not stored either


def test_too_many_labels(server):
    labels = [("__name__", "process_cpu"), ("service_name", "a")] + [("l%02d" % i, "v") for i in range(63)]
    r = push(server, [(labels, [cpu_raw()])])
    assert (r.status, r.error["code"]) == (400, "invalid_argument")
    assert r.error["message"].startswith("series[0]: profile series '{__name__=\"process_cpu\", l00=\"v\", ")
    assert r.error["message"].endswith("...' has 65 label names; limit 64")
    # a huge label count: decoded within its budget, refused by count, nothing stored
    labels = [("__name__", "process_cpu"), ("service_name", "a")] + [("l%d" % i, "v") for i in range(200000)]
    r = push(server, [(labels, [cpu_raw()])])
    assert r.status == 400, r
    assert r.error["message"].endswith("...' has 200002 label names; limit 64")
    assert server.series() == []


def test_dotted_name_equal_to_existing_with_same_value_is_one_label(server):
    r = push(server, [([("__name__", "goroutine"), ("service_name", "a"), ("k8s.pod", "x"), ("k8s_pod", "x")],
                       [fixture_bytes("go/goroutine-01.pb.gz")])])
    assert r.status == 200, r.error
    assert [s["labels"] for s in server.series()] == [
        {"__name__": "goroutine:goroutine:count:goroutine:count", "k8s_pod": "x", "service_name": "a"}]


BAD_SAMPLES = [
    (b"", "series[0].samples[0]: raw_profile is empty: expected a pprof profile (gzipped or not)"),
    (b"\x1f\x8b\x08\x00garbage", None),
    (b"\x0a\x05\x0a\x02", None),
]


@pytest.mark.parametrize("raw,msg", BAD_SAMPLES)
def test_bad_raw_profile(server, raw, msg):
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "a")], [cpu_raw(), raw])])
    assert (r.status, r.error["code"]) == (400, "invalid_argument"), r
    if msg is None:  # the native push's message for the same bytes
        st, js = server.push(raw, name="process_cpu")
        assert st == 400
        msg = "series[0].samples[1]: " + js["error"]
    assert r.error["message"] == msg.replace("samples[0]", "samples[1]")
    assert server.series() == []


# ---- the Connect protocol -------------------------------------------------------------------------

def raw_call(srv, path, body=b"", headers=None, method="POST"):
    hdrs = {"Content-Type": "application/proto"}
    hdrs.update(headers or {})
    st, h, data = srv.request(method, path, body=body, headers=hdrs)
    return st, h, data


@pytest.mark.parametrize("path,headers,method,status,code,msg", [
    ("/push.v1.PusherService/Nope", {}, "POST", 501, "unimplemented", "/push.v1.PusherService/Nope is not implemented"),
    ("/nope.v1.Service/Push", {}, "POST", 501, "unimplemented", "/nope.v1.Service/Push is not implemented"),
    ("/push.v1.PusherService/Push", {}, "GET", 405, "unimplemented",
     "method GET not allowed: /push.v1.PusherService/Push is a unary Connect method (use POST)"),
    ("/push.v1.PusherService/Push", {"Content-Type": "application/octet-stream"}, "POST", 415, "invalid_argument",
     "unsupported content type \"application/octet-stream\": expected application/proto or application/json"),
    ("/push.v1.PusherService/Push", {"Content-Type": "application/connect+proto"}, "POST", 415, "invalid_argument",
     "unsupported content type \"application/connect+proto\": expected application/proto or application/json"),
    ("/push.v1.PusherService/Push", {"Content-Type": "application/json; charset=latin1"}, "POST", 415,
     "invalid_argument",
     "unsupported content type \"application/json; charset=latin1\": expected application/proto or application/json"),
    ("/push.v1.PusherService/Push", {"Connect-Protocol-Version": "2"}, "POST", 400, "invalid_argument",
     "connect-protocol-version must be \"1\": got \"2\""),
    ("/push.v1.PusherService/Push", {"Connect-Timeout-Ms": "soon"}, "POST", 400, "invalid_argument",
     "protocol error: invalid connect-timeout-ms \"soon\" (1 to 10 digits)"),
    ("/push.v1.PusherService/Push", {"Content-Encoding": "br"}, "POST", 501, "unimplemented",
     "unknown compression \"br\": supported encodings are gzip"),
    ("/push.v1.PusherService/Push", {"Content-Encoding": "gzip"}, "POST", 400, "invalid_argument",
     "request body (Content-Encoding: gzip): gzip: not a gzip stream (bad magic)"),
])
def test_protocol_errors(server, path, headers, method, status, code, msg):
    st, h, data = raw_call(server, path, body=b"\x0a\x00" if method == "POST" else None, headers=headers,
                           method=method)
    assert st == status, data
    assert h["content-type"] == "application/json"
    assert json.loads(data) == {"code": code, "message": msg}
    if status == 405:
        assert h["allow"] == "POST"
    if status == 415:
        assert h["accept-post"] == "application/json, application/proto"


def test_connect_errors_counted_per_method(server):
    raw_call(server, "/push.v1.PusherService/Push", headers={"Connect-Protocol-Version": "2"})
    raw_call(server, "/nope.v1.Service/Push")
    m = server.metrics()
    assert m['profstore_http_requests_total{handler="/push.v1.PusherService/Push",code="400"}'] == 1
    assert m['profstore_http_requests_total{handler="other",code="501"}'] == 1


def test_connect_protocol_version_1_and_timeout_accepted(server):
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "a")], [cpu_raw()])],
             headers={"Connect-Timeout-Ms": "30000"}, accept_gzip=True)
    assert r.status == 200, r.error
    assert r.headers["accept-encoding"] == "gzip"
    assert "content-encoding" not in r.headers  # an empty answer is not worth gzipping


@pytest.mark.parametrize("codec,body,msg", [
    ("proto", b"\x0a\x05\x0a\x02", "protobuf: length runs past the end of the message (at byte 0)"),
    ("proto", b"\x0a\x04\x0a\x02\x08\x01",
     "protobuf: series[0].labels[0].name: field 1 has wire type 0 (varint), expected 2 (length-delimited) (at byte 4)"),
    ("proto", b"\x0a\x06\x0a\x04\x12\x02\xc3\x28",
     "protobuf: series[0].labels[0].value: string is not valid UTF-8 (at byte 6)"),
    ("json", b"{\"series\":[{\"labels\":\"x\"}]}", "json: series[0].labels: expected an array, got string"),
    ("json", b"{\"series\":[{\"samples\":[{\"rawProfile\":\"***\"}]}]}",
     "json: series[0].samples[0].raw_profile: invalid base64 character at offset 0"),
    ("json", b"{\"series\":[", "json: line 1 column 11: ']' expected near end of file"),
    ("json", b"[" * 100000, "json: line 1 column 33: nesting deeper than 32"),
])
def test_garbage_bodies(server, codec, body, msg):
    r = connect_call(server.port, PUSH, None, codec=codec, body=body)
    assert (r.status, r.error) == (400, {"code": "invalid_argument", "message": msg})
    r = connect_call(server.port, PUSH, None, codec=codec, body=body, gzip=True)
    assert (r.status, r.error) == (400, {"code": "invalid_argument", "message": msg})
    assert server.series() == []


def test_gzip_bomb_is_resource_exhausted_and_server_keeps_serving(make_server):
    srv = make_server(retention="0", max_inflated_size="16MiB")
    bomb = gzip.compress(b"\0" * (64 << 20), 9)
    assert len(bomb) < 100000
    r = connect_call(srv.port, PUSH, None, body=bomb, headers={"Content-Encoding": "gzip"})
    assert (r.status, r.error) == (429, {"code": "resource_exhausted",
                                         "message": "request body inflates to more than 16777216 bytes "
                                                    "(--max-inflated-size)"})
    r = push(srv, [([("__name__", "process_cpu"), ("service_name", "a")], [cpu_raw()])], gzip_body=True)
    assert r.status == 200, r.error
    assert len(srv.series()) == 2


def test_empty_repeated_messages_bomb_is_resource_exhausted(server):
    """4 MiB of empty series (0a 00 repeated) would take ~160 MiB as protobuf-c structs."""
    body = b"\x0a\x00" * (2 << 20)
    r = connect_call(server.port, PUSH, None, body=body)
    assert (r.status, r.error["code"]) == (429, "resource_exhausted")
    assert r.error["message"] == "protobuf: decoding push.v1.PushRequest needs more than %d bytes of memory" % (
        len(body) * 8 + (1 << 20))
    r = push(server, [([("__name__", "process_cpu"), ("service_name", "a")], [cpu_raw()])])
    assert r.status == 200, r.error
