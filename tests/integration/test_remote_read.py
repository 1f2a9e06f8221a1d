"""POST /api/v1/read: Prometheus remote read (docs/protocols.md) over pushed profiles, whose totals are
served as float series at the profile times.

A client written here with python3-protobuf (the _pb2 module is generated at test time from our
proto/remote.proto into a temporary directory) reads both answers: SAMPLES (snappy ReadResponse)
and STREAMED_XOR_CHUNKS (frames checked by their CRC-32C, XOR chunks decoded by a decoder written
here from the layout in storage/xorchunk.c), with all four matcher types; the limits and bad
requests give their exact errors. Then a real Prometheus 2.42 with no scrape jobs and
remote_read (read_recent) pointed at profstore answers PromQL over the profile totals, through
its HTTP API and through `promtool query instant`, with the totals pushed; its external labels
become matchers that select the series pushed with those labels.

Expected values come from the fixture totals in the pprof README, not from the server."""

import json
import struct
import subprocess
import sys
import time
import urllib.parse

import pytest
import snappy

from conftest import CPU_TYPE, README_TOTALS, REPO, free_port, require_tool, tool_env

T0 = 1796022000  # the fixtures' day (2026-11-30T07:00:00Z)
CPU_SAMPLES = "process_cpu:samples:count:cpu:nanoseconds:delta"
TOTAL = {rel: README_TOTALS[rel][1] for rel in ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz",
                                                "go/cpu-04.pb.gz", "go/cpu-05.pb.gz"]}
PUSHES = [  # (labels, fixture, time s)
    ({"job": "api", "instance": "a"}, "go/cpu-01.pb.gz", T0 + 10),
    ({"job": "api", "instance": "a"}, "go/cpu-02.pb.gz", T0 + 20),
    ({"job": "api", "instance": "b"}, "go/cpu-03.pb.gz", T0 + 15),
    ({"job": "batch"}, "go/cpu-04.pb.gz", T0 + 30),
]
EQ, NEQ, RE, NRE = 0, 1, 2, 3
SAMPLES, STREAMED = 0, 1
STREAMED_CT = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"


# ---- the client --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    protoc = require_tool("protoc")
    out = tmp_path_factory.mktemp("pb2")
    subprocess.run([protoc, "--proto_path=%s" % (REPO / "proto"), "--python_out=%s" % out,
                    str(REPO / "proto" / "remote.proto")], check=True)
    sys.path.insert(0, str(out))
    try:
        import remote_pb2  # noqa: E402
    finally:
        sys.path.remove(str(out))
    return remote_pb2


def labelset(d):
    return "{" + ",".join('%s="%s"' % kv for kv in sorted(d.items())) + "}"


def push_all(srv, pushes):
    for labels, rel, ts in pushes:
        st, js = srv.push(rel, labels=labelset(labels), time=str(ts))
        assert st == 200, (rel, st, srv.last_raw[:300])


def make_request(pb, queries, accepted=()):
    """queries: [(start_ms, end_ms, [(type, name, value), ...])]"""
    req = pb.ReadRequest()
    for start, end, ms in queries:
        q = req.queries.add()
        q.start_timestamp_ms = start
        q.end_timestamp_ms = end
        for t, n, v in ms:
            m = q.matchers.add()
            m.type, m.name, m.value = t, n.encode(), v.encode()
        q.hints.start_ms, q.hints.end_ms = start, end
    req.accepted_response_types.extend(accepted)
    return req


def post_read(srv, body, headers=None):
    h = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
         "X-Prometheus-Remote-Read-Version": "0.1.0", "Accept-Encoding": "snappy"}
    h.update(headers or {})
    return srv.request("POST", "/api/v1/read", body=body, headers=h)


def read_samples(srv, pb, queries):
    st, hdrs, data = post_read(srv, snappy.compress(make_request(pb, queries).SerializeToString()))
    assert st == 200, data[:300]
    assert hdrs["content-type"] == "application/x-protobuf"
    assert hdrs["content-encoding"] == "snappy"
    resp = pb.ReadResponse()
    resp.ParseFromString(snappy.uncompress(data))
    assert len(resp.results) == len(queries)
    return [[({l.name.decode(): l.value.decode() for l in ts.labels}, [(s.timestamp, s.value) for s in ts.samples])
             for ts in r.timeseries] for r in resp.results]


_CRC_TABLE = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC_TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def read_uvarint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


