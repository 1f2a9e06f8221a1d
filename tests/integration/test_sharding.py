"""Sharded scraping (docs/SCALING.md): two real profstore processes with the same configuration but
for the shard they keep split one static target list without overlap or gap.

The targets are distinct loopback HTTP servers in this process (PyTarget), each its own
127.0.0.1:<port>, serving two real Go profiles (tests/testdata/pprof/go/goroutine-01.pb.gz and
threadcreate-01.pb.gz; both profile types are enabled, so each address is two scrape targets that
must land on the same instance) with a second gzip member that sets time_nanos to now, so that
every scrape is a new profile (the fixtures' own times are older than the default 15d retention).
The relabeling is Prometheus' documented recipe, word for word what docs/SCALING.md shows:

    - source_labels: [__address__]
      modulus: 2
      target_label: __tmp_hash
      action: hashmod
    - source_labels: [__tmp_hash]
      regex: '<i>'
      action: keep

The shard of each target is computed here independently of src/config/relabel.c, from Prometheus'
model/relabel definition: md5 of the joined source label values, its last 8 bytes as a big-endian
uint64, modulo the modulus (pinned by Prometheus' own relabel_test.go value: "baz" mod 1000 = 976).

Checked on each instance: /api/v1/targets (active = this shard's addresses, all up, no __tmp_hash
left; dropped = the other shard's), the profile series stored (/api/v1/series), the values of the
instance label (/api/v1/label/instance/values, which also covers the up/scrape_* float series) and
profstore_scrape_targets; across both: union = the target list, intersection empty. And per target
the profiles it served equal (within the scrapes in flight) the profiles its shard's instance
stored: no target is scraped by both. Then both configs get more targets and a SIGHUP: the same
split holds for old and new targets, and no old target moved. Two real Prometheus 2.42 processes
with the same list and relabel_configs keep the same targets as the two profstores. Last,
docs/SCALING.md's YAML block as written (file_sd, the external label `shard`) splits a file_sd list
and a file added later."""

import gzip
import hashlib
import json
import re
import signal
import time
import urllib.parse
from typing import Dict, List

import pytest

from conftest import TESTDATA
from pprof_decode import varint
from scrape_util import (GOROUTINE_ONLY, TYPES, PyTarget, active_targets, config_text, dropped_targets, series_list,
                         stored, wait_for, write_atomic)

GOROUTINE = TYPES["goroutine"][0]
THREADCREATE = TYPES["threadcreate"][0]
FIXTURES = {"/debug/pprof/goroutine": TESTDATA / "pprof" / "go" / "goroutine-01.pb.gz",
            "/debug/pprof/threadcreate": TESTDATA / "pprof" / "go" / "threadcreate-01.pb.gz"}
TYPES_STORED = sorted([GOROUTINE, THREADCREATE])
N_INITIAL = 6  # targets per shard in the first list
N_ADDED = 3    # targets per shard added by the reload
MIN_STORED = 4  # profiles per target and type before the served = stored check


