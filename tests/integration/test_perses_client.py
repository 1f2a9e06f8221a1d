"""A real Pyroscope client that is not ours: the Perses project's Pyroscope plugin
(@perses-dev/pyroscope-plugin 0.4.0, pinned by tests/perses/package-lock.json, installed by
scripts/install-perses.sh into $PS_PERSES_DIR or <tmp>/profstore-perses; the test installs it when
missing and fails when it cannot) driven in Node by perses_client.js against profstore filled with
the fixtures: its datasource client, the hooks its pickers call (profile types, services, label
names and values: Connect JSON to querier.v1) and its profile query (/pyroscope/render turned into
Perses' profile tree), every request it makes checked as sent, every answer against profstore's own
APIs, the fixtures' known totals and `go tool pprof -raw` of the fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import PPROF_DIR, QUERY_T0, README_TOTALS, pprof_raw_samples

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
T0 = QUERY_T0  # 2026-11-30T07:00:00Z
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
CPU_ID = CPU + ":delta"  # the id profstore's ProfileTypes gives, which the type picker passes on
INUSE = "memory:inuse_space:bytes:space:bytes"
# (fixture, labels, seconds after T0); "live" is pushed two minutes before now (the panel's default range)
PUSHES = [("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 10),
          ("go/cpu-02.pb.gz", '{service_name="api",instance="b"}', 70),
          ("go/cpu-03.pb.gz", '{service_name="api",instance="a"}', 400),
          ("go/heap-01.pb.gz", '{service_name="heapy",pod="p-1"}', 20)]
LIVE = "go/cpu-04.pb.gz"
NET_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH")
JSON_CT = {"content-type": "application/json"}
DS_PICKERS = [{"kind": "PyroscopeDatasource", "name": "profstore"}]  # what perses_client.js's pickers name
DS_QUERY = [{"kind": "PyroscopeDatasource"}]  # getProfileData's default datasource selector
_cache = {}


def perses_modules() -> str:
    """node_modules with the pinned plugin (scripts/install-perses.sh, run when needed)."""
    if "mods" in _cache:
        return _cache["mods"]
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not installed: cannot install @perses-dev/pyroscope-plugin")
    d = os.environ.get("PS_PERSES_DIR") or os.path.join(tempfile.gettempdir(), "profstore-perses")
    r = subprocess.run([str(REPO / "scripts" / "install-perses.sh"), d], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if any(e in r.stdout + r.stderr for e in NET_ERRORS):
            pytest.skip("npm registry unreachable, @perses-dev/pyroscope-plugin not installed: "
                        + (r.stdout + r.stderr)[-300:])
        raise AssertionError("scripts/install-perses.sh failed:\n" + r.stdout + r.stderr)
    _cache["mods"] = os.path.join(d, "node_modules")
    return _cache["mods"]


def perses(srv, steps):
    """Runs the steps in perses_client.js: [{"result" | "error", "status", "requests", "datasource"}]."""
    env = dict(os.environ, PERSES_MODULES=perses_modules(), SERVER_URL=srv.url("").rstrip("/"))
    r = subprocess.run(["node", str(HERE / "perses_client.js")], input=json.dumps(steps), capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert len(out) == len(steps), out
    return out


def pprof_stacks(rels, tmp_path):
    """`go tool pprof -raw` of the fixtures: {(frames root first): the cpu nanoseconds (the last value)}."""
    stacks = defaultdict(int)
    for rel in rels:
        for v, frames in pprof_raw_samples(PPROF_DIR / rel, tmp_path):
            stacks[tuple(frames)] += v
    return stacks


def tree_of_stacks(stacks):
    """{path below the root: [total, self]} of a flame graph of these stacks (zero stacks left out)."""
    nodes = defaultdict(lambda: [0, 0])
    for frames, v in stacks.items():
        if v == 0:
            continue
        for k in range(1, len(frames) + 1):
            nodes[frames[:k]][0] += v
        nodes[frames][1] += v
    return dict(nodes)


def tree_of_perses(node, path=(), out=None):
    """Perses' profile tree (stackTrace) as {path below the root: [total, self]}; checks its spans."""
    out = {} if out is None else out
    assert node["end"] - node["start"] == node["total"], node["name"]
    assert node["self"] + sum(c["total"] for c in node["children"]) == node["total"], node["name"]
    for c in node["children"]:
        assert node["start"] <= c["start"] and c["end"] <= node["end"] and c["level"] == node["level"] + 1
        p = path + (c["name"],)
        assert p not in out, p
        out[p] = [c["total"], c["self"]]
        tree_of_perses(c, p, out)
    return out


