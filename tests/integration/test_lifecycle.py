"""Process life cycle: flags, health endpoints, clean shutdown under load, schema version check,
retention, compaction, configuration file errors."""

import collections
import http.client
import json
import pathlib
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

import pprof_decode as pd
from conftest import PROFSTORE_BIN, fixture_profile, series_snapshot
from pyro_util import connect_call

CPU_TYPES = ["process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"]


def run_bin(*args, timeout=10):
    return subprocess.run([PROFSTORE_BIN, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


# ---- flags ------------------------------------------------------------------------------------

def test_help_lists_flags():
    r = run_bin("--help")
    assert r.returncode == 0, r
    for flag in ("--listen", "--data-dir", "--config", "--retention", "--log-level", "--max-body-size",
                 "--max-inflated-size", "--storage.compact-max-profiles", "--storage.retention-interval"):
        assert flag in r.stdout, "%s missing from --help:\n%s" % (flag, r.stdout)


def test_flags_md_is_what_the_binary_prints():
    """docs/flags.md is generated from the flag table: regenerate it with
    `profstore --help-markdown > docs/flags.md` (tests/unit/config/test_flags.c checks the same)."""
    r = run_bin("--help-markdown")
    assert r.returncode == 0, r
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "flags.md"
    assert r.stdout == doc.read_text(), "docs/flags.md differs from `profstore --help-markdown`"
    assert "--help-markdown" not in run_bin("--help").stdout  # a tool for the docs, not a user flag
    for flag in re.findall(r"^  (--[a-z][a-z0-9.-]*)", run_bin("--help").stdout, re.M):
        assert "| `%s" % flag in r.stdout, flag


@pytest.mark.parametrize("args,want", [
    (["--agent=maybe"], 'profstore: --agent: "maybe" is not true or false\n'),
    (["--threads", "0"], 'profstore: --threads: "0" is not a positive number in range\n'),
    (["--web.max-connections=1000001"],
     'profstore: --web.max-connections: "1000001" is not a number in range (0 .. 1000000)\n'),
    (["--listen"], "profstore: flag --listen needs a value\n"),
])
def test_flag_errors_exact(args, want):
    r = run_bin(*args)
    assert r.returncode == 2, r
    assert r.stderr == want + "Run profstore --help for the flags.\n"


def test_version():
    r = run_bin("--version")
    assert r.returncode == 0 and re.search(r"\d+\.\d+\.\d+", r.stdout), r


@pytest.mark.parametrize("args", [["--no-such-flag=1"], ["--no-such-flag", "1"], ["--no-such-flag"],
                                  ["--listen=127.0.0.1:1", "--bogus"]])
def test_unknown_flag_exits_2(args, tmp_path):
    r = run_bin("--data-dir", str(tmp_path / "d"), *args)
    assert r.returncode == 2, r
    name = [a for a in args if a.startswith("--no-such") or a == "--bogus"][0].split("=")[0]
    assert "unknown flag" in r.stderr and name in r.stderr, \
        "stderr should say the flag is unknown and name it: %r" % r.stderr
    assert not (tmp_path / "d").exists(), "nothing is created on a usage error"


@pytest.mark.parametrize("args,word", [
    (["--retention", "soon"], "--retention"),
    (["--max-body-size", "12XB"], "--max-body-size"),
    (["--storage.compact-max-profiles", "0"], "--storage.compact-max-profiles"),
    (["--log-level", "loud"], "--log-level"),
    (["stray"], "stray"),
])
def test_bad_flag_values_exit_2(args, word):
    r = run_bin(*args)
    assert r.returncode == 2, r
    assert word in r.stderr, r.stderr


# ---- endpoints --------------------------------------------------------------------------------

def test_health_ready_buildinfo_metrics(server):
    st, hdrs, body = server.get("/-/healthy")
    assert st == 200 and b"Healthy" in body
    st, hdrs, body = server.get("/-/ready")
    assert st == 200 and b"Ready" in body
    st, hdrs, body = server.request("HEAD", "/-/ready")
    assert st == 200 and body == b""
    js = server.get_json("/api/v1/status/buildinfo")
    assert js["status"] == "success" and js["data"]["version"]
    m0 = server.metrics()
    st, _ = server.push("go/cpu-01.pb.gz", labels='{job="m"}')
    assert st == 200
    st, hdrs, body = server.get("/metrics")
    assert st == 200 and hdrs["content-type"].startswith("text/plain")
    m = server.metrics()
    assert m["profstore_ingest_profiles_total"] == m0["profstore_ingest_profiles_total"] + 1
    assert m["profstore_ingest_samples_total"] == m0["profstore_ingest_samples_total"] + 272
    assert m["profstore_storage_series"] == 2
    # labelled by handler and code (test_metrics.py checks them exactly): the push is one more
    assert m['profstore_http_requests_total{handler="/api/v1/profiles/write",code="200"}'] == \
        m0.get('profstore_http_requests_total{handler="/api/v1/profiles/write",code="200"}', 0) + 1
    for line in body.decode().splitlines():
        assert line.startswith("#") or re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+]+$", line), line


# ---- shutdown ---------------------------------------------------------------------------------

def _pusher(srv, th, outcomes, stop, base_s):
    seq = 0
    files = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/heap-01.pb.gz"]
    while not stop.is_set():
        rel = files[seq % len(files)]
        t = "%d.%03d" % (base_s + seq, th)
        seq += 1
        try:
            st, js = srv.push(rel, time=t, labels='{job="term",thread="%d"}' % th, timeout=10)
            outcomes.append((th, t, rel, st, js))
            if st != 200:
                # after a 503 the server is going away: keep trying until it is gone
                time.sleep(0.005)
        except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as e:
            outcomes.append((th, t, rel, "conn", repr(e)))
            if isinstance(e, ConnectionRefusedError):
                return
        except (OSError, http.client.HTTPException) as e:
            outcomes.append((th, t, rel, "other", repr(e)))
            return


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_with_pushes_in_flight(make_server, sig):
    srv = make_server(threads=2)
    outcomes = []
    stop = threading.Event()
    base_s = int(time.time()) - 3600
    workers = [threading.Thread(target=_pusher, args=(srv, th, outcomes, stop, base_s)) for th in range(4)]
    for w in workers:
        w.start()
    time.sleep(0.4)
    oks_before = sum(1 for o in outcomes if o[3] == 200)
    srv.proc.send_signal(sig)
    try:
        rc = srv.proc.wait(15)
    finally:
        stop.set()
        for w in workers:
            w.join(15)
    log = srv.log()
    assert rc == 0, "exit code %s after %s" % (rc, sig)
    assert re.search(r'msg="?stopped', log), log[-2000:]
    print("outcomes", collections.Counter(o[3] if o[3] != "conn" else o[4].split("(")[0] for o in outcomes),
          "acked before the signal", oks_before)
    assert oks_before > 0, "no push succeeded before the signal"
    bad = [o for o in outcomes if o[3] not in (200, 503, "conn")]
    assert not bad, "pushes that got neither 200 nor a clean refusal: %r" % bad[:5]
    for o in outcomes:
        if o[3] == 503:
            assert o[4] and o[4]["status"] == "error", o
    # every acknowledged push is stored, completely
    srv.start()
    stored = {}
    for s in srv.series():
        stored[(s["labels"]["thread"], s["labels"]["__name__"])] = {p["ts"]: p["total"] for p in s["profiles"]}
    acked = [o for o in outcomes if o[3] == 200]
    for th, t, rel, st, js in acked:
        ts = js["data"]["timestamp_ns"]
        for i, s in enumerate(js["data"]["series"]):
            got = stored.get((str(th), s["profile_type"]), {}).get(ts)
            assert got == pd.totals(fixture_profile(rel))[i], (th, t, rel, s["profile_type"], got)


def test_ready_503_while_shutting_down(make_server):
    """With a kept-alive connection, /-/ready answers 503 between the signal and the exit."""
    srv = make_server()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("GET", "/-/ready")
    r = conn.getresponse()
    r.read()
    assert r.status == 200
    seen = []
    srv.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            conn.request("GET", "/-/ready")
            r = conn.getresponse()
            r.read()
            seen.append(r.status)
            if r.status == 503:
                break
        except (OSError, http.client.HTTPException):
            break
        time.sleep(0.002)
    conn.close()
    assert srv.proc.wait(15) == 0
    assert 503 in seen, "statuses seen while shutting down: %r" % seen[-5:]
    assert set(seen) <= {200, 503}


# ---- schema version ---------------------------------------------------------------------------

def _rewrite_schema(data_dir, tmp_path, version, old):
    dump = subprocess.run(["mdb_dump", "-s", "info", str(data_dir)], capture_output=True, text=True, timeout=10)
    assert dump.returncode == 0, dump.stderr
    lines = dump.stdout.splitlines()
    key = " " + b"schema".hex()
    i = lines.index(key)
    assert lines[i + 1] == " %08x" % old, "unexpected schema record %r" % lines[i + 1]
    lines[i + 1] = " %08x" % version
    f = tmp_path / "info.dump"
    f.write_text("\n".join(lines) + "\n")
    load = subprocess.run(["mdb_load", "-s", "info", "-f", str(f), str(data_dir)], capture_output=True, text=True,
                          timeout=10)
    assert load.returncode == 0, load.stderr
    check = subprocess.run(["mdb_dump", "-s", "info", str(data_dir)], capture_output=True, text=True, timeout=10)
    assert " %08x" % version in check.stdout.splitlines()


def test_schema_version_mismatch_refused(make_server, tmp_path):
    if not (shutil.which("mdb_dump") and shutil.which("mdb_load")):
        pytest.skip("mdb_dump/mdb_load (lmdb-utils) not installed")
    srv = make_server()
    t = int(time.time())
    st, _ = srv.push("go/goroutine-01.pb.gz", time=str(t), labels='{job="schema"}')
    assert st == 200
    snap = series_snapshot(srv)

    def ranged():  # the label times (schema 10) and the profile series' (15), built again by each upgrade
        return [srv.get_json("/api/v1/label/job/values?start=%d&end=%d" % r)["data"]
                for r in ((t, t), (t - 1, t - 1), (t + 1, t + 3600))] + \
            [json.loads(connect_call(srv.port, "querier.v1.QuerierService/LabelValues", None, codec="json",
                                     body=json.dumps({"name": "job", "start": r[0] * 1000,
                                                      "end": r[1] * 1000}).encode()).body)
             for r in ((t, t), (t - 1, t - 1))]
    assert ranged() == [["schema"], [], [], {"names": ["schema"]}, {}]
    assert srv.stop() == 0
    _rewrite_schema(srv.data_dir, tmp_path, 99, old=15)
    srv.start(wait_ready=False)
    try:
        rc = srv.proc.wait(10)
    except subprocess.TimeoutExpired:
        pytest.fail("profstore started on a data dir with schema version 99")
    assert rc != 0
    log = srv.log().split("==== start #2")[1]
    assert "schema version" in log and "99" in log, log
    # back to version 15: the same data dir opens again with its data
    _rewrite_schema(srv.data_dir, tmp_path, 15, old=99)
    srv.start()
    assert series_snapshot(srv) == snap
    # version 1 (profiles only) to 14 directories are upgraded in place to version 15 (docs/FORMAT.md;
    # the label times built again from 9 and below, the profile series' from 14 and below)
    for old in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14):
        assert srv.stop() == 0
        _rewrite_schema(srv.data_dir, tmp_path, old, old=15)
        srv.start()
        assert series_snapshot(srv) == snap
        assert ranged() == [["schema"], [], [], {"names": ["schema"]}, {}]
    assert srv.stop() == 0
    _rewrite_schema(srv.data_dir, tmp_path, 15, old=15)  # asserts the record says 15 now