def hashmod(value: str, modulus: int) -> int:
    """Prometheus' hashmod: md5(value), the last 8 bytes big-endian as uint64, % modulus."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus


class ProfileTarget(PyTarget):
    """FIXTURES' paths: the fixture as Go wrote it + a gzip member holding field 9 (time_nanos) = now
    (protobuf keeps the last value of a field; gzip readers read every member). Counts the profiles
    served per path."""

    def __init__(self, fixtures: Dict[str, bytes]):
        self.scrapes = {p: 0 for p in fixtures}

        def handler(path, h):
            p = urllib.parse.urlsplit(path).path
            if p not in fixtures:
                h.send_response(404)
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            self.scrapes[p] += 1
            body = fixtures[p] + gzip.compress(b"\x48" + varint(time.time_ns()))
            h.send_response(200)
            h.send_header("Content-Type", "application/octet-stream")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)

        super().__init__(handler)


def job(addresses: List[str], shard: int) -> str:
    """The job of shard `shard` of 2: everything but the keep regex is the same on both instances."""
    return ("  - job_name: fleet\n"
            "    static_configs:\n"
            "      - targets: [%s]\n"
            "        labels: {env: prod}\n"
            "    relabel_configs:\n"
            "      - source_labels: [__address__]\n"
            "        modulus: 2\n"
            "        target_label: __tmp_hash\n"
            "        action: hashmod\n"
            "      - source_labels: [__tmp_hash]\n"
            "        regex: '%d'\n"
            "        action: keep\n" % (", ".join("'%s'" % a for a in addresses), shard)) + GOROUTINE_ONLY + \
        "        threadcreate: {enabled: true}\n"


def instance_values(srv) -> List[str]:
    q = urllib.parse.urlencode({"start": "0", "end": str(int(time.time()) + 3600)})
    js = srv.get_json("/api/v1/label/instance/values?" + q)
    assert js["status"] == "success", js
    return js["data"]


def view(srv) -> Dict[str, object]:
    """What one instance says it scrapes and stores, for job fleet: addresses, each once per profile
    type."""
    act = [t for t in active_targets(srv) if t["scrapePool"] == "fleet"]
    return {
        "active": sorted(t["labels"]["instance"] for t in act),
        "up": all(t["health"] == "up" for t in act),
        "dropped": sorted(d["discoveredLabels"]["__address__"] for d in dropped_targets(srv)
                          if d["discoveredLabels"].get("job") == "fleet"),
        "series": sorted(s["instance"] for s in series_list(srv, '{job="fleet"}')),
        "instances": instance_values(srv),
    }


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    wd = tmp_path_factory.mktemp("sharding")
    fixtures = {p: f.read_bytes() for p, f in FIXTURES.items()}
    # Ports are the kernel's: make targets until each shard has enough, so the split is balanced
    # and known (6 + 6 first, 3 + 3 added); the spare ones are never listed.
    e = Env()
    e.all: List[ProfileTarget] = []
    by_shard: Dict[int, List[ProfileTarget]] = {0: [], 1: []}
    while min(len(v) for v in by_shard.values()) < N_INITIAL + N_ADDED:
        t = ProfileTarget(fixtures)
        e.all.append(t)
        by_shard[hashmod(t.address, 2)].append(t)
        assert len(e.all) < 200, "the kernel's ports all hash to one shard?"
    e.initial = [t.address for s in (0, 1) for t in by_shard[s][:N_INITIAL]]
    e.added = [t.address for s in (0, 1) for t in by_shard[s][N_INITIAL:N_INITIAL + N_ADDED]]
    e.by_addr = {t.address: t for t in e.all}
    e.cfg = [wd / "shard0.yml", wd / "shard1.yml"]
    for i in (0, 1):
        e.cfg[i].write_text(config_text("1s", "1s", jobs=job(e.initial, i)))
    e.srv = [module_server_factory(name="shard%d" % i, config=str(e.cfg[i])) for i in (0, 1)]
    yield e
    for t in e.all:
        t.httpd.shutdown()
        t.httpd.server_close()


def expected(addresses: List[str], shard: int) -> List[str]:
    return sorted(a for a in addresses if hashmod(a, 2) == shard)


def settled(srv, want: List[str], other: List[str]):
    """The instance's view once every target of its shard is up and stored, else None."""
    v = view(srv)
    twice = sorted(want * 2)  # goroutine and threadcreate
    if (v["active"] == twice and v["up"] and v["series"] == twice and v["instances"] == want
            and v["dropped"] == sorted(other * 2)):
        return v
    return None


def check_split(e, addresses: List[str]):
    views = []
    for i in (0, 1):
        want, other = expected(addresses, i), expected(addresses, 1 - i)
        try:
            v = wait_for(lambda: settled(e.srv[i], want, other), 20, "shard %d: %s active, up and stored" % (i, want))
        except AssertionError as ex:
            raise AssertionError("%s; its view: %r" % (ex, view(e.srv[i]))) from None
        views.append(v)
        labels = [t["labels"] for t in active_targets(e.srv[i]) if t["scrapePool"] == "fleet"]
        for ls in labels:
            assert "__tmp_hash" not in ls and ls["env"] == "prod" and ls["job"] == "fleet", ls
        by_instance: Dict[str, List[str]] = {}
        for s in series_list(e.srv[i], '{job="fleet"}'):
            assert s == {"__name__": s["__name__"], "job": "fleet", "env": "prod", "instance": s["instance"]}, s
            by_instance.setdefault(s["instance"], []).append(s["__name__"])
        assert {a: sorted(t) for a, t in by_instance.items()} == {a: TYPES_STORED for a in want}
        assert e.srv[i].metrics()["profstore_scrape_targets"] == 2 * len(want)
    for key in ("active", "series", "instances"):
        a, b = set(views[0][key]), set(views[1][key])
        assert a | b == set(addresses), (key, sorted(a | b))
        assert not a & b, (key, sorted(a & b))
    return views


