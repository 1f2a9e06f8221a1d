"""Relabeling of scrape targets (docs/protocols.md), against one real Go target (gotarget) that stands
for many targets through group labels:

  - hashmod sharding: two servers with `hashmod` (modulus 2) over __address__;shard_key and `keep`
    on "0" / "1" split twelve static targets; the shard of each is computed here with hashlib.md5
    (last 8 bytes, big-endian, % 2) and checked in /api/v1/targets (active and dropped) and storage;
  - drop (env=dev|test): the target shows in droppedTargets with its discovered labels, is not
    active and nothing is stored for it;
  - drop on __name__: one profile of one target (each enabled profile is its own target);
  - labelmap: __meta_* (including file_sd's __meta_filepath) to sd_*, and grp_* group labels to g_*;
  - replace: instance built from a group label and the port of __address__ (the scrape still goes
    to __address__)."""

import hashlib
import json
import time

import pytest

from conftest import require_tool
from scrape_util import (GOROUTINE_ONLY, TYPES, GoTarget, active_targets, config_text, dropped_targets, series_list,
                         stored, wait_for, write_atomic)

GOROUTINE = TYPES["goroutine"][0]
THREADCREATE = TYPES["threadcreate"][0]


def shard_of(value: str, modulus: int = 2) -> int:
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus


def pick_keys(address: str, n: int = 12):
    """n shard keys with at least 3 in each shard (so that a split is visible)."""
    for start in range(0, 1000, n):
        keys = ["k%03d" % i for i in range(start, start + n)]
        sh = [shard_of("%s;%s" % (address, k)) for k in keys]
        if sh.count(0) >= 3 and sh.count(1) >= 3:
            return keys
    raise AssertionError("no balanced key set")


def shard_job(address, keys, shard):
    groups = "".join("      - targets: ['%s']\n        labels: {shard_key: %s}\n" % (address, k) for k in keys)
    return ("  - job_name: shard\n"
            "    static_configs:\n" + groups +
            "    relabel_configs:\n"
            "      - source_labels: [__address__, shard_key]\n"
            "        target_label: __tmp_hash\n"
            "        modulus: 2\n"
            "        action: hashmod\n"
            "      - source_labels: [__tmp_hash]\n"
            "        regex: '%d'\n"
            "        action: keep\n" % shard + GOROUTINE_ONLY)


MISC_JOB = """  - job_name: misc
    file_sd_configs:
      - files: ['%(sd)s/*.json']
    relabel_configs:
      - source_labels: [env]
        regex: dev|test
        action: drop
      - source_labels: [__name__, name]
        regex: 'threadcreate;stg'
        action: drop
      - action: labelmap
        regex: __meta_(.+)
        replacement: sd_$1
      - action: labelmap
        regex: grp_(.+)
        replacement: g_${1}
      - source_labels: [__address__, name]
        regex: '127\\.0\\.0\\.1:(\\d+);(.+)'
        target_label: instance
        replacement: '${2}.example:$1'
    profiling_config:
      pprof_config:
        memory: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        process_cpu: {enabled: false}
        threadcreate: {enabled: true}
"""


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_relabel")
    e = Env()
    e.g = GoTarget(wd, seed=1).start()
    e.keys = pick_keys(e.g.address)
    e.want = {k: shard_of("%s;%s" % (e.g.address, k)) for k in e.keys}
    e.sd = wd / "sd"
    e.sd.mkdir()
    e.sdfile = e.sd / "misc.json"
    groups = [
        {"targets": [e.g.address], "labels": {"env": "prod", "name": "web", "grp_team": "blue", "__meta_zone": "z1"}},
        {"targets": [e.g.address], "labels": {"env": "dev", "name": "devbox"}},
        {"targets": [e.g.address], "labels": {"env": "test", "name": "testbox"}},
        {"targets": [e.g.address], "labels": {"env": "staging", "name": "stg", "grp_team": "red"}},
    ]
    write_atomic(e.sdfile, json.dumps(groups))
    c0, c1 = wd / "shard0.yml", wd / "shard1.yml"
    c0.write_text(config_text("1s", "1s", jobs=shard_job(e.g.address, e.keys, 0) + MISC_JOB % {"sd": e.sd}))
    c1.write_text(config_text("1s", "1s", jobs=shard_job(e.g.address, e.keys, 1)))
    e.s0 = module_server_factory(name="shard0", config=str(c0))
    e.s1 = module_server_factory(name="shard1", config=str(c1))
    e.servers = [e.s0, e.s1]
    # a few scrapes everywhere
    for s in e.servers:
        wait_for(lambda: all(t["health"] == "up" for t in active_targets(s))
                 and len({x["labels"].get("shard_key") for x in stored(s, job="shard")}) >= 3, 20,
                 "the shard targets scraped")
    wait_for(lambda: len(stored(e.s0, job="misc")) >= 3, 20, "the misc targets scraped")
    time.sleep(1.5)
    yield e
    e.g.kill()


