"""The configuration examples of README.md, taken from the README itself so the two cannot drift:
the minimal file scrapes one real Go program (gotarget) with Parca's default profiling_config
(exactly the five default profile types, CPU with ?seconds=10, every target up), and the full
reference file is accepted as it stands."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import PROFSTORE_BIN, REPO, free_port, require_tool
from scrape_util import GoTarget, active_targets, wait_for

README = (REPO / "README.md").read_text()


def yaml_blocks():
    """The ```yaml blocks of the Scraping section, in order."""
    section = README[README.index("## Scraping"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


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
        # a CPU profile's timeout is the scrape timeout plus its 10 s (README: "Scraping")
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
