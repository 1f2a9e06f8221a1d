"""POST /v1development/profiles (OTLP/HTTP profiles, opentelemetry-proto v1.10.0) with requests built
by Python's protobuf (classes generated at test time by protoc from proto/otlp_*.proto,
otlp_util.py): one series per service with exact labels, totals, stacks, pprof labels (sample
attributes, span and trace ids), mappings with build ids and unsymbolized addresses in the stored
pprof; the real Go and Node fixtures converted to OTLP land with exactly their samples; CPU
samples to nanoseconds, off-CPU sums, timestamp-only samples; partial_success naming the refused
profile; protobuf and OTLP JSON, gzip; bad input (indexes out of range, mismatched value counts,
deep nesting, too many samples, gzip bombs, garbage, wrong content types) with the exact status and
message, nothing stored, the server serving on."""

import gzip
import json

import pytest

import pprof_decode as pd
from conftest import fixture_bytes
from otlp_util import Builder, from_pprof, otlp_pb, post, post_raw, to_json
from scrape_util import wait_for

T0 = 1796022000 * 10**9  # 2026-11-30T07:00:00Z, the fixtures' day
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
TRACE = bytes(range(1, 17))
SPAN = bytes(range(0xa0, 0xa8))


def stored(srv):
    """{series labels (sorted tuple): [pprof_decode.Profile, ...]} of everything stored."""
    out = {}
    for s in srv.series():
        key = tuple(sorted(s["labels"].items()))
        out[key] = [pd.decode(srv.profile_bytes(s["id"], p["ts"])) for p in s["profiles"]]
    return out


def labels(name, **kw):
    d = {"__name__": name}
    d.update(kw)
    return tuple(sorted(d.items()))


