"""The series Prometheus writes for every scrape, written by profstore's scraper for every target x
profile (issue 8 item 5): up, scrape_duration_seconds, scrape_samples_scraped and
scrape_samples_post_metric_relabeling, with job, instance, the target's labels and profile=<name>,
at the scrape's start time, as float samples. A dead target has up 0 (`up == 0` finds it), a live
one up 1; a target that goes away gets Prometheus' stale marker in each of its series."""

import json
import struct
import urllib.parse

import pytest

from scrape_util import GOROUTINE_ONLY, active_targets, config_text, gotargets, wait_for, write_atomic  # noqa: F401

NAMES = ["scrape_duration_seconds", "scrape_samples_post_metric_relabeling", "scrape_samples_scraped", "up"]
STALE = "7ff0000000000002"


def job(targets, labels="{team: core}", extra=GOROUTINE_ONLY):
    return ("  - job_name: app\n    static_configs:\n      - targets: [%s]\n        labels: %s\n%s"
            % (", ".join("'%s'" % t for t in targets), labels, extra))


def floats(srv, instance=None):
    """{(__name__, instance, profile): [(t_ms, value string, bits), ...]} of the scrape series."""
    out = {}
    for s in srv.series():
        ls = s["labels"]
        if ls["__name__"] in NAMES and (instance is None or ls.get("instance") == instance):
            assert s["kind"] == "float", s
            out[(ls["__name__"], ls["instance"], ls["profile"])] = [tuple(p) for p in s["samples"]]
    return out


def bits(v):
    return struct.pack(">d", v).hex()


@pytest.fixture
def setup(make_server, gotargets, tmp_path):
    live = gotargets(seed=1)
    dead = "127.0.0.1:1"  # nothing listens: connection refused
    cfg = tmp_path / "p.yml"
    write_atomic(cfg, config_text(jobs=job([live.address, dead])))
    srv = make_server(config=str(cfg), retention="0")
    wait_for(lambda: all(len(v) >= 3 for v in floats(srv).values()) and len(floats(srv)) == 8, 20,
             "three scrapes of both targets")
    return srv, live, dead, cfg


def test_up_and_scrape_series(setup):
    srv, live, dead, _ = setup
    # one series of each name per target, labels: the target's plus profile
    js = srv.get_json("/api/v1/series?" + urllib.parse.urlencode({"match[]": "up"}))
    assert sorted(js["data"], key=lambda d: d["instance"]) == sorted([
        {"__name__": "up", "instance": i, "job": "app", "profile": "goroutine", "team": "core"}
        for i in (live.address, dead)], key=lambda d: d["instance"])
    fl = floats(srv)
    assert sorted(fl) == sorted((n, i, "goroutine") for n in NAMES for i in (live.address, dead))
    for inst, up in ((live.address, "1"), (dead, "0")):
        ups = fl[("up", inst, "goroutine")]
        times = [p[0] for p in ups]
        # the same scrape start time in all four series; one scrape per second
        for n in NAMES:
            assert [p[0] for p in fl[(n, inst, "goroutine")]] == times, n
        # on the target's fixed 1 s grid (a scrape that starts late does not move the next one): each
        # start is its slot's time or up to 800 ms after it (a loaded machine delays some), one slot
        # after the other with at most one missed
        slots = [(t - times[0] + 50) // 1000 for t in times]
        assert all(-50 <= t - times[0] - 1000 * k <= 800 for t, k in zip(times, slots)), times
        assert all(1 <= b - a <= 2 for a, b in zip(slots, slots[1:])), times
        assert {p[1] for p in ups} == {up}
        assert {p[2] for p in ups} == {bits(float(up))}
        for t_ms, v, _ in fl[("scrape_duration_seconds", inst, "goroutine")]:
            assert 0 < float(v) < 1, v
    for n in ("scrape_samples_scraped", "scrape_samples_post_metric_relabeling"):
        assert {p[1] for p in fl[(n, dead, "goroutine")]} == {"0"}
        assert all(int(p[1]) > 0 for p in fl[(n, live.address, "goroutine")])  # a goroutine profile's samples
    # scraped == stored for a profile stored as scraped (goroutine)
    assert [p[1] for p in fl[("scrape_samples_scraped", live.address, "goroutine")]] == \
        [p[1] for p in fl[("scrape_samples_post_metric_relabeling", live.address, "goroutine")]]
    # the newest up agrees with /api/v1/targets
    health = {t["labels"]["instance"]: t["health"] for t in active_targets(srv)}
    assert health == {live.address: "up", dead: "down"}


def test_up_eq_0_finds_the_dead_target(setup):
    srv, live, dead, _ = setup
    st, _, body = srv.request("POST", "/api/v1/query", body=b"query=up+%3D%3D+0",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    js = json.loads(body)
    assert st == 200, js
    assert [r["metric"] for r in js["data"]["result"]] == [
        {"__name__": "up", "instance": dead, "job": "app", "profile": "goroutine", "team": "core"}]
    assert js["data"]["result"][0]["value"][1] == "0"


def test_gone_targets_get_stale_markers(setup):
    srv, live, dead, cfg = setup
    before = floats(srv, dead)
    write_atomic(cfg, config_text(jobs=job([live.address])))
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 200, body
    after = wait_for(lambda: (lambda f: f if all(v[-1][2] == STALE for v in f.values()) else None)(floats(srv, dead)),
                     10, "stale markers in the dead target's series")
    for k, v in after.items():
        # what was there, plus one stale marker later than the last scrape
        assert v[:len(before[k])] == before[k]
        assert v[-1][0] > v[-2][0] and v[-1][1] == "NaN", v[-2:]
    # the live target goes on, without a stale marker
    n = len(floats(srv, live.address)[("up", live.address, "goroutine")])
    wait_for(lambda: len(floats(srv, live.address)[("up", live.address, "goroutine")]) > n + 1, 10, "more scrapes")
    assert {p[1] for p in floats(srv, live.address)[("up", live.address, "goroutine")]} == {"1"}
    # no more samples for the dead target
    assert floats(srv, dead) == after


def test_samples_scraped_sum_to_the_job_metric(setup):
    """Every scrape has its samples in scrape_samples_scraped: after the last scrape (all targets
    removed), their sum is profstore_scrape_samples_total of the job."""
    srv, live, dead, cfg = setup
    write_atomic(cfg, config_text(jobs=""))
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 200, body
    wait_for(lambda: all(v[-1][2] == STALE for v in floats(srv).values()), 10, "stale markers everywhere")
    fl = floats(srv)
    total = sum(int(p[1]) for p in fl[("scrape_samples_scraped", live.address, "goroutine")] if p[2] != STALE)
    assert srv.metrics()['profstore_scrape_samples_total{job="app"}'] == total
    scrapes = sum(len(v) - 1 for k, v in fl.items() if k[0] == "up")
    assert srv.metrics()['profstore_scrapes_total{job="app"}'] == scrapes
