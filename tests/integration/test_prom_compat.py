"""Endpoints of Prometheus' HTTP API that Grafana's Prometheus data source calls and profstore has
nothing for: answered in Prometheus' shapes (empty), not 404. query_exemplars checks its query and
range as Prometheus does (a bad one is a 400 in the error envelope)."""

import json
import urllib.parse

import pytest


def get(srv, path):
    st, hdrs, body = srv.get(path)
    return st, hdrs, json.loads(body)


def test_rules_and_alerts_are_empty(server):
    st, hdrs, js = get(server, "/api/v1/rules")
    assert (st, js) == (200, {"status": "success", "data": {"groups": []}})
    assert hdrs["content-type"] == "application/json"
    st, _, js = get(server, "/api/v1/rules?type=alert")
    assert (st, js) == (200, {"status": "success", "data": {"groups": []}})
    st, _, js = get(server, "/api/v1/alerts")
    assert (st, js) == (200, {"status": "success", "data": {"alerts": []}})


def test_query_exemplars(server):
    q = urllib.parse.quote('process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api"}')
    st, _, js = get(server, "/api/v1/query_exemplars?query=%s&start=1&end=100" % q)
    assert (st, js) == (200, {"status": "success", "data": []})
    # POST form, as Grafana sends it
    st, _, body = server.request("POST", "/api/v1/query_exemplars", body=b"query=up&start=1&end=2",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert (st, json.loads(body)) == (200, {"status": "success", "data": []})


@pytest.mark.parametrize("qs,msg", [
    ("", 'invalid parameter "query": the query is empty'),
    ("query=up&start=10&end=1", 'invalid parameter "end": end timestamp must not be before start time'),
    ("query=" + urllib.parse.quote("up{"), '1:4: parse error: unexpected end of input inside braces'),
])
def test_query_exemplars_bad_input(server, qs, msg):
    st, _, js = get(server, "/api/v1/query_exemplars?" + qs)
    assert st == 400
    assert js == {"status": "error", "errorType": "bad_data", "error": msg}


# ---- /api/v1/status/*: the fields Prometheus 2.42 answers (captured from a real one: the key order
# of runtimeinfo, the map of flags, the config as YAML text) ----

import os
import re
import subprocess
import time
from datetime import datetime, timezone

from conftest import PROFSTORE_BIN
from prom_util import PromConfig, prometheus  # noqa: F401 (fixture)


def data(srv, path):
    st, hdrs, js = get(srv, path)
    assert st == 200, js
    assert hdrs["content-type"] == "application/json"
    assert js["status"] == "success"
    return js["data"]


def help_flags():
    out = subprocess.run([PROFSTORE_BIN, "--help"], capture_output=True, text=True, timeout=10).stdout
    return {m for m in re.findall(r"^  --([a-z][a-z0-9.-]*)", out, re.M)} - {"help", "version"}


def test_buildinfo(server):
    st, _, body = server.get("/api/v1/status/buildinfo")
    js = json.loads(body)
    assert st == 200
    # Prometheus' six keys in its order; no "features" (Grafana would take us for Mimir)
    assert list(js["data"]) == ["version", "revision", "branch", "buildUser", "buildDate", "goVersion"]
    d = js["data"]
    assert d["version"] == "0.1.0"
    assert re.fullmatch(r"[0-9a-f]{7,40}|unknown", d["revision"]), d  # the commit built (git rev-parse --short)
    assert re.fullmatch(r"\d{8}-\d\d:\d\d:\d\d", d["buildDate"]), d
    assert re.fullmatch(r"[^@]+@[^@]+", d["buildUser"]), d
    assert d["goVersion"].startswith("none (C11, "), d


def default_query_memory():
    """--query.max-memory's default as the flags list writes it: a quarter of the RAM, or of the
    cgroup's memory.max if lower, rounded down to MiB, at least 64 MiB ("6025MiB", "4GiB")."""
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        v = open("/sys/fs/cgroup/memory.max").read().split()[0]
        if v.isdigit() and 0 < int(v) < ram:
            ram = int(v)
    except OSError:
        pass
    q = max(ram // 4 >> 20 << 20, 64 << 20)
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while u < 4 and q % 1024 == 0:
        q //= 1024
        u += 1
    return "%d%s" % (q, units[u])


def test_flags_every_flag_with_its_value(make_server):
    srv = make_server(retention="36h", storage_compact_max_profiles=7, max_body_size="1MiB")
    d = data(srv, "/api/v1/status/flags")
    assert set(d) == help_flags()
    assert list(d) == sorted(d)
    assert all(isinstance(v, str) for v in d.values())
    assert d == {
        "config": "", "data-dir": str(srv.data_dir), "listen": "127.0.0.1:%d" % srv.port, "log-level": "info",
        "otlp.http.listen-address": "", "promql.compat": "3", "enable-feature": "",
        "max-inflated-total": "256MiB", "storage.disk-reserve": "1MiB",  # the fixture's
        "storage.future-grace": "10m",
        "ingest.decode-threads": str(min(max(os.sysconf("SC_NPROCESSORS_ONLN"), 1), 256)),  # CPUs
        "ingest.decode-queue-max-bytes": "32MiB",
        "storage.write-queue-max-bytes": "256MiB", "storage.write-queue-max-items": "8192",
        "max-body-size": "1MiB", "max-inflated-size": "256MiB", "query.max-series": "10000",
        "retention": "1d12h", "storage.commit-delay": "0s", "storage.compact-interval": "10s",
        "storage.compact-max-profiles": "7", "storage.compact-window": "2h", "storage.max-size": "256GiB",
        "storage.no-sync": "false", "storage.retention-interval": "1m", "threads": "2",
        "query.max-samples": "50000000", "query.max-memory": default_query_memory(), "query.timeout": "2m", "storage.remote.read-sample-limit": "50000000",
        "query.max-concurrency": "20", "query.max-regex-steps": "1000000000",
        "query.cpus": str(min(max(os.sysconf("SC_NPROCESSORS_ONLN") - 1, 1), 256)),  # CPUs less one
        "storage.remote.read-concurrent-limit": "10", "storage.remote.read-max-bytes-in-frame": "1048576",
        "web.config.file": "", "web.enable-admin-api": "true", "web.enable-lifecycle": "true",  # the fixture's
        "scrape.max-targets": "50000",
        "web.max-connections": "512", "web.read-header-timeout": "10s", "web.body-idle-timeout": "10s",
        "web.body-min-rate": "1KiB", "web.idle-timeout": "2m", "web.enable-h2c": "false", "web.http2-max-resets": "100",
        "agent": "false", "storage.check": "false", "adhoc.max-bytes": "256MiB", "adhoc.max-profiles": "1000",
        "symbols.dir": "", "debuginfod.url": "", "debuginfod.cache-dir": "", "debuginfod.timeout": "2m",
        "grpc.listen-address": "", "grpc.max-recv-msg-size": "16MiB", "grpc.max-concurrent-streams": "100",
        "grpc.max-connections": "1024", "grpc.idle-timeout": "5m", "debuginfo.max-file-bytes": "256MiB",
        "debuginfo.max-bytes": "10GiB",
    }


def parse_rfc3339(s):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z", s)
    assert m, s
    assert not (m.group(2) or "").endswith("0"), s  # Go's RFC3339Nano trims trailing zeros
    base = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return base + float(m.group(2) or 0)


def test_runtimeinfo(make_server):
    before = time.time()
    srv = make_server(retention="15d", threads=2)
    d = data(srv, "/api/v1/status/runtimeinfo")
    assert list(d) == ["startTime", "CWD", "reloadConfigSuccess", "lastConfigTime", "corruptionCount",
                       "goroutineCount", "GOMAXPROCS", "GOGC", "GODEBUG", "storageRetention"]
    start = parse_rfc3339(d["startTime"])
    assert before - 1 <= start <= time.time()
    assert d["lastConfigTime"] == datetime.fromtimestamp(int(start), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert d["CWD"] == os.getcwd()  # the test runner's: the server inherits it
    assert d["reloadConfigSuccess"] is True
    assert d["corruptionCount"] == 0
    n_threads = int(re.search(r"^Threads:\s+(\d+)", open("/proc/%d/status" % srv.proc.pid).read(), re.M).group(1))
    assert d["goroutineCount"] == n_threads
    assert (d["GOMAXPROCS"], d["GOGC"], d["GODEBUG"], d["storageRetention"]) == (2, "", "", "15d")
    assert data(make_server(retention="0"), "/api/v1/status/runtimeinfo")["storageRetention"] == "0s"


def test_config_without_file(server):
    assert data(server, "/api/v1/status/config") == {"yaml": ""}


CONFIG = """global:
  scrape_interval: 30s
scrape_configs:
  - job_name: api
    authorization: {credentials: s3cret}
    static_configs: [{targets: ['127.0.0.1:1']}]
    profiling_config:
      pprof_config: {memory: {enabled: false}, block: {enabled: false}, mutex: {enabled: false},
                     process_cpu: {enabled: false}}
"""

CONFIG_YAML = """global:
  scrape_interval: 30s
  scrape_timeout: 10s
scrape_configs:
- job_name: %s
  scrape_interval: 30s
  scrape_timeout: 10s
  scheme: http
  authorization:
    type: Bearer
    credentials: <secret>
  follow_redirects: true
  static_configs:
  - targets:
    - 127.0.0.1:1
  profiling_config:
    pprof_config:
      memory:
        enabled: false
        path: /debug/pprof/allocs
        delta: false
      block:
        enabled: false
        path: /debug/pprof/block
        delta: false
      goroutine:
        enabled: true
        path: /debug/pprof/goroutine
        delta: false
      mutex:
        enabled: false
        path: /debug/pprof/mutex
        delta: false
      process_cpu:
        enabled: false
        path: /debug/pprof/profile
        delta: true
      threadcreate:
        enabled: false
        path: /debug/pprof/threadcreate
        delta: false
"""


def test_config_and_reloads(make_server, tmp_path):
    cfg = tmp_path / "p.yml"
    cfg.write_text(CONFIG)
    srv = make_server(config=str(cfg))
    assert data(srv, "/api/v1/status/config") == {"yaml": CONFIG_YAML % "api"}
    assert data(srv, "/api/v1/status/flags")["config"] == str(cfg)
    first = data(srv, "/api/v1/status/runtimeinfo")["lastConfigTime"]
    time.sleep(1.1)  # lastConfigTime has whole seconds
    # a broken file: refused, the old configuration stays, reloadConfigSuccess turns false
    cfg.write_text("scrape_configs:\n  - job_name: [\n")
    st, _, _ = srv.request("POST", "/-/reload")
    assert st == 400
    ri = data(srv, "/api/v1/status/runtimeinfo")
    assert (ri["reloadConfigSuccess"], ri["lastConfigTime"]) == (False, first)
    assert data(srv, "/api/v1/status/config") == {"yaml": CONFIG_YAML % "api"}
    # a good one: shown, and the time moves
    cfg.write_text(CONFIG.replace("job_name: api", "job_name: web"))
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 200, body
    ri = data(srv, "/api/v1/status/runtimeinfo")
    assert ri["reloadConfigSuccess"] is True
    assert parse_rfc3339(ri["lastConfigTime"]) > parse_rfc3339(first)
    assert data(srv, "/api/v1/status/config") == {"yaml": CONFIG_YAML % "web"}


# label values of every shape yaml.v2 writes apart: plain, "double-quoted" (would read back as a
# number, bool, null, date or base-60 float), 'single-quoted' (plain YAML cannot hold it), a
# literal block, folded past 80 columns, UTF-8
SHAPES = {"plain": "eu", "space": "eu 1", "num": "5", "neg": "-1", "flt": "1e3", "dotf": ".5", "hex": "0x1F",
          "under": "1_000", "big": "99999999999999999999", "ip": "10.0.0.1", "ver": "1.2.3", "t": "true",
          "yy": "y", "nul": "null", "tilde": "~", "empty": "", "date": "2023-01-01", "date2": "2023-02-30",
          "b60": "1:30", "hostport": "127.0.0.1:6060", "colon": "a: b", "endcolon": "ab:", "dash": "- x",
          "dash2": "-x", "hash": "a #b", "hash2": "a#b", "amp": "&x", "star": "*x", "bang": "!x", "pct": "%x",
          "at": "@x", "bq": "`x", "brace": "{x}", "comma": "a,b", "qm": "?x", "gt": ">x", "pipe": "|x",
          "sq": "'x'", "dq": '"x"', "q": "it's", "lead": " x", "trail": "x ", "tab": "a\tb", "nl": "a\nb",
          "bs": "a\\b", "dollar": "$1", "paren": "(.*)", "semi": ";", "angle": "<x>", "uni": "\u00e9 \u00fc",
          "url": "http://h:1/x?a=1&b=[1]", "long": "word " * 20 + "end"}


def yaml_block(text, header):
    """The lines under header (a line of text) that are indented deeper than it."""
    lines = text.split("\n")
    i = lines.index(header)
    ind = len(header) - len(header.lstrip())
    out = []
    for line in lines[i + 1:]:
        if len(line) - len(line.lstrip()) <= ind:
            break
        out.append(line)
    return out


def test_config_yaml_as_prometheus(make_server, prometheus, tmp_path):
    """/api/v1/status/config writes strings as Prometheus 2.42 writes its own (yaml.v2): the same
    external labels and target labels come out byte for byte the same from both."""
    prom = prometheus(PromConfig(jobs={"api": ["127.0.0.1:1"]}, external_labels=SHAPES, job_labels={"api": SHAPES}))
    st, _, body = prom.request("GET", "/api/v1/status/config")
    assert st == 200, body
    want = json.loads(body)["data"]["yaml"]
    q = json.dumps
    cfg = tmp_path / "p.yml"
    cfg.write_text("global:\n  external_labels:\n" + "".join("    %s: %s\n" % (k, q(v)) for k, v in SHAPES.items())
                   + "scrape_configs:\n- job_name: api\n  static_configs:\n  - targets: ['127.0.0.1:1']\n"
                   + "    labels: {%s}\n" % ", ".join("%s: %s" % (k, q(v)) for k, v in SHAPES.items()))
    got = data(make_server(config=str(cfg)), "/api/v1/status/config")["yaml"]
    theirs = yaml_block(want, "  external_labels:")
    assert len(theirs) == len(SHAPES) + 3, want  # "nl" takes three lines, "long" two
    assert yaml_block(got, "  external_labels:") == theirs
    assert yaml_block(got, "    labels:") == yaml_block(want, "    labels:")


@pytest.mark.parametrize("path", ["/api/v1/status/config", "/api/v1/status/flags", "/api/v1/status/runtimeinfo",
                                  "/api/v1/status/buildinfo"])
def test_status_get_only(server, path):
    st, hdrs, body = server.request("POST", path, body=b"")
    assert st == 405 and hdrs["allow"] == "GET", body
