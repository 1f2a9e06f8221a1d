"""Shared (ad hoc) profiles: adhocprofiles.v1.AdHocProfileService (Upload, Get, List, Diff) over
Connect with protoc-generated classes (pyro_util.py) in both codecs, and GET /api/v1/profiles/adhoc
(what the UI's shared view and `go tool pprof` read). Uploads are pprof, Pyroscope's flamebearer
JSON (profstore's own /pyroscope/render answer round-trips exactly), `perf script` output (a real
capture) and folded stacks. Values are checked against profstore's own
render of the same profile pushed as a series, `go tool pprof -top` and hand-computed folded trees;
bad input gets exact messages; uploads survive a restart, are dropped oldest first past the
limits, and change nothing else stored."""

import base64
import gzip
import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import PPROF_DIR, go_pprof, parse_pprof_top, series_snapshot
from pyro_util import connect_call, pyro_pb

SVC = "adhocprofiles.v1.AdHocProfileService/"
ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}-(.*)$")
CPU01 = PPROF_DIR / "go" / "cpu-01.pb.gz"
CPU02 = PPROF_DIR / "go" / "cpu-02.pb.gz"
HEAP = PPROF_DIR / "go" / "heap-01.pb.gz"
FOLDED = b"a;b;c 3\na;b 2\nz 1\n"


def pb():
    return pyro_pb().adhoc


def upload(srv, name, data: bytes, codec="json", max_nodes=None, expect=200):
    req = pb().AdHocProfilesUploadRequest(name=name, profile=base64.b64encode(data).decode())
    if max_nodes is not None:
        req.max_nodes = max_nodes
    r = connect_call(srv.port, SVC + "Upload", req, codec=codec, resp_type=pb().AdHocProfilesGetResponse)
    assert r.status == expect, r
    return r.msg if expect == 200 else r


def get(srv, id_, profile_type=None, codec="json", max_nodes=None, expect=200):
    req = pb().AdHocProfilesGetRequest(id=id_)
    if profile_type is not None:
        req.profile_type = profile_type
    if max_nodes is not None:
        req.max_nodes = max_nodes
    r = connect_call(srv.port, SVC + "Get", req, codec=codec, resp_type=pb().AdHocProfilesGetResponse)
    assert r.status == expect, r
    return r.msg if expect == 200 else r


def list_(srv, codec="json"):
    r = connect_call(srv.port, SVC + "List", pb().AdHocProfilesListRequest(), codec=codec,
                     resp_type=pb().AdHocProfilesListResponse)
    assert r.status == 200, r
    return [(p.id, p.name, p.uploaded_at) for p in r.msg.profiles]


def diff(srv, left, right, profile_type=None, codec="json", expect=200):
    req = pb().AdHocProfilesDiffRequest(left_id=left, right_id=right)
    if profile_type is not None:
        req.profile_type = profile_type
    r = connect_call(srv.port, SVC + "Diff", req, codec=codec, resp_type=pb().AdHocProfilesDiffResponse)
    assert r.status == expect, r
    return r.msg if expect == 200 else r


def http_get(srv, path, **params):
    st, hdrs, body = srv.get(path + "?" + urllib.parse.urlencode(params), timeout=30)
    return st, hdrs, body


