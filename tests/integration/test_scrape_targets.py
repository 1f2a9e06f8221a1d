"""Scraping real Go targets (tests/gotarget): three processes with different workload seeds,
one from static_configs, one from a file_sd JSON file and one from a file_sd YAML file, both files
written while the server runs. After a few intervals every instance has a series for every enabled
profile type (exact __name__ list), with the group's labels, job, instance and the external labels;
CPU totals are positive and `go tool pprof` on one instance's merged CPU profile names that target's
workload kernels and no other's; /api/v1/targets and /metrics describe the targets; a target taken
out of its file (and a file deleted) is no longer scraped.

One server and the targets are shared by the tests of this module (they run in file order)."""

import datetime
import re
import time
import urllib.parse

import pytest

from conftest import Server, go_pprof, parse_pprof_top, require_tool
from scrape_util import (CPU_NS, KERNELS, SEED_PLAN, TYPES, WITH_ALLOCS, GoTarget, active_targets, config_text,
                         series_list, stored, wait_for, write_atomic)

ENABLED = ["memory", "block", "goroutine", "mutex", "process_cpu", "threadcreate"]
ALL_NAMES = sorted(n for k in ENABLED for n in TYPES[k])
EXTERNAL = {"region": "eu-test", "replica": "r1"}
PATHS = {"memory": "/debug/pprof/allocs", "block": "/debug/pprof/block", "goroutine": "/debug/pprof/goroutine",
         "mutex": "/debug/pprof/mutex", "process_cpu": "/debug/pprof/profile?seconds=1",
         "threadcreate": "/debug/pprof/threadcreate"}
PPROF_CFG = """    profiling_config:
      pprof_config:
        process_cpu: {seconds: 1}
        threadcreate: {enabled: true}
"""


class Env:
    srv: Server
    a: GoTarget  # static, seed 1
    b: GoTarget  # file_sd JSON, seed 2
    c: GoTarget  # file_sd YAML, seed 3
    sd: object
    started: float


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_targets")
    e = Env()
    e.a = GoTarget(wd, seed=1, args=WITH_ALLOCS).start()
    e.b = GoTarget(wd, seed=2, args=WITH_ALLOCS).start()
    e.c = GoTarget(wd, seed=3, args=WITH_ALLOCS).start()
    e.sd = wd / "sd"
    e.sd.mkdir()
    cfg = wd / "profstore.yml"
    cfg.write_text(config_text("2s", "2s", EXTERNAL, jobs=(
        "  - job_name: static\n"
        "    static_configs:\n"
        "      - targets: ['%s']\n"
        "        labels: {team: alpha, fmt: static}\n" % e.a.address + PPROF_CFG +
        "  - job_name: files\n"
        "    file_sd_configs:\n"
        "      - files: ['%s/*.json', '%s/*.yaml']\n"
        "        refresh_interval: 1m\n" % (e.sd, e.sd) + PPROF_CFG)))
    e.srv = module_server_factory(name="scrape_targets", config=str(cfg))
    # the file_sd files appear only now: inotify (not the 1m refresh) must pick them up
    write_atomic(e.sd / "b.json", '[{"targets": ["%s"], "labels": {"team": "beta", "fmt": "json"}}]\n' % e.b.address)
    write_atomic(e.sd / "c.yaml", "- targets:\n    - '%s'\n  labels:\n    team: gamma\n    fmt: yaml\n" % e.c.address)
    e.started = time.time()
    yield e
    for t in (e.a, e.b, e.c):
        t.kill()


def names_of(srv, instance):
    return sorted({s["__name__"] for s in series_list(srv, '{instance="%s"}' % instance)})


def profile_counts(srv, instance):
    return {s["labels"]["__name__"]: len(s["profiles"]) for s in stored(srv, instance=instance)}