class Bits:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def bit(self):
        b = (self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1
        self.pos += 1
        return b

    def bits(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit()
        return v

    def uvarint(self):
        v = shift = 0
        while True:
            c = self.bits(8)
            v |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return v


def xor_decode(chunk):
    """Prometheus' XOR chunk -> [(t_ms, float)] (the layout at the top of storage/xorchunk.c)."""
    n = struct.unpack(">H", chunk[:2])[0]
    r = Bits(chunk[2:])
    out = []
    t = delta = 0
    vbits = 0
    lead = trail = 0
    for i in range(n):
        if i == 0:
            z = r.uvarint()
            t = (z >> 1) ^ -(z & 1)
            vbits = r.bits(64)
        else:
            if i == 1:
                delta = r.uvarint()
            else:
                for size, width in ((0, 0), (1, 14), (2, 17), (3, 20), (4, 64)):
                    if size == 4 or r.bit() == 0:
                        break
                dod = 0
                if width:
                    dod = r.bits(width)
                    if width < 64 and dod > (1 << (width - 1)):
                        dod -= 1 << width
                    elif width == 64 and dod >= 1 << 63:
                        dod -= 1 << 64
                delta += dod
            t += delta
            if r.bit():
                if r.bit():
                    lead = r.bits(5)
                    m = r.bits(6) or 64
                    trail = 64 - lead - m
                m = 64 - lead - trail
                vbits ^= r.bits(m) << trail
        out.append((t, struct.unpack("<d", struct.pack("<Q", vbits))[0]))
    return out


def read_streamed(srv, pb, queries):
    st, hdrs, data = post_read(srv, snappy.compress(make_request(pb, queries, [STREAMED, SAMPLES])
                                                    .SerializeToString()))
    assert st == 200, data[:300]
    assert hdrs["content-type"] == STREAMED_CT
    assert "content-encoding" not in hdrs
    frames, i = [], 0
    while i < len(data):
        n, i = read_uvarint(data, i)
        crc = struct.unpack(">I", data[i:i + 4])[0]
        body = data[i + 4:i + 4 + n]
        assert len(body) == n
        assert crc == crc32c(body), "frame %d: CRC mismatch" % len(frames)
        i += 4 + n
        f = pb.ChunkedReadResponse()
        f.ParseFromString(body)
        assert len(f.chunked_series) == 1
        frames.append((f, 4 + n + len(encode_uvarint(n))))
    return frames


def encode_uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def frame_series(frames):
    """[(query_index, labels, [(t, v)...], [nchunks per frame])] merging the frames of one series."""
    out = []
    for f, _ in frames:
        cs = f.chunked_series[0]
        labels = {l.name.decode(): l.value.decode() for l in cs.labels}
        samples = []
        for c in cs.chunks:
            assert c.type == 1  # XOR
            s = xor_decode(c.data)
            assert (c.min_time_ms, c.max_time_ms) == (s[0][0], s[-1][0])
            samples += s
        if out and out[-1][0] == f.query_index and out[-1][1] == labels:
            out[-1][2].extend(samples)
            out[-1][3].append(len(cs.chunks))
        else:
            out.append((f.query_index, labels, samples, [len(cs.chunks)]))
    return out


def ms(s):
    return s * 1000


ALL = (ms(T0), ms(T0 + 3600))
NAME = (EQ, "__name__", CPU_TYPE)


def cpu(labels):
    return dict(labels, __name__=CPU_TYPE)


# ---- SAMPLES and STREAMED_XOR_CHUNKS -------------------------------------------------------------

@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="rread", retention="0")
    push_all(s, PUSHES)
    return s


def test_samples_totals_sorted(srv, pb):
    res = read_samples(srv, pb, [(ALL[0], ALL[1], [NAME, (EQ, "job", "api")])])
    assert res == [[
        (cpu({"job": "api", "instance": "a"}), [(ms(T0 + 10), TOTAL["go/cpu-01.pb.gz"]),
                                                (ms(T0 + 20), TOTAL["go/cpu-02.pb.gz"])]),
        (cpu({"job": "api", "instance": "b"}), [(ms(T0 + 15), TOTAL["go/cpu-03.pb.gz"])]),
    ]]


def test_samples_matcher_types_and_ranges(srv, pb):
    res = read_samples(srv, pb, [
        (ALL[0], ALL[1], [NAME, (NEQ, "job", "api")]),
        (ALL[0], ALL[1], [(RE, "__name__", "process_cpu:cpu:.*"), (RE, "instance", "a|b")]),
        (ALL[0], ALL[1], [NAME, (NRE, "instance", "a")]),
        (ms(T0 + 11), ms(T0 + 20), [NAME]),  # both ends inclusive
        (ms(T0 + 31), ms(T0 + 60), [NAME]),
        (ALL[0], ALL[1], [(RE, "__name__", "process_cpu:.*"), (EQ, "instance", "b")]),
    ])
    assert res[0] == [(cpu({"job": "batch"}), [(ms(T0 + 30), TOTAL["go/cpu-04.pb.gz"])])]
    assert [l["instance"] for l, _ in res[1]] == ["a", "b"]
    assert res[2] == [(cpu({"job": "api", "instance": "b"}), [(ms(T0 + 15), TOTAL["go/cpu-03.pb.gz"])]),
                      (cpu({"job": "batch"}), [(ms(T0 + 30), TOTAL["go/cpu-04.pb.gz"])])]
    assert res[3] == [(cpu({"job": "api", "instance": "a"}), [(ms(T0 + 20), TOTAL["go/cpu-02.pb.gz"])]),
                      (cpu({"job": "api", "instance": "b"}), [(ms(T0 + 15), TOTAL["go/cpu-03.pb.gz"])])]
    assert res[4] == []
    # both sample types of the profile, sorted by labels (__name__ first)
    assert [(l["__name__"], s) for l, s in res[5]] == [
        (CPU_TYPE, [(ms(T0 + 15), TOTAL["go/cpu-03.pb.gz"])]),
        (CPU_SAMPLES, [(ms(T0 + 15), README_TOTALS["go/cpu-03.pb.gz"][0])]),
    ]


def test_streamed(srv, pb):
    frames = read_streamed(srv, pb, [(ALL[0], ALL[1], [NAME, (EQ, "job", "api")]),
                                     (ALL[0], ALL[1], [NAME, (NEQ, "job", "api")])])
    got = frame_series(frames)
    assert got == [
        (0, cpu({"job": "api", "instance": "a"}), [(ms(T0 + 10), TOTAL["go/cpu-01.pb.gz"]),
                                                   (ms(T0 + 20), TOTAL["go/cpu-02.pb.gz"])], [1]),
        (0, cpu({"job": "api", "instance": "b"}), [(ms(T0 + 15), TOTAL["go/cpu-03.pb.gz"])], [1]),
        (1, cpu({"job": "batch"}), [(ms(T0 + 30), TOTAL["go/cpu-04.pb.gz"])], [1]),
    ]


def test_streamed_first_accepted_type_wins(srv, pb):
    body = snappy.compress(make_request(pb, [(ALL[0], ALL[1], [NAME])], [SAMPLES, STREAMED]).SerializeToString())
    st, hdrs, data = post_read(srv, body)
    assert st == 200
    assert hdrs["content-type"] == "application/x-protobuf"
    body = snappy.compress(make_request(pb, [(ALL[0], ALL[1], [NAME])], [7, STREAMED]).SerializeToString())
    st, hdrs, data = post_read(srv, body)
    assert st == 200
    assert hdrs["content-type"] == STREAMED_CT


def test_many_profiles_chunks_and_frames(make_server, pb):
    """250 profiles: chunks of 120, 120 and 10 samples; with a 200-byte frame one chunk a frame."""
    s = make_server(retention="0", storage_no_sync=True,
                    extra_args=["--storage.remote.read-max-bytes-in-frame", "200"])
    rels = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz"]
    pushes = [({"job": "many"}, rels[i % 5], T0 + i) for i in range(250)]
    push_all(s, pushes)
    want = [(ms(ts), TOTAL[rel]) for _, rel, ts in pushes]
    frames = read_streamed(s, pb, [(ms(T0), ms(T0 + 1000), [NAME])])
    got = frame_series(frames)
    assert len(got) == 1
    assert got[0][2] == want
    assert got[0][3] == [1, 1, 1]
    assert [len(f.chunked_series[0].chunks) for f, _ in frames] == [1, 1, 1]
    assert [len(xor_decode(f.chunked_series[0].chunks[0].data)) for f, _ in frames] == [120, 120, 10]
    # SAMPLES gives the same samples
    assert read_samples(s, pb, [(ms(T0), ms(T0 + 1000), [NAME])])[0][0][1] == want


# ---- limits and bad requests -----------------------------------------------------------------------

def test_sample_limit(make_server, pb):
    s = make_server(retention="0", extra_args=["--storage.remote.read-sample-limit", "2"])
    push_all(s, PUSHES)
    ok = snappy.compress(make_request(pb, [(ALL[0], ALL[1], [NAME, (EQ, "instance", "a")])]).SerializeToString())
    assert post_read(s, ok)[0] == 200
    # a SAMPLES read over everything (all time): stops at the limit
    body = snappy.compress(make_request(pb, [(-(1 << 62), 1 << 62, [(RE, "__name__", ".+")])], [])
                           .SerializeToString())
    st, hdrs, data = post_read(s, body)
    assert (st, data) == (400, b"exceeded sample limit (2)\n")
    assert hdrs["content-type"] == "text/plain; charset=utf-8"
    assert post_read(s, ok)[0] == 200  # and keeps serving
    # streamed answers have no sample limit, as in Prometheus: every sample of both types
    got = frame_series(read_streamed(s, pb, [(-(1 << 62), 1 << 62, [(RE, "__name__", ".+")])]))
    assert sum(len(x[2]) for x in got) == 2 * len(PUSHES)


def test_series_limit(make_server, pb):
    s = make_server(retention="0", extra_args=["--query.max-series", "1"])
    push_all(s, PUSHES)
    body = snappy.compress(make_request(pb, [(ALL[0], ALL[1], [NAME, (EQ, "job", "api")])]).SerializeToString())
    assert post_read(s, body)[:3:2] == (400, b"the selector matches more than 1 series (the limit, "
                                             b"--query.max-series); narrow it\n")
    body = snappy.compress(make_request(pb, [(ALL[0], ALL[1], [NAME, (EQ, "instance", "b")])]).SerializeToString())
    assert post_read(s, body)[0] == 200


def test_flags_refused():
    from conftest import PROFSTORE_BIN
    for flag, val in [("--storage.remote.read-sample-limit", "-1"), ("--storage.remote.read-max-bytes-in-frame", "0"),
                      ("--storage.remote.read-concurrent-limit", "x")]:
        r = subprocess.run([PROFSTORE_BIN, flag, val], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2
        assert 'profstore: %s: "%s" is not a number in range\n' % (flag, val) in r.stderr


@pytest.mark.parametrize("body,headers,status,msg", [
    (b"garbage", {}, 400, "snappy: corrupt or truncated input (7 bytes, announcing 103 uncompressed)"),
    (b"", {}, 400, "snappy: empty body (expected snappy block format)"),
    (b"\xff\xff\xff\xff\x0f\x00", {}, 413,
     "snappy: the body announces 4294967295 uncompressed bytes (the limit is 33554432)"),
    (snappy.compress(b"\x0a\x03\x0a\x01\x41"), {}, 400,
     "protobuf: malformed prometheus.ReadRequest (uncompressed): queries[0].start_timestamp_ms: field 1 "
     "(start_timestamp_ms) has wire type 2 (length-delimited), expected 0 (varint)"),
    (snappy.compress(b"\x0a\x0a\x1a\x08\x08\x07\x12\x01a\x1a\x01b"), {}, 400,
     "queries[0].matchers[0].type: unknown matcher type 7 (EQ=0, NEQ=1, RE=2, NRE=3)"),
    (snappy.compress(b"\x0a\x00\x12\x01\x07"), {}, 400,
     "server does not support any of the requested response types: [7]; supported: [SAMPLES STREAMED_XOR_CHUNKS]"),
    (snappy.compress(b"\x0a\x0a\x1a\x08\x08\x02\x12\x01a\x1a\x01("), {}, 400,
     "queries[0]: matchers[0]: error parsing regexp \"(\": missing closing parenthesis at offset 1"),
    (snappy.compress(b"\x0a\x07\x1a\x05\x12\x01a\x1a\x00"), {}, 400,
     "queries[0]: vector selector must contain at least one non-empty matcher"),
    (snappy.compress(b""), {"Content-Encoding": "gzip"}, 400,
     "Content-Encoding \"gzip\" is not supported: a remote-read body is snappy (block format)"),
])
def test_bad_requests(srv, body, headers, status, msg):
    st, hdrs, data = post_read(srv, body, headers)
    assert (st, data.decode()) == (status, msg + "\n")
    assert hdrs["content-type"] == "text/plain; charset=utf-8"


def test_get_is_405_and_empty_request_is_empty(srv, pb):
    st, hdrs, data = srv.request("GET", "/api/v1/read")
    assert st == 405
    assert hdrs["allow"] == "POST"
    st, hdrs, data = post_read(srv, snappy.compress(b""))
    assert (st, snappy.uncompress(data)) == (200, b"")


# ---- a real Prometheus reading profstore ---------------------------------------------------------

@pytest.fixture
def prometheus(tmp_path):
    """start(read_url, external_labels) -> base URL of a Prometheus 2.42 with no scrape jobs."""
    binary = require_tool("prometheus")
    procs = []

    def start(read_url, external_labels=None):
        port = free_port()
        cfg = tmp_path / "prometheus.yml"
        ext = "".join("\n    %s: %s" % kv for kv in (external_labels or {}).items())
        cfg.write_text("global:\n  scrape_interval: 1m\n%s\nscrape_configs: []\nremote_read:\n"
                       "  - url: %s\n    read_recent: true\n" % (("  external_labels:" + ext) if ext else "", read_url))
        log = open(tmp_path / "prometheus.log", "wb")
        p = subprocess.Popen([binary, "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                              "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        procs.append(p)
        base = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + 30
        import urllib.request
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return base
            except OSError:
                time.sleep(0.1)
        raise AssertionError("prometheus not ready:\n" + (tmp_path / "prometheus.log").read_text())

    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def prom_query(base, query, t):
    import urllib.request
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": str(t)})
    with urllib.request.urlopen(url, timeout=30) as r:
        js = json.loads(r.read())
    assert js["status"] == "success", js
    return js["data"]


QUERY = 'sum by (instance) (sum_over_time({__name__=~"process_cpu:cpu:.*"}[1m]))'


def test_real_prometheus_reads_profile_totals(make_server, prometheus, tmp_path):
    now = int(time.time()) // 60 * 60 - 600
    s = make_server(retention="0")
    push_all(s, [({"job": "api", "instance": "a", "replica": "r1"}, "go/cpu-01.pb.gz", now - 50),
                 ({"job": "api", "instance": "a", "replica": "r1"}, "go/cpu-02.pb.gz", now - 30),
                 ({"job": "api", "instance": "b", "replica": "r1"}, "go/cpu-04.pb.gz", now - 70),  # outside [1m]
                 ({"job": "api", "instance": "b", "replica": "r1"}, "go/cpu-03.pb.gz", now - 20),
                 ({"job": "api", "instance": "c"}, "go/cpu-05.pb.gz", now - 10)])  # no replica: not matched
    base = prometheus(s.url("/api/v1/read"), {"replica": "r1"})
    data = prom_query(base, QUERY, now)
    assert data["resultType"] == "vector"
    got = sorted(((r["metric"], r["value"]) for r in data["result"]), key=lambda x: sorted(x[0].items()))
    assert got == [({"instance": "a"}, [now, str(TOTAL["go/cpu-01.pb.gz"] + TOTAL["go/cpu-02.pb.gz"])]),
                   ({"instance": "b"}, [now, str(TOTAL["go/cpu-03.pb.gz"])])]
    # a selector straight through: Prometheus drops the external label it added from the result
    data = prom_query(base, CPU_TYPE + '{instance="a"}', now)
    assert [(r["metric"], r["value"]) for r in data["result"]] == [
        ({"__name__": CPU_TYPE, "instance": "a", "job": "api"}, [now, str(TOTAL["go/cpu-02.pb.gz"])])]
    # the same through promtool
    promtool = require_tool("promtool")
    r = subprocess.run([promtool, "query", "instant", "--time=%d" % now, base, QUERY], capture_output=True,
                       text=True, timeout=60, env=tool_env(tmp_path), stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.strip().splitlines()) == [
        '{instance="a"} => %d @[%d]' % (TOTAL["go/cpu-01.pb.gz"] + TOTAL["go/cpu-02.pb.gz"], now),
        '{instance="b"} => %d @[%d]' % (TOTAL["go/cpu-03.pb.gz"], now),
    ]


def test_real_prometheus_without_external_labels(make_server, prometheus):
    now = int(time.time()) // 60 * 60 - 600
    s = make_server(retention="0")
    push_all(s, [({"job": "api", "instance": "a", "replica": "r1"}, "go/cpu-01.pb.gz", now - 50),
                 ({"job": "api", "instance": "c"}, "go/cpu-05.pb.gz", now - 10)])
    base = prometheus(s.url("/api/v1/read"))
    data = prom_query(base, QUERY, now)
    got = sorted(((r["metric"], r["value"]) for r in data["result"]), key=lambda x: sorted(x[0].items()))
    assert got == [({"instance": "a"}, [now, str(TOTAL["go/cpu-01.pb.gz"])]),
                   ({"instance": "c"}, [now, str(TOTAL["go/cpu-05.pb.gz"])])]


# ---- float series (remote-written): the captured Prometheus traffic -------------------------------

def prom_fixture(name):
    from conftest import TESTDATA
    return (TESTDATA / "prometheus" / name).read_bytes()


def remote_write(srv, body):
    return srv.request("POST", "/api/v1/write", body=body, headers={
        "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0"})


@pytest.fixture(scope="module")
def fsrv(module_server_factory):
    """The three remote-write bodies Prometheus 2.42 sent (18 series, 3 scrapes 1 s apart)."""
    s = module_server_factory(name="rread_floats", retention="0")
    for i in (1, 2, 3):
        st, _, data = remote_write(s, prom_fixture("remote-write-0%d.bin" % i))
        assert st in (200, 204), data[:300]
    return s


def test_captured_read_answers_as_prometheus_did(fsrv):
    """remote-read-01.bin (promtool's instant query through a Prometheus with external label
    replica="fixture") gets, byte for byte, the answer a real Prometheus fed the same writes gave."""
    st, hdrs, data = post_read(fsrv, prom_fixture("remote-read-01.bin"))
    assert st == 200
    assert (hdrs["content-type"], hdrs["content-encoding"]) == ("application/x-protobuf", "snappy")
    assert data == prom_fixture("remote-read-response-01.bin")


def test_float_series_samples_and_streamed(fsrv, pb):
    name = (EQ, "__name__", "gotarget_kernel_iterations_total")
    span = (1796021924000, 1796021927000)
    want = [(1796021924802, 80965.0), (1796021925802, 81394.0), (1796021926802, 81801.0)]
    res = read_samples(fsrv, pb, [(span[0], span[1], [name, (EQ, "kernel", "matmul")]),
                                  (span[0], span[1], [name, (NRE, "kernel", "matmul|fib")]),
                                  (1796021925802, 1796021925802, [name, (EQ, "kernel", "matmul")])])
    assert len(res[0]) == 1
    assert res[0][0][0] == {"__name__": "gotarget_kernel_iterations_total", "env": "test",
                            "instance": "127.0.0.1:6060", "job": "gotarget", "kernel": "matmul", "replica": "fixture"}
    assert res[0][0][1] == want
    assert [(l["kernel"], len(s)) for l, s in res[1]] == [("compress", 3), ("format", 3), ("sha256", 3), ("sort", 3)]
    assert res[2][0][1] == [want[1]]
    # streamed: the stored XOR chunk as it is (whole: all three samples, also for a narrower range)
    got = frame_series(read_streamed(fsrv, pb, [(1796021925802, 1796021925802, [name, (EQ, "kernel", "matmul")])]))
    assert [(q, l["kernel"], s) for q, l, s, _ in got] == [(0, "matmul", want)]


def write_request(pb, series):
    """series: [(labels dict, [(t_ms, v)...])] -> snappy WriteRequest body."""
    w = pb.WriteRequest()
    for labels, samples in series:
        ts = w.timeseries.add()
        for k, v in sorted(labels.items()):
            l = ts.labels.add()
            l.name, l.value = k.encode(), v.encode()
        for t, v in samples:
            s = ts.samples.add()
            s.timestamp, s.value = t, v
    return snappy.compress(w.SerializeToString())


def test_concurrent_limit(make_server, pb):
    """With --storage.remote.read-concurrent-limit 1 and 4 HTTP threads, reads that overlap get 503."""
    import concurrent.futures
    s = make_server(retention="0", threads=4, extra_args=["--storage.remote.read-concurrent-limit", "1"])
    t0 = ms(T0)
    for k in range(10):
        body = write_request(pb, [({"__name__": "big", "k": str(k)}, [(t0 + 1000 * i, float(i)) for i in range(20000)])])
        st, _, data = remote_write(s, body)
        assert st in (200, 204), data[:300]
    req = snappy.compress(make_request(pb, [(t0, t0 + 10 ** 8, [(EQ, "__name__", "big")])]).SerializeToString())
    seen = set()
    for _ in range(10):
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            answers = list(ex.map(lambda _: post_read(s, req), range(8)))
        for st, hdrs, data in answers:
            seen.add((st, data if st != 200 else b""))
        if (503, b"too many concurrent remote reads (the limit is 1, --storage.remote.read-concurrent-limit); "
                 b"retry later\n") in seen:
            break
    assert seen == {(200, b""), (503, b"too many concurrent remote reads (the limit is 1, "
                                      b"--storage.remote.read-concurrent-limit); retry later\n")}
    # one at a time, every read is served
    for _ in range(3):
        assert post_read(s, req)[0] == 200


def test_captured_series_read_gets_labels_only(fsrv, pb):
    """remote-read-03.bin (`promtool query series --match=up` through that Prometheus: hints func
    "series") gets the series without samples, as Prometheus' TSDB answers it."""
    st, hdrs, data = post_read(fsrv, prom_fixture("remote-read-03.bin"))
    assert st == 200
    resp = pb.ReadResponse()
    resp.ParseFromString(snappy.uncompress(data))
    assert [[({l.name.decode(): l.value.decode() for l in ts.labels}, len(ts.samples)) for ts in r.timeseries]
            for r in resp.results] == [[({"__name__": "up", "env": "test", "instance": "127.0.0.1:6060",
                                          "job": "gotarget", "replica": "fixture"}, 0)]]
    # remote-read-02.bin (a rate over 10 s, hints step 5 s): the three samples of each kernel
    st, hdrs, data = post_read(fsrv, prom_fixture("remote-read-02.bin"))
    resp.ParseFromString(snappy.uncompress(data))
    assert [(dict((l.name.decode(), l.value.decode()) for l in ts.labels)["kernel"], len(ts.samples))
            for ts in resp.results[0].timeseries] == [(k, 3) for k in
                                                      ["compress", "fib", "format", "matmul", "sha256", "sort"]]


# ---- closed chunks stored dense (schema 4) stream the XOR chunks Prometheus' format has -----------

class _BStream:
    """Prometheus' tsdb/chunkenc/bstream.go writer: count is the free bits of the last byte;
    writeByte always appends a byte after the one it fills (so a field ending on a byte boundary
    leaves a zero byte)."""

    def __init__(self):
        self.b, self.count = bytearray([0, 0]), 0

    def bit(self, on):
        if self.count == 0:
            self.b.append(0)
            self.count = 8
        if on:
            self.b[-1] |= 1 << (self.count - 1)
        self.count -= 1

    def byte(self, x):
        if self.count == 0:
            self.b.append(0)
            self.count = 8
        self.b[-1] |= x >> (8 - self.count)
        self.b.append((x << self.count) & 0xff)

    def bits(self, u, n):
        u = (u << (64 - n)) & (2 ** 64 - 1)
        while n >= 8:
            self.byte(u >> 56)
            u, n = (u << 8) & (2 ** 64 - 1), n - 8
        while n > 0:
            self.bit(u >> 63)
            u, n = (u << 1) & (2 ** 64 - 1), n - 1


def _uvarint(x):
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7f | 0x80)
        x >>= 7
    out.append(x)
    return out


def xor_encode(samples):
    """[(t_ms, float64 bits)] -> the bytes of Prometheus' XOR chunk (tsdb/chunkenc/xor.go's
    appender), written here from its layout (storage/xorchunk.c)."""
    w = _BStream()
    lead, trail, t_prev, delta_prev, v_prev = 0xff, 0, 0, 0, 0
    for i, (t, v) in enumerate(samples):
        if i == 0:
            for x in _uvarint(((t << 1) ^ (t >> 63)) & (2 ** 64 - 1)):  # zigzag
                w.byte(x)
            w.bits(v, 64)
        else:
            d = t - t_prev
            if i == 1:
                for x in _uvarint(d):
                    w.byte(x)
            else:
                dod = d - delta_prev
                if dod == 0:
                    w.bit(0)
                else:
                    for nb, code, cl in ((14, 0b10, 2), (17, 0b110, 3), (20, 0b1110, 4)):
                        if -((1 << (nb - 1)) - 1) <= dod <= 1 << (nb - 1):
                            w.bits(code, cl)
                            w.bits(dod & ((1 << nb) - 1), nb)
                            break
                    else:
                        w.bits(0b1111, 4)
                        w.bits(dod & (2 ** 64 - 1), 64)
            x = v ^ v_prev
            if x == 0:
                w.bit(0)
            else:
                w.bit(1)
                lz = min(64 - x.bit_length(), 31)
                tz = (x & -x).bit_length() - 1
                if lead != 0xff and lz >= lead and tz >= trail:
                    w.bit(0)
                    w.bits(x >> trail, 64 - lead - trail)
                else:
                    lead, trail = lz, tz
                    w.bit(1)
                    w.bits(lz, 5)
                    w.bits((64 - lz - tz) & 63, 6)
                    w.bits(x >> tz, 64 - lz - tz)
            delta_prev = d
        t_prev, v_prev = t, v
    w.b[0:2] = struct.pack(">H", len(samples))
    return bytes(w.b)


def _bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def test_dense_chunks_stream_prometheus_xor_bytes(make_server, pb):
    """Three float series of 250 samples, compacted: their closed chunks are stored dense (schema
    4; /api/v1/status/tsdb is not asked: the bytes streamed are the proof), and
    STREAMED_XOR_CHUNKS sends, byte for byte, the XOR chunks Prometheus' appender makes of each 120
    samples (and of the 10 in the head); SAMPLES gives every value's bits back: CPU seconds
    (ticks / 100), an integer counter with a jittered scrape, and a gauge with a stale marker, a
    NaN payload, -0.0 and infinities among decimals. (xor_encode agreeing with the server's chunks
    also checks it against storage/xorchunk.c's appender, which matches Prometheus' bytes.)"""
    s = make_server(retention="0", storage_no_sync=True)
    t0 = (int(time.time()) - 3 * 3600) // 15 * 15 * 1000
    ticks, cnt = 12345678, 10 ** 9
    series = {"cpu": [], "bytes": [], "gauge": []}
    special = {7: 0x7ff0000000000002, 8: 0x7ff8000000000001, 9: _bits(-0.0), 10: _bits(float("inf")),
               11: _bits(float("-inf"))}
    for i in range(250):
        t = t0 + 15000 * i
        ticks += 1400 + (i * 7919) % 100
        cnt += 1000 + (i * 104729) % 5000
        series["cpu"].append((t, _bits(ticks / 100)))
        series["bytes"].append((t + (42 if i % 20 == 3 else 0), _bits(float(cnt))))
        series["gauge"].append((t, special.get(i % 100, _bits(round(i * 0.25, 2)))))
    body = write_request(pb, [({"__name__": "dense_" + k, "job": "dense"},
                               [(t, struct.unpack("<d", struct.pack("<Q", v))[0]) for t, v in smp])
                              for k, smp in sorted(series.items())])
    st, _, data = remote_write(s, body)
    assert st in (200, 204), data[:300]
    st, _, data = s.request("POST", "/api/v1/admin/compact")
    assert st == 200, data[:300]
    q = [(t0 - 1, t0 + 15000 * 250, [(EQ, "job", "dense")])]
    frames = read_streamed(s, pb, q)
    chunks = {}
    for f, _ in frames:
        for cs in f.chunked_series:
            name = {l.name.decode(): l.value.decode() for l in cs.labels}["__name__"]
            chunks.setdefault(name, []).extend(c.data for c in cs.chunks)
    assert sorted(chunks) == ["dense_bytes", "dense_cpu", "dense_gauge"]
    for k, smp in series.items():
        want = [xor_encode(smp[a:a + 120]) for a in (0, 120, 240)]
        assert [len(c) for c in chunks["dense_" + k]] == [len(c) for c in want], k
        assert chunks["dense_" + k] == want, k
    got = {l["__name__"]: [(t, _bits(v)) for t, v in smp] for l, smp in read_samples(s, pb, q)[0]}
    # (a SAMPLES answer's -0.0 reads back as 0.0: proto3 leaves out a double equal to 0, as
    # Prometheus' own prompb encoding does; the streamed chunks above hold its sign)
    neg0 = _bits(-0.0)
    assert got == {"dense_" + k: [(t, 0 if v == neg0 else v) for t, v in smp] for k, smp in series.items()}