def cpu_request():
    """Two services of one resource: api (the resource's) and worker (a sample's service.name)."""
    b = Builder()
    sc = b.resource({"service.name": "api", "host.name": "node-1", "k8s.pod.name": "api-7f9",
                     "process.pid": 4242, "process.runtime.description": 1.5},
                    {"profiler.version": "0.9"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 50_000_000, T0, 10**10)
    main = b.frame("main", "/src/main.go", 10)
    work = b.frame("work", "/src/work.go", 20)
    libc = b.mapping("/usr/lib/libc.so.6", 0x7f0000000000, 0x7f0000200000, 0x28000, "4e3f1a2b9c")
    native = b.location(0x7f0000012345, libc)
    b.sample(p, [work, main], 3)
    b.sample(p, [native, work, main], 2, link=b.link(TRACE, SPAN), attrs={"thread.name": "gc-1"})
    b.sample(p, [work, main], 5, attrs={"service.name": "worker", "thread.name": "w-1"})
    return b


def frames(prof, sample):
    """The stack of a stored sample, leaf first: function names, or file+0xaddress (build id)."""
    locs = {l.id: l for l in prof.location}
    fns = {f.id: f for f in prof.function}
    maps = {m.id: m for m in prof.mapping}
    out = []
    for lid in sample.location_id:
        l = locs[lid]
        if l.line:
            out.append(prof.s(fns[l.line[0].function_id].name))
        else:
            m = maps[l.mapping_id]
            out.append("%s+%#x[%s]" % (prof.s(m.filename), l.address, prof.s(m.build_id)))
    return out


def sample_labels(prof, sample):
    return sorted((prof.s(l.key), prof.s(l.str)) for l in sample.label)


@pytest.mark.parametrize("codec,gz", [("proto", False), ("json", False), ("proto", True), ("json", True)])
def test_cpu_profile_per_service(server, codec, gz):
    r = post(server.port, cpu_request().req, codec=codec, gzip=gz)
    assert r.status == 200, r
    ct = "application/json" if codec == "json" else "application/x-protobuf"
    assert r.headers["content-type"] == ct
    assert r.body == (b"{}" if codec == "json" else b"")  # no partial_success: all accepted
    got = stored(server)
    common = {"host_name": "node-1", "k8s_pod_name": "api-7f9", "process_pid": "4242",
              "profiler_version": "0.9"}  # the double attribute is not a label (Pyroscope's rule)
    assert sorted(got) == sorted([labels(CPU, service_name="api", **common),
                                  labels(CPU, service_name="worker", **common)])
    api = got[labels(CPU, service_name="api", **common)]
    worker = got[labels(CPU, service_name="worker", **common)]
    assert len(api) == 1 and len(worker) == 1
    api, worker = api[0], worker[0]
    assert api.type_names() == [("cpu", "nanoseconds")]
    assert api.period_type_names() == ("cpu", "nanoseconds")
    assert api.period == 50_000_000 and api.time_nanos == T0 and api.duration_nanos == 10**10
    # stacks leaf first, values times the period
    assert sorted((frames(api, s), s.value, sample_labels(api, s)) for s in api.sample) == sorted([
        (["work", "main"], [150_000_000], []),
        (["/usr/lib/libc.so.6+0x7f0000012345[4e3f1a2b9c]", "work", "main"], [100_000_000],
         [("span_id", SPAN.hex()), ("thread.name", "gc-1"), ("trace_id", TRACE.hex())]),
    ])
    assert [(frames(worker, s), s.value, sample_labels(worker, s)) for s in worker.sample] == [
        (["work", "main"], [250_000_000], [("thread.name", "w-1")])]
    # the mapping as sent (the build id from process.executable.build_id.gnu), no symbols
    (m,) = api.mapping
    assert (api.s(m.filename), api.s(m.build_id), m.memory_start, m.memory_limit, m.file_offset) == (
        "/usr/lib/libc.so.6", "4e3f1a2b9c", 0x7f0000000000, 0x7f0000200000, 0x28000)
    assert (m.has_functions, m.has_filenames, m.has_line_numbers, m.has_inline_frames) == (False,) * 4
    # the symbolized frames' files and lines
    fns = {api.s(f.name): api.s(f.filename) for f in api.function}
    assert fns == {"main": "/src/main.go", "work": "/src/work.go"}
    # the total through the query API equals the sum of the stored values
    js = server.get_json("/api/v1/profiles/query?query=%s%%7Bservice_name%%3D%%22api%%22%%7D&time=%d&format=top"
                         % (CPU, T0 // 10**9 + 5))
    assert (js["data"] if "data" in js else js)["total"] == 250_000_000


def test_grpc_export_stores_what_http_stores(make_server):
    """ProfilesService/Export over gRPC (--grpc.listen-address; grpcio from PyPI, the C-core library,
    as the client) answers as OTLP/HTTP does and stores the same profiles, acknowledged durable;
    a refused profile comes back in partial_success, bytes that are no export are
    INVALID_ARGUMENT."""
    import grpc
    from conftest import free_port
    port = free_port()
    via_grpc = make_server(extra_args=["--grpc.listen-address", "127.0.0.1:%d" % port])
    via_http = make_server()
    export = grpc.insecure_channel("127.0.0.1:%d" % port).unary_unary(
        "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export")
    req = cpu_request().req
    assert export(req.SerializeToString(), timeout=10) == b""
    assert post(via_http.port, req).status == 200
    got, want = stored(via_grpc), stored(via_http)
    assert sorted(got) == sorted(want) and len(got) == 2
    def shape(profs):
        return [(p.time_nanos, p.period, sorted((frames(p, s), s.value, sample_labels(p, s)) for s in p.sample))
                for p in profs]
    for k in want:
        assert shape(got[k]) == shape(want[k]) and shape(got[k])[0][2], k
    # the store survives a restart: the answer came after the commit
    via_grpc.restart()
    assert sorted(stored(via_grpc)) == sorted(want)
    # partial success: the profile with two values for one sample type is refused, named
    b = Builder()
    sc = b.resource({"service.name": "s"})
    f = b.frame("f")
    good = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    b.sample(good, [f], 1)
    bad = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0 + 10**9)
    b.sample(bad, [f], values=[1, 2])
    resp = otlp_pb().svc.ExportProfilesServiceResponse.FromString(export(b.req.SerializeToString(), timeout=10))
    assert (resp.partial_success.rejected_profiles, resp.partial_success.error_message) == (
        1, "resource_profiles[0].scope_profiles[0].profiles[1]: samples[0].values: 2 values, expected 1 "
           "(the profile has one sample type)")
    # bytes that are not an export refuse the request, as OTLP/HTTP's 400
    with pytest.raises(grpc.RpcError) as e:
        export(b"\x0a\xff", timeout=10)
    assert (e.value.code(), e.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                   "protobuf: truncated length (at byte 0)")


def test_same_request_twice_is_a_duplicate(server):
    b = cpu_request()
    assert post(server.port, b.req).status == 200
    before = stored(server)
    r = post(server.port, b.req, codec="json")
    assert r.status == 200 and r.body == b"{}", r
    assert stored(server) == before


@pytest.mark.parametrize("fixture,types", [
    ("go/cpu-01.pb.gz", [("samples", "count", CPU, "process_cpu"),
                         ("cpu", "nanoseconds", "cpu:cpu:nanoseconds:cpu:nanoseconds", None)]),
    ("go/heap-01.pb.gz", [("alloc_objects", "count", "space:alloc_objects:count:space:bytes:delta", None),
                          ("alloc_space", "bytes", "space:alloc_space:bytes:space:bytes:delta", None),
                          ("inuse_objects", "count", "space:inuse_objects:count:space:bytes", None),
                          ("inuse_space", "bytes", "space:inuse_space:bytes:space:bytes", None)]),
    ("node/wall-01.pb.gz", None),
])
def test_pprof_fixture_converted_to_otlp(server, fixture, types):
    """A real pprof, one OTLP profile per sample type: each lands with exactly the original's
    samples (stacks with every frame, file, line and mapping; string labels)."""
    orig = pd.decode(fixture_bytes(fixture))
    b = Builder()
    sc = b.resource({"service.name": "fixture"})
    from_pprof(b, sc, orig, T0)
    r = post(server.port, b.req, gzip=True)
    assert r.status == 200 and r.body == b"", r
    got = stored(server)
    if types is None:  # node wall: wall:microseconds etc., named by the period type
        pt = orig.period_type_names()
        types = [(t, u, "%s:%s:%s:%s:%s:delta" % (pt[0], t, u, pt[0], pt[1]), None) for t, u in orig.type_names()]
    assert sorted(got) == sorted(labels(sid, service_name="fixture") for _, _, sid, _ in types)
    for ti, (t, u, sid, _) in enumerate(types):
        (prof,) = got[labels(sid, service_name="fixture")]
        want = pd.canonical(strip_num_labels(orig), ti)
        if t == "samples":  # CPU samples stored as nanoseconds: times the period
            want = {k: v * orig.period for k, v in want.items()}
        assert pd.canonical(prof, 0) == want, sid
        assert pd.totals(prof) == [sum(want.values())]


def strip_num_labels(p):
    """p without numeric pprof labels (OTLP attributes with integer values are kept as strings by
    the translator; the fixtures' numeric labels are not part of this comparison)."""
    for s in p.sample:
        s.label = [l for l in s.label if l.str]
    return p


def test_service_name_fallbacks(server):
    b = Builder()
    sc1 = b.resource({"process.executable.name": "/usr/sbin/nginx", "host.name": "h"})
    sc2 = b.resource({})
    f = b.frame("f")
    for sc in (sc1, sc2):
        p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 1000, T0)
        b.sample(p, [f], 7)
    assert post(server.port, b.req).status == 200
    got = stored(server)
    assert sorted(got) == sorted([
        labels(CPU, service_name="unknown_service:/usr/sbin/nginx", host_name="h",
               process_executable_name="/usr/sbin/nginx"),
        labels(CPU, service_name="unknown_service")])
    assert [pd.totals(p[0]) for p in got.values()] == [[7000], [7000]]


def test_off_cpu_values_summed_and_timestamps_counted(server):
    b = Builder()
    sc = b.resource({"service.name": "s"})
    off = b.profile(sc, ("off_cpu", "nanoseconds"), None, 0, T0)
    f, g = b.frame("f"), b.frame("g")
    b.sample(off, [f], values=[300, 400])
    b.sample(off, [g], value=5)
    ev = b.profile(sc, ("events", "count"), ("events", "count"), 1, T0 + 10**9)
    b.sample(ev, [f], timestamps=3)  # no values: each timestamp counts one
    r = post(server.port, b.req, codec="json")
    assert r.status == 200, r
    got = stored(server)
    off_sid = labels("off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds", service_name="s")
    ev_sid = labels("events:events:count:events:count", service_name="s")
    assert sorted(got) == sorted([off_sid, ev_sid])
    assert sorted((frames(got[off_sid][0], s), s.value) for s in got[off_sid][0].sample) == [
        (["f"], [700]), (["g"], [5])]
    assert [(frames(got[ev_sid][0], s), s.value) for s in got[ev_sid][0].sample] == [(["f"], [3])]


def test_partial_success_names_the_refused_profile(server):
    b = Builder()
    sc = b.resource({"service.name": "s"})
    f = b.frame("f")
    good = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    b.sample(good, [f], 1)
    bad = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0 + 10**9)
    b.sample(bad, [f], 1)
    b.sample(bad, [f], values=[1, 2])  # two values for one sample type
    bad2 = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0 + 2 * 10**9)
    s = b.sample(bad2, [f], 1)
    s.stack_index = 99
    nost = sc.profiles.add()  # no sample type
    nost.samples.add().values.append(1)
    for codec in ("proto", "json"):
        r = post(server.port, b.req, codec=codec)
        assert r.status == 200, r
        assert r.msg.partial_success.rejected_profiles == 3
        assert r.msg.partial_success.error_message == (
            "resource_profiles[0].scope_profiles[0].profiles[1]: samples[1].values: 2 values, expected 1 "
            "(the profile has one sample type)")
    if True:
        js = json.loads(post(server.port, b.req, codec="json").body)
        assert js == {"partialSuccess": {"rejectedProfiles": "3", "errorMessage": (
            "resource_profiles[0].scope_profiles[0].profiles[1]: samples[1].values: 2 values, expected 1 "
            "(the profile has one sample type)")}}
    got = stored(server)
    assert list(got) == [labels(CPU, service_name="s")]
    assert [p.time_nanos for p in got[labels(CPU, service_name="s")]] == [T0]