# ---- retention --------------------------------------------------------------------------------

def _jobs(srv):
    return {s["labels"].get("job") for s in srv.series()}


def _profiles_by_job(srv):
    """{(job, __name__): [(ts, total), ...]} of everything stored."""
    return {(s["labels"]["job"], s["labels"]["__name__"]): [(p["ts"], p["total"]) for p in s["profiles"]]
            for s in srv.series()}


def test_retention_on_restart(make_server):
    srv = make_server(retention="1h")
    now = int(time.time())
    st, js_old = srv.push("go/cpu-01.pb.gz", time=str(now - 1800), labels='{job="old"}')
    assert st == 200, srv.last_raw
    st, _ = srv.push("go/cpu-02.pb.gz", time=str(now - 60), labels='{job="new"}')
    assert st == 200, srv.last_raw
    old_ns, new_ns = (now - 1800) * 10**9, (now - 60) * 10**9
    assert _profiles_by_job(srv) == {
        ("old", CPU_TYPES[0]): [(old_ns, 298)], ("old", CPU_TYPES[1]): [(old_ns, 2980000000)],
        ("new", CPU_TYPES[0]): [(new_ns, 293)], ("new", CPU_TYPES[1]): [(new_ns, 2930000000)]}
    old_ids = [s["id"] for s in js_old["data"]["series"]]
    for sid in old_ids:
        assert srv.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, old_ns))[0] == 200
    srv.stop()
    srv.start(retention="10m", storage_retention_interval="1s")
    deadline = time.monotonic() + 8
    while "old" in _jobs(srv) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _jobs(srv) == {"new"}, "series older than the retention must go, newer ones stay"
    after = {("new", CPU_TYPES[0]): [(new_ns, 293)], ("new", CPU_TYPES[1]): [(new_ns, 2930000000)]}
    assert _profiles_by_job(srv) == after
    for sid in old_ids:
        assert srv.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, old_ns))[0] == 404
    assert srv.metrics()["profstore_retention_series_dropped_total"] == 2
    # gone for good
    srv.restart()
    assert _profiles_by_job(srv) == after