def tree_of_flamegraph(fg):
    """profstore's own flame graph (names, levels of [offset, total, self, name] per node) as
    {path below the root: [total, self]}, Perses' or flamebearer's reading of the levels."""
    names, levels, out = fg["names"], fg["levels"], {}
    spans = [[(0, levels[0][1], ())]]
    for lv in levels[1:]:
        row, x = [], 0
        for j in range(0, len(lv), 4):
            x += lv[j]
            parent = next(p for s, e, p in spans[-1] if s <= x and x + lv[j + 1] <= e)
            path = parent + (names[lv[j + 3]],)
            out[path] = [lv[j + 1], lv[j + 2]]
            row.append((x, x + lv[j + 1], path))
            x += lv[j + 1]
        spans.append(row)
    return out


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="perses", retention="0")
    for rel, labels, off in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + off))
        assert st == 200, (rel, st, s.last_raw[:300])
    s.live_time = int(time.time()) - 120
    st, _ = s.push(LIVE, labels='{service_name="live"}', time=str(s.live_time))
    assert st == 200, s.last_raw[:300]
    return s


def own(srv, path, params):
    return srv.get_json(path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))


def test_pickers(srv):
    """The query editor's pickers: each hook's one Connect JSON request, as sent, and its answer
    against profstore's own series (debug API) and Prometheus-style label APIs."""
    out = perses(srv, [{"call": "profileTypes"}, {"call": "services"}, {"call": "labelNames"},
                       {"call": "labelValues", "name": "instance"}, {"call": "labelValues", "name": "pod"},
                       {"call": "labelValues", "name": "nope"}])
    for o in out:
        assert "error" not in o, o
        assert o["datasource"] == DS_PICKERS, o
        assert len(o["requests"]) == 1, o
    base = srv.url("").rstrip("/") + "/querier.v1.QuerierService/"
    assert [(q["method"], q["url"], q["headers"], q["body"]) for o in out for q in o["requests"]] == [
        ("POST", base + "ProfileTypes?", JSON_CT, "{}"),
        ("POST", base + "LabelValues?", JSON_CT, '{"name":"service_name"}'),
        ("POST", base + "LabelNames?", JSON_CT, "{}"),
        ("POST", base + "LabelValues?", JSON_CT, '{"name":"instance"}'),
        ("POST", base + "LabelValues?", JSON_CT, '{"name":"pod"}'),
        ("POST", base + "LabelValues?", JSON_CT, '{"name":"nope"}')]
    types, services, names, inst, pod, nope = [o["result"] for o in out]

    series = srv.series()
    stored = sorted({s["labels"]["__name__"] for s in series})
    assert stored == ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
                      "memory:inuse_objects:count:space:bytes", INUSE, CPU_ID,
                      "process_cpu:samples:count:cpu:nanoseconds:delta"]
    # the type picker shows name/sampleType and passes ID on: every field the plugin reads
    assert types == {"profileTypes": [
        dict(zip(["ID", "name", "sampleType", "sampleUnit", "periodType", "periodUnit"], [t] + t.split(":")[:5]))
        for t in stored]}
    assert services == {"names": ["api", "heapy", "live"]}
    assert services["names"] == own(srv, "/api/v1/label/service_name/values", {})["data"]
    assert names == {"response": {"names": ["__name__", "instance", "pod", "service_name"]},
                     "options": ["instance", "pod"]}
    assert names["response"]["names"] == own(srv, "/api/v1/labels", {})["data"]
    assert inst == {"names": ["a", "b"]} and pod == {"names": ["p-1"]}
    assert inst["names"] == own(srv, "/api/v1/label/instance/values", {})["data"]
    assert nope == {}  # Connect JSON leaves an empty list out; the picker reads `names ?? []`


