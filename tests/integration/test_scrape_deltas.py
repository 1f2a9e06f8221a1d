"""Cumulative profiles over time: Go's allocs (alloc_objects, alloc_space) and block (contentions,
delay) count since process start; the scraper stores the difference to the previous scrape under
":delta" types, takes the first scrape only as a baseline, and after a process restart (a value went
down) stores the new process' counts as they are.

The real Go target (gotarget) is scraped every 1 s through a recording proxy in this process, so
the test knows every body the server got and can compute each stored delta exactly:

    stored(ts_i) == T_i - T_(i-1)        (same process)
    stored(ts_i) == T_i                  (first scrape after the restart)

Also: no stored delta profile has a negative value, nothing is stored for the baseline scrape, the
as-is inuse_* series get every scrape, the merge of the delta series over [t1, t2] (query API)
equals the growth of the counter between the first and the last scrape in it, and - measured
directly at the target, before the first and after the last scrape - that growth is a good part
of what the target counted meanwhile (timing slack for the baseline scrape and the interval)."""

import threading
import time
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import require_tool
from scrape_util import WITH_ALLOCS, GoTarget, PyTarget, config_text, http_get, send_body, stored, wait_for

ALLOC = ["memory:alloc_objects:count:space:bytes:delta", "memory:alloc_space:bytes:space:bytes:delta"]
INUSE = ["memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]
BLOCK = ["block:contentions:count:contentions:count:delta", "block:delay:nanoseconds:contentions:count:delta"]
# sample type index in Go's profiles
ALLOC_IDX = {"memory:alloc_objects:count:space:bytes:delta": 0, "memory:alloc_space:bytes:space:bytes:delta": 1,
             "memory:inuse_objects:count:space:bytes": 2, "memory:inuse_space:bytes:space:bytes": 3}
BLOCK_IDX = {BLOCK[0]: 0, BLOCK[1]: 1}


class Recorder:
    """A proxy in front of the target that keeps (generation, path, time_nanos, totals) of every
    profile it passed on. `gen` is the target process' generation (bumped at the restart)."""

    def __init__(self, target: GoTarget):
        self.target = target
        self.gen = 0
        self.paused = False
        self.lock = threading.Lock()
        self.records = []
        self.failures = []
        self.py = PyTarget(self.handle)

    def handle(self, path, h):
        if self.paused:
            send_body(h, 503, b"paused by the test\n", "text/plain")
            return
        gen = self.gen
        try:
            st, hdrs, body = http_get(self.target.url(path), timeout=5)
        except OSError as e:
            with self.lock:
                self.failures.append((gen, path, str(e)))
            send_body(h, 502, ("upstream: %s\n" % e).encode(), "text/plain")
            return
        if st == 200:
            p = pd.decode(body)
            with self.lock:
                self.records.append((gen, path.split("?")[0], p.time_nanos, pd.totals(p)))
        send_body(h, st, body, hdrs.get("content-type", "application/octet-stream"))

    def of(self, path):
        with self.lock:
            return [r for r in self.records if r[1] == path]


def direct_totals(t: GoTarget, path):
    p = pd.decode(t.fetch(path))
    return p.time_nanos, pd.totals(p)


@pytest.fixture(scope="module")
def run(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_deltas")
    g = GoTarget(wd, seed=1, args=WITH_ALLOCS).start()
    rec = Recorder(g)
    time.sleep(1.0)
    r = {"g": g, "rec": rec}
    r["start_allocs"] = direct_totals(g, "/debug/pprof/allocs")
    r["start_block"] = direct_totals(g, "/debug/pprof/block")
    cfg = wd / "deltas.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: deltas\n"
        "    static_configs:\n"
        "      - targets: ['%s']\n"
        "    profiling_config:\n"
        "      pprof_config:\n"
        "        goroutine: {enabled: false}\n"
        "        mutex: {enabled: false}\n"
        "        process_cpu: {enabled: false}\n" % rec.py.address)))
    srv = module_server_factory(name="deltas", config=str(cfg))
    r["srv"] = srv
    wait_for(lambda: len(rec.of("/debug/pprof/allocs")) >= 7 and len(rec.of("/debug/pprof/block")) >= 7, 30,
             "seven scrapes of allocs and block")
    r["end_allocs"] = direct_totals(g, "/debug/pprof/allocs")
    r["end_block"] = direct_totals(g, "/debug/pprof/block")
    # restart the target process on the same port: its counters start again from zero
    g.stop()
    rec.gen = 1   # only now: a body the proxy gets from here on is the new process'
    g.restart()
    wait_for(lambda: sum(1 for x in rec.of("/debug/pprof/allocs") if x[0] == 1) >= 4 and
             sum(1 for x in rec.of("/debug/pprof/block") if x[0] == 1) >= 4, 30,
             "four scrapes of the restarted target")
    rec.paused = True
    time.sleep(1.5)  # the last forwarded bodies reach storage
    yield r
    rec.py.close()
    g.kill()


def series_points(srv, name):
    ss = stored(srv, __name__=name, job="deltas")
    assert len(ss) == 1, (name, ss)
    return ss[0]["id"], {p["ts"]: p["total"] for p in ss[0]["profiles"]}


