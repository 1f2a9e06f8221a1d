"""Configuration errors and reloads of the scrape configuration (--config), against one real Go
target (gotarget):

  - a wrong file is refused at start: exit 2, "FILE:LINE:COL: path: message" on stderr, the data
    dir untouched;
  - POST /-/reload with a broken file: 4xx with that message, and the running targets keep being
    scraped; with a fixed file: 200 and the change applies (a new job appears, a changed interval
    shows, the targets that stay keep their state);
  - SIGHUP: the same (a broken file is logged and ignored; a fixed one applies, a removed job's
    targets go);
  - many reloads in a row while scrapes run: the server stays up and ends with the last file;
  - /-/reload without --config is a 4xx that says so."""

import re
import signal
import subprocess
import time

import pytest

from conftest import PROFSTORE_BIN, require_tool
from scrape_util import GOROUTINE_ONLY, GoTarget, active_targets, config_text, stored, wait_for, write_atomic


def run_bin(*args, timeout=20):
    return subprocess.run([PROFSTORE_BIN] + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


# (file text, line, column, path and message regex)
BAD_CONFIGS = [
    ("global:\n  scrape_interval: 2s\nscrape_configs:\n  - job_name: a\n    scrape_timeout: 5s\n",
     5, 21, r"scrape_configs\[0\]\.scrape_timeout: the scrape timeout \(5s\) is greater than the scrape interval"),
    ("scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - action: frobnicate\n",
     4, 17, r"scrape_configs\[0\]\.relabel_configs\[0\]\.action: unknown relabel action \"frobnicate\""),
    ("scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ['http://x:1']\n",
     4, 19, r"scrape_configs\[0\]\.static_configs\[0\]\.targets\[0\]: invalid target"),
    ("scrape_configs:\n  - job_name: a\n  - job_name: a\n",
     3, 15, r"scrape_configs\[1\]\.job_name: duplicate job name \"a\""),
    ("scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n        process_cpu: {seconds: 30}\n",
     5, 32, r"scrape_configs\[0\]\.profiling_config\.pprof_config\.process_cpu\.seconds: 30s is longer than "
            r"the scrape interval \(10s\): one profile is taken per interval"),
]


@pytest.mark.parametrize("idx", range(len(BAD_CONFIGS)))
def test_wrong_config_refused_at_start(tmp_path, idx):
    text, line, col, msg = BAD_CONFIGS[idx]
    cfg = tmp_path / "bad.yml"
    cfg.write_text(text)
    r = run_bin("--config", str(cfg), "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"))
    assert r.returncode == 2, r
    m = re.search(re.escape(str(cfg)) + r":(\d+):(\d+): (.*)", r.stderr)
    assert m, r.stderr
    assert (int(m.group(1)), int(m.group(2))) == (line, col), r.stderr
    assert re.match(msg, m.group(3)), r.stderr
    assert not (tmp_path / "d").exists()


def job(name, address, interval=None, labels="{}"):
    return ("  - job_name: %s\n" % name + ("    scrape_interval: %s\n" % interval if interval else "") +
            "    static_configs:\n      - targets: ['%s']\n        labels: %s\n" % (address, labels) + GOROUTINE_ONLY)


def jobs_of(srv):
    return sorted({t["scrapePool"] for t in active_targets(srv)})


def count(srv, jobname):
    return sum(len(s["profiles"]) for s in stored(srv, job=jobname))


def keeps_scraping(srv, jobname, seconds=2.2):
    n0 = count(srv, jobname)
    time.sleep(seconds)
    return count(srv, jobname) > n0


BROKEN = "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: a\n    relabel_configs:\n      - action: nope\n"
BROKEN_POS = (6, 17)


@pytest.fixture
def gt(tmp_path):
    require_tool("go")
    t = GoTarget(tmp_path / "gt", seed=3).start()
    yield t
    t.kill()