def test_every_type_of_every_instance(env):
    insts = [env.a.address, env.b.address, env.c.address]

    def ready():
        for i in insts:
            counts = profile_counts(env.srv, i)
            if sorted(counts) != ALL_NAMES or min(counts.values()) < 2:
                return None
        return True

    try:
        wait_for(ready, 40, "every profile type of every instance stored twice")
    except AssertionError:
        pass  # the exact comparison below says what is missing
    for i in insts:
        assert names_of(env.srv, i) == ALL_NAMES, i
        counts = profile_counts(env.srv, i)
        assert min(counts.values()) >= 2, (i, counts)


def test_labels_of_series(env):
    want = {env.a.address: ("static", "alpha", "static"), env.b.address: ("files", "beta", "json"),
            env.c.address: ("files", "gamma", "yaml")}
    for inst, (job, team, fmt) in want.items():
        ss = series_list(env.srv, '{instance="%s"}' % inst)
        assert ss, inst
        for s in ss:
            # exactly: __name__, the group labels, job, instance, the external labels; no __meta_*, no __*
            assert s == {"__name__": s["__name__"], "job": job, "instance": inst, "team": team, "fmt": fmt,
                         **EXTERNAL}, s


def test_external_labels_on_every_series(env):
    allsel = series_list(env.srv, '{job=~"static|files"}')
    assert len(allsel) == 3 * len(ALL_NAMES), sorted((s["instance"], s["__name__"]) for s in allsel)
    for s in allsel:
        assert s["region"] == "eu-test" and s["replica"] == "r1", s
    # the selector on an external label finds them all
    assert len(series_list(env.srv, '{region="eu-test"}')) == len(allsel)


def test_cpu_totals_positive(env):
    for t in (env.a, env.b, env.c):
        ss = stored(env.srv, instance=t.address, __name__=CPU_NS)
        assert len(ss) == 1, ss
        profs = ss[0]["profiles"]
        assert len(profs) >= 2, profs
        for p in profs:
            assert p["total"] > 0, (t.address, p)
            # a 1 s profile: Go's duration_nanos is ~1e9
            assert 0.9e9 <= p["duration"] <= 2.5e9, (t.address, p)
            assert p["period"] == 10_000_000, p


def test_plans_logged(env):
    """Each target logs its seed's plan at start: the kernel sets of scrape_util.SEED_PLAN."""
    for t in (env.a, env.b, env.c):
        m = re.search(r"seed=(\d+) plan: (.*)", t.log())
        assert m and int(m.group(1)) == t.seed, t.log()
        kernels = {"kernel" + {"sha256": "SHA256"}.get(k, k.capitalize())
                   for k in re.findall(r"(\w+)\(w=\d,via=\d\)", m.group(2))}
        assert kernels == SEED_PLAN[t.seed], (t.seed, m.group(2))


@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_pprof_top_names_the_targets_kernels(env, which, tmp_path):
    t = getattr(env, which)
    # enough CPU samples for every kernel of the plan: ~8 s of 1 s profiles
    wait_for(lambda: len((stored(env.srv, instance=t.address, __name__=CPU_NS) or [{"profiles": []}])[0]["profiles"])
             >= 5, 30, "5 CPU profiles of %s" % t.address)
    q = urllib.parse.urlencode({"query": '%s{instance="%s"}' % (CPU_NS, t.address),
                                "start": "%.3f" % (env.started - 60), "end": "%.3f" % (time.time() + 1)})
    r = go_pprof(["-top", "-nodecount=1000", "-symbolize=none", env.srv.url("/api/v1/profiles/query?" + q)], tmp_path)
    header, rows = parse_pprof_top(r.stdout)
    names = {row[5] for row in rows}
    plan = SEED_PLAN[t.seed]
    present = {k for k in KERNELS if "main." + k in names}
    assert present <= plan, ("kernels of another target in %s's profile" % t.address, present - plan, r.stdout)
    assert len(present) >= 2, ("the plan's kernels missing", plan, present, r.stdout)
    assert "main.cpuWorker" in names or any(n.startswith("main.via") for n in names), r.stdout
    assert any(h.startswith("Type: cpu") for h in header), header


def parse_time(s):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", s)
    assert m, s
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + m.group(2)) if m.group(2) else 0.0)