def test_retention_admin_endpoint(make_server):
    srv = make_server(retention="1h")
    now = int(time.time())
    assert srv.push("go/heap-01.pb.gz", time=str(now - 1800), labels='{job="old"}')[0] == 200
    assert srv.push("go/cpu-01.pb.gz", time=str(now - 1800), labels='{job="mixed"}')[0] == 200
    assert srv.push("go/cpu-02.pb.gz", time=str(now - 30), labels='{job="mixed"}')[0] == 200
    srv.stop()
    srv.start(retention="10m")  # default interval: no automatic run during this test
    old_ns, new_ns = (now - 1800) * 10**9, (now - 30) * 10**9
    heap = [(old_ns, t) for t in (29635699, 12417316511, 6721, 1048832)]
    before = _profiles_by_job(srv)
    assert {k: v for k, v in before.items() if k[0] == "mixed"} == {
        ("mixed", CPU_TYPES[0]): [(old_ns, 298), (new_ns, 293)],
        ("mixed", CPU_TYPES[1]): [(old_ns, 2980000000), (new_ns, 2930000000)]}
    assert sorted(v[0] for k, v in before.items() if k[0] == "old") == sorted(heap)
    mixed_ids = [s["id"] for s in srv.series() if s["labels"]["job"] == "mixed"]
    res = srv.post_json("/api/v1/admin/retention")
    assert res["status"] == "success"
    assert res["data"]["series_dropped"] == 4, res
    # the old series are gone; of the mixed ones, exactly the recent profile is left
    assert _profiles_by_job(srv) == {("mixed", CPU_TYPES[0]): [(new_ns, 293)],
                                     ("mixed", CPU_TYPES[1]): [(new_ns, 2930000000)]}
    for sid in mixed_ids:
        assert srv.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, old_ns))[0] == 404
        assert srv.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, new_ns))[0] == 200
    # nothing left to drop
    assert srv.post_json("/api/v1/admin/retention")["data"]["series_dropped"] == 0


