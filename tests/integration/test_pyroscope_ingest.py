"""POST /ingest, Pyroscope's legacy ingest (README "Pyroscope ingest"): the captured bodies of
@pyroscope/nodejs 0.6.4 (raw pprof) and 0.4.13 (multipart) replayed byte for byte, the pyroscope-go
shape (multipart with sample_type_config), folded and lines bodies, and every kind of bad input
(a clear 4xx, nothing stored harmed, the server keeps serving)."""

from __future__ import annotations

import gzip
import json
import urllib.parse
from typing import Dict, List, Optional, Tuple

import pytest

from conftest import TESTDATA, fixture_bytes, series_snapshot
import pprof_decode as pd

PYRO = TESTDATA / "pyroscope"

WALL_TYPES = ["wall:samples:count:wall:nanoseconds:delta", "wall:wall:nanoseconds:wall:nanoseconds:delta"]
HEAP_TYPES = ["memory:inuse_objects:count:inuse_space:bytes", "memory:inuse_space:bytes:inuse_space:bytes"]

# tests/testdata/README.md: value totals per sample type of each captured body
TOTALS = {
    "nodejs-0.6.4": {1: (475, 4965650000), 2: (140439, 5632281), 3: (477, 4935519000), 4: (115800, 9234786),
                     5: (186, 1963230000)},
    "nodejs-0.4.13": {1: (479, 4995491000), 2: (184800, 6682127), 3: (477, 4945059000), 4: (175578, 10844638),
                      5: (193, 1974776000)},
}
LABELS = {
    "nodejs-0.6.4": {"service_name": "nodeapp", "env": "test", "pyroscope_spy": "nodespy",
                     "otel_scope_name": "com.grafana.pyroscope/nodejs", "otel_scope_version": "0.6.4",
                     "process_runtime_name": "nodejs", "process_runtime_version": "20.20.2"},
    "nodejs-0.4.13": {"service_name": "nodeapp", "env": "test", "pyroscope_spy": "nodespy"},
}


def captured(sdk: str, i: int) -> Tuple[str, Dict[str, str], bytes]:
    """(path with query, headers, body) of a captured request, exactly as the SDK sent it."""
    txt = (PYRO / sdk / ("ingest-%02d.txt" % i)).read_text().splitlines()
    path = txt[0].split(" ")[1]
    headers = {}
    for line in txt[1:]:
        if not line or line.startswith("#"):
            break
        k, _, v = line.partition(": ")
        if k.lower() == "content-type":
            headers["Content-Type"] = v
    return path, headers, (PYRO / sdk / ("ingest-%02d.bin" % i)).read_bytes()


def ingest(srv, query, body: bytes, headers: Optional[Dict[str, str]] = None):
    """POST /ingest?query (a dict is URL-encoded; a str is sent as is) -> (status, JSON or None)."""
    if isinstance(query, dict):
        query = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    hdrs = {"Content-Type": "application/octet-stream"}
    hdrs.update(headers or {})
    st, _, data = srv.request("POST", "/ingest?" + query, body=body, headers=hdrs, timeout=30)
    srv.last_raw = data
    try:
        return st, json.loads(data)
    except ValueError:
        return st, None


def multipart(parts: List[Tuple[str, str, bytes]], boundary: str = "b0undary") -> Tuple[bytes, Dict[str, str]]:
    """A multipart/form-data body as pyroscope-go writes it: (name, filename, data) per part."""
    out = b""
    for name, filename, data in parts:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name, filename)).encode()
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


def profile_part(body: bytes, ct: str) -> bytes:
    import email.parser
    msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + ct.encode() + b"\r\n\r\n" + body)
    return msg.get_payload()[0].get_payload(decode=True)


def by_type(srv) -> Dict[str, List[dict]]:
    out: Dict[str, List[dict]] = {}
    for s in srv.series():
        out.setdefault(s["labels"]["__name__"], []).append(s)
    return out


