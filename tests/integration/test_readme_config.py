"""The front page's snippets (README.md) and the reference configuration (docs/configuration.md), each
taken from the file itself so that the two cannot drift, each run against a real server:

- the minimal scrape file scrapes one real Go program (gotarget) with Parca's default
  profiling_config (exactly the five default profile types, CPU with ?seconds=10, every target up),
  also through `make run CONFIG=...`; the full reference file is accepted as it stands;
- the `go tool pprof` command reads the merge of the last hour's profiles of job="myapp";
- the Go SDK snippet (pyroscope-go, built with Go against the module proxy) and the Node.js snippet
  (@pyroscope/nodejs 0.6.4 from npm) push profiles that are stored under service_name="myapp";
- the Alloy snippet: Alloy is not installed by make test, so its shape is checked (a pyroscope.scrape
  forwarding to the pyroscope.write block, whose endpoint url is the server's base URL) and the
  request pyroscope.write makes of it (a Connect push to url + /push.v1.PusherService/Push, with the
  scrape target's labels) is sent and stored;
- the Prometheus snippet: a real Prometheus 2.42 with it (plus a job scraping itself) remote-writes
  its samples into profstore and reads a pushed profile's total back through remote_read;
- the Grafana provisioning snippet: its two data sources have the types of
  docker/grafana/provisioning, and the calls each makes for its health check (Prometheus: the query
  `1+1`; Pyroscope: ProfileTypes) are answered at its url."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import PROFSTORE_BIN, README_TOTALS, REPO, _go_cache, fixture_bytes, free_port, require_tool
from pyro_util import pyro  # noqa: F401 (fixture)
from scrape_util import GoTarget, active_targets, wait_for

README = (REPO / "README.md").read_text()
CONFIGURATION = (REPO / "docs" / "configuration.md").read_text()
SNIPPET_SERVER = "http://127.0.0.1:7070"
PYROSCOPE_GO = "v1.5.0"   # the pyroscope-go release the Go snippet is built with
CPU_TYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"


def section(text: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading of the same or a higher level
    (lines inside ``` blocks are not headings)."""
    level = len(heading.split(" ")[0])
    lines = text.split("\n")
    start = lines.index(heading)
    fence = False
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,%d} " % level, lines[i]):
            return "\n".join(lines[start:i]) + "\n"
    return "\n".join(lines[start:]) + "\n"


def blocks(text: str, lang: str):
    return re.findall(r"```%s\n(.*?)```" % re.escape(lang), text, re.S)


def yaml_blocks():
    """The minimal scrape file (README) and the reference file (docs/configuration.md)."""
    return [blocks(section(README, "## Scrape a Go program"), "yaml")[0],
            blocks(section(CONFIGURATION, "## Scraping"), "yaml")[1]]


def test_minimal_config_scrapes_a_local_go_program(make_server, tmp_path):
    require_tool("go")
    minimal = yaml_blocks()[0]
    assert "127.0.0.1:6060" in minimal
    t = GoTarget(tmp_path / "t").start()
    cfg = tmp_path / "profstore.yml"
    cfg.write_text(minimal.replace("127.0.0.1:6060", t.address))
    srv = make_server(config=str(cfg), retention="0")

    targets = wait_for(lambda: (lambda a: a if len(a) == 5 else None)(active_targets(srv)), 10, "5 targets")
    by_name = {x["profileName"]: x for x in targets}
    assert sorted(by_name) == ["block", "goroutine", "memory", "mutex", "process_cpu"]
    base = "http://%s" % t.address
    assert by_name["process_cpu"]["scrapeUrl"] == base + "/debug/pprof/profile?seconds=10"
    assert by_name["memory"]["scrapeUrl"] == base + "/debug/pprof/allocs"
    for x in targets:
        assert x["scrapePool"] == "myapp"
        assert x["labels"] == {"instance": t.address, "job": "myapp"}
        assert x["scrapeInterval"] == "10s"
        # a CPU profile's timeout is the scrape timeout plus its 10 s (docs/configuration.md: "Scraping")
        assert x["scrapeTimeout"] == ("20s" if x["profileName"] == "process_cpu" else "10s")
    # every target is scraped within its first interval (CPU takes its 10 s on top)
    wait_for(lambda: all(x["health"] == "up" for x in active_targets(srv)), 35, "every target up")
    assert all(x["lastError"] == "" for x in active_targets(srv))
    t.stop()


