"""Which build ids are missing symbols (GET /api/v1/status/symbols): two C programs compiled here
(gcc -g -O2, stripped, split debug files), an OTLP profile of each with unsymbolized locations (as
test_symbols builds them); one program's debug file under --symbols.dir, the other's not. The API
lists exactly the missing one with its exact samples, profiles, values, file name and times; the
available one with state=all; placing the missing file flips it (no restart); the counts survive a
restart and follow the retention clamp; bad parameters get 400."""

import json
import time
import urllib.parse

import pytest

from otlp_util import Builder, post
from test_symbols import PROG, T0, Program

PERIOD = 10_000_000
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    a = Program(tmp_path_factory.mktemp("proga"))
    b = Program(tmp_path_factory.mktemp("progb"), PROG.replace("2654435761L", "40503L"))
    assert a.build_id != b.build_id
    return a, b


def push(srv, a, b, t, service="native"):
    """One profile at t: every address of a alone (value 1); the first 20 addresses of b as stacks of
    two frames of b (value 2, one sample each); 3 stacks of a frame of b over a frame of a (value 1)."""
    bl = Builder()
    sc = bl.resource({"service.name": service})
    p = bl.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), PERIOD, t, 10**10)
    ma = bl.mapping("/opt/app/prog", a.m_start, a.m_limit, a.m_offset, a.build_id)
    mb = bl.mapping("/usr/lib/libother.so", b.m_start + 0x100000, b.m_limit + 0x100000, b.m_offset, b.build_id)
    la = lambda x: bl.location(a.proc_addr(x), ma)
    lb = lambda x: bl.location(b.proc_addr(x) + 0x100000, mb)
    for x in a.addrs:
        bl.sample(p, [la(x)], 1)
    for x in b.addrs[:20]:
        bl.sample(p, [lb(x), lb(b.addrs[-1])], 2)
    for i in range(3):
        bl.sample(p, [lb(b.addrs[-2 - i]), la(a.addrs[i])], 1)
    r = post(srv.port, bl.req)
    assert r.status == 200 and r.msg.partial_success.rejected_profiles == 0, r


def status(srv, **params):
    st, _, body = srv.get("/api/v1/status/symbols?" + urllib.parse.urlencode(params))
    assert st == 200, body[:300]
    doc = json.loads(body)
    assert doc["status"] == "success"
    return doc["data"]


def rfc3339(ns):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + "Z"


def entry(prog, file, samples, profiles, total, first, last, symbols, source):
    return {"buildId": prog.build_id, "files": [file], "samples": samples, "profiles": profiles,
            "values": [{"type": CPU, "total": total}], "firstSeen": rfc3339(first), "lastSeen": rfc3339(last),
            "symbols": symbols, "source": source}


def test_missing_build_id_listed_then_available(make_server, progs, tmp_path):
    a, b = progs
    symdir = tmp_path / "debug"
    symdir.mkdir()
    a.place(symdir)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push(srv, a, b, T0)
    push(srv, a, b, T0 + 3600 * 10**9)  # the next hour: counts are kept by hour
    # b: per profile 20 + 3 samples, values 20 x 2 + 3 x 1 samples of 10 ms
    nb, tb = 2 * 23, 2 * 43 * PERIOD
    # a: per profile every address alone, and the 3 mixed stacks
    na, ta = 2 * (len(a.addrs) + 3), 2 * (len(a.addrs) + 3) * PERIOD
    want_b = entry(b, "/usr/lib/libother.so", nb, 2, tb, T0, T0 + 3600 * 10**9, "missing", "")
    want_a = entry(a, "/opt/app/prog", na, 2, ta, T0, T0 + 3600 * 10**9, "available", "dir")
    got = status(srv)
    assert got == {"missing": {"buildIds": 1, "samples": nb}, "available": {"buildIds": 1, "samples": na},
                   "buildIds": [want_b]}
    assert status(srv, state="available")["buildIds"] == [want_a]
    # all: by samples descending (a has more)
    assert na > nb
    assert status(srv, state="all")["buildIds"] == [want_a, want_b]
    assert status(srv, state="all", limit="1")["buildIds"] == [want_a]
    # a time range in the first hour: its profile only (ranges select whole hours)
    got = status(srv, state="all", start=str(T0 // 10**9 - 60), end=str(T0 // 10**9 + 5))
    assert [(e["buildId"], e["samples"], e["profiles"]) for e in got["buildIds"]] == [
        (a.build_id, na // 2, 1), (b.build_id, nb // 2, 1)]
    # the profile reads with b's frames as module+0xoffset until its file is placed; then available
    b.place(symdir)
    time.sleep(1.1)  # a build id with no file is looked at again after a second
    got = status(srv)
    assert got == {"missing": {"buildIds": 0, "samples": 0}, "available": {"buildIds": 2, "samples": na + nb},
                   "buildIds": []}
    want_b.update(symbols="available", source="dir")
    assert status(srv, state="all")["buildIds"] == [want_a, want_b]
    # the counts are stored: the same after a restart
    srv.restart()
    assert status(srv, state="all")["buildIds"] == [want_a, want_b]


def test_duplicate_push_counts_once(make_server, progs):
    a, b = progs
    srv = make_server()  # no --symbols.dir: every build id is missing
    push(srv, a, b, T0)
    push(srv, a, b, T0)  # the same profile again: accepted, nothing stored
    got = status(srv, state="all")
    assert [(e["buildId"], e["samples"], e["profiles"], e["symbols"]) for e in got["buildIds"]] == [
        (a.build_id, len(a.addrs) + 3, 1, "missing"), (b.build_id, 23, 1, "missing")]
    assert got["missing"] == {"buildIds": 2, "samples": len(a.addrs) + 3 + 23}


def test_retention_clamps_the_counts(make_server, progs):
    """A profile three hours old is counted; with --retention 1h (restart) the hours before the
    cutoff are not listed, and retention's run drops them (the store keeps no counts of profiles it
    dropped); a profile now is listed."""
    a, b = progs
    srv = make_server(retention="1d")
    now = time.time_ns()
    push(srv, a, b, now - 3 * 3600 * 10**9)
    assert status(srv)["missing"] == {"buildIds": 2, "samples": len(a.addrs) + 3 + 23}
    srv.restart(retention="1h")
    assert status(srv) == {"missing": {"buildIds": 0, "samples": 0}, "available": {"buildIds": 0, "samples": 0},
                           "buildIds": []}
    srv.post_json("/api/v1/admin/retention")
    push(srv, a, b, now, service="later")
    got = status(srv)
    assert got["missing"] == {"buildIds": 2, "samples": len(a.addrs) + 3 + 23}
    assert [e["profiles"] for e in got["buildIds"]] == [1, 1]


@pytest.mark.parametrize("q,msg", [
    ("limit=0", 'invalid parameter "limit": expected an integer from 1 to 10000, got "0"'),
    ("limit=10001", 'invalid parameter "limit": expected an integer from 1 to 10000, got "10001"'),
    ("state=gone", 'invalid parameter "state": expected missing, available or all, got "gone"'),
    ("start=yesterday", 'invalid parameter "start": cannot parse "yesterday" to a valid timestamp'),
    ("start=200&end=100", 'invalid parameter "end": end timestamp must not be before start time'),
])
def test_bad_parameters(make_server, q, msg):
    srv = make_server()
    st, _, body = srv.get("/api/v1/status/symbols?" + q)
    assert st == 400, body
    doc = json.loads(body)
    assert (doc["status"], doc["errorType"], doc["error"]) == ("error", "bad_data", msg)