def render_of(srv, cpu_type_id, ts_ms, **params):
    """profstore's /pyroscope/render of the pushed series at one time (its flamebearer)."""
    st, _, body = http_get(srv, "/pyroscope/render", query=cpu_type_id + '{job="adhoc"}',
                           **{"from": str(ts_ms // 1000 - 1), "until": str(ts_ms // 1000 + 1)}, **params)
    assert st == 200, body[:300]
    return json.loads(body)


def test_upload_pprof_both_codecs_and_render(server):
    raw_gz = CPU01.read_bytes()
    raw = gzip.decompress(raw_gz)
    before = int(time.time() * 1000)
    a = upload(server, "cpu-01.pb.gz", raw_gz, codec="json")
    b = upload(server, "cpu 01 (raw).pb", raw, codec="proto")
    after = int(time.time() * 1000)
    assert ID_RE.match(a.id).group(1) == "cpu-01.pb.gz" and a.name == "cpu-01.pb.gz"
    assert ID_RE.match(b.id).group(1) == "cpu_01__raw_.pb" and b.name == "cpu_01__raw_.pb"
    for m in (a, b):
        assert before <= m.uploaded_at <= after
        assert list(m.profile_types) == ["samples", "cpu"] and m.profile_type == "samples"
    fa, fb = json.loads(a.flamebearer_profile), json.loads(b.flamebearer_profile)
    assert fa == fb  # gzipped or not: one profile
    assert fa["flamebearer"]["numTicks"] == 298  # 2980ms of 10ms samples (cpu-01.top.txt)
    assert fa["metadata"] == {"format": "single", "spyName": "", "sampleRate": 100, "units": "objects",
                              "name": "samples"}
    assert (fa["timeline"], fa["groups"], fa["heatmap"]) == (None, None, None)
    cpu = get(server, a.id, profile_type="cpu")
    fc = json.loads(cpu.flamebearer_profile)
    assert cpu.profile_type == "cpu" and fc["flamebearer"]["numTicks"] == 2980000000
    assert fc["metadata"]["units"] == "samples" and fc["metadata"]["sampleRate"] == 1000000000
    # the same bytes pushed as a series: /pyroscope/render's flame graph is the same one
    st, js = server.push(str(CPU01), labels='{job="adhoc"}')
    assert st == 200, js
    ts_ms = js["data"]["timestamp_ns"] // 1000000
    rendered = render_of(server, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", ts_ms)
    assert rendered["flamebearer"] == fc["flamebearer"]
    # max_nodes as Pyroscope's: the 16 largest nodes and "other"
    small = json.loads(get(server, a.id, profile_type="cpu", max_nodes=16).flamebearer_profile)
    r16 = render_of(server, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", ts_ms, maxNodes="16")
    assert small["flamebearer"] == r16["flamebearer"] and "other" in small["flamebearer"]["names"]
    # an unknown profile_type answers the first, as Pyroscope's
    assert get(server, a.id, profile_type="nope").profile_type == "samples"
    # Get in the binary codec: the same answer
    g = get(server, b.id, profile_type="cpu", codec="proto")
    assert json.loads(g.flamebearer_profile) == fc and g.name == "cpu_01__raw_.pb"


def test_folded_exact(server):
    gz = upload(server, "stacks.txt.gz", gzip.compress(FOLDED))  # gzipped text: folded too
    assert list(gz.profile_types) == ["samples"]
    m = upload(server, "stacks.txt", FOLDED)
    assert gz.flamebearer_profile == m.flamebearer_profile
    assert list(m.profile_types) == ["samples"] and m.profile_type == "samples"
    assert json.loads(m.flamebearer_profile) == {
        "version": 1,
        "flamebearer": {"names": ["total", "a", "b", "c", "z"],
                        "levels": [[0, 6, 0, 0], [0, 5, 0, 1, 0, 1, 1, 4], [0, 5, 2, 2], [2, 3, 3, 3]],
                        "numTicks": 6, "maxSelf": 3},
        "metadata": {"format": "single", "spyName": "unknown", "sampleRate": 100, "units": "objects",
                     "name": "samples"},
        "timeline": None, "groups": None, "heatmap": None}
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=m.id, format="folded")
    assert st == 200 and body == b"a;b 2\na;b;c 3\nz 1\n"
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=m.id, format="top")
    top = json.loads(body)
    assert top["total"] == 6
    assert [(r["function"], r["flat"], r["cum"]) for r in top["rows"]] == \
        [("c", 3, 3), ("b", 2, 5), ("z", 1, 1), ("a", 0, 5)]


def test_adhoc_route_go_tool_pprof_top(server, tmp_path):
    m = upload(server, "cpu-01.pb.gz", CPU01.read_bytes())
    golden = (PPROF_DIR / "go" / "cpu-01.top.txt").read_text()
    r = go_pprof(["-top", "-nodecount=10", "-symbolize=none",
                  server.url("/api/v1/profiles/adhoc?id=" + m.id)], tmp_path)
    _, got = parse_pprof_top(r.stdout)
    _, want = parse_pprof_top(golden)
    assert got == want
    # the JSON top table of the cpu type: pprof's flat/cum of the same rows
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=m.id, type="cpu", format="top", limit="10")
    top = json.loads(body)
    assert top["total"] == 2980000000
    assert [(r["function"], r["flat"] // 10000000, r["cum"] // 10000000) for r in top["rows"][:5]] == \
        [("compress/flate.(*compressor).findMatch", 73, 89), ("sort.partition", 36, 55),
         ("runtime.asyncPreempt", 24, 24), ("runtime.memclrNoHeapPointers", 18, 18), ("crypto/sha256.block", 16, 16)]


def test_list_newest_first_and_restart(server):
    ids = [upload(server, "f%d.txt" % i, FOLDED).id for i in range(3)]
    lst = list_(server)
    assert [x[0] for x in lst] == ids[::-1] and [x[1] for x in lst] == ["f2.txt", "f1.txt", "f0.txt"]
    assert lst[0][2] >= lst[1][2] >= lst[2][2]
    assert list_(server, codec="proto") == lst
    want = get(server, ids[1]).flamebearer_profile
    server.stop()
    # --storage.check reads the adhoc records too
    import subprocess
    from conftest import PROFSTORE_BIN
    r = subprocess.run([PROFSTORE_BIN, "--storage.check", "--data-dir", str(server.data_dir)], capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout.rstrip().endswith("checked: no damage found")) == (0, True), r.stdout + r.stderr
    server.start()
    server.restart(kill=True)
    assert list_(server) == lst
    assert get(server, ids[1]).flamebearer_profile == want


def test_diff(server):
    a = upload(server, "cpu-01.pb.gz", CPU01.read_bytes())
    b = upload(server, "cpu-02.pb.gz", CPU02.read_bytes(), codec="proto")
    d = diff(server, a.id, b.id, profile_type="cpu")
    assert list(d.profile_types) == ["samples", "cpu"]
    fd = json.loads(d.flamebearer_profile)
    assert fd["metadata"]["format"] == "double" and fd["metadata"]["name"] == "cpu"
    la = json.loads(get(server, a.id, profile_type="cpu").flamebearer_profile)["flamebearer"]["numTicks"]
    lb = json.loads(get(server, b.id, profile_type="cpu").flamebearer_profile)["flamebearer"]["numTicks"]
    assert (fd["leftTicks"], fd["rightTicks"], fd["flamebearer"]["numTicks"]) == (la, lb, la + lb)
    # the same two pushed as series: /pyroscope/render-diff's flame graph is the same one
    ts = []
    for f, side in ((CPU01, "l"), (CPU02, "r")):
        st, js = server.push(str(f), labels='{job="d%s"}' % side)
        assert st == 200
        ts.append(js["data"]["timestamp_ns"] // 10**9)
    t = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    st, _, body = http_get(server, "/pyroscope/render-diff", leftQuery=t + '{job="dl"}', rightQuery=t + '{job="dr"}',
                           leftFrom=str(ts[0] - 1), leftUntil=str(ts[0] + 1), rightFrom=str(ts[1] - 1),
                           rightUntil=str(ts[1] + 1))
    assert st == 200, body[:300]
    assert json.loads(body)["flamebearer"] == fd["flamebearer"]
    # the HTTP diff: a top table of compare - base, percentages of the base's total
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=a.id, compare=b.id, type="cpu", format="top")
    top = json.loads(body)
    assert top["total"] == la and sum(r["flat"] for r in top["rows"]) == lb - la
    # errors, Pyroscope's words
    f = upload(server, "f.txt", FOLDED)
    h = upload(server, "heap.pb.gz", HEAP.read_bytes())
    r = diff(server, f.id, h.id, expect=400)
    assert r.error == {"code": "invalid_argument", "message":
                       "no common profile types between left ([samples]) and right "
                       "([alloc_objects alloc_space inuse_objects inuse_space])"}
    r = diff(server, a.id, f.id, profile_type="cpu", expect=400)
    assert r.error["message"] == ("profile type mismatch: left profile uses 'cpu', right profile uses 'samples'; "
                                  "please specify a profile type from the common types: [samples]")
    r = diff(server, a.id, "01AAAAAAAAAAAAAAAAAAAAAAAA-x", expect=404)
    assert r.error == {"code": "not_found", "message": "right profile 01AAAAAAAAAAAAAAAAAAAAAAAA-x not found"}
    r = diff(server, "a/b", a.id, expect=400)
    assert r.error["message"] == "id 'a/b' is invalid: can only contain [a-zA-Z0-9_-.]"


def _levels_stacks(fb):
    """A flamebearer's stacks with a self value: {"a;b;c": self}, as Pyroscope reads them back."""
    names, levels = fb["names"], fb["levels"]
    nodes = []  # per level: [(x, total, self, name)]
    for lv in levels:
        row, end = [], 0
        for i in range(0, len(lv), 4):
            x = end + lv[i]
            row.append((x, lv[i + 1], lv[i + 2], names[lv[i + 3]]))
            end = x + lv[i + 1]
        nodes.append(row)
    out = {}
    for d in range(1, len(nodes)):
        for x, _, self_, name in nodes[d]:
            if self_ == 0:
                continue
            stack, cx = [name], x
            for up in range(d - 1, 0, -1):
                px, _, _, pname = max((n for n in nodes[up] if n[0] <= cx), key=lambda n: n[0])
                stack.append(pname)
                cx = px
            out[";".join(reversed(stack))] = self_
    return out


PERF = Path(__file__).resolve().parents[1] / "testdata" / "perf" / "prog-script.txt"
PERF_STACKS = {"prog;__libc_start_call_main;main;leaf_a": 84, "prog;__libc_start_call_main;main;leaf_b": 21,
               "prog;__libc_start_call_main;leaf_b": 20,
               "prog;__libc_start_call_main;main;leaf_a;asm_sysvec_reschedule_ipi;irqentry_exit_to_user_mode": 1}


def test_flamebearer_json_round_trip(server):
    """profstore's own /pyroscope/render JSON uploaded: Get answers the same flame graph and metadata,
    for the whole profile and for one cut to 16 nodes and "other"; an upload's own Get JSON too."""
    st, js = server.push(str(CPU01), labels='{job="adhoc"}')
    assert st == 200, js
    ts_ms = js["data"]["timestamp_ns"] // 1000000
    for params in ({}, {"maxNodes": "16"}):
        st, _, body = http_get(server, "/pyroscope/render", query='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
                               '{job="adhoc"}', **{"from": str(ts_ms // 1000 - 1), "until": str(ts_ms // 1000 + 1)},
                               **params)
        assert st == 200
        rendered = json.loads(body)
        m = upload(server, "render.json", body)
        assert list(m.profile_types) == ["cpu"] and m.profile_type == "cpu"
        got = json.loads(m.flamebearer_profile)
        assert got["flamebearer"] == rendered["flamebearer"]
        md = {k: rendered["metadata"][k] for k in ("format", "spyName", "sampleRate", "units", "name")}
        assert got["metadata"] == md == {"format": "single", "spyName": "", "sampleRate": 1000000000,
                                         "units": "samples", "name": "cpu"}
        assert got["version"] == 1 and got["flamebearer"]["numTicks"] == 2980000000
        # and gzipped, and Get again after it was stored
        again = get(server, upload(server, "render.json.gz", gzip.compress(body)).id)
        assert json.loads(again.flamebearer_profile) == got
    assert "other" in rendered["flamebearer"]["names"]  # the last one was cut
    # the ad hoc Get of a pprof upload, exported as Pyroscope's UI exports it, and uploaded
    heap = json.loads(upload(server, "heap.pb.gz", HEAP.read_bytes()).flamebearer_profile)
    back = json.loads(upload(server, "heap.json", json.dumps(heap).encode()).flamebearer_profile)
    assert back == heap and heap["metadata"]["name"] == "alloc_objects"
    # the folded download of the JSON upload: the stacks and values the flame graph holds
    m = upload(server, "x.json", json.dumps(heap).encode())
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=m.id, format="folded")
    assert st == 200
    folded = dict(l.rsplit(" ", 1) for l in body.decode().splitlines())
    assert {k: int(v) for k, v in folded.items()} == _levels_stacks(heap["flamebearer"])
    # a diff of two JSON uploads: as the diff of the pprof files they came from
    r1 = json.loads(get(server, upload(server, "c1.pb.gz", CPU01.read_bytes()).id, "cpu").flamebearer_profile)
    r2 = json.loads(get(server, upload(server, "c2.pb.gz", CPU02.read_bytes()).id, "cpu").flamebearer_profile)
    j1 = upload(server, "c1.json", json.dumps(r1).encode())
    j2 = upload(server, "c2.json", json.dumps(r2).encode())
    p1 = upload(server, "c1.pb.gz", CPU01.read_bytes())
    p2 = upload(server, "c2.pb.gz", CPU02.read_bytes())
    dj = json.loads(diff(server, j1.id, j2.id).flamebearer_profile)
    dp = json.loads(diff(server, p1.id, p2.id, profile_type="cpu").flamebearer_profile)
    assert dj["flamebearer"] == dp["flamebearer"] and dj["leftTicks"] == 2980000000


def test_perf_script_exact(server, tmp_path):
    """A real `perf script` capture (tests/testdata/perf): one sample a event, the command as the root,
    perf's +0x offsets cut; the exact count of every stack in the flame graph, the folded and the pprof
    download (go tool pprof)."""
    text = PERF.read_bytes()
    m = upload(server, "prog-script.txt", text)
    assert list(m.profile_types) == ["samples"]
    fb = json.loads(m.flamebearer_profile)
    assert fb["metadata"] == {"format": "single", "spyName": "unknown", "sampleRate": 100, "units": "objects",
                              "name": "samples"}
    assert fb["flamebearer"]["numTicks"] == 126 and fb["flamebearer"]["maxSelf"] == 84
    assert _levels_stacks(fb["flamebearer"]) == PERF_STACKS
    st, _, body = http_get(server, "/api/v1/profiles/adhoc", id=m.id, format="folded")
    assert st == 200 and body.decode() == "".join("%s %d\n" % kv for kv in sorted(PERF_STACKS.items()))
    # gzipped: the same
    assert upload(server, "prog-script.txt.gz", gzip.compress(text)).flamebearer_profile == m.flamebearer_profile
    # go tool pprof reads the pprof download: flat per leaf function
    r = go_pprof(["-top", "-symbolize=none", server.url("/api/v1/profiles/adhoc?id=" + m.id)], tmp_path)
    _, rows = parse_pprof_top(r.stdout)
    assert [(row[0], row[3], row[5]) for row in rows] == [
        ("84", "85", "leaf_a"), ("41", "41", "leaf_b"), ("1", "1", "irqentry_exit_to_user_mode"),
        ("0", "126", "__libc_start_call_main"), ("0", "1", "asm_sysvec_reschedule_ipi"), ("0", "106", "main"),
        ("0", "126", "prog")]


def _gzip_zeros(n):
    return gzip.compress(b"\0" * n, 9)


def test_bad_input(make_server):
    srv = make_server(retention="0", max_inflated_size="1MiB", max_body_size="4MiB",
                      extra_args=["--adhoc.max-bytes", "1MiB"])
    st, js = srv.push(str(CPU01), labels='{job="keep"}')
    assert st == 200
    snap = series_snapshot(srv)
    ok = upload(srv, "ok.txt", FOLDED)  # a good upload changes no series either
    assert series_snapshot(srv) == snap

    def bad(name, data, message, status=400, code="invalid_argument"):
        r = upload(srv, name, data, expect=status)
        assert r.error == {"code": code, "message": message}, r.error

    bad("bomb.pb.gz", _gzip_zeros(2 << 20), "gzip: decompressed body exceeds 1048576 bytes")
    bad("x.gz", b"\x1f\x8b\x08\x00garbage", "gzip: unexpected end of data (truncated stream after 0 bytes out)")
    bad("x.gz", gzip.compress(b""), "gzip: the profile is empty once decompressed")
    bad("x.gz", gzip.compress(gzip.compress(FOLDED)), "gzip: gzip inside gzip")
    bad("x", b"", "profile: missing (the file, base64)")
    bad("x", b"\x00\x01\x02garbage", "pprof: " + _pprof_error(srv, b"\x00\x01\x02garbage"))
    bad("x.json", b' {"flamebearer":{}}', "flamebearer JSON: metadata: missing, not an object")
    bad("x.json", b'{"flamebearer":{"names":["total"],"levels":[[0,1,0,0]]}', "flamebearer JSON: line 1 column 55: "
        "'}' expected near end of file")
    bad("x.json", b'{"version":1,"flamebearer":{"names":["total","a"],"levels":[[0,1,0,0],[0,1,1,2]]},'
        b'"metadata":{"format":"single"}}', "flamebearer JSON: flamebearer.levels[1][3]: name index 2, there are 2 names")
    bad("x.json", b'{"metadata":{"format":"double"}}', "flamebearer JSON: metadata.format: \"double\" (a diff) cannot "
        "be uploaded, as in Pyroscope: upload its two profiles and diff them")
    bad("x.json", b'{"a":' + b"[" * 100, "flamebearer JSON: line 1 column 69: nesting deeper than 64")
    bad("x.json", gzip.compress(b'{"a":[' + b"0," * 400000 + b'0]}'), "flamebearer JSON: 400004 values need more "
        "than the 4194304 bytes of memory allowed")
    bad("perf.txt", b"prog 12 1.5: 1 cycles:\n\t  4005d0 main+0x10 (/bin/prog)\n\tnot-a-frame\n",
        "perf script: line 3: \"not-a-frame\" is not a stack frame (expected \"address symbol (dso)\")")
    bad("perf.txt", b"prog 12 1.5: 1 cycles:\n\t  4005d0 main (/bin/prog)\n\n\t  4005d0 main (/bin/prog)\n",
        "perf script: line 4: a frame outside an event (an event header comes first)")
    bad("x.txt", b"a;b 3\nno-count\n", "folded stacks: line 2: no space before the count "
        "(expected \"frame;frame;... count\")")
    bad("x.txt", b"a;b x3\n", "folded stacks: line 1: \"x3\" is not a sample count (expected \"frame;frame;... count\")")
    bad("n" * 201, FOLDED, "name: 201 characters, more than 200")
    bad("big.txt", b"a 1\n" * (3 << 17), "the profile is 1572864 bytes, more than the 1048576 all ad hoc profiles "
        "may hold (--adhoc.max-bytes)")
    r = connect_call(srv.port, SVC + "Upload", None, codec="json", body=b'{"name":"x","profile":"!!!!"}')
    assert (r.status, r.error["message"]) == (400, "profile: not base64: character 0 (0x21) is outside the standard alphabet")
    # over --max-body-size: h2o's 413 before anything is decoded
    r = connect_call(srv.port, SVC + "Upload", None, codec="json",
                     body=b'{"name":"x","profile":"' + b"A" * (5 << 20) + b'"}')
    assert r.status == 413
    r = get(srv, "01AAAAAAAAAAAAAAAAAAAAAAAA-nope", expect=404)
    assert r.error == {"code": "not_found", "message": "profile 01AAAAAAAAAAAAAAAAAAAAAAAA-nope not found"}
    r = get(srv, "../etc", expect=400)
    assert r.error["message"] == "id '../etc' is invalid: can only contain [a-zA-Z0-9_-.]"
    r = get(srv, "", expect=400)
    assert r.error["message"] == "id '' is invalid: can only contain [a-zA-Z0-9_-.]"
    r = get(srv, ok.id, max_nodes=-1, expect=400)
    assert r.error["code"] == "invalid_argument"
    st, _, body = http_get(srv, "/api/v1/profiles/adhoc", id=ok.id, type="cpu", format="top")
    assert st == 400 and json.loads(body)["error"] == \
        'invalid parameter "type": profile %s has no sample type "cpu"' % ok.id
    # nothing else stored changed; the good upload is still there and alone
    assert series_snapshot(srv) == snap
    assert [x[0] for x in list_(srv)] == [ok.id]
    assert srv.running()


def _pprof_error(srv, data):
    """What the native push says of the same bytes (the one pprof decoder)."""
    st, js = srv.push(data, labels='{job="never"}')
    assert st == 400, js
    msg = js["error"]
    return msg[msg.index(": ") + 2:] if msg.startswith("profile: ") else msg


def test_oldest_dropped_past_limits(make_server):
    srv = make_server(retention="0", extra_args=["--adhoc.max-profiles", "2"])
    ids = [upload(srv, "p%d.txt" % i, FOLDED).id for i in range(3)]
    assert [x[0] for x in list_(srv)] == [ids[2], ids[1]]
    r = get(srv, ids[0], expect=404)
    assert r.error["message"] == "profile %s not found" % ids[0]
    srv2 = make_server(name="bytes", retention="0", extra_args=["--adhoc.max-bytes", "100B"])
    one = upload(srv2, "a.txt", b"a;b 1\n" * 10)    # 60 bytes
    two = upload(srv2, "b.txt", b"a;b 1\n" * 10)    # 120 > 100: the first goes
    assert [x[0] for x in list_(srv2)] == [two.id]
    assert get(srv2, one.id, expect=404).status == 404


def test_scopes(make_server, tmp_path):
    """Upload needs the write scope; Get, List, Diff and /api/v1/profiles/adhoc the read scope."""
    import hashlib

    def sha(t):
        return hashlib.sha256(t.encode()).hexdigest()
    (tmp_path / "web.yml").write_text("bearer_tokens:\n  - sha256: %s\n    scopes: [read]\n"
                                      "  - sha256: %s\n    scopes: [write]\n" % (sha("tok-read"), sha("tok-write")))
    srv = make_server(retention="0", web_config_file=tmp_path / "web.yml")
    rd, wr = {"Authorization": "Bearer tok-read"}, {"Authorization": "Bearer tok-write"}
    body = json.dumps({"name": "f.txt", "profile": base64.b64encode(FOLDED).decode()}).encode()

    def call(method, msg, hdrs):
        return connect_call(srv.port, SVC + method, None, codec="json", body=msg, headers=hdrs)
    r = call("Upload", body, rd)
    assert (r.status, r.error) == (403, {"code": "permission_denied", "message":
                                         "forbidden: this credential lacks the write scope that "
                                         "/adhocprofiles.v1.AdHocProfileService/Upload needs"})
    r = call("Upload", body, wr)
    assert r.status == 200, r
    id_ = json.loads(r.body)["id"]
    for method, msg in (("Get", {"id": id_}), ("List", {}), ("Diff", {"leftId": id_, "rightId": id_})):
        r = call(method, json.dumps(msg).encode(), wr)
        assert (r.status, r.error["code"]) == (403, "permission_denied"), method
        assert call(method, json.dumps(msg).encode(), rd).status == 200, method
    st, _, _ = srv.request("GET", "/api/v1/profiles/adhoc?id=" + id_, headers=wr)
    assert st == 403
    st, _, body = srv.request("GET", "/api/v1/profiles/adhoc?format=folded&id=" + id_, headers=rd)
    assert (st, body) == (200, b"a;b 2\na;b;c 3\nz 1\n")


def test_drilldown_ad_hoc_view(server):
    """Grafana Profiles Drilldown's ad hoc view (its AdHocProfileClient) as it writes the JSON: Upload
    {name, profile} with the file read by FileReader as a data URL, the prefix stripped; Get {id,
    profile_type}; it reads id, profileTypes and flamebearerProfile."""
    def call(method, obj):
        r = connect_call(server.port, SVC + method, None, codec="json", body=json.dumps(obj).encode())
        assert r.status == 200, r
        return json.loads(r.body)
    up = call("Upload", {"name": "heap-01.pb.gz", "profile": base64.b64encode(HEAP.read_bytes()).decode()})
    assert up["profileTypes"] == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]
    first = json.loads(up["flamebearerProfile"])
    assert first["metadata"]["name"] == "alloc_objects" and first["metadata"]["units"] == "objects"
    got = call("Get", {"id": up["id"], "profile_type": "inuse_space"})
    fb = json.loads(got["flamebearerProfile"])
    assert got["id"] == up["id"] and got["name"] == "heap-01.pb.gz" and got["profileType"] == "inuse_space"
    assert fb["metadata"]["units"] == "bytes" and fb["metadata"]["name"] == "inuse_space"
    # its total is the stored series' inuse_space total at that time (the same file pushed)
    st, js = server.push(str(HEAP), labels='{job="adhoc"}')
    assert st == 200
    sid = [s["id"] for s in js["data"]["series"] if s["profile_type"].startswith("memory:inuse_space:bytes")][0]
    stored = {s["id"]: s for s in server.series()}[sid]["profiles"][0]["total"]
    assert fb["flamebearer"]["numTicks"] == stored
    # profile_type absent (undefined in its JSON.stringify): the first
    assert call("Get", {"id": up["id"]})["profileType"] == "alloc_objects"


def test_agent_mode_refuses(make_server, tmp_path):
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n  - name: x\n    url: http://127.0.0.1:9\n    protocol: pyroscope_push\n")
    srv = make_server(retention="0", config=str(cfg), extra_args=["--agent"])
    r = upload(srv, "f.txt", FOLDED, expect=400)
    assert r.error["message"] == ("agent mode: ad hoc profiles are not kept (queries go to the engine this "
                                  "profstore forwards to)")
    assert get(srv, "01AAAAAAAAAAAAAAAAAAAAAAAA-x", expect=400).status == 400


def test_damaged_record_reported(make_server):
    """A damaged ad hoc record: --storage.check names it; Get answers data_loss naming it; the others
    and List still answer."""
    import subprocess
    from conftest import PROFSTORE_BIN
    from test_damaged_store import record_spans
    srv = make_server(retention="0")
    a = upload(srv, "a.txt", FOLDED)
    b = upload(srv, "b.txt", FOLDED)
    srv.stop()
    spans = {k.decode(): (off, n) for k, off, n, _ in record_spans(srv.data_dir, "adhoc")}
    off, n = spans[a.id]
    with open(srv.data_dir / "data.mdb", "r+b") as f:  # the encoding byte
        f.seek(off)
        f.write(b"\x07")
    r = subprocess.run([PROFSTORE_BIN, "--storage.check", "--data-dir", str(srv.data_dir)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == "damaged: ad hoc profile %s: a record of %d bytes, not of encoding 01" % (a.id, n)
    srv.start()
    e = get(srv, a.id, expect=500)
    assert e.error == {"code": "data_loss", "message": "ad hoc profile %s: a record of %d bytes, not of encoding 01"
                       % (a.id, n)}
    assert get(srv, b.id).name == "b.txt"
    r = connect_call(srv.port, SVC + "List", pb().AdHocProfilesListRequest(), codec="json")
    assert r.status == 500 and r.error["code"] == "data_loss"