def test_refused_profile_messages(server):
    cases = [
        (lambda b, p, s: setattr(s, "stack_index", 7),
         "samples[0].stack_index: 7 out of range (stack_table has 2 entries)"),
        (lambda b, p, s: setattr(s, "link_index", 3),
         "samples[0].link_index: 3 out of range (link_table has 1 entries)"),
        (lambda b, p, s: s.attribute_indices.append(-1),
         "samples[0].attribute_indices[0]: -1 out of range (attribute_table has 1 entries)"),
        (lambda b, p, s: setattr(p.sample_type, "unit_strindex", 1000),
         "sample_type: string index 1000 out of range (string_table has 6 entries)"),
        (lambda b, p, s: setattr(p.period_type, "type_strindex", -3),
         "period_type: string index -3 out of range (string_table has 6 entries)"),
        (lambda b, p, s: s.ClearField("values"), "samples[0]: no values and no timestamps"),
        (lambda b, p, s: p.ClearField("sample_type"), "sample_type is missing"),
    ]
    for change, msg in cases:
        b = Builder()
        sc = b.resource({"service.name": "s"})
        p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
        s = b.sample(p, [b.frame("f")], 1)
        change(b, p, s)
        r = post(server.port, b.req)
        assert r.status == 200, r
        assert (r.msg.partial_success.rejected_profiles, r.msg.partial_success.error_message) == (
            1, "resource_profiles[0].scope_profiles[0].profiles[0]: " + msg)
    assert stored(server) == {}


