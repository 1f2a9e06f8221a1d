"""http_sd_configs (docs/protocols.md): the server GETs the URL every refresh_interval with the header
X-Prometheus-Refresh-Interval-Seconds, takes the JSON list of target groups as the job's targets
(meta label __meta_url), keeps the last good list when an answer fails, and drops the targets an
answer no longer lists. Checked for a job that has only http_sd_configs and for one that also has
file_sd_configs, against a real Go target (gotarget)."""

import json
import threading
import time

import pytest

from conftest import require_tool
from scrape_util import (GOROUTINE_ONLY, GoTarget, PyTarget, active_targets, config_text, send_body, stored,
                         wait_for)


class SD:
    """An http_sd endpoint: answers `body` (a Python list, JSON-encoded) or an error status."""

    def __init__(self):
        self.groups = []
        self.status = 200
        self.headers = []
        self.lock = threading.Lock()
        self.py = PyTarget(self.handle)

    def handle(self, path, h):
        with self.lock:
            self.headers.append(dict(h.headers))
        if self.status != 200:
            send_body(h, self.status, b"sd backend down\n", "text/plain")
        else:
            send_body(h, 200, json.dumps(self.groups).encode(), "application/json")

    def url(self, path="/sd"):
        return "http://%s%s" % (self.py.address, path)


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_httpsd")
    e = Env()
    e.g = GoTarget(wd, seed=2).start()
    e.sd_only, e.sd_mixed = SD(), SD()
    e.sd_only.groups = [{"targets": [e.g.address], "labels": {"via": "http-only"}}]
    e.sd_mixed.groups = [{"targets": [e.g.address], "labels": {"via": "mixed"}}]
    (wd / "files").mkdir()
    cfg = wd / "httpsd.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: httponly\n"
        "    http_sd_configs:\n"
        "      - url: '%s'\n"
        "        refresh_interval: 1s\n" % e.sd_only.url() + GOROUTINE_ONLY +
        "  - job_name: mixed\n"
        "    file_sd_configs:\n"
        "      - files: ['%s/*.json']\n"
        "    http_sd_configs:\n"
        "      - url: '%s'\n"
        "        refresh_interval: 1s\n" % (wd / "files", e.sd_mixed.url()) + GOROUTINE_ONLY)))
    e.srv = module_server_factory(name="httpsd", config=str(cfg))
    yield e
    e.sd_only.py.close()
    e.sd_mixed.py.close()
    e.g.kill()


def job_targets(srv, job):
    return [t for t in active_targets(srv) if t["scrapePool"] == job]


def check_job(env, sd, job, via):
    try:
        wait_for(lambda: job_targets(env.srv, job), 8, "targets of job %s from http_sd" % job)
    except AssertionError:
        raise AssertionError("job %s: no targets after 8 s; the http_sd endpoint was asked %d times"
                             % (job, sd.py.count()))
    t = job_targets(env.srv, job)[0]
    assert t["discoveredLabels"]["__meta_url"] == sd.url(), t
    assert t["labels"]["via"] == via and "__meta_url" not in t["labels"], t
    wait_for(lambda: stored(env.srv, job=job), 10, "a stored profile of job %s" % job)
    assert sd.headers and sd.headers[0].get("X-Prometheus-Refresh-Interval-Seconds") == "1", sd.headers[:1]


def test_http_sd_in_a_job_with_file_sd(env):
    check_job(env, env.sd_mixed, "mixed", "mixed")


def test_http_sd_only_job(env):
    """A job whose only discovery is http_sd_configs."""
    check_job(env, env.sd_only, "httponly", "http-only")


def test_failed_answer_keeps_the_last_good_list(env):
    sd = env.sd_mixed
    wait_for(lambda: job_targets(env.srv, "mixed"), 8, "targets of job mixed")
    fails0 = env.srv.metrics()["profstore_sd_failures_total"]
    sd.status = 500
    n0 = sd.py.count()
    wait_for(lambda: sd.py.count() >= n0 + 2, 10, "two failed refreshes")
    assert env.srv.metrics()["profstore_sd_failures_total"] >= fails0 + 2
    assert job_targets(env.srv, "mixed"), "the last good list stays"
    before = sum(len(s["profiles"]) for s in stored(env.srv, job="mixed"))
    time.sleep(2)
    assert sum(len(s["profiles"]) for s in stored(env.srv, job="mixed")) > before, "and is still scraped"
    # an empty list is an answer: the targets go
    sd.groups = []
    sd.status = 200
    wait_for(lambda: not job_targets(env.srv, "mixed"), 10, "the targets of job mixed to go")