def sent(o):
    """The requests of a step as (method, url without its query, query parameters in order, headers, body)."""
    return [(q["method"], q["url"].split("?")[0], urllib.parse.parse_qsl(q["url"].partition("?")[2]), q["headers"],
             q["body"]) for q in o["requests"]]


def test_profile_query(srv, tmp_path):
    """The ProfileQuery plugin's panel query with the type the picker offers (its ID), a service and
    filters, over an absolute range, unbounded (no maxNodes) and with maxNodes: the request as sent, the
    profile tree against `go tool pprof -raw` of the fixtures and profstore's own flame graph, the
    totals, the metadata and the timeline."""
    rng = [T0, T0 + 3600]
    api = {"profileType": CPU_ID, "service": "api", "maxNodes": 0,
           "filters": [{"labelName": "instance", "labelValue": "a|b", "operator": "=~"},
                       {"labelName": "", "labelValue": "", "operator": "="}]}  # the editor's empty row
    steps = [{"call": "profile", "spec": api, "range": rng},
             {"call": "profile", "spec": dict(api, filters=[{"labelName": "instance", "labelValue": "a",
                                                             "operator": "!="}]), "range": rng},
             {"call": "profile", "spec": {"profileType": CPU_ID}, "range": rng},
             {"call": "profile", "spec": dict(api, maxNodes=5), "range": rng},
             {"call": "profile", "spec": dict(api, filters=[{"labelName": "instance", "labelValue": "a",
                                                             "operator": "!~"}]), "range": rng},
             {"call": "profile", "spec": {"profileType": INUSE, "service": "heapy",
                                          "filters": [{"labelName": "pod", "labelValue": "p-.*", "operator": "=~"}]},
              "range": rng}]
    out = perses(srv, steps)
    for o in out:
        assert "error" not in o, o
        assert o["datasource"] == DS_QUERY, o
    sels = [CPU_ID + '{service_name="api",instance=~"a|b"}', CPU_ID + '{service_name="api",instance!="a"}', CPU_ID,
            CPU_ID + '{service_name="api",instance=~"a|b"}', CPU_ID + '{service_name="api",instance!~"a"}',
            INUSE + '{service_name="heapy",pod=~"p-.*"}']
    want_params = [{"query": s, "from": str(T0), "until": str(T0 + 3600)} for s in sels]
    want_params[3]["maxNodes"] = "5"
    render = srv.url("").rstrip("/") + "/pyroscope/render"
    assert [q for o in out for q in sent(o)] == [("GET", render, list(p.items()), {}, None) for p in want_params]
    res = [o["result"] for o in out]

    cpu_rels = {"all": ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz"], "b": ["go/cpu-02.pb.gz"]}
    for r, rels in ((res[0], cpu_rels["all"]), (res[1], cpu_rels["b"]), (res[2], cpu_rels["all"])):
        total = sum(README_TOTALS[f][1] for f in rels)
        root = r["profile"]["stackTrace"]
        assert (root["name"], root["level"], root["total"], root["self"], root["start"], root["end"]) == \
            ("total", 0, total, 0, 0, total)
        tree = tree_of_perses(root)
        assert tree == tree_of_stacks(pprof_stacks(rels, tmp_path))
        assert r["numTicks"] == total
        assert r["maxSelf"] == max(v[1] for v in tree.values())
        assert r["metadata"] == {"spyName": "", "sampleRate": 1000000000, "units": "samples", "name": "cpu"}
    # the timeline: 15 s steps from the range's start, each profile in the step that ends at or after it
    tl = res[0]["timeline"]
    assert (tl["startTime"], tl["durationDelta"], len(tl["samples"])) == (T0, 15, 240)  # 1 h / 15 s
    assert {i: v for i, v in enumerate(tl["samples"]) if v} == {1: 2980000000, 5: 2930000000, 27: 2890000000}
    assert {i: v for i, v in enumerate(res[1]["timeline"]["samples"]) if v} == {5: 2930000000}

    # maxNodes=5: the tree of profstore's own flame graph of the same selection and max_nodes
    fg = own(srv, "/api/v1/profiles/query", {"query": CPU_ID + '{service_name="api",instance=~"a|b"}',
                                              "start": str(T0), "end": str(T0 + 3600), "format": "flamegraph",
                                              "max_nodes": "5"})
    fg = fg.get("data", fg)
    small = tree_of_perses(res[3]["profile"]["stackTrace"])
    assert small == tree_of_flamegraph(fg), small
    # Pyroscope's maxNodes counts functions: 5 of them, the rest merged into "other" under its parent
    assert sorted({p[-1] for p in small} - {"other"}) == ["main.cpuWorker", "main.cpuWorker.func1", "main.main.func1.1",
                                                           "main.main.func2", "runtime/pprof.Do"]
    assert sorted(p for p in small if p[-1] == "other") == [
        ("main.main.func1.1", "main.main.func2", "main.cpuWorker", "other"),
        ("main.main.func1.1", "main.main.func2", "main.cpuWorker", "runtime/pprof.Do", "main.cpuWorker.func1", "other"),
        ("main.main.func1.1", "other"), ("other",)]
    assert res[3]["numTicks"] == res[0]["numTicks"] == fg["total"]

    assert res[4] == res[1]  # instance!~"a" selects what instance!="a" does
    heap = res[5]
    assert heap["numTicks"] == README_TOTALS["go/heap-01.pb.gz"][3] == heap["profile"]["stackTrace"]["total"]
    assert heap["metadata"] == {"spyName": "", "sampleRate": 100, "units": "bytes", "name": "inuse_space"}
    full = own(srv, "/api/v1/profiles/query", {"query": INUSE + '{service_name="heapy"}', "start": str(T0),
                                               "end": str(T0 + 3600), "format": "flamegraph"})
    assert tree_of_perses(heap["profile"]["stackTrace"]) == tree_of_flamegraph(full.get("data", full))


def test_profile_query_default_range_and_errors(srv):
    """A panel without a time range asks from=now-1h (the plugin's default): the profile pushed two
    minutes ago, in the right 15 s step. A profile type profstore does not know: the plugin's
    error (core's UserFriendlyError) carries profstore's 400 and its message."""
    before = int(time.time())
    out = perses(srv, [{"call": "profile", "spec": {"profileType": CPU_ID, "service": "live"}},
                       {"call": "profile", "spec": {"profileType": "bogus", "service": "live"}},
                       {"call": "profile", "spec": {"profileType": CPU_ID, "service": 'a"b'}}])
    after = int(time.time())
    live, bogus, quote = out
    assert sent(live) == [("GET", srv.url("").rstrip("/") + "/pyroscope/render",
                           [("query", CPU_ID + '{service_name="live"}'), ("from", "now-1h")], {}, None)]
    r = live["result"]
    total = README_TOTALS[LIVE][1]
    assert (r["numTicks"], r["profile"]["stackTrace"]["total"]) == (total, total)
    tl = r["timeline"]
    assert before - 3600 <= tl["startTime"] <= after - 3600 and tl["durationDelta"] == 15
    step = -(-(srv.live_time - tl["startTime"]) // 15)  # the first step t with the profile's time <= t
    assert {i: v for i, v in enumerate(tl["samples"]) if v} == {step: total}

    assert (bogus["type"], bogus["status"]) == ("UserFriendlyError", 400)
    assert bogus["error"] == ('invalid parameter "query": "bogus" is not a profile type id: expected <name>:'
                              '<sample-type>:<sample-unit>:<period-type>:<period-unit>[:delta], e.g. '
                              'process_cpu:cpu:nanoseconds:cpu:nanoseconds')
    # the plugin puts the service in quotes unescaped: profstore refuses the selector, naming where
    assert (quote["type"], quote["status"]) == ("UserFriendlyError", 400), quote
    assert quote["error"].startswith('invalid parameter "query": '), quote
