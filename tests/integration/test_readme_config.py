"""The configuration examples of README.md, taken from the README itself so the two cannot drift:
the minimal file scrapes one real Go program (gotarget) with Parca's default profiling_config
(exactly the five default profile types, CPU with ?seconds=10, every target up), and the full
reference file is accepted as it stands."""

import re
import time

import pytest

from conftest import REPO, require_tool
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
