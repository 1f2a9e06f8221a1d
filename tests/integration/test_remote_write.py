"""POST /api/v1/write: Prometheus remote-write 1.0 and 2.0 into float series.

Bodies are encoded here, independently of profstore's encoder: protobuf messages from .proto text
compiled at test time (protoc --python_out into tmp dir; 1.0 from prompb's types.proto/remote.proto,
2.0 written from the remote-write 2.0 spec), snappy block format by python3-snappy. What was stored
is read back through /api/v1/debug/series (values and their bits), /api/v1/series, /api/v1/labels
and /api/v1/metadata. The last test runs a real Prometheus 2.42 that remote_writes to profstore."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
import snappy

from conftest import free_port

PROTO_V1 = """
syntax = "proto3";
package prometheus;
message WriteRequest { repeated TimeSeries timeseries = 1; reserved 2; repeated MetricMetadata metadata = 3; }
message MetricMetadata {
  enum MetricType { UNKNOWN = 0; COUNTER = 1; GAUGE = 2; HISTOGRAM = 3; GAUGEHISTOGRAM = 4; SUMMARY = 5;
                    INFO = 6; STATESET = 7; }
  MetricType type = 1; string metric_family_name = 2; string help = 4; string unit = 5;
}
message Sample { double value = 1; int64 timestamp = 2; }
message Exemplar { repeated Label labels = 1; double value = 2; int64 timestamp = 3; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; repeated Exemplar exemplars = 3; }
message Label { string name = 1; string value = 2; }
"""

# remote-write 2.0 (io.prometheus.write.v2), from the spec; Histogram reduced to a few fields
PROTO_V2 = """
syntax = "proto3";
package io.prometheus.write.v2;
message Request { reserved 1 to 3; repeated string symbols = 4; repeated TimeSeries timeseries = 5; }
message TimeSeries {
  repeated uint32 labels_refs = 1; repeated Sample samples = 2; repeated Histogram histograms = 3;
  repeated Exemplar exemplars = 4; Metadata metadata = 5; int64 created_timestamp = 6;
}
message Exemplar { repeated uint32 labels_refs = 1; double value = 2; int64 timestamp = 3; }
message Sample { double value = 1; int64 timestamp = 2; }
message Metadata {
  enum MetricType { METRIC_TYPE_UNSPECIFIED = 0; METRIC_TYPE_COUNTER = 1; METRIC_TYPE_GAUGE = 2;
                    METRIC_TYPE_HISTOGRAM = 3; METRIC_TYPE_GAUGEHISTOGRAM = 4; METRIC_TYPE_SUMMARY = 5;
                    METRIC_TYPE_INFO = 6; METRIC_TYPE_STATESET = 7; }
  MetricType type = 1; uint32 help_ref = 3; uint32 unit_ref = 4;
}
message Histogram { uint64 count_int = 1; double sum = 3; sint32 schema = 4; int64 timestamp = 15; }
"""

CT_V1 = "application/x-protobuf"
CT_V2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
STALE = 0x7FF0000000000002


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    d = tmp_path_factory.mktemp("pb")
    (d / "rw1.proto").write_text(PROTO_V1)
    (d / "rw2.proto").write_text(PROTO_V2)
    subprocess.run(["protoc", "--python_out=%s" % d, "-I", str(d), "rw1.proto", "rw2.proto"], check=True)
    sys.path.insert(0, str(d))
    try:
        yield importlib.import_module("rw1_pb2"), importlib.import_module("rw2_pb2")
    finally:
        sys.path.remove(str(d))


def f64(bits):
    import struct
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def v1_body(pb, series, metadata=()):
    """series: [(labels dict, [(t_ms, value), ...])]; labels written sorted by name."""
    rw1 = pb[0]
    req = rw1.WriteRequest()
    for labels, samples in series:
        ts = req.timeseries.add()
        for k in sorted(labels):
            ts.labels.add(name=k, value=labels[k])
        for t, v in samples:
            ts.samples.add(value=v, timestamp=t)
    for typ, fam, hlp, unit in metadata:
        req.metadata.add(type=typ, metric_family_name=fam, help=hlp, unit=unit)
    return snappy.compress(req.SerializeToString())


def post(srv, body, ct=CT_V1, encoding="snappy", version="0.1.0"):
    h = {"Content-Type": ct, "User-Agent": "test/1", "X-Prometheus-Remote-Write-Version": version}
    if encoding is not None:
        h["Content-Encoding"] = encoding
    return srv.request("POST", "/api/v1/write", body=body, headers=h)


def floats(srv):
    """{sorted label tuple: [(t, value string, bits hex), ...]} of the float series."""
    js = srv.get_json("/api/v1/debug/series")
    return {tuple(sorted(s["labels"].items())): [tuple(x) for x in s["samples"]]
            for s in js["data"] if s.get("kind") == "float"}


def key(**labels):
    return tuple(sorted(labels.items()))


def series_api(srv, match):
    return srv.get_json("/api/v1/series?" + urllib.parse.urlencode({"match[]": match}))["data"]


T0 = int(time.time() * 1000) // 1000 * 1000 - 60000


def test_v1_accepted_and_visible(make_server, pb):
    srv = make_server()
    body = v1_body(pb, [
        ({"__name__": "http_requests_total", "job": "api", "code": "200"}, [(T0, 1.0), (T0 + 15000, 3.5)]),
        ({"__name__": "temp_celsius", "job": "api"}, [(T0, -2.25), (T0 + 15000, f64(STALE))]),
    ], metadata=[(1, "http_requests_total", "Requests served.", ""), (2, "temp_celsius", "Temperature.", "celsius")])
    st, hdrs, data = post(srv, body)
    assert (st, data) == (204, b"")
    assert floats(srv) == {
        key(__name__="http_requests_total", code="200", job="api"): [(T0, "1", "3ff0000000000000"),
                                                                   (T0 + 15000, "3.5", "400c000000000000")],
        key(__name__="temp_celsius", job="api"): [(T0, "-2.25", "c002000000000000"),
                                                 (T0 + 15000, "NaN", "7ff0000000000002")],
    }
    assert series_api(srv, '{job="api"}') == [
        {"__name__": "http_requests_total", "code": "200", "job": "api"},
        {"__name__": "temp_celsius", "job": "api"},
    ]
    assert srv.get_json("/api/v1/labels")["data"] == ["__name__", "code", "job"]
    assert srv.get_json("/api/v1/label/__name__/values")["data"] == ["http_requests_total", "temp_celsius"]
    assert srv.get_json("/api/v1/metadata")["data"] == {
        "http_requests_total": [{"type": "counter", "help": "Requests served.", "unit": ""}],
        "temp_celsius": [{"type": "gauge", "help": "Temperature.", "unit": "celsius"}],
    }
    assert srv.get_json("/api/v1/metadata?metric=temp_celsius")["data"] == {
        "temp_celsius": [{"type": "gauge", "help": "Temperature.", "unit": "celsius"}]}
    assert srv.get_json("/api/v1/metadata?limit=1")["data"] == {
        "http_requests_total": [{"type": "counter", "help": "Requests served.", "unit": ""}]}
    m = srv.metrics()
    assert m["profstore_remote_write_requests_total"] == 1
    assert m["profstore_remote_write_samples_received_total"] == 4
    assert m["profstore_remote_write_samples_written_total"] == 4
    # a retried request of the newest samples: identical duplicates, accepted silently (older
    # samples in a replay would be out of order, as in Prometheus)
    body = v1_body(pb, [
        ({"__name__": "http_requests_total", "job": "api", "code": "200"}, [(T0 + 15000, 3.5)]),
        ({"__name__": "temp_celsius", "job": "api"}, [(T0 + 15000, f64(STALE))]),
    ])
    st, _, data = post(srv, body)
    assert (st, data) == (204, b"")
    assert srv.metrics()["profstore_remote_write_samples_duplicate_total"] == 2


def v2_body(pb, series):
    """series: [(labels dict, samples, exemplars count, metadata (type, help, unit) or None, histograms)]."""
    rw2 = pb[1]
    req = rw2.Request()
    syms = {"": 0}
    req.symbols.append("")

    def ref(s):
        if s not in syms:
            syms[s] = len(req.symbols)
            req.symbols.append(s)
        return syms[s]

    for labels, samples, nex, meta, nhist in series:
        ts = req.timeseries.add()
        for k in sorted(labels):
            ts.labels_refs.extend([ref(k), ref(labels[k])])
        for t, v in samples:
            ts.samples.add(value=v, timestamp=t)
        for i in range(nex):
            ts.exemplars.add(labels_refs=[ref("trace_id"), ref("abc%d" % i)], value=1.0, timestamp=T0)
        for i in range(nhist):
            ts.histograms.add(count_int=3, sum=1.5, schema=0, timestamp=T0 + i)
        if meta:
            ts.metadata.type = meta[0]
            ts.metadata.help_ref = ref(meta[1])
            ts.metadata.unit_ref = ref(meta[2])
    return snappy.compress(req.SerializeToString())


def test_v2_accepted_with_headers(make_server, pb):
    srv = make_server()
    body = v2_body(pb, [
        ({"__name__": "jobs_done_total", "job": "w"}, [(T0, 1), (T0 + 1000, 2), (T0 + 2000, 3)], 2,
         (1, "Jobs done.", ""), 0),
        ({"__name__": "queue_bytes", "job": "w", "queue": "a"}, [(T0, 512)], 0, (2, "Queue size.", "bytes"), 0),
        ({"__name__": "latency_seconds", "job": "w"}, [], 0, (3, "Latency.", "seconds"), 2),
    ])
    st, hdrs, data = post(srv, body, ct=CT_V2, version="2.0.0")
    assert (st, data) == (204, b"")
    assert hdrs["x-prometheus-remote-write-samples-written"] == "4"
    assert hdrs["x-prometheus-remote-write-histograms-written"] == "0"
    assert hdrs["x-prometheus-remote-write-exemplars-written"] == "0"
    assert floats(srv) == {
        key(__name__="jobs_done_total", job="w"): [(T0, "1", "3ff0000000000000"), (T0 + 1000, "2", "4000000000000000"),
                                                   (T0 + 2000, "3", "4008000000000000")],
        key(__name__="queue_bytes", job="w", queue="a"): [(T0, "512", "4080000000000000")],
    }
    # the histogram-only series is not created; its metadata is kept
    assert series_api(srv, '{job="w"}') == [{"__name__": "jobs_done_total", "job": "w"},
                                            {"__name__": "queue_bytes", "job": "w", "queue": "a"}]
    assert srv.get_json("/api/v1/metadata")["data"] == {
        "jobs_done_total": [{"type": "counter", "help": "Jobs done.", "unit": ""}],
        "latency_seconds": [{"type": "histogram", "help": "Latency.", "unit": "seconds"}],
        "queue_bytes": [{"type": "gauge", "help": "Queue size.", "unit": "bytes"}],
    }
    m = srv.metrics()
    assert m['profstore_remote_write_dropped_total{kind="exemplar"}'] == 2
    assert m['profstore_remote_write_dropped_total{kind="histogram"}'] == 2
    assert "native histograms and exemplars are not stored" in srv.log()
    # 2.0 headers on a partial failure too: the repeat is all identical duplicates but one
    body = v2_body(pb, [({"__name__": "jobs_done_total", "job": "w"}, [(T0 + 2000, 3), (T0 + 1500, 9)], 0, None, 0)])
    st, hdrs, data = post(srv, body, ct=CT_V2, version="2.0.0")
    assert st == 400
    assert hdrs["x-prometheus-remote-write-samples-written"] == "1"


def test_out_of_order_and_duplicates_partial(make_server, pb):
    srv = make_server()
    a = {"__name__": "c_total", "job": "x"}
    b = {"__name__": "g", "job": "x"}
    st, _, _ = post(srv, v1_body(pb, [(a, [(T0, 1), (T0 + 1000, 2), (T0 + 2000, 3)]), (b, [(T0, 7)])]))
    assert st == 204
    body = v1_body(pb, [
        (b, [(T0 + 1000, 8)]),                                         # fine
        (a, [(T0 + 2000, 3), (T0 + 500, 9), (T0 + 1000, 9), (T0 + 2000, 4), (T0 + 3000, 5)]),
        (b, [(T0 + 1000, 8.5), (T0 + 2000, 9)]),                       # a duplicate timestamp, then fine
    ])
    st, hdrs, data = post(srv, body)
    assert st == 400
    t500 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 500) // 1000)) + ".5Z"
    t2000 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 2000) // 1000)) + "Z"
    assert data.decode() == (
        "4 of 8 samples rejected (2 out of order sample, 2 duplicate sample for timestamp, 0 out of bounds); "
        "the 4 others are stored. First rejected: series {__name__=\"c_total\", job=\"x\"}: "
        "2 out of order sample(s) (older than the series' newest sample), the first at %d (%s); "
        "1 duplicate sample(s) for timestamp (another value is stored there), the first at %d (%s)\n"
        % (T0 + 500, t500, T0 + 2000, t2000))
    got = floats(srv)
    assert [x[:2] for x in got[key(**a)]] == [(T0, "1"), (T0 + 1000, "2"), (T0 + 2000, "3"), (T0 + 3000, "5")]
    assert [x[:2] for x in got[key(**b)]] == [(T0, "7"), (T0 + 1000, "8"), (T0 + 2000, "9")]
    m = srv.metrics()
    assert m['profstore_remote_write_samples_rejected_total{reason="out_of_order"}'] == 2
    assert m['profstore_remote_write_samples_rejected_total{reason="duplicate_timestamp"}'] == 2
    assert m["profstore_remote_write_samples_duplicate_total"] == 1


def test_profile_series_conflict(make_server, pb):
    srv = make_server(retention="0")
    st, _ = srv.push("go/cpu-01.pb.gz", labels='{job="p"}')
    assert st == 200
    name = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
    body = v1_body(pb, [({"__name__": name, "job": "p"}, [(T0, 1)]), ({"__name__": "ok", "job": "p"}, [(T0, 1)])])
    st, _, data = post(srv, body)
    assert st == 400
    assert data.decode() == (
        "1 of 2 samples rejected (0 out of order sample, 0 duplicate sample for timestamp, 0 out of bounds, "
        "1 in 1 refused series); the 1 others are stored. First rejected: series {__name__=\"%s\", job=\"p\"}: "
        "series {__name__=\"%s\", job=\"p\"} holds profiles, not float samples\n" % (name, name))
    assert list(floats(srv)) == [key(__name__="ok", job="p")]


def snappy_header(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def bad_bodies(pb):
    good = v1_body(pb, [({"__name__": "m", "job": "bad"}, [(T0, 1)])])
    raw = snappy.decompress(good)
    many = pb[0].WriteRequest()
    ts = many.timeseries.add()
    ts.labels.add(name="__name__", value="m")
    for i in range(100000):
        ts.labels.add(name="l%06d" % i, value="v")
    ts.samples.add(value=1, timestamp=T0)
    unsorted = pb[0].WriteRequest()
    ts = unsorted.timeseries.add()
    ts.labels.add(name="z", value="v")
    ts.labels.add(name="__name__", value="m")
    ts.samples.add(value=1, timestamp=T0)
    return {
        "garbage": (b"\x00\x01garbage\xff" * 10, {}),
        "truncated snappy": (good[:-4], {}),
        "snappy announcing 4 GiB": (snappy_header((4 << 30) - 1) + b"\x00" * 16, {}),
        # field 1 (timeseries) as a varint instead of a message
        "wrong wire type": (snappy.compress(b"\x08\x05" + raw), {}),
        "100000 labels": (snappy.compress(many.SerializeToString()), {}),
        "unsorted labels": (snappy.compress(unsorted.SerializeToString()), {}),
        "missing Content-Encoding": (good, {"encoding": None}),
        "gzip Content-Encoding": (good, {"encoding": "gzip"}),
        "JSON Content-Type": (good, {"ct": "application/json"}),
        "unknown proto": (good, {"ct": "application/x-protobuf;proto=foo.Bar"}),
        "empty body": (b"", {}),
    }


EXPECT = {
    "garbage": (400, "remote write 1.0: "),
    "truncated snappy": (400, "remote write 1.0: "),
    "snappy announcing 4 GiB": (413, "remote write 1.0: "),
    "wrong wire type": (400, "remote write 1.0: "),
    "100000 labels": (400, "remote write 1.0: "),
    "unsorted labels": (400, "remote write 1.0: timeseries[0].labels[1]: label names not sorted"),
    "missing Content-Encoding": (415, "remote write: Content-Encoding: snappy is required (snappy block format)\n"),
    "gzip Content-Encoding": (415, "remote write: Content-Encoding must be snappy, got \"gzip\"\n"),
    "JSON Content-Type": (415, "remote write: Content-Type must be application/x-protobuf"),
    "unknown proto": (415, "remote write: unknown proto \"foo.Bar\" in Content-Type"),
    "empty body": (400, "remote write: empty body\n"),
}


def test_bad_input(make_server, pb):
    srv = make_server()
    st, _, _ = post(srv, v1_body(pb, [({"__name__": "kept", "job": "k"}, [(T0, 42)])]))
    assert st == 204
    for name, (body, kw) in bad_bodies(pb).items():
        st, _, data = post(srv, body, **kw)
        want_st, want_msg = EXPECT[name]
        assert (name, st) == (name, want_st), data
        assert data.decode().startswith(want_msg), (name, data)
        assert data.endswith(b"\n")
        assert srv.running()
    assert floats(srv) == {key(__name__="kept", job="k"): [(T0, "42", "4045000000000000")]}
    assert srv.metrics()["profstore_remote_write_bad_requests_total"] == len(EXPECT)


def test_durable_after_kill(make_server, pb):
    srv = make_server()
    want = {}
    for i in range(20):
        labels = {"__name__": "d_total", "job": "dur", "i": str(i % 4)}
        st, _, _ = post(srv, v1_body(pb, [(labels, [(T0 + 1000 * i, float(i))])]))
        assert st == 204
        want.setdefault(key(**labels), []).append((T0 + 1000 * i, str(i)))
    srv.restart(kill=True)
    got = {k: [x[:2] for x in v] for k, v in floats(srv).items()}
    assert got == want


def wait_for(fn, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = fn()
        if r:
            return r
        time.sleep(0.5)
    raise AssertionError("timed out waiting for " + what)


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus 2.42 not installed")
def test_real_prometheus_remote_write(make_server, tmp_path):
    srv = make_server()
    pport = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("""global:
  scrape_interval: 1s
  external_labels: {replica: "t"}
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: ["127.0.0.1:%d"]}]
remote_write:
  - url: http://127.0.0.1:%d/api/v1/write
    queue_config: {batch_send_deadline: 1s}
    metadata_config: {send_interval: 2s}