def test_reference_config_is_accepted(make_server, tmp_path):
    reference = yaml_blocks()[1]
    assert "profiling_config" in reference and "relabel_configs" in reference
    cfg = tmp_path / "reference.yml"
    cfg.write_text(reference)
    srv = make_server(config=str(cfg), retention="0")
    st, _, _ = srv.get("/-/ready")
    assert st == 200
    srv.stop()


# ---- make run CONFIG=... -----------------------------------------------------------------------

def make_dry(*args):
    # as a user's shell runs it: not as a sub-make of `make test` (its MAKEFLAGS and "Entering directory")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    r = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_make_run_installs_only_build_needs_and_passes_config():
    # `make run` installs with --build (no browser, Go, Prometheus or Docker tools); `make test` all
    lines = make_dry("run", "CONFIG=x.yml")
    assert lines[0] == "scripts/install-deps.sh --build", lines
    assert "scripts/install-deps.sh" not in lines
    assert lines[-1] == "build/profstore --listen 127.0.0.1:7070 --data-dir ./data --config=x.yml", lines
    assert make_dry("run")[-1] == "build/profstore --listen 127.0.0.1:7070 --data-dir ./data"
    assert make_dry("test")[0] == "scripts/install-deps.sh"
    script = (REPO / "scripts" / "install-deps.sh").read_text()
    build_pkgs = set(re.search(r'^BUILD_PKGS="([^"]*)"', script, re.M).group(1).split())
    assert not build_pkgs & {"chromium", "chromium-driver", "prometheus", "golang-go", "docker-compose",
                             "python3-selenium", "clang"}