def bad_dictionary_cases():
    return [
        ("location_table", lambda d: setattr(d.location_table[1], "mapping_index", 5),
         "dictionary.location_table[1].mapping_index: 5 out of range (mapping_table has 1 entries)"),
        ("line function", lambda d: setattr(d.location_table[1].lines[0], "function_index", -2),
         "dictionary.location_table[1].lines[0].function_index: -2 out of range (function_table has 2 entries)"),
        ("function name", lambda d: setattr(d.function_table[1], "name_strindex", 40),
         "dictionary.function_table[1].name_strindex: 40 out of range (string_table has 7 entries)"),
        ("stack", lambda d: d.stack_table[1].location_indices.append(2),
         "dictionary.stack_table[1].location_indices[1]: 2 out of range (location_table has 2 entries)"),
        ("self stack", lambda d: d.stack_table[1].location_indices.append(2**31 - 1),
         "dictionary.stack_table[1].location_indices[1]: 2147483647 out of range (location_table has 2 entries)"),
        ("mapping attribute", lambda d: d.mapping_table[0].attribute_indices.append(9),
         "dictionary.mapping_table[0].attribute_indices[0]: 9 out of range (attribute_table has 1 entries)"),
        ("attribute key", lambda d: setattr(d.attribute_table.add(), "key_strindex", 77),
         "dictionary.attribute_table[1].key_strindex: 77 out of range (string_table has 7 entries)"),
        ("attribute value", lambda d: setattr(d.attribute_table[0].value, "string_value_strindex", 7),
         "dictionary.attribute_table[0].value.string_value_strindex: 7 out of range (string_table has 7 entries)"),
    ]