# ---- compaction -------------------------------------------------------------------------------

def test_compaction_by_profile_count(make_server):
    srv = make_server(storage_compact_max_profiles=3)
    files = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz",
             "go/cpu-seed2-01.pb.gz", "go/cpu-01.pb"]
    base = int(time.time()) - 600
    pushed = []
    for i, rel in enumerate(files):
        st, js = srv.push(rel, time=str(base + 10 * i), labels='{job="compact"}')
        assert st == 200, srv.last_raw
        pushed.append((js["data"]["timestamp_ns"], rel, [s["id"] for s in js["data"]["series"]]))
    deadline = time.monotonic() + 5
    while srv.metrics()["profstore_storage_chunks"] < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    m = srv.metrics()
    # 7 profiles, 3 per chunk: 2 chunks per series (2 series), the 7th profile still in the head
    assert m["profstore_storage_chunks"] == 4, m
    assert m["profstore_storage_head_records"] == 2, m
    for phase in ("compacted", "restarted"):
        if phase == "restarted":
            srv.restart()
        series = {s["id"]: s for s in srv.series()}
        assert len(series) == 2
        for ts, rel, sids in pushed:
            want = pd.totals(fixture_profile(rel))
            for i, sid in enumerate(sids):
                profs = {p["ts"]: p for p in series[sid]["profiles"]}
                assert profs[ts]["total"] == want[i], (phase, rel, i)
                got = pd.decode(srv.profile_bytes(sid, ts))
                assert pd.totals(got) == [want[i]], (phase, rel, i)
                assert pd.canonical(got, 0) == pd.canonical(fixture_profile(rel), i), (phase, rel, i)
        for s in series.values():
            assert [p["ts"] for p in s["profiles"]] == [p[0] for p in pushed]