def test_make_run_config_scrapes_the_readme_example(tmp_path):
    """`make run CONFIG=profstore.yml` for real (README's first command after its minimal file): the
    server it starts scrapes the Go program the file names."""
    require_tool("go")
    build = Path(PROFSTORE_BIN).parent
    cache = (build / "CMakeCache.txt").read_text()
    # make run rebuilds its BUILD: it must be this tree's
    assert "CMAKE_HOME_DIRECTORY:INTERNAL=%s\n" % REPO in cache, "PROFSTORE_BIN must be built from %s" % REPO
    t = GoTarget(tmp_path / "t").start()
    cfg = tmp_path / "profstore.yml"
    cfg.write_text(yaml_blocks()[0].replace("127.0.0.1:6060", t.address))
    port = free_port()
    log = open(tmp_path / "make.log", "w")
    proc = subprocess.Popen(["make", "-s", "run", "CONFIG=%s" % cfg, "BUILD=%s" % build,
                             "LISTEN=127.0.0.1:%d" % port, "DATA=%s" % (tmp_path / "data")],
                            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = "http://127.0.0.1:%d" % port

    def get_json(path):
        try:
            with urllib.request.urlopen(base + path, timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return None

    try:
        targets = wait_for(lambda: (lambda j: j and len(j["data"]["activeTargets"]) == 5 and j["data"]["activeTargets"])(
            get_json("/api/v1/targets")), 120, "5 targets")
        assert sorted(x["labels"]["job"] for x in targets) == ["myapp"] * 5
        assert get_json("/api/v1/status/flags")["data"]["config"] == str(cfg)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        t.stop()


def test_front_page_starts_with_make_run_and_make_test():
    first = blocks(README, "sh")[0]
    assert README.index("```sh\n" + first) < README.index("\n## ")
    assert [ln.split("#")[0].strip() for ln in first.splitlines()] == ["make run", "make test"]


def test_go_tool_pprof_snippet_reads_the_last_hour(make_server, tmp_path):
    from conftest import go_pprof, parse_pprof_top
    cmd = blocks(section(README, "## The UI"), "sh")[0].strip()
    m = re.fullmatch(r"go tool pprof -top '(http://127\.0\.0\.1:7070/[^']+)'", cmd)
    assert m, cmd
    srv = make_server(retention="0")
    for i, f in enumerate(("go/cpu-01.pb.gz", "go/cpu-02.pb.gz")):  # two profiles of job="myapp" in the last hour
        st, js = srv.push(f, labels='{job="myapp",instance="a"}', time=str(int(time.time()) - 600 + i))
        assert st == 200, js
    st, js = srv.push("go/cpu-03.pb.gz", labels='{job="other"}', time=str(int(time.time()) - 600))
    assert st == 200, js
    r = go_pprof(["-top", m.group(1).replace(SNIPPET_SERVER, srv.url("").rstrip("/"))], tmp_path)
    header, rows = parse_pprof_top(r.stdout)
    total = (README_TOTALS["go/cpu-01.pb.gz"][1] + README_TOTALS["go/cpu-02.pb.gz"][1]) / 1e9
    assert any(ln.startswith("Showing nodes accounting for") and ln.endswith("of %.2fs total" % total)
               for ln in header), header


# ---- pushing: the Go and Node.js SDKs, Grafana Alloy ---------------------------------------------

def push_section() -> str:
    return section(README, "## Push from the Pyroscope SDKs and Grafana Alloy")


def stored_types(srv, service: str):
    return {s["labels"]["__name__"]: s["labels"] for s in srv.series() if s["labels"].get("service_name") == service}


GO_PROGRAM = """package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"time"

	"github.com/grafana/pyroscope-go"
)

var sink [][]byte

func work(d time.Duration) {
	h := sha256.New()
	for end := time.Now().Add(d); time.Now().Before(end); {
		h.Write(make([]byte, 4096))
		sink = append(sink, h.Sum(nil))
	}
}

func main() {
	p, err := %s
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	work(3 * time.Second)
	p.Flush(true) // uploads the heap and CPU profiles now, not at the next 15 s tick
	p.Stop()
}
"""


def test_go_sdk_snippet_pushes(make_server, tmp_path):
    go = require_tool("go")
    snippet = blocks(push_section(), "go")[0]
    assert 'import "github.com/grafana/pyroscope-go"' in snippet
    call = re.search(r"pyroscope\.Start\(pyroscope\.Config\{.*?\n\t\}\)", snippet, re.S).group(0)
    assert '"%s"' % SNIPPET_SERVER in call
    srv = make_server(retention="0")
    d = tmp_path / "goapp"
    d.mkdir()
    (d / "main.go").write_text(GO_PROGRAM % call.replace(SNIPPET_SERVER, srv.url("").rstrip("/")))
    (d / "go.mod").write_text("module readmeapp\n\ngo 1.22\n")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0", **_go_cache())
    env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)  # it would override ServerAddress
    r = subprocess.run([go, "get", "github.com/grafana/pyroscope-go@" + PYROSCOPE_GO], cwd=d, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if any(e in r.stderr for e in ("dial tcp", "no such host", "connection refused", "i/o timeout")):
            pytest.skip("Go module proxy unreachable, pyroscope-go not downloaded: " + r.stderr[-300:])
        raise AssertionError(r.stderr)
    r = subprocess.run([go, "build", "-o", "app", "."], cwd=d, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(d / "app")], cwd=d, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    want = {CPU_TYPE, "memory:inuse_space:bytes:space:bytes", "memory:alloc_space:bytes:space:bytes"}
    got = wait_for(lambda: (lambda t: t if want <= set(t) else None)(stored_types(srv, "myapp")), 20, "myapp's types")
    assert got[CPU_TYPE]["pyroscope_spy"] == "gospy"


NODE_TAIL = """
const crypto = require('crypto');
const end = Date.now() + 3000;
(function tick() {
  const until = Date.now() + 50;
  while (Date.now() < until) crypto.createHash('sha256').update('x'.repeat(4096)).digest();
  if (Date.now() < end) setTimeout(tick, 5);
  else Promise.resolve(Pyroscope.stop()).then(() => setTimeout(() => process.exit(0), 500));
})();
"""


def test_node_sdk_snippet_pushes(make_server, tmp_path):
    require_tool("node")
    from test_pyroscope_nodejs import install_sdk
    mods = install_sdk("0.6.4")
    snippet = blocks(push_section(), "js")[0]
    assert "require('@pyroscope/nodejs')" in snippet and "'%s'" % SNIPPET_SERVER in snippet
    srv = make_server(retention="0")
    app = tmp_path / "app.js"
    app.write_text(snippet.replace(SNIPPET_SERVER, srv.url("").rstrip("/")) + NODE_TAIL)
    env = dict(os.environ, NODE_PATH=str(mods))
    env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)
    r = subprocess.run(["node", str(app)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # stop() sends the wall profile at once; heap profiles go every flushIntervalMs (60 s by default,
    # test_pyroscope_nodejs.py sees them with 5 s)
    want = {"wall:samples:count:wall:nanoseconds:delta", "wall:wall:nanoseconds:wall:nanoseconds:delta"}
    got = wait_for(lambda: (lambda t: t if set(t) == want else None)(stored_types(srv, "myapp")), 20,
                   "myapp's types (stored: %s)" % sorted(stored_types(srv, "myapp")))
    assert all(v["pyroscope_spy"] == "nodespy" for v in got.values()), got


def parse_alloy(text: str):
    """The blocks of an Alloy (River) file as {(kind, label): body}, and the checks a parser makes of
    this small subset: balanced braces, every block `kind "label" { ... }`."""
    assert text.count("{") == text.count("}"), text
    out = {}
    for m in re.finditer(r'^([a-z_]+(?:\.[a-z_]+)+) "([A-Za-z_][A-Za-z0-9_]*)" \{\n(.*?)^\}', text, re.S | re.M):
        out[(m.group(1), m.group(2))] = m.group(3)
    assert sum(1 for ln in text.splitlines() if ln and not ln[0].isspace() and ln != "}") == len(out), text
    return out


def test_alloy_snippet_push_is_stored(make_server, pyro):
    from pyro_util import connect_call
    snippet = blocks(push_section(), "alloy")[0]
    b = parse_alloy(snippet)
    assert sorted(b) == [("pyroscope.scrape", "myapp"), ("pyroscope.write", "profstore")], sorted(b)
    scrape, write = b[("pyroscope.scrape", "myapp")], b[("pyroscope.write", "profstore")]
    # the scrape forwards to the write block's receiver; its target is the Go program the minimal file scrapes
    assert re.search(r"forward_to\s*=\s*\[pyroscope\.write\.profstore\.receiver\]", scrape), scrape
    target = dict(re.findall(r'"([a-z_]+)" = "([^"]*)"', re.search(r"targets\s*=\s*\[\{(.*?)\}\]", scrape).group(1)))
    assert target == {"__address__": "127.0.0.1:6060", "service_name": "myapp"}
    assert "'%s'" % target["__address__"] in yaml_blocks()[0]
    url = re.fullmatch(r'\s*endpoint \{\n\s*url = "([^"]+)"\n\s*\}\n', write).group(1)
    assert url == SNIPPET_SERVER  # the base URL: Alloy adds the Connect path
    srv = make_server(retention="0")
    # what pyroscope.write sends for a CPU profile of that target (Alloy sets __delta__="false" on
    # the profiles it scraped as deltas; service_name and the address from the target)
    req = pyro.push.PushRequest()
    s = req.series.add()
    for k, v in (("__name__", "process_cpu"), ("__delta__", "false"), ("service_name", target["service_name"]),
                 ("instance", target["__address__"])):
        lp = s.labels.add()
        lp.name, lp.value = k, v
    s.samples.add().raw_profile = fixture_bytes("go/cpu-01.pb.gz")
    path = urllib.parse.urlsplit(url).path.rstrip("/") + "/push.v1.PusherService/Push"
    r = connect_call(srv.port, path, req)
    assert r.status == 200, r
    got = stored_types(srv, "myapp")
    assert got[CPU_TYPE] == {"__name__": CPU_TYPE, "service_name": "myapp", "instance": "127.0.0.1:6060"}
    q = urllib.parse.urlencode({"query": CPU_TYPE + '{service_name="myapp"}', "start": "0", "end": "now",
                                "format": "top"})
    assert srv.get_json("/api/v1/profiles/query?" + q)["total"] == README_TOTALS["go/cpu-01.pb.gz"][1]


# ---- Prometheus remote_write / remote_read --------------------------------------------------------

class SnippetConfig:
    """prometheus.yml: a job scraping Prometheus itself every second, then the README's snippet."""

    def __init__(self, snippet: str):
        self.snippet = snippet

    def text(self, own_address: str) -> str:
        return ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['%s']\n%s"
                % (own_address, self.snippet))


def test_prometheus_snippet_writes_and_reads(make_server, tmp_path):
    from prom_util import Prometheus
    snippet = blocks(section(README, "## Prometheus remote_write and remote_read"), "yaml")[0]
    assert snippet.count(SNIPPET_SERVER) == 2
    srv = make_server(retention="0")
    t = int(time.time()) - 30
    st, js = srv.push("go/cpu-01.pb.gz", time=str(t), labels='{job="api"}')
    assert st == 200, js
    prom = Prometheus(tmp_path / "prom", SnippetConfig(snippet.replace(SNIPPET_SERVER, srv.url("").rstrip("/")))).start()
    try:
        # remote_write: Prometheus' own samples arrive in profstore as float series
        q = urllib.parse.urlencode({"match[]": 'up{job="self"}', "start": str(t)})
        got = wait_for(lambda: srv.get_json("/api/v1/series?" + q)["data"], 30, "up{job=\"self\"} written")
        assert got == [{"__name__": "up", "instance": prom.address, "job": "self"}]
        # remote_read: the pushed profile's total, through Prometheus' PromQL
        ans = prom.query(CPU_TYPE + '{job="api"}', t)
        assert ans["status"] == "success", ans
        assert [(r["metric"], r["value"][1]) for r in ans["data"]["result"]] == \
            [({"__name__": CPU_TYPE, "job": "api"}, str(README_TOTALS["go/cpu-01.pb.gz"][1]))]
    finally:
        prom.stop()


# ---- Grafana data sources --------------------------------------------------------------------------

def test_grafana_datasources_snippet(make_server):
    import yaml
    snippet = blocks(section(README, "## Grafana data sources"), "yaml")[0]
    doc = yaml.safe_load(snippet)
    assert doc["apiVersion"] == 1
    ds = {d["type"]: d for d in doc["datasources"]}
    assert sorted(ds) == ["grafana-pyroscope-datasource", "prometheus"]
    # the same types and access as the provisioning file the compose stack uses
    prov = yaml.safe_load((REPO / "docker/grafana/provisioning/datasources/profstore.yml").read_text())
    assert {d["type"]: d["access"] for d in prov["datasources"]} == {t: d["access"] for t, d in ds.items()}
    assert all(d["url"] == SNIPPET_SERVER and d["name"] for d in ds.values())
    srv = make_server(retention="0")
    base = srv.url("").rstrip("/")
    # Prometheus data source: its health check is the instant query 1+1 (POST, as Grafana sends it)
    u = ds["prometheus"]["url"].replace(SNIPPET_SERVER, base)
    req = urllib.request.Request(u + "/api/v1/query", data=b"query=1%2B1&time=1700000000", method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert json.loads(r.read()) == {"status": "success", "data": {"resultType": "scalar",
                                                                      "result": [1700000000, "2"]}}
    # Pyroscope data source: its health check is ProfileTypes over [1000, 4000] ms
    u = ds["grafana-pyroscope-datasource"]["url"].replace(SNIPPET_SERVER, base)
    req = urllib.request.Request(u + "/querier.v1.QuerierService/ProfileTypes", data=b'{"start":1000,"end":4000}',
                                 method="POST", headers={"Content-Type": "application/json",
                                                         "Connect-Protocol-Version": "1"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200 and json.loads(r.read()) == {}