# ---- the captured SDK requests ----------------------------------------------------------------

@pytest.mark.parametrize("sdk", ["nodejs-0.6.4", "nodejs-0.4.13"])
def test_replay_captured_sdk_requests(server, sdk):
    """All five requests of a run, byte for byte: 200 each; the wall and heap series with the SDK's
    labels (dots in tag names as '_'), one profile per request at the pprof's time_nanos, with the
    exact totals of the README."""
    want: Dict[str, List[Tuple[int, int]]] = {t: [] for t in WALL_TYPES + HEAP_TYPES}
    for i in range(1, 6):
        path, headers, body = captured(sdk, i)
        st, _, data = server.request("POST", path, body=body, headers=headers)
        assert st == 200, (i, st, data[:300])
        js = json.loads(data)
        pprof = body if sdk == "nodejs-0.6.4" else profile_part(body, headers["Content-Type"])
        ts = pd.decode(pprof).time_nanos
        assert js["data"]["timestamp_ns"] == ts
        types = WALL_TYPES if i in (1, 3, 5) else HEAP_TYPES
        assert [s["profile_type"] for s in js["data"]["series"]] == types
        for t, total in zip(types, TOTALS[sdk][i]):
            want[t].append((ts, total))
    got = by_type(server)
    assert sorted(got) == sorted(want)
    for t, profiles in want.items():
        assert len(got[t]) == 1, got[t]
        s = got[t][0]
        assert s["labels"] == dict(LABELS[sdk], __name__=t)
        assert [(p["ts"], p["total"]) for p in s["profiles"]] == profiles


@pytest.mark.parametrize("sdk", ["nodejs-0.6.4", "nodejs-0.4.13"])
def test_same_type_ids_as_native_push(server, sdk):
    """The pprof of each upload pushed natively lands in the same profile type ids."""
    for i in (1, 2):
        path, headers, body = captured(sdk, i)
        st, _, data = server.request("POST", path, body=body, headers=headers)
        assert st == 200, data[:300]
        via_ingest = [s["profile_type"] for s in json.loads(data)["data"]["series"]]
        pprof = body if sdk == "nodejs-0.6.4" else profile_part(body, headers["Content-Type"])
        st, js = server.push(pprof, labels='{job="native"}')
        assert st == 200, server.last_raw[:300]
        assert [s["profile_type"] for s in js["data"]["series"]] == via_ingest


def test_replayed_twice_is_a_duplicate(server):
    path, headers, body = captured("nodejs-0.4.13", 1)
    assert server.request("POST", path, body=body, headers=headers)[0] == 200
    st, _, data = server.request("POST", path, body=body, headers=headers)
    assert st == 200 and json.loads(data)["data"]["duplicate"] is True


def test_flamegraph_of_replayed_wall_profiles(server):
    """The merged flame graph of the app's wall series names the workload's functions."""
    for i in (1, 3, 5):
        path, headers, body = captured("nodejs-0.6.4", i)
        assert server.request("POST", path, body=body, headers=headers)[0] == 200
    q = urllib.parse.urlencode({"query": 'wall:wall:nanoseconds:wall:nanoseconds:delta{service_name="nodeapp"}',
                                "start": "1796022400", "end": "1796022500", "format": "flamegraph"})
    js = server.get_json("/api/v1/profiles/query?" + q)
    fg = js["data"] if "data" in js else js
    assert fg["total"] == 4965650000 + 4935519000 + 1963230000
    assert "./pyroscope_push.js:sortRandom:63" in fg["names"], fg["names"][:50]


# ---- pyroscope-go's shape: multipart, sample_type_config, its tags ---------------------------------

GO_NAME = ("goapp{__session_id__=5f2c1b7a9e3d4c11,otel.scope.name=com.grafana.pyroscope/go,"
           "otel.scope.version=1.2.0,process.runtime.name=go,process.runtime.version=go1.19.8,env=prod}")