def test_targets_api(env):
    ts = active_targets(env.srv)
    assert len(ts) == 3 * len(ENABLED), [(t["labels"].get("instance"), t["profileName"]) for t in ts]
    seen = set()
    now = time.time()
    for t in ts:
        inst = t["labels"]["instance"]
        seen.add((inst, t["profileName"]))
        assert t["health"] == "up", t
        assert t["lastError"] == "", t
        last = parse_time(t["lastScrape"])
        assert now - 15 <= last <= now + 1, t
        assert 0 < t["lastScrapeDuration"] < 5, t
        assert t["scrapeUrl"] == "http://%s%s" % (inst, PATHS[t["profileName"]]), t
        assert t["scrapePool"] == ("static" if inst == env.a.address else "files"), t
        assert t["scrapeInterval"] == "2s", t
        assert t["labels"]["region"] == "eu-test", t
        assert not any(k.startswith("__") for k in t["labels"]), t
        d = t["discoveredLabels"]
        assert d["__address__"] == inst and d["__name__"] == t["profileName"], d
        if inst == env.b.address:
            assert d["__meta_filepath"] == str(env.sd / "b.json"), d
        elif inst == env.c.address:
            assert d["__meta_filepath"] == str(env.sd / "c.yaml"), d
        else:
            assert "__meta_filepath" not in d, d
    assert seen == {(t.address, n) for t in (env.a, env.b, env.c) for n in ENABLED}
    # the state filter
    assert len(active_targets(env.srv)) == len(ts)
    js = env.srv.get_json("/api/v1/targets?state=dropped")
    assert js["data"]["activeTargets"] == [] and js["data"]["droppedTargets"] == [], js


def test_metrics(env):
    m = env.srv.metrics()
    assert m["profstore_scrape_targets"] == 18, m
    for job in ("static", "files"):
        n = m['profstore_scrapes_total{job="%s"}' % job]
        assert n >= 6 * (1 if job == "static" else 2), (job, n)
        failures = m['profstore_scrape_failures_total{job="%s"}' % job]
        assert failures <= 0.1 * n, (job, failures, n)
        assert m['profstore_scrape_duration_seconds_count{job="%s"}' % job] == n
        assert 0 < m['profstore_scrape_duration_seconds_sum{job="%s"}' % job] < 5 * n


def newest(srv, instance):
    return max((p["ts"] for s in stored(srv, instance=instance) for p in s["profiles"]), default=0)


def test_removed_from_file_is_no_longer_scraped(env):
    b, c, a = env.b.address, env.c.address, env.a.address
    write_atomic(env.sd / "b.json", "[]\n")        # b leaves its file
    (env.sd / "c.yaml").unlink()                   # c's file goes away
    removed_at = time.time()
    wait_for(lambda: not any(t["labels"]["instance"] in (b, c) for t in active_targets(env.srv)), 10,
             "the targets of b and c to leave /api/v1/targets")
    assert time.time() - removed_at < 5, "file_sd changes are watched (inotify), not only refreshed every 1m"
    assert {t["labels"]["instance"] for t in active_targets(env.srv)} == {a}
    assert env.srv.metrics()["profstore_scrape_targets"] == len(ENABLED)
    # a transfer that was running may still be stored; after that, nothing more
    time.sleep(3.5)
    before = {i: (newest(env.srv, i), sum(profile_counts(env.srv, i).values())) for i in (a, b, c)}
    time.sleep(4.5)
    after = {i: (newest(env.srv, i), sum(profile_counts(env.srv, i).values())) for i in (a, b, c)}
    assert after[b] == before[b], ("profiles of b stored after it left its file", before[b], after[b])
    assert after[c] == before[c], ("profiles of c stored after its file was deleted", before[c], after[c])
    assert after[a][1] > before[a][1], "the static target is still scraped"
    assert before[b][0] < (removed_at + 3.5) * 1e9 and before[c][0] < (removed_at + 3.5) * 1e9
    # the stored data of the removed targets is still there
    assert names_of(env.srv, b) == ALL_NAMES