def stored_profiles(srv, address: str, name: str) -> int:
    ss = [s for s in stored(srv, job="fleet", instance=address) if s["labels"]["__name__"] == name]
    assert len(ss) <= 1, ss
    return len(ss[0]["profiles"]) if ss else 0


def check_scraped_once(e, addresses: List[str]):
    """Every profile a target served is stored by its shard's instance, and it served no others: a
    target that both instances scraped would have served about twice what one of them stored. (Read
    stored, served, stored again: a scrape or two may be between the target's answer and the commit
    on a loaded machine. Hence at least MIN_STORED profiles first: then twice as many served cannot
    pass for those in flight.)"""
    def enough():
        return all(stored_profiles(e.srv[hashmod(a, 2)], a, name) >= MIN_STORED
                   for a in addresses for name in (GOROUTINE, THREADCREATE))
    wait_for(enough, 20, "%d profiles of each target and type stored" % MIN_STORED)
    for a in addresses:
        srv = e.srv[hashmod(a, 2)]
        for path, name in (("/debug/pprof/goroutine", GOROUTINE), ("/debug/pprof/threadcreate", THREADCREATE)):
            before = stored_profiles(srv, a, name)
            served = e.by_addr[a].scrapes[path]
            after = stored_profiles(srv, a, name)
            assert MIN_STORED <= before <= served <= after + 2, (a, name, before, served, after)


def test_prometheus_hashmod_definition():
    # Prometheus' model/relabel/relabel_test.go: source "baz", modulus 1000 -> "976"
    assert hashmod("baz", 1000) == 976


def test_two_instances_split_the_list(env):
    assert len(env.initial) == 2 * N_INITIAL
    views = check_split(env, env.initial)
    assert [len(v["instances"]) for v in views] == [N_INITIAL, N_INITIAL]
    check_scraped_once(env, env.initial)
    # the spare targets, never listed, were never asked
    for t in env.all:
        if t.address not in env.initial + env.added:
            assert sum(t.scrapes.values()) == 0, t.address


class RawPromConfig:
    """A prometheus.yml given as text, for prom_util.Prometheus (which asks config.text(address))."""

    def __init__(self, text: str):
        self.body = text

    def text(self, own_address: str) -> str:
        return self.body


def prom_job(addresses: List[str], shard: int) -> str:
    """job() for Prometheus: the same static list and relabel_configs, without Parca's profiling_config."""
    text = job(addresses, shard)
    return text[:text.index("    profiling_config:")]


def test_a_real_prometheus_shards_alike(env, tmp_path):
    """A real Prometheus 2.42 with the same relabel_configs keeps the same targets as each profstore
    (it scrapes /metrics, which these targets answer 404: its targets are down, but which ones are
    active and which dropped is what counts here). Prometheus, profstore and the hashmod of this file
    agree."""
    from prom_util import Prometheus, prometheus_binary
    prometheus_binary()
    check_split(env, env.initial)  # profstore's side (also when this test runs alone)
    proms = []
    try:
        for i in (0, 1):
            text = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n" + prom_job(env.initial, i)
            proms.append(Prometheus(tmp_path / ("prom%d" % i), RawPromConfig(text)).start())
        for i in (0, 1):
            def split(p=proms[i]):
                st, _, body = p.request("GET", "/api/v1/targets?state=any")
                assert st == 200, (st, body[:300])
                js = json.loads(body)
                act = sorted(t["labels"]["instance"] for t in js["data"]["activeTargets"])
                dropped = sorted(d["discoveredLabels"]["__address__"] for d in js["data"]["droppedTargets"])
                return (act, dropped) if act or dropped else None
            act, dropped = wait_for(split, 20, "Prometheus %d's targets" % i)
            assert act == expected(env.initial, i), (i, act)
            assert dropped == expected(env.initial, 1 - i), (i, dropped)
            # profstore's instance i: the same addresses (each once per profile type there)
            assert sorted(set(view(env.srv[i])["active"]) & set(env.initial)) == act
    finally:
        for p in proms:
            p.stop()