GO_LABELS = {"service_name": "goapp", "pyroscope_spy": "gospy", "__session_id__": "5f2c1b7a9e3d4c11",
             "otel_scope_name": "com.grafana.pyroscope/go", "otel_scope_version": "1.2.0",
             "process_runtime_name": "go", "process_runtime_version": "go1.19.8", "env": "prod"}
MUTEX_STC = {"contentions": {"units": "lock_samples", "display-name": "mutex_count"},
             "delay": {"units": "lock_nanoseconds", "display-name": "mutex_duration"}}
BLOCK_STC = {"contentions": {"units": "lock_samples", "display-name": "block_count"},
             "delay": {"units": "lock_nanoseconds", "display-name": "block_duration"}}
GOROUTINE_STC = {"goroutine": {"display-name": "goroutines", "units": "goroutines", "aggregation": "average"}}


@pytest.mark.parametrize("rel,stc,native_name", [
    ("go/cpu-01.pb.gz", None, None),
    ("go/heap-01.pb.gz", None, None),
    ("go/mutex-01.pb.gz", MUTEX_STC, "mutex"),
    ("go/block-01.pb.gz", BLOCK_STC, "block"),
    ("go/goroutine-01.pb.gz", GOROUTINE_STC, None),
])
def test_pyroscope_go_upload(server, rel, stc, native_name):
    """pyroscope-go's upload: no format, multipart with profile.pprof (and sample_type_config.json,
    whose display-names tell mutex from block); the type ids are those of the native push."""
    parts = [("profile", "profile.pprof", fixture_bytes(rel))]
    if stc is not None:
        parts.append(("sample_type_config", "sample_type_config.json", json.dumps(stc).encode()))
    body, headers = multipart(parts)
    q = {"name": GO_NAME, "from": "1796022000000000000", "until": "1796022010000000000", "spyName": "gospy",
         "sampleRate": "100", "units": "samples", "aggregationType": "sum"}
    st, js = ingest(server, q, body, headers)
    assert st == 200, server.last_raw[:300]
    types = [s["profile_type"] for s in js["data"]["series"]]
    for s in js["data"]["series"]:
        assert s["labels"] == dict(GO_LABELS, __name__=s["profile_type"])
    st, native = server.push(rel, labels='{job="native"}', name=native_name)
    assert st == 200, server.last_raw[:300]
    assert [s["profile_type"] for s in native["data"]["series"]] == types
    assert js["data"]["timestamp_ns"] == native["data"]["timestamp_ns"]  # the pprof's time_nanos


def test_mutex_without_sample_type_config_is_named_as_pyroscope_names_it(server):
    """Without display-names a Go mutex profile matches none of Pyroscope's rules: its name is
    then Pyroscope's fallback, the last sample type."""
    body, headers = multipart([("profile", "profile.pprof", fixture_bytes("go/mutex-01.pb.gz"))])
    st, js = ingest(server, {"name": "goapp"}, body, headers)
    assert st == 200, server.last_raw[:300]
    assert [s["profile_type"] for s in js["data"]["series"]] == [
        "delay:contentions:count:contentions:count", "delay:delay:nanoseconds:contentions:count"]


def test_format_pprof_takes_a_multipart_body_too(server):
    body, headers = multipart([("profile", "profile.pprof", fixture_bytes("go/cpu-01.pb.gz"))])
    st, js = ingest(server, {"name": "goapp", "format": "pprof"}, body, headers)
    assert st == 200, server.last_raw[:300]
    assert js["data"]["samples"] == 272


def test_raw_pprof_time_from_when_profile_has_none(server):
    """A pprof without time_nanos is stored at from (Pyroscope's fixTime)."""
    p = pd.decode(fixture_bytes("go/cpu-01.pb.gz"))
    assert p.time_nanos > 0
    p.time_nanos = 0
    st, js = ingest(server, {"name": "goapp", "format": "pprof", "from": "1796022000"}, pd.encode(p))
    assert st == 200, server.last_raw[:300]
    assert js["data"]["timestamp_ns"] == 1796022000 * 10**9