""" % (pport, srv.port))
    log = open(tmp_path / "prometheus.log", "wb")
    prom = subprocess.Popen(["prometheus", "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (tmp_path / "pd"),
                             "--web.listen-address=127.0.0.1:%d" % pport], stdout=log, stderr=subprocess.STDOUT)
    try:
        def arrived():
            d = series_api(srv, '{job="prometheus",__name__="up"}')
            return d if d else None
        up = wait_for(arrived, 40, "up{job=\"prometheus\"} from Prometheus' remote_write")
        assert up == [{"__name__": "up", "instance": "127.0.0.1:%d" % pport, "job": "prometheus", "replica": "t"}]
        # samples keep arriving, metadata too
        wait_for(lambda: len(floats(srv)[key(**up[0])]) >= 3, 20, "3 samples of up")
        wait_for(lambda: "prometheus_http_requests_total" in srv.get_json("/api/v1/metadata")["data"], 20,
                 "metadata")
        assert all(x[1] == "1" for x in floats(srv)[key(**up[0])])

        def prom_metric(name):
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % pport, timeout=5) as r:
                for line in r.read().decode().splitlines():
                    if line.startswith(name + "{") or line.startswith(name + " "):
                        return float(line.rsplit(" ", 1)[1])
            return None
        assert wait_for(lambda: (prom_metric("prometheus_remote_storage_samples_total") or 0) > 100, 30, "sent")
        assert prom_metric("prometheus_remote_storage_samples_failed_total") == 0
        assert prom_metric("prometheus_remote_storage_samples_retried_total") == 0
        m = srv.metrics()
        assert m['profstore_remote_write_samples_rejected_total{reason="out_of_order"}'] == 0
        assert m["profstore_remote_write_bad_requests_total"] == 0
    finally:
        prom.terminate()
        prom.wait(15)
        log.close()


def test_disk_full_507_then_reads_go_on(make_server, pb):
    srv = make_server(storage_max_size="2MiB")
    st, _, _ = post(srv, v1_body(pb, [({"__name__": "first", "job": "full"}, [(T0, 1)])]))
    assert st == 204
    statuses = []
    for r in range(200):
        series = [({"__name__": "fill", "job": "full", "i": "%d-%05d" % (r, i), "pad": "x" * 200}, [(T0, float(i))])
                  for i in range(500)]
        st, _, data = post(srv, v1_body(pb, series))
        statuses.append(st)
        if st != 204:
            break
    assert statuses[-1] == 507, statuses
    assert set(statuses[:-1]) == {204}
    assert data.decode().endswith(": the store reached its maximum size (--storage.max-size)\n"), data
    # reads go on, and what was stored before is intact
    assert floats(srv)[key(__name__="first", job="full")] == [(T0, "1", "3ff0000000000000")]
    assert srv.metrics()["profstore_remote_write_failed_requests_total"] == 1


def _pb_len(field, data):
    """One length-delimited protobuf field (data shorter than 128 bytes)."""
    assert len(data) < 128
    return bytes([field << 3 | 2, len(data)]) + data


def test_utf8_names_stored_as_prometheus3_sends_them(make_server, pb):
    """Prometheus 3 sends UTF-8 metric and label names (its default validation scheme): they are
    stored as sent and selected with the quoted syntax; a name that is not UTF-8 is a precise 400
    (2.x-era profstore refused every name outside [a-zA-Z_][a-zA-Z0-9_]*)."""
    srv = make_server()
    name = {"__name__": "http.server.duration", "service.name": "checkout", "k8s.pod": "p-1"}
    st, _, data = post(srv, v1_body(pb, [(name, [(T0, 0.25)])],
                                    metadata=[(2, "http.server.duration", "Server duration.", "seconds")]))
    assert (st, data) == (204, b"")
    st, hdrs, data = post(srv, v2_body(pb, [({"__name__": "db.ops", "service.name": "cart"}, [(T0, 7.0)], 0, None, 0)]),
                          ct=CT_V2, version="2.0.0")
    assert (st, data, hdrs.get("x-prometheus-remote-write-samples-written")) == (204, b"", "1")
    assert floats(srv) == {key(**name): [(T0, "0.25", "3fd0000000000000")],
                           key(**{"__name__": "db.ops", "service.name": "cart"}): [(T0, "7", "401c000000000000")]}
    assert series_api(srv, '{"service.name"="checkout"}') == [name]
    js = srv.get_json("/api/v1/query?" + urllib.parse.urlencode(
        {"query": 'sum by ("service.name") ({"http.server.duration"} or {"db.ops"})', "time": T0 / 1000}))
    assert sorted((r["metric"]["service.name"], r["metric"], r["value"][1]) for r in js["data"]["result"]) == [
        ("cart", {"service.name": "cart"}, "7"), ("checkout", {"service.name": "checkout"}, "0.25")]
    assert srv.get_json("/api/v1/label/U__service_2e_name/values")["data"] == ["cart", "checkout"]
    assert srv.get_json("/api/v1/labels")["data"] == ["__name__", "k8s.pod", "service.name"]
    assert srv.get_json("/api/v1/metadata")["data"]["http.server.duration"] == [
        {"type": "gauge", "help": "Server duration.", "unit": "seconds"}]
    # a name that is not UTF-8, and one with a NUL: 400, nothing of the request stored
    for bad, msg in ((b"a\xff", 'label name "a\\xff" is not valid UTF-8'),
                     (b"a\x00b", 'label name "a\\x00b" contains a NUL byte')):
        ts = (_pb_len(1, _pb_len(1, b"__name__") + _pb_len(2, b"up")) + _pb_len(1, _pb_len(1, bad) + _pb_len(2, b"x"))
              + _pb_len(2, b"\x09" + b"\x00" * 7 + b"\x40" + b"\x10\x01"))
        st, _, data = post(srv, snappy.compress(_pb_len(1, ts)))
        assert (st, data.decode()) == (400, "remote write 1.0: timeseries[0].labels[1]: %s\n" % msg)
    assert series_api(srv, "up") == []