@pytest.mark.parametrize("case", bad_dictionary_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("codec", ["proto", "json"])
def test_bad_dictionary_refuses_the_request(server, case, codec):
    _, change, msg = case
    ok = Builder()
    sc = ok.resource({"service.name": "keep"})
    ok.sample(ok.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0), [ok.frame("f")], 1)
    assert post(server.port, ok.req).status == 200
    before = stored(server)
    b = Builder()
    sc = b.resource({"service.name": "s"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0 + 10**9)
    b.sample(p, [b.frame("f", "f.go")], 1)
    change(b.d)
    r = post(server.port, b.req, codec=codec)
    assert r.status == 400, r
    assert r.headers["content-type"] == ("application/json" if codec == "json" else "application/x-protobuf")
    assert (r.error.code, r.error.message) == (3, msg)  # INVALID_ARGUMENT
    assert stored(server) == before


def test_missing_dictionary(server):
    b = Builder()
    sc = b.resource({"service.name": "s"})
    b.sample(b.profile(sc, ("samples", "count")), [b.frame("f")], 1)
    b.req.ClearField("dictionary")
    r = post(server.port, b.req)
    assert (r.status, r.error.message) == (400, "dictionary: missing (the request holds 1 profiles)")
    empty = otlp_pb().svc.ExportProfilesServiceRequest()
    r = post(server.port, empty)
    assert (r.status, r.body) == (200, b"")


def too_many(n):
    b = Builder()
    sc = b.resource({"service.name": "s"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    stack = b.stack([b.frame("f")])
    for _ in range(n):
        p.samples.add(stack_index=stack, values=[1])
    return b.req


def test_too_many_samples(server):
    """10^6 samples are taken (the pprof limit), 10^6 + 1 refused whole (8 MB of protobuf each)."""
    r = post(server.port, too_many(10**6 + 1))
    assert (r.status, r.error.code, r.error.message) == (
        413, 8, "the request holds 1000001 samples; limit 1000000")
    assert stored(server) == {}
    r = post(server.port, too_many(10**6))
    assert (r.status, r.body) == (200, b""), r
    (got,) = stored(server).values()
    assert [pd.totals(p) for p in got] == [[10 * 10**6]]


def test_gzip_bomb(make_server):
    server = make_server(retention="0", max_inflated_size="16MiB")
    bomb = gzip.compress(b"\0" * (70 << 20))
    assert len(bomb) < 100_000
    r = post_raw(server.port, bomb, headers={"Content-Encoding": "gzip"})
    assert (r.status, r.error.message) == (413, "request body inflates to more than 16777216 bytes (--max-inflated-size)")
    r = post_raw(server.port, b"\x1f\x8b\x08\x00garbage", headers={"Content-Encoding": "gzip"})
    assert r.status == 400 and r.error.message.startswith("request body (Content-Encoding: gzip): "), r
    assert stored(server) == {}


def test_deep_nesting(server):
    b = Builder()
    sc = b.resource({"service.name": "s"})
    b.sample(b.profile(sc, ("samples", "count")), [b.frame("f")], 1)
    kv = b.req.resource_profiles[0].resource.attributes.add()
    kv.key = "deep"
    v = kv.value
    for _ in range(40):
        v = v.array_value.values.add()
    v.string_value = "x"
    for codec in ("proto", "json"):
        r = post(server.port, b.req, codec=codec)
        assert r.status == 400, r
        assert "nest" in r.error.message, r.error.message
    assert stored(server) == {}


def test_wrong_content_types_and_garbage(server):
    r = post_raw(server.port, b"x", content_type="text/plain")
    assert (r.status, r.headers["content-type"], r.error.message) == (
        415, "application/x-protobuf",
        'Content-Type "text/plain" is not supported: send application/x-protobuf or application/json')
    r = post_raw(server.port, b"x", headers={"Content-Encoding": "br"})
    assert (r.status, r.error.message) == (415, 'Content-Encoding "br" is not supported: send gzip or none')
    r = post_raw(server.port, b"\xff\xff\xff")
    assert r.status == 400 and r.error.message.startswith("protobuf: "), r
    r = post_raw(server.port, b"{\"resourceProfiles\": 3}", content_type="application/json")
    assert (r.status, r.error.message) == (400, "json: resource_profiles: expected an array, got number")
    r = post_raw(server.port, b"{", content_type="application/json; charset=utf-8")
    assert r.status == 400 and r.error.message.startswith("json: line 1"), r
    st, _, _ = server.request("GET", "/v1development/profiles")
    assert st == 405
    assert stored(server) == {}
    assert post(server.port, cpu_request().req).status == 200


def test_json_ids_hex_and_int64_numbers(server):
    """OTLP JSON as written by hand: hex ids (upper case), int64 as numbers and strings."""
    b = cpu_request()
    d = json.loads(to_json(b.req))
    lt = d["dictionary"]["linkTable"]
    lt[1]["traceId"] = lt[1]["traceId"].upper()
    prof = d["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]
    prof["timeUnixNano"] = int(prof["timeUnixNano"])
    prof["period"] = str(prof["period"])
    r = post_raw(server.port, json.dumps(d).encode(), content_type="application/json")
    assert r.status == 200 and r.body == b"{}", r
    api = [v for k, v in stored(server).items() if ("service_name", "api") in k][0][0]
    assert sorted(l for s in api.sample for l in sample_labels(api, s) if l[0] != "thread.name") == [
        ("span_id", SPAN.hex()), ("trace_id", TRACE.hex())]
    lt[1]["spanId"] = "xyz"
    r = post_raw(server.port, json.dumps(d).encode(), content_type="application/json")
    assert (r.status, r.error.message) == (400, "json: dictionary.link_table[1].span_id: invalid hex (odd length 3)")


# ---- the Collector's encoder: tests/otlpconv (Go, go.opentelemetry.io/collector/pdata/pprofile) ----

_otlpconv = {}


def otlpconv(tmp_path_factory):
    """tests/otlpconv built once (modules from the Go module proxy, versions pinned by its go.sum)."""
    if "bin" not in _otlpconv:
        import subprocess
        from conftest import require_tool, _go_cache
        import os
        go = require_tool("go")
        out = tmp_path_factory.mktemp("otlpconv") / "otlpconv"
        src = __import__("pathlib").Path(__file__).resolve().parents[1] / "otlpconv"
        r = subprocess.run([go, "build", "-o", str(out), "."], cwd=src, capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, **_go_cache()))
        assert r.returncode == 0, r.stderr
        _otlpconv["bin"] = str(out)
    return _otlpconv["bin"]


@pytest.mark.parametrize("fixture,sid,index", [
    ("go/cpu-01.pb.gz", CPU, "cpu"),  # samples:count x period = Go's cpu:nanoseconds exactly
    ("go/cpu-01.pb.gz", "cpu:cpu:nanoseconds:cpu:nanoseconds", "cpu"),
    ("go/heap-01.pb.gz", "space:inuse_space:bytes:space:bytes", "inuse_space"),
    ("go/heap-01.pb.gz", "space:alloc_objects:count:space:bytes:delta", "alloc_objects"),
])
@pytest.mark.parametrize("codec", ["proto", "json"])
def test_collector_pdata_request_equals_go_tool_pprof(server, tmp_path, tmp_path_factory, fixture, sid, index, codec):
    """The pdata encoder's request of a real Go pprof: the stored profile holds exactly the
    original's samples, and go tool pprof -top of the merged download equals its -top of the
    original for that sample type (every row)."""
    import subprocess
    from conftest import PPROF_DIR, go_pprof, parse_pprof_top
    exe = otlpconv(tmp_path_factory)
    src = PPROF_DIR / fixture
    args = [exe, "-service", "goconv", "-time", str(T0),
            "-post", "http://127.0.0.1:%d/v1development/profiles" % server.port, str(src)]
    if codec == "json":
        args.insert(1, "-json")
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("200 {}\n" if codec == "json" else "200 \n")
    orig = pd.decode(src.read_bytes())
    got = stored(server)
    (prof,) = got[labels(sid, service_name="goconv")]
    ti = [t for t, _ in orig.type_names()].index(index)
    assert pd.canonical(prof, 0) == pd.canonical(strip_num_labels(orig), ti)
    q = "/api/v1/profiles/query?query=%s%%7Bservice_name%%3D%%22goconv%%22%%7D&start=%d&end=%d" % (
        sid, T0 // 10**9 - 1, T0 // 10**9 + 1)
    st, _, body = server.get(q)
    assert st == 200, body[:300]
    merged = tmp_path / "merged.pb.gz"
    merged.write_bytes(body)
    top = parse_pprof_top(go_pprof(["-top", "-nodecount=100000", str(merged)], tmp_path).stdout)[1]
    want = parse_pprof_top(go_pprof(["-top", "-nodecount=100000", "-sample_index=" + index, str(src)],
                                    tmp_path).stdout)[1]
    assert sorted(top) == sorted(want)
    assert len(top) >= 5


def test_otlp_http_listen_address(make_server):
    """--otlp.http.listen-address: a second port (the OTLP convention's 4318) with the same server:
    an export there is stored and read back on the main port; a port in use is refused at start."""
    from conftest import free_port
    port = free_port()
    flag = ["--otlp.http.listen-address", "127.0.0.1:%d" % port]
    srv = make_server(retention="0", extra_args=flag)
    # logged before "profstore is ready", but /-/ready answers as soon as the port listens
    wait_for(lambda: "serving OTLP/HTTP too" in srv.log(), 10, "the OTLP/HTTP port's log line")
    r = post(port, cpu_request().req, codec="json")
    assert (r.status, r.body) == (200, b"{}"), r
    assert len(stored(srv)) == 2
    other = make_server(start=False, retention="0", extra_args=flag)
    other.start(wait_ready=False)
    assert other.proc.wait(timeout=30) == 1
    assert ("cannot listen on 127.0.0.1:%d: the address is already in use by another process" % port) in other.log()


def test_write_scope_needed(make_server, tmp_path):
    """With --web.config.file bearer tokens (what the Collector's otlphttp exporter sends in
    Authorization): a read token is 403, a write token stores, none is 401."""
    import hashlib

    def sha(t):
        return hashlib.sha256(t.encode()).hexdigest()
    cfg = tmp_path / "web.yml"
    cfg.write_text("bearer_tokens:\n  - sha256: %s\n    scopes: [read]\n  - sha256: %s\n    scopes: [write]\n"
                   % (sha("tok-read"), sha("tok-write")))
    srv = make_server(retention="0", web_config_file=str(cfg))
    req = cpu_request().req
    r = post(srv.port, req)
    assert (r.status, r.error.code) == (401, 16), r  # UNAUTHENTICATED, as a google.rpc.Status
    r = post(srv.port, req, codec="json", headers={"Authorization": "Bearer tok-read"})
    assert (r.status, r.headers["content-type"], r.error.code) == (403, "application/json", 7), r
    r = post(srv.port, req, headers={"Authorization": "Bearer tok-write"})
    assert (r.status, r.body) == (200, b""), r
    st, _, body = srv.request("GET", "/api/v1/label/service_name/values", headers={"Authorization": "Bearer tok-read"})
    assert st == 200 and json.loads(body)["data"] == ["api", "worker"], body


def test_too_many_services(server):
    """One profile whose samples name 4,097 services (distinct sample attributes): refused into
    partial_success (at most 4,096 profiles of a service a request); the request's other profile
    is stored; found in time (no quadratic grouping)."""
    b = Builder()
    sc = b.resource({"service.name": "s"})
    f = b.frame("f")
    many = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    for i in range(4097):
        b.sample(many, [f], 1, attrs={"service.name": "svc-%d" % i})
    ok = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    b.sample(ok, [f], 2)
    r = post(server.port, b.req)
    assert r.status == 200, r
    assert (r.msg.partial_success.rejected_profiles, r.msg.partial_success.error_message) == (
        1, "resource_profiles[0].scope_profiles[0].profiles[0]: 4097 services: more than 4096 profiles of a "
           "service in one request")
    got = stored(server)
    assert list(got) == [labels(CPU, service_name="s")]
