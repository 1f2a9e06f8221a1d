"""Limits on targets (issue 21: a 371 KB file_sd list became 100,000 targets and 525 MiB):
Prometheus' per-job `target_limit` (a job over it scrapes none of its targets, each failing with
"target_limit exceeded (number of targets: N, limit: L)") and `keep_dropped_targets`, and
profstore's global --scrape.max-targets (targets past it are not built at all). Python targets
that count their requests tell whether anything was scraped."""

import json
import time

from scrape_util import GOROUTINE_ONLY, PyTarget, active_targets, config_text, dropped_targets, send_body, wait_for


def counting_target():
    return PyTarget(lambda path, h: send_body(h, 404, b"no profile here\n"))


def job(name, addrs, extra=""):
    return ("  - job_name: %s\n%s    static_configs:\n      - targets: %s\n" % (name, extra, json.dumps(addrs))
            + GOROUTINE_ONLY)


def test_target_limit_scrapes_none_of_the_job(make_server, tmp_path):
    over = [counting_target() for _ in range(3)]
    under = counting_target()
    try:
        cfg = tmp_path / "p.yml"
        cfg.write_text(config_text("1s", "1s", jobs=job("over", [t.address for t in over], "    target_limit: 2\n")
                                   + job("under", [under.address], "    target_limit: 1\n")))
        srv = make_server(config=str(cfg))
        wait_for(lambda: under.count() >= 2, 15, "the job within its limit scraped")
        ts = {t["scrapeUrl"]: t for t in active_targets(srv) if t["labels"]["job"] == "over"}
        assert len(ts) == 3  # listed, as Prometheus lists them
        wait_for(lambda: all(t["lastError"] for t in active_targets(srv) if t["labels"]["job"] == "over"), 10,
                 "every target of the job over its limit failed")
        for t in active_targets(srv):
            if t["labels"]["job"] == "over":
                assert (t["health"], t["lastError"]) == ("down", "target_limit exceeded (number of targets: 3, limit: 2)")
        assert sum(t.count() for t in over) == 0  # not one request
        m = srv.metrics()
        assert m['profstore_scrape_pool_exceeded_target_limit_total{job="over"}'] == 1
        assert m['profstore_scrape_pool_exceeded_target_limit_total{job="under"}'] == 0
        assert "target_limit: 2\n" in srv.get_json("/api/v1/status/config")["data"]["yaml"]
        # within the limit again after a reload: scraped
        cfg.write_text(config_text("1s", "1s", jobs=job("over", [t.address for t in over], "    target_limit: 3\n")))
        assert srv.request("POST", "/-/reload")[0] == 200
        wait_for(lambda: all(t.count() >= 1 for t in over), 15, "every target scraped once within the limit")
    finally:
        for t in over + [under]:
            t.close()


def test_max_targets_and_kept_dropped_targets(make_server, tmp_path):
    # 40 addresses that nothing listens on; 21 dropped by relabeling (10..30), of which the job
    # keeps 4; of the other 19, 6 are built
    addrs = ["127.0.0.1:%d" % (1 + i) for i in range(40)]
    drop = "    relabel_configs:\n      - source_labels: [__address__]\n        regex: '127\\.0\\.0\\.1:([12][0-9]|30)'\n        action: drop\n"
    cfg = tmp_path / "p.yml"
    cfg.write_text(config_text("1m", "1s", jobs=job("many", addrs, "    keep_dropped_targets: 4\n" + drop)))
    srv = make_server(config=str(cfg), extra_args=["--scrape.max-targets", "6"])
    assert len(active_targets(srv)) == 6
    assert len(dropped_targets(srv)) == 4
    m = srv.metrics()
    assert m["profstore_scrape_targets_over_max"] == 19 - 6
    assert m["profstore_scrape_dropped_targets_not_kept_total"] == 21 - 4
    assert 'msg="targets not scraped: more than --scrape.max-targets" max=6 not_built=13' in srv.log()


def test_limits_in_the_configuration_checked(make_server, tmp_path):
    cfg = tmp_path / "p.yml"
    cfg.write_text(config_text(jobs=job("j", ["127.0.0.1:1"], "    target_limit: -1\n")))
    srv = make_server(start=False, config=str(cfg))
    srv.start(wait_ready=False)
    deadline = time.monotonic() + 10
    while srv.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.proc.returncode == 2
    assert 'scrape_configs[0].target_limit: expected a non-negative integer, got "-1"' in srv.log(), srv.log()
