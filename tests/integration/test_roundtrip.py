"""Store every fixture, read each sample type back through /api/v1/debug/profile and compare it
with the original: the multiset of (resolved stack, sample labels, value) after summing identical
keys and dropping zeros, plus time, duration, period and types. First from head records, then
after POST /api/v1/admin/compact (from chunks), then after a restart. Finally `go tool pprof -top`
on the served cpu-01 profile against the golden output."""

import json
import os
import shutil
import subprocess
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import ALL_FILES, PPROF_DIR, fixture_profile, go_pprof, name_param, require_tool, tool_env

PHASES = ("head", "chunks", "restart")


def _diff(want, got, limit=3):
    only_w = [k for k in want if k not in got]
    only_g = [k for k in got if k not in want]
    changed = [k for k in want if k in got and want[k] != got[k]]
    lines = ["%d rows only in the original, %d only in the stored copy, %d with other values (of %d)"
             % (len(only_w), len(only_g), len(changed), len(want))]
    for k in only_w[:limit]:
        lines.append("  original only: %r = %d" % (k, want[k]))
    for k in only_g[:limit]:
        lines.append("  stored only:   %r = %d" % (k, got[k]))
    for k in changed[:limit]:
        lines.append("  value %d -> %d for %r" % (want[k], got[k], k))
    return "\n".join(lines)


def compare_one(orig: pd.Profile, i: int, data: bytes):
    """Problems (strings) between sample type i of orig and a served one-type profile."""
    problems = []
    if data[:2] != b"\x1f\x8b":
        problems.append("not gzipped")
    got = pd.decode(data)
    if got.type_names() != [orig.type_names()[i]]:
        problems.append("sample types %r, want %r" % (got.type_names(), [orig.type_names()[i]]))
    if got.period_type_names() != orig.period_type_names():
        problems.append("period type %r, want %r" % (got.period_type_names(), orig.period_type_names()))
    for f in ("time_nanos", "duration_nanos", "period"):
        if getattr(got, f) != getattr(orig, f):
            problems.append("%s %r, want %r" % (f, getattr(got, f), getattr(orig, f)))
    zeros = sum(1 for s in got.sample if any(v == 0 for v in s.value))
    if zeros:
        problems.append("%d zero-valued samples served (zero values are not stored)" % zeros)
    if got.string_table[:1] != [""]:
        problems.append("string_table[0] is not empty")
    # every id referenced is defined (canonical() would raise KeyError otherwise)
    try:
        cg = pd.canonical(got, 0)
    except (KeyError, pd.DecodeError) as e:
        problems.append("dangling reference in the served profile: %r" % (e,))
        return problems
    co = pd.canonical(orig, i)
    if cg != co:
        problems.append(_diff(co, cg))
    return problems


@pytest.mark.parametrize("rel", ALL_FILES)
def test_roundtrip(make_server, rel):
    srv = make_server(retention="0")
    orig = fixture_profile(rel)
    st, js = srv.push(rel, name=name_param(rel), labels='{job="rt"}')
    assert st == 200, srv.last_raw
    series = [(s["id"], s["profile_type"]) for s in js["data"]["series"]]
    assert len(series) == len(orig.sample_type)
    ts = js["data"]["timestamp_ns"]
    assert ts == orig.time_nanos
    failures = []
    for phase in PHASES:
        if phase == "chunks":
            res = srv.post_json("/api/v1/admin/compact")
            assert res["status"] == "success"
            # one profile per series: each head becomes one chunk
            assert res["data"]["chunks"] == len(series), res
            m = srv.metrics()
            assert m["profstore_storage_head_records"] == 0, "compaction leaves no head records"
            assert m["profstore_storage_chunks"] == len(series)
        elif phase == "restart":
            srv.restart()
        for i, (sid, ptype) in enumerate(series):
            for p in compare_one(orig, i, srv.profile_bytes(sid, ts)):
                failures.append("[%s] %s: %s" % (phase, ptype, p))
    assert not failures, "\n".join(failures)


def test_roundtrip_unpacked_and_labels(make_server):
    """A hand-built profile written with unpacked repeated fields, numeric labels with units,
    inline frames, a location without mapping, zero values and repeated stacks."""
    p = pd.minimal_profile()
    p.string_table += ["bytes", "inlined", "lib.go", "size"]  # 11 .. 14
    p.function.append(pd.Function(id=7, name=12, system_name=12, filename=13, start_line=40))
    p.location.append(pd.Location(id=9, mapping_id=0, address=0,
                                  line=[pd.Line(function_id=7, line=41, column=3), pd.Line(function_id=2, line=13)]))
    p.sample = [
        pd.Sample(location_id=[9, 1], value=[1, 100], label=[pd.Label(key=14, num=4096, num_unit=11)]),
        pd.Sample(location_id=[9, 1], value=[2, 200], label=[pd.Label(key=14, num=4096, num_unit=11)]),
        pd.Sample(location_id=[9, 1], value=[4, 400], label=[pd.Label(key=14, num=64, num_unit=11)]),
        pd.Sample(location_id=[2, 1], value=[0, 0], label=[pd.Label(key=9, str=10)]),
        pd.Sample(location_id=[2, 1], value=[5, 0]),
        pd.Sample(location_id=[1], value=[3, -3]),
        pd.Sample(location_id=[1], value=[-3, 3]),
    ]
    srv = make_server(retention="0")
    st, js = srv.push(pd.encode(p, packed=False), labels='{job="unpacked"}')
    assert st == 200, srv.last_raw
    ts = js["data"]["timestamp_ns"]
    for phase in PHASES:
        if phase == "chunks":
            srv.post_json("/api/v1/admin/compact")
        elif phase == "restart":
            srv.restart()
        for i, s in enumerate(js["data"]["series"]):
            problems = compare_one(p, i, srv.profile_bytes(s["id"], ts))
            assert not problems, "[%s] %s: %s" % (phase, s["profile_type"], "\n".join(problems))