# ---- folded and lines bodies --------------------------------------------------------------------

def folded_rows(srv, sel: str) -> List[str]:
    q = urllib.parse.urlencode({"query": sel, "start": "1796021000", "end": "1796023000", "format": "folded"})
    st, _, data = srv.get("/api/v1/profiles/query?" + q)
    assert st == 200, data[:300]
    return sorted(data.decode().splitlines())


def test_folded_cpu_becomes_nanoseconds(server):
    body = b"main;work;compress 10\nmain;work 5\r\n\nmain;sort 3\n"
    q = {"name": "myapp.cpu{env=prod}", "from": "1796022000", "until": "1796022010", "sampleRate": "100",
         "spyName": "pyspy"}
    st, js = ingest(server, q, body, {"Content-Type": "text/plain"})
    assert st == 200, server.last_raw[:300]
    t = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
    s = js["data"]["series"]
    assert [x["profile_type"] for x in s] == [t]
    assert s[0]["labels"] == {"__name__": t, "env": "prod", "pyroscope_spy": "pyspy", "service_name": "myapp"}
    assert js["data"]["timestamp_ns"] == 1796022000 * 10**9
    got = server.series()
    assert [(p["ts"], p["duration"], p["period"], p["total"]) for p in got[0]["profiles"]] == [
        (1796022000 * 10**9, 10 * 10**9, 10000000, 180000000)]
    assert folded_rows(server, t + '{service_name="myapp"}') == [
        "main;sort 30000000", "main;work 50000000", "main;work;compress 100000000"]


def test_folded_same_type_as_a_native_go_cpu_profile(server):
    st, js = ingest(server, {"name": "app", "from": "1796022000"}, b"a;b 1\n")
    assert st == 200, server.last_raw[:300]
    st, native = server.push("go/cpu-01.pb.gz", labels='{job="native"}')
    t = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
    assert [s["profile_type"] for s in js["data"]["series"]] == [t]
    assert [s["profile_type"] for s in native["data"]["series"]] == ["process_cpu:samples:count:cpu:nanoseconds:delta", t]


def test_lines_format_counts_each_line_once(server):
    q = {"name": "app.wall", "format": "lines", "from": "1796022000", "until": "1796022005", "sampleRate": "50"}
    st, js = ingest(server, q, b"a;b\na;b\na;c\n")
    assert st == 200, server.last_raw[:300]
    t = "wall:wall:nanoseconds:cpu:nanoseconds:delta"
    assert [x["profile_type"] for x in js["data"]["series"]] == [t]
    assert folded_rows(server, t) == ["a;b 40000000", "a;c 20000000"]