def expected_chain(records, idx, delta=True):
    """{ts: expected stored total} from the proxy's records (in scrape order)."""
    out = {}
    prev = None
    for gen, _, ts, tot in records:
        if not delta:
            out[ts] = tot[idx]
        elif prev is not None:
            out[ts] = tot[idx] - prev[3][idx] if prev[0] == gen else tot[idx]
        prev = (gen, None, ts, tot)
    return out


@pytest.mark.parametrize("name", ALLOC + INUSE + BLOCK)
def test_stored_values_are_exact(run, name):
    srv, rec = run["srv"], run["rec"]
    path = "/debug/pprof/block" if name in BLOCK else "/debug/pprof/allocs"
    idx = BLOCK_IDX[name] if name in BLOCK else ALLOC_IDX[name]
    records = rec.of(path)
    _, got = series_points(srv, name)
    want = expected_chain(records, idx, delta=name.endswith(":delta"))
    assert got == want, {
        "missing": sorted(set(want) - set(got)), "unexpected": sorted(set(got) - set(want)),
        "wrong": [(ts, got[ts], want[ts], [r[0] for r in records if r[2] == ts]) for ts in sorted(got) if ts in want
                  and got[ts] != want[ts]]}
    if name.endswith(":delta"):
        # the baseline scrape is not stored; one profile per later scrape
        assert records[0][2] not in got
        assert len(got) == len(records) - 1


@pytest.mark.parametrize("name", ALLOC + BLOCK)
def test_no_negative_values(run, name):
    srv = run["srv"]
    sid, got = series_points(srv, name)
    assert len(got) >= 9, got
    for ts, total in sorted(got.items()):
        assert total >= 0, (ts, total)
        p = pd.decode(srv.profile_bytes(sid, ts))
        neg = [s.value for s in p.sample if any(v < 0 for v in s.value)]
        assert not neg, (ts, neg[:5])


@pytest.mark.parametrize("name", ALLOC + BLOCK)
def test_restart_stores_new_counts_as_they_are(run, name):
    """The first scrape after the restart: the new process' totals, not a negative difference and
    not old + new."""
    srv, rec = run["srv"], run["rec"]
    path = "/debug/pprof/block" if name in BLOCK else "/debug/pprof/allocs"
    idx = BLOCK_IDX[name] if name in BLOCK else ALLOC_IDX[name]
    records = rec.of(path)
    first_new = next(i for i, r in enumerate(records) if r[0] == 1)
    last_old = records[first_new - 1]
    new = records[first_new]
    _, got = series_points(srv, name)
    assert got.get(new[2]) == new[3][idx], ("after restart", got.get(new[2]), "want", new[3][idx],
                                            "old process' last", last_old[3][idx])
    # and the counts of the new process are smaller than the old one's (else this tests nothing)
    assert new[3][idx] < last_old[3][idx]
    # the following scrapes are differences within the new process again
    nxt = records[first_new + 1]
    assert got[nxt[2]] == nxt[3][idx] - new[3][idx]


@pytest.mark.parametrize("kind", ["allocs", "block"])
def test_range_merge_matches_counter_growth(run, kind):
    srv, rec = run["srv"], run["rec"]
    path = "/debug/pprof/" + kind
    name = ALLOC[1] if kind == "allocs" else BLOCK[1]   # alloc_space / block delay
    idx = 1
    t_start, a_start = run["start_" + kind]
    t_end, a_end = run["end_" + kind]
    old = [r for r in rec.of(path) if r[0] == 0 and r[2] <= t_end]
    assert len(old) >= 6, old
    t1, t2 = old[1][2], old[-1][2]        # the stored deltas of the old process up to the direct fetch
    q = urllib.parse.urlencode({"query": '%s{job="deltas"}' % name, "start": rfc3339(t1), "end": rfc3339(t2)})
    st, hdrs, body = srv.get("/api/v1/profiles/query?" + q)
    assert st == 200, body[:300]
    mp = pd.decode(body)
    assert len(mp.sample_type) == 1, mp.type_names()   # the one type asked for
    merged = pd.totals(mp)[0]
    # exactly what the counter grew between the first (baseline) and the last scrape in the range
    assert merged == old[-1][3][idx] - old[0][3][idx], (merged, old[-1][3][idx] - old[0][3][idx])
    # measured at the target itself before the first and after the last scrape: the scrapes cover
    # most of that (missing: from the direct fetch to the baseline scrape, and from the last scrape
    # to the direct fetch; at most about one interval each)
    growth = a_end[idx] - a_start[idx]
    assert t_start < old[0][2] and old[-1][2] <= t_end
    assert 0 < merged <= growth, (merged, growth)
    covered = (t2 - old[0][2]) / (t_end - t_start)
    assert merged >= 0.6 * covered * growth, (merged, growth, covered)


def rfc3339(ns):
    s, frac = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ" % frac


def test_failed_scrapes_during_restart_are_reported(run):
    srv, rec = run["srv"], run["rec"]
    m = srv.metrics()
    assert m['profstore_scrapes_total{job="deltas"}'] >= 2 * 11
    # the scrapes while the target was down failed (the proxy answered 502), and those after the
    # proxy was paused (503)
    assert m['profstore_scrape_failures_total{job="deltas"}'] >= len(rec.failures) + 2
    assert srv.running()