def test_go_tool_pprof_top(make_server, tmp_path):
    go = require_tool("go")
    golden = (PPROF_DIR / "go" / "cpu-01.top.txt").read_text()
    srv = make_server(retention="0")
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="pprof"}')
    assert st == 200
    cpu = [s for s in js["data"]["series"] if s["profile_type"].startswith("process_cpu:cpu:")][0]
    ts = js["data"]["timestamp_ns"]
    env = tool_env(tmp_path)  # the user's Go build cache: else pprof is built again (over 60 s under load)
    for how in ("file", "url"):
        if how == "file":
            f = tmp_path / "served.pb.gz"
            f.write_bytes(srv.profile_bytes(cpu["id"], ts))
            src = str(f)
        else:
            src = srv.url("/api/v1/debug/profile?id=%d&time=%d" % (cpu["id"], ts))
        r = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=10", "-symbolize=none", src],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        # pprof's Time line changed its format (Go 1.19: "Nov 30, 2026 at 7:06am (UTC)"; 1.26:
        # "2026-11-30 07:06:04 UTC"): the time must be the profile's in either; every other line as the golden
        got, want = r.stdout.splitlines(), golden.splitlines()
        assert [x for x in got if not x.startswith("Time: ")] == [x for x in want if not x.startswith("Time: ")], \
            "go tool pprof -top (%s) differs from cpu-01.top.txt:\n%s\n--- stderr:\n%s" % (how, r.stdout, r.stderr)
        assert [x for x in got if x.startswith("Time: ")][0] in (
            "Time: Nov 30, 2026 at 7:06am (UTC)", "Time: 2026-11-30 07:06:04 UTC"), r.stdout


def test_empty_stack_samples_kept_in_merges(make_server, tmp_path):
    """Go's threadcreate profile has 8 of its 9 samples with an empty stack: a merge keeps them (a
    sample with no location), so its total is go tool pprof's, as in the flame graph and top table."""
    srv = make_server(retention="0")
    st, js = srv.push("go/threadcreate-01.pb.gz", labels='{job="pprof"}')
    assert st == 200
    sel = 'threadcreate:threadcreate:count:threadcreate:count{job="pprof"}'
    url = srv.url("/api/v1/profiles/query?query=%s&start=2026-11-29T00:00:00Z&end=2026-12-01T00:00:00Z"
                  % urllib.parse.quote(sel))
    raw = go_pprof(["-raw", url], tmp_path).stdout
    samples = raw.split("Samples:\n")[1].split("Locations")[0].splitlines()
    assert samples == ["threadcreate/count", "          1: 1 2 3 4 ", "          8: "], raw
    assert "accounting for 1, 11.11% of 9 total" in go_pprof(["-top", url], tmp_path).stdout
    for fmt in ("flamegraph", "top"):
        st, _, body = srv.get("/api/v1/profiles/query?" + urllib.parse.urlencode(
            dict(query=sel, start="2026-11-29T00:00:00Z", end="2026-12-01T00:00:00Z", format=fmt)))
        assert st == 200 and json.loads(body)["total"] == 9, body[:300]


def test_rollup_merge_is_go_tool_pprof_merge(make_server, tmp_path):
    """A merge over three hours of profiles, two of them whole and compacted (so read from their
    hour rollups, docs/FORMAT.md "Rollups"), is what go tool pprof makes of the same files merged:
    the same top table, node for node, and the same total."""
    srv = make_server(retention="0")
    t0 = 1795910400 + 1234  # 2026-11-29T00:20:34Z
    files = ["go/cpu-0%d.pb.gz" % (1 + k % 5) for k in range(20)]
    for k, rel in enumerate(files):  # every 10 min: 00:20 to 03:30
        st, _ = srv.push(rel, labels='{job="rollup"}', time=str(t0 + 600 * k))
        assert st == 200, srv.last_raw
    srv.post_json("/api/v1/admin/compact")
    sel = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="rollup"}'
    url = srv.url("/api/v1/profiles/query?" + urllib.parse.urlencode(
        dict(query=sel, start=str(t0 - 1), end=str(t0 + 600 * 19 + 1))))
    paths = [str(PPROF_DIR / rel) for rel in files]
    want = go_pprof(["-top", "-nodecount=40", "-sample_index=cpu", "-symbolize=none"] + paths, tmp_path).stdout
    got = go_pprof(["-top", "-nodecount=40", "-sample_index=cpu", "-symbolize=none", url], tmp_path).stdout

    def table(out):  # from "Showing nodes ..." on: the total and the rows
        lines = out.splitlines()
        return [x for x in lines[[i for i, x in enumerate(lines) if x.startswith("Showing nodes")][0]:]
                if not x.startswith("Dropped")]
    assert table(got) == table(want), "merged:\n%s\n--- go tool pprof of the files:\n%s" % (got, want)
    assert len(table(want)) == 43, want  # the two "Showing" lines, the header and 40 rows
    # four times each of cpu-01..05 (2.98 + 2.93 + 2.89 + 2.89 + 2.86 s)
    assert table(want)[0] == "Showing nodes accounting for 52.68s, 90.52% of 58.20s total", want