def test_hashmod_splits_the_targets(env):
    want0 = {k for k, s in env.want.items() if s == 0}
    want1 = {k for k, s in env.want.items() if s == 1}
    for shard, srv, want, other in ((0, env.s0, want0, want1), (1, env.s1, want1, want0)):
        act = [t for t in active_targets(srv) if t["scrapePool"] == "shard"]
        assert {t["labels"]["shard_key"] for t in act} == want, (shard, sorted(want))
        for t in act:
            assert t["health"] == "up", t
            assert "__tmp_hash" not in t["labels"], t
            assert t["discoveredLabels"]["shard_key"] in want, t
        dropped = {d["discoveredLabels"].get("shard_key") for d in dropped_targets(srv)
                   if d["discoveredLabels"].get("job") == "shard"}
        assert dropped == other, (shard, dropped, other)
        # storage: exactly this shard's keys, one goroutine series each
        ss = stored(srv, job="shard")
        assert sorted(s["labels"]["shard_key"] for s in ss) == sorted(want), ss
        for s in ss:
            assert s["labels"]["__name__"] == GOROUTINE
            assert s["labels"]["instance"] == env.g.address
            assert len(s["profiles"]) >= 1
    # together: every target exactly once
    keys0 = {s["labels"]["shard_key"] for s in stored(env.s0, job="shard")}
    keys1 = {s["labels"]["shard_key"] for s in stored(env.s1, job="shard")}
    assert keys0 | keys1 == set(env.keys) and not keys0 & keys1


def test_drop_action(env):
    act = [t for t in active_targets(env.s0) if t["scrapePool"] == "misc"]
    assert {t["discoveredLabels"]["env"] for t in act} == {"prod", "staging"}, act
    dropped = [d["discoveredLabels"] for d in dropped_targets(env.s0) if d["discoveredLabels"].get("job") == "misc"]
    # dev and test: both profiles (goroutine, threadcreate) of each; plus threadcreate of stg
    got = sorted((d.get("name"), d.get("__name__")) for d in dropped)
    assert got == [("devbox", "goroutine"), ("devbox", "threadcreate"), ("stg", "threadcreate"),
                   ("testbox", "goroutine"), ("testbox", "threadcreate")], got
    for d in dropped:
        assert d["__address__"] == env.g.address and d["__meta_filepath"] == str(env.sdfile), d
    # nothing stored for them
    assert series_list(env.s0, '{env=~"dev|test"}') == []
    assert series_list(env.s0, '{name=~"devbox|testbox"}') == []
    # the per-profile drop: stg has its goroutine series only, web has both
    assert sorted(s["__name__"] for s in series_list(env.s0, '{name="stg"}')) == [GOROUTINE]
    assert sorted(s["__name__"] for s in series_list(env.s0, '{name="web"}')) == sorted([GOROUTINE, THREADCREATE])


def test_labelmap_and_instance_replace(env):
    port = env.g.port
    web = series_list(env.s0, '{job="misc",name="web"}')
    assert len(web) == 2, web
    for s in web:
        assert s == {"__name__": s["__name__"], "job": "misc", "env": "prod", "name": "web",
                     "grp_team": "blue", "g_team": "blue", "sd_zone": "z1", "sd_filepath": str(env.sdfile),
                     "instance": "web.example:%d" % port}, s
    stg = series_list(env.s0, '{job="misc",name="stg"}')
    assert len(stg) == 1, stg
    assert stg[0] == {"__name__": GOROUTINE, "job": "misc", "env": "staging", "name": "stg", "grp_team": "red",
                      "g_team": "red", "sd_filepath": str(env.sdfile), "instance": "stg.example:%d" % port}, stg
    # the scrape went to __address__, not to the relabelled instance
    for t in active_targets(env.s0):
        if t["scrapePool"] != "misc":
            continue
        assert t["health"] == "up", t
        assert t["scrapeUrl"].startswith("http://%s/debug/pprof/" % env.g.address), t
        assert t["labels"]["instance"].endswith(".example:%d" % port), t
        assert t["discoveredLabels"]["__address__"] == env.g.address
        assert t["discoveredLabels"]["__meta_zone" if t["labels"]["name"] == "web" else "name"]