# ---- configuration file -----------------------------------------------------------------------

def test_config_invalid_yaml(tmp_path):
    cfg = tmp_path / "profstore.yml"
    cfg.write_text("global:\n  scrape_interval: 15s\nscrape_configs: [\n  - job_name: x\n    bad: : :\n")
    r = run_bin("--config", str(cfg), "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0")
    assert r.returncode != 0, r
    m = re.search(re.escape(str(cfg)) + r":(\d+):(\d+)", r.stderr)
    assert m, "no file:line:column in %r" % r.stderr
    assert 1 <= int(m.group(1)) <= 6, r.stderr
    assert not (tmp_path / "d").exists(), "the data dir is not touched when the config is bad"


def test_config_not_a_mapping(tmp_path):
    cfg = tmp_path / "list.yml"
    cfg.write_text("- a\n- b\n")
    r = run_bin("--config", str(cfg), "--data-dir", str(tmp_path / "d"))
    assert r.returncode != 0 and re.search(re.escape(str(cfg)) + r":1:1", r.stderr), r


def test_config_missing_file(tmp_path):
    r = run_bin("--config", str(tmp_path / "nope.yml"), "--data-dir", str(tmp_path / "d"))
    assert r.returncode != 0 and "nope.yml" in r.stderr, r


def test_config_valid_yaml_starts(make_server, tmp_path):
    cfg = tmp_path / "ok.yml"
    cfg.write_text("global:\n  scrape_interval: 15s\n")
    srv = make_server(config=str(cfg))
    assert srv.get("/-/ready")[0] == 200