@pytest.mark.parametrize("name,rate,want", [
    ("app.inuse_space", "100", "memory:inuse_space:bytes:inuse_space:bytes"),
    ("app.alloc_objects", "100", "memory:alloc_objects:count:alloc_objects:count"),
    ("app.goroutines", "100", "goroutine:goroutines:count:goroutines:count"),
    ("app.mutex_duration", "100", "mutex:delay:nanoseconds:delay:nanoseconds"),
    ("app.block_count", "100", "block:contentions:count:contentions:count"),
    ("app.cpu", "0", "process_cpu:samples:count:samples:count:delta"),
    ("my.app.itimer", "100", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"),
])
def test_folded_types_by_suffix(server, name, rate, want):
    st, js = ingest(server, {"name": name, "from": "1796022000", "sampleRate": rate}, b"f;g 7\n")
    assert st == 200, server.last_raw[:300]
    s = js["data"]["series"][0]
    assert s["profile_type"] == want
    assert s["labels"]["service_name"] == name.rsplit(".", 1)[0]
    total = server.series()[0]["profiles"][0]["total"]
    assert total == (7 * 10000000 if want.startswith("process_cpu:cpu") else 7)


def test_service_name_tag_wins(server):
    st, js = ingest(server, {"name": "app.cpu{service_name=svc, region = eu }", "from": "1796022000"}, b"f 1\n")
    assert st == 200, server.last_raw[:300]
    assert js["data"]["series"][0]["labels"] == {
        "__name__": "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", "service_name": "svc", "app_name": "app",
        "region": "eu", "pyroscope_spy": "unknown"}


def test_private_tags_dropped_but_session_id(server):
    st, js = ingest(server, {"name": "app{__x__=1,__session_id__=abc,__name__x=2,k=}", "from": "1796022000"},
                    b"f 1\n")
    assert st == 200, server.last_raw[:300]
    assert js["data"]["series"][0]["labels"] == {
        "__name__": "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", "service_name": "app",
        "__session_id__": "abc", "pyroscope_spy": "unknown"}


@pytest.mark.parametrize("value,ns", [
    ("20261130", 1795996800 * 10**9),  # YYYYMMDD: midnight UTC
    ("1796022000123", 1796022000123 * 10**6),
    ("1796022000123456", 1796022000123456 * 10**3),
    ("1796022000123456789", 1796022000123456789),
    ("1796022000", 1796022000 * 10**9),
])
def test_from_by_digit_count(server, value, ns):
    st, js = ingest(server, {"name": "app", "from": value}, b"f 1\n")
    assert st == 200, server.last_raw[:300]
    assert js["data"]["timestamp_ns"] == ns


# ---- bad input: a clear 4xx, nothing stored harmed, the server keeps serving -------------------------

@pytest.fixture(scope="module")
def bad_srv(module_server_factory):
    s = module_server_factory(name="pyro_bad", retention="0")
    path, headers, body = captured("nodejs-0.4.13", 1)
    st, _, data = s.request("POST", path, body=body, headers=headers)
    assert st == 200, data
    s.baseline = series_snapshot(s)
    sid = s.series()[0]["id"]
    ts = s.series()[0]["profiles"][0]["ts"]
    s.baseline_profile = (sid, ts, s.profile_bytes(sid, ts))
    return s


def check_refused(srv, st, js, want_status, want_msg):
    assert st == want_status, (st, srv.last_raw[:400])
    assert js is not None and js["status"] == "error", srv.last_raw[:400]
    assert js["error"] == want_msg, js["error"]
    assert series_snapshot(srv) == srv.baseline
    sid, ts, data = srv.baseline_profile
    assert srv.profile_bytes(sid, ts) == data
    assert srv.get("/-/ready")[0] == 200


OUT_OF_ORDER_MSG = ('out of order: series {__name__="process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", '
                    'pyroscope_spy="unknown", service_name="ooo"} already has a profile at 1796022100000000000 ns, '
                    'newer than this one at 1796022000000000000 ns')
NODE_Q = "from=1796022435&name=nodeapp%7Benv%3Dtest%7D&spyName=nodespy&until=1796022440"


def test_multipart_missing_boundary(bad_srv):
    _, _, body = captured("nodejs-0.4.13", 3)
    st, js = ingest(bad_srv, NODE_Q, body, {"Content-Type": "multipart/form-data"})
    check_refused(bad_srv, st, js, 400, "Content-Type: multipart/form-data without a boundary parameter")


def test_multipart_boundary_too_long(bad_srv):
    _, _, body = captured("nodejs-0.4.13", 3)
    st, js = ingest(bad_srv, NODE_Q, body, {"Content-Type": "multipart/form-data; boundary=" + "x" * 71})
    check_refused(bad_srv, st, js, 400, "Content-Type: the boundary must be 1 to 70 characters long, not 71")


def test_multipart_wrong_boundary(bad_srv):
    _, _, body = captured("nodejs-0.4.13", 3)
    st, js = ingest(bad_srv, NODE_Q, body, {"Content-Type": 'multipart/form-data; boundary="other"'})
    check_refused(bad_srv, st, js, 422, 'multipart body: the boundary "other" does not occur in it')


@pytest.mark.parametrize("cut", [100, 1500, -10])
def test_multipart_truncated_part(bad_srv, cut):
    _, headers, body = captured("nodejs-0.4.13", 3)
    msg = ("multipart part 1: headers not ended by an empty line (truncated)" if cut == 100
           else "multipart part 1: not ended by the boundary (truncated body)")
    st, js = ingest(bad_srv, NODE_Q, body[:cut], headers)
    check_refused(bad_srv, st, js, 422, msg)


def rss(srv) -> float:
    return srv.metrics()["process_resident_memory_bytes"]


def test_multipart_10000_parts(bad_srv):
    """Refused at the 65th part; memory stays bounded (the parser keeps at most 64 parts, and
    points into the body instead of copying it): 20 such bodies (1.8 MB each) add less than 16 MiB
    of resident memory, far from the 20 x 10,000 parts they hold."""
    body, headers = multipart([("p%d" % i, "f", b"x" * 64) for i in range(10000)])
    st, js = ingest(bad_srv, NODE_Q, body, headers)
    check_refused(bad_srv, st, js, 413, "multipart body: more than 64 parts")
    before = rss(bad_srv)
    for _ in range(20):
        st, js = ingest(bad_srv, NODE_Q, body, headers)
        assert st == 413, bad_srv.last_raw[:300]
    assert rss(bad_srv) - before < 16 * 2**20, (before, rss(bad_srv))


def test_multipart_huge_part_headers(bad_srv):
    body = (b"--b0undary\r\nContent-Disposition: form-data; name=\"profile\"\r\nX-Pad: " + b"a" * 20000 +
            b"\r\n\r\n" + fixture_bytes("go/cpu-01.pb.gz") + b"\r\n--b0undary--\r\n")
    st, js = ingest(bad_srv, NODE_Q, body, {"Content-Type": "multipart/form-data; boundary=b0undary"})
    check_refused(bad_srv, st, js, 413, "multipart part 1: headers longer than 8192 bytes")


def test_multipart_without_profile_part(bad_srv):
    body, headers = multipart([("other", "f", fixture_bytes("go/cpu-01.pb.gz"))])
    st, js = ingest(bad_srv, NODE_Q, body, headers)
    check_refused(bad_srv, st, js, 422, 'multipart body: no "profile" part (the pprof)')


def test_multipart_prev_profile_refused_as_pyroscope(bad_srv):
    cpu = fixture_bytes("go/heap-01.pb.gz")
    body, headers = multipart([("profile", "profile.pprof", cpu), ("prev_profile", "profile.pprof", cpu)])
    st, js = ingest(bad_srv, NODE_Q, body, headers)
    check_refused(bad_srv, st, js, 422, "unsupported client version (the upload has a prev_profile part). Please "
                                        "update github.com/grafana/pyroscope-go to the latest version")


def test_multipart_bad_sample_type_config(bad_srv):
    body, headers = multipart([("profile", "profile.pprof", fixture_bytes("go/mutex-01.pb.gz")),
                               ("sample_type_config", "sample_type_config.json", b'{"delay": 3}')])
    st, js = ingest(bad_srv, NODE_Q, body, headers)
    check_refused(bad_srv, st, js, 422, 'sample_type_config: "delay": expected an object')


def test_multipart_gzip_bomb(bad_srv):
    bomb = gzip.compress(b"\0" * (300 * 1000 * 1000), 9)
    body, headers = multipart([("profile", "profile.pprof", bomb)])
    st, js = ingest(bad_srv, NODE_Q, body, headers)
    check_refused(bad_srv, st, js, 413, "decompressed body exceeds 268435456 bytes")


def test_name_with_1000_tags(bad_srv):
    name = "app{" + ",".join("k%d=v" % i for i in range(1000)) + "}"
    st, js = ingest(bad_srv, {"name": name}, b"a;b 1\n")
    check_refused(bad_srv, st, js, 400, "name: more than 60 tags (a series has at most 64 labels, with __name__, "
                                        "service_name, pyroscope_spy and app_name)")


@pytest.mark.parametrize("name,msg", [
    ("", "name: missing (expected app.name{k=v,...})"),
    ("{env=x}", "name: the application name is empty (expected app.name{k=v,...})"),
    ("my app", "name: application name \"my app\": character ' ' (offset 2) is not allowed (allowed: [A-Za-z0-9_.-/])"),
    ("app{env=x", "name: the tags opened at offset 3 are not closed by '}'"),
    ("app{env=x}y", "name: unexpected text after '}' at offset 10"),
    ("app{env}", "name: tag \"env\" (at offset 4) has no '='"),
    ("app{=x}", "name: tag at offset 4 has an empty name"),
    ("app{e-v=x}", "name: tag name \"e-v\": character '-' (offset 5) is not allowed (allowed: [A-Za-z0-9_.])"),
    ("app{__name__=x}", "name: the tag name __name__ is reserved"),
    ("app{1a=x}", "name: invalid label name \"1a\": must match [a-zA-Z_][a-zA-Z0-9_]*"),
    ("app.nosuchtype", "name: unknown profile type \"nosuchtype\" (the suffix after the last '.' of the application "
                       "name, for folded and lines bodies: cpu, wall, inuse_space, alloc_objects, goroutines, "
                       "mutex_count, block_duration, ...)"),
])
def test_bad_name(bad_srv, name, msg):
    st, js = ingest(bad_srv, {"name": name}, b"a;b 1\n")
    check_refused(bad_srv, st, js, 400, msg)


def test_tag_value_too_long(bad_srv):
    st, js = ingest(bad_srv, {"name": "app{k=%s}" % ("v" * 361)}, b"a;b 1\n")
    check_refused(bad_srv, st, js, 400, "name: value of label k is 361 bytes long (the limit is 360)")


@pytest.mark.parametrize("params,msg", [
    ({"from": "yesterday"}, None),
    ({"until": "now-1x"}, None),
    ({"from": "1796022010", "until": "1796022000"},
     "until (1796022000000000000 ns) is before from (1796022010000000000 ns)"),
    ({"sampleRate": "fast"}, 'sampleRate: expected an integer from 0 to 1000000000 (Hz), got "fast"'),
    ({"sampleRate": "-1"}, 'sampleRate: expected an integer from 0 to 1000000000 (Hz), got "-1"'),
    ({"aggregationType": "max"}, 'aggregationType: expected sum or average, got "max"'),
    ({"format": "png"}, 'format: unknown format "png" (expected pprof, lines, groups or none)'),
    ({"spyName": "s" * 361}, "spyName: longer than 360 bytes"),
])
def test_bad_parameters(bad_srv, params, msg):
    st, js = ingest(bad_srv, dict({"name": "app"}, **params), b"a;b 1\n")
    if msg is None:  # the time parser's own words, after the parameter's name
        key = next(iter(params))
        assert js is not None and js["error"].startswith(key + ": "), bad_srv.last_raw[:300]
        msg = js["error"]
    check_refused(bad_srv, st, js, 400, msg)


@pytest.mark.parametrize("fmt", ["trie", "tree", "jfr", "speedscope"])
def test_unsupported_formats(bad_srv, fmt):
    st, js = ingest(bad_srv, {"name": "app", "format": fmt}, b"\x01\x02\x03")
    check_refused(bad_srv, st, js, 415, "format=%s is not supported by profstore: send pprof (format=pprof, or a "
                                        "multipart/form-data upload), folded lines (no format) or format=lines" % fmt)


def test_unsupported_trie_content_type(bad_srv):
    st, js = ingest(bad_srv, {"name": "app"}, b"\x01\x02", {"Content-Type": "binary/octet-stream+trie"})
    check_refused(bad_srv, st, js, 415, "Content-Type binary/octet-stream+trie (the trie format) is not supported "
                                        "by profstore: send pprof or folded lines")


@pytest.mark.parametrize("body,msg", [
    (b"", "empty body"),
    (b"\n\n", 'the body has no samples (expected "frame;frame;... count" lines)'),
    (b"a;b 12\nnospace\n", 'line 2: no space before the count (expected "frame;frame;... count")'),
    (b"a;b 1x\n", 'line 1: "1x" is not a sample count (expected "frame;frame;... count")'),
    (b"a;b 99999999999999999\n", "line 1: the value 99999999999999999 is too large"),
    (b"a;\xff 1\n", "line 1: frame 2 is not valid UTF-8"),
    (gzip.compress(b"a;b 1\n", mtime=0), "the body is gzip-compressed (a pprof profile?): send it with format=pprof; "
                                          "without a format the body is read as folded lines"),
])
def test_bad_folded_body(bad_srv, body, msg):
    st, js = ingest(bad_srv, {"name": "app"}, body, {"Content-Type": "text/plain"})
    check_refused(bad_srv, st, js, 422, msg)


@pytest.mark.parametrize("body,msg", [
    (b"\x0a\x05garbage", None),
    (b"main;f 1\n", 'body looks like text ("main;f 1\\n"): expected a pprof profile (gzipped or not)'),
    (b"--b\r\n", "the body looks like multipart/form-data, but the Content-Type is not multipart/form-data with a "
                 "boundary"),
])
def test_bad_pprof_body(bad_srv, body, msg):
    st, js = ingest(bad_srv, {"name": "app", "format": "pprof"}, body)
    if msg is None:
        assert js is not None, bad_srv.last_raw[:300]
        msg = js["error"]
    check_refused(bad_srv, st, js, 422, msg)


def test_body_too_large(make_server):
    s = make_server(retention="0", max_body_size="64KiB")
    path, headers, body = captured("nodejs-0.4.13", 1)
    assert s.request("POST", path, body=body, headers=headers)[0] == 200
    before = series_snapshot(s)
    big, headers = multipart([("profile", "profile.pprof", b"\x0a" * (70 * 1024))])
    st, js = ingest(s, NODE_Q, big, headers)
    assert st == 413, (st, s.last_raw[:300])
    # answered at its Content-Length, before the body is read (web/connguard.c; h2o's own limit is
    # --debuginfo.max-file-bytes, the larger)
    assert js == {"status": "error", "errorType": "bad_data",
                  "error": "request body of %d bytes is larger than --max-body-size (65536 bytes)" % len(big)}
    assert series_snapshot(s) == before
    assert s.get("/-/ready")[0] == 200
    path, headers, body = captured("nodejs-0.4.13", 3)
    assert s.request("POST", path, body=body, headers=headers)[0] == 200


def test_out_of_order_is_422(bad_srv):
    """A store refusal is one of Pyroscope's "other ingest errors": 422."""
    st, js = ingest(bad_srv, {"name": "ooo", "from": "1796022100"}, b"a;b 1\n")
    assert st == 200, bad_srv.last_raw[:300]
    bad_srv.baseline = series_snapshot(bad_srv)
    st, js = ingest(bad_srv, {"name": "ooo", "from": "1796022000"}, b"a;b 1\n")
    check_refused(bad_srv, st, js, 422, OUT_OF_ORDER_MSG)


def test_get_is_405(bad_srv):
    st, hdrs, data = bad_srv.get("/ingest?name=app")
    assert st == 405 and hdrs.get("allow") == "POST", data[:200]