def test_reload_http(make_server, gt, tmp_path):
    cfg = tmp_path / "profstore.yml"
    cfg.write_text(config_text("1s", "1s", jobs=job("a", gt.address)))
    srv = make_server(config=str(cfg))
    wait_for(lambda: count(srv, "a") >= 2, 15, "job a scraped")

    # broken: 4xx with file:line:col, nothing changes
    write_atomic(cfg, BROKEN)
    st, hdrs, body = srv.request("POST", "/-/reload")
    assert 400 <= st < 500, (st, body)
    text = body.decode()
    assert "%s:%d:%d: scrape_configs[0].relabel_configs[0].action: unknown relabel action" % ((cfg,) + BROKEN_POS) \
        in text, text
    assert srv.running()
    assert jobs_of(srv) == ["a"]
    assert keeps_scraping(srv, "a"), "the old targets are still scraped after a failed reload"
    assert all(t["health"] == "up" for t in active_targets(srv))

    # fixed: job b appears, job a's interval changes, a's target keeps its state
    write_atomic(cfg, config_text("1s", "1s", jobs=job("a", gt.address, interval="2s") +
                                  job("b", gt.address, labels="{tier: two}")))
    before = {t["scrapePool"]: t for t in active_targets(srv)}
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 200, body
    wait_for(lambda: jobs_of(srv) == ["a", "b"], 5, "job b in /api/v1/targets")
    ta = [t for t in active_targets(srv) if t["scrapePool"] == "a"][0]
    assert ta["scrapeInterval"] == "2s", ta
    assert ta["health"] == "up" and ta["lastScrape"] >= before["a"]["lastScrape"], (before["a"], ta)
    wait_for(lambda: count(srv, "b") >= 2, 15, "job b scraped and stored")
    assert {s["labels"]["tier"] for s in stored(srv, job="b")} == {"two"}
    assert keeps_scraping(srv, "a")
    assert 'profstore_scrapes_total{job="b"}' in srv.metrics()

    # a GET is not a reload
    st, hdrs, _ = srv.request("GET", "/-/reload")
    assert st == 405, st


def test_reload_sighup(make_server, gt, tmp_path):
    cfg = tmp_path / "profstore.yml"
    cfg.write_text(config_text("1s", "1s", jobs=job("a", gt.address) + job("b", gt.address)))
    srv = make_server(config=str(cfg))
    wait_for(lambda: count(srv, "a") >= 1 and count(srv, "b") >= 1, 15, "jobs a and b scraped")

    # broken YAML: logged, ignored
    write_atomic(cfg, "scrape_configs:\n  - job_name: a\n    static_configs: [\n")
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload failed" in srv.log(), 5, "the failed reload in the log")
    assert re.search(re.escape(str(cfg)) + r":\d+:\d+", srv.log()), srv.log()[-2000:]
    assert srv.running()
    assert jobs_of(srv) == ["a", "b"]
    assert keeps_scraping(srv, "b")

    # fixed: b goes, c comes
    write_atomic(cfg, config_text("1s", "1s", jobs=job("a", gt.address) + job("c", gt.address)))
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: jobs_of(srv) == ["a", "c"], 5, "jobs a and c after SIGHUP")
    wait_for(lambda: count(srv, "c") >= 1, 15, "job c stored")
    time.sleep(1.5)
    nb = count(srv, "b")
    assert keeps_scraping(srv, "c") and count(srv, "b") == nb, "job b is no longer scraped"
    assert srv.metrics()["profstore_scrape_targets"] == 2


def test_many_reloads_while_scraping(make_server, gt, tmp_path):
    cfg = tmp_path / "profstore.yml"
    v1 = config_text("1s", "1s", jobs=job("a", gt.address) + job("b", gt.address))
    v2 = config_text("1s", "1s", jobs=job("a", gt.address, labels="{v: two}") + job("c", gt.address))
    cfg.write_text(v1)
    srv = make_server(config=str(cfg))
    wait_for(lambda: count(srv, "a") >= 1, 15, "job a scraped")
    for i in range(30):
        write_atomic(cfg, v2 if i % 2 == 0 else v1)
        if i % 3 == 2:
            srv.proc.send_signal(signal.SIGHUP)
            time.sleep(0.05)
        else:
            st, _, body = srv.request("POST", "/-/reload")
            assert st == 200, (i, body)
        time.sleep(0.03 * (i % 4))
    write_atomic(cfg, v2)
    assert srv.request("POST", "/-/reload")[0] == 200
    wait_for(lambda: jobs_of(srv) == ["a", "c"], 5, "the last file applied")
    assert srv.running()
    wait_for(lambda: all(t["health"] == "up" for t in active_targets(srv)), 10, "all targets up")
    assert [t["labels"].get("v") for t in active_targets(srv) if t["scrapePool"] == "a"] == ["two"]
    assert keeps_scraping(srv, "c")


def test_reload_without_config(make_server):
    srv = make_server()
    st, _, body = srv.request("POST", "/-/reload")
    assert 400 <= st < 500, (st, body)
    assert b"--config" in body, body
    assert srv.get_json("/api/v1/targets")["data"] == {"activeTargets": [], "droppedTargets": []}