def test_split_holds_after_sighup_adding_targets(env):
    check_split(env, env.initial)
    before = [set(view(s)["series"]) for s in env.srv]
    full = env.initial + env.added
    for i in (0, 1):
        write_atomic(env.cfg[i], config_text("1s", "1s", jobs=job(full, i)))
        env.srv[i].proc.send_signal(signal.SIGHUP)
    views = check_split(env, full)
    assert [len(v["instances"]) for v in views] == [N_INITIAL + N_ADDED] * 2
    for i in (0, 1):
        assert before[i] <= set(views[i]["series"]), "an old target moved off shard %d" % i
        assert set(views[i]["series"]) - before[i] == set(expected(env.added, i))
    # the old and the new targets are scraped, each by its one instance
    check_scraped_once(env, full)


def doc_config() -> str:
    """The shard-0 configuration of docs/SCALING.md, as written there."""
    from conftest import REPO
    doc = (REPO / "docs" / "SCALING.md").read_text()
    section = doc[doc.index("## Sharded scraping"):]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)[0]


def test_the_documented_config_with_file_sd(make_server, tmp_path):
    """docs/SCALING.md's configuration as written (file_sd, external label shard), changed only where
    it must be: the file_sd path, a 1 s interval, the two profile types these targets serve, and for
    shard 1 its regex and label."""
    text = doc_config()
    assert "regex: '0'" in text and 'external_labels: {shard: "0"}' in text and "modulus: 2" in text
    fixtures = {p: f.read_bytes() for p, f in FIXTURES.items()}
    made: List[ProfileTarget] = []
    by_shard: Dict[int, List[str]] = {0: [], 1: []}
    try:
        while min(len(v) for v in by_shard.values()) < 3:
            t = ProfileTarget(fixtures)
            made.append(t)
            by_shard[hashmod(t.address, 2)].append(t.address)
        addresses = [t.address for t in made]
        sd = tmp_path / "targets"
        sd.mkdir()
        write_atomic(sd / "fleet.json", json.dumps([{"targets": addresses}]))
        text = (text.replace("/etc/profstore/targets/*.json", str(sd / "*.json"))
                .replace("scrape_interval: 10s", "scrape_interval: 1s") + GOROUTINE_ONLY +
                "        threadcreate: {enabled: true}\n")
        srv = []
        for i in (0, 1):
            cfg = tmp_path / ("shard%d.yml" % i)
            cfg.write_text(text.replace("regex: '0'", "regex: '%d'" % i)
                           .replace('{shard: "0"}', '{shard: "%d"}' % i))
            srv.append(make_server(name="doc%d" % i, config=str(cfg)))
        for i in (0, 1):
            want = sorted(by_shard[i])
            try:
                wait_for(lambda: settled(srv[i], want, sorted(by_shard[1 - i])), 20, "shard %d settled" % i)
            except AssertionError as ex:
                raise AssertionError("%s; its view: %r" % (ex, view(srv[i]))) from None
            for s in series_list(srv[i], '{job="fleet"}', scrape_series=True):
                assert s["shard"] == str(i), s
        # a new file in the watched directory: its targets go to their shards too
        more: List[str] = []
        while len({hashmod(a, 2) for a in more}) < 2:
            t = ProfileTarget(fixtures)
            made.append(t)
            more.append(t.address)
        write_atomic(sd / "more.json", json.dumps([{"targets": more}]))
        full = addresses + more
        for i in (0, 1):
            want, other = expected(full, i), expected(full, 1 - i)
            try:
                wait_for(lambda: settled(srv[i], want, other), 20, "shard %d settled after the new file" % i)
            except AssertionError as ex:
                raise AssertionError("%s; its view: %r" % (ex, view(srv[i]))) from None
    finally:
        for t in made:
            t.httpd.shutdown()
            t.httpd.server_close()
