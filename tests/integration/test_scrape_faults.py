"""Targets that fail in every way a scrape can fail, next to one real Go target (gotarget):

  down       a closed port                          slow       answers after the timeout
  html       200 text/html (a wrong path)           http500    500 with an error text
  truncgz    200, a gzip'd profile cut in half      notpprof   200, gzip'd JSON
  text       200 text/plain                         empty      200 with no body
  huge       200, 70 MB streamed without Content-Length (more than the cap: max(2 * 1 MiB, 64 MiB))
  hugecl     200, Content-Length: 70 MB

Each is "down" in /api/v1/targets with a lastError that says why, the good target stays "up" and
is stored, failures are counted in /metrics, the server keeps serving and its RSS stays bounded over
several rounds. A separate server gets a body with Content-Encoding: gzip that inflates far beyond
the cap: the cap is about memory, so it must hold for the decoded bytes too."""

import gzip
import re
import time

import pytest

from conftest import fixture_bytes, free_port, require_tool
from scrape_util import (GOROUTINE_ONLY, TYPES, GoTarget, PyTarget, active_targets, config_text, rss_kb,
                         sanitized_binary, send_body, stored, wait_for)

MiB = 1 << 20
HUGE = 70 * 1000 * 1000
CHUNK = b"\0" * MiB
GOROUTINE = TYPES["goroutine"][0]
GOOD_PROFILE = fixture_bytes("go/goroutine-01.pb.gz")


def _slow(path, h):
    time.sleep(3.5)
    send_body(h, 200, GOOD_PROFILE)


def _stream(h, total, content_length):
    h.send_response(200)
    h.send_header("Content-Type", "application/octet-stream")
    if content_length:
        h.send_header("Content-Length", str(total))
    h.send_header("Connection", "close")
    h.close_connection = True
    h.end_headers()
    sent = 0
    while sent < total:
        n = min(len(CHUNK), total - sent)
        h.wfile.write(CHUNK[:n])
        sent += n


HANDLERS = {
    "slow": _slow,
    "html": lambda p, h: send_body(h, 200, b"<!DOCTYPE html><html><body><h1>/debug/pprof/</h1></body></html>",
                                   "text/html; charset=utf-8"),
    "http500": lambda p, h: send_body(h, 500, b"internal error: the profiler is on fire\n", "text/plain"),
    "truncgz": lambda p, h: send_body(h, 200, GOOD_PROFILE[: len(GOOD_PROFILE) // 2]),
    "notpprof": lambda p, h: send_body(h, 200, gzip.compress(b'{"this": "is JSON, not a pprof profile"}')),
    "text": lambda p, h: send_body(h, 200, b"goroutine profile: total 26\n", "text/plain; charset=utf-8"),
    "empty": lambda p, h: send_body(h, 200, b""),
    "huge": lambda p, h: _stream(h, HUGE, False),
    "hugecl": lambda p, h: _stream(h, HUGE, True),
}

# what lastError must say (case-insensitive regex)
WHY = {
    "down": r"connect|refused",
    "slow": r"timed? ?out|timeout",
    "html": r"text/html.*not a pprof",
    "http500": r"status 500.*profiler is on fire",
    "truncgz": r"gzip|truncated|unexpected end",
    "notpprof": r"invalid profile|not a pprof|protobuf|wire",
    "text": r"text/plain|not a pprof",
    "empty": r"empty",
    "huge": r"exceeds the limit of 67108864 bytes",
    "hugecl": r"exceeds the limit of 67108864 bytes",
}


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_faults")
    e = Env()
    e.good = GoTarget(wd, seed=2).start()
    e.py = {k: PyTarget(fn) for k, fn in HANDLERS.items()}
    e.addr = {k: t.address for k, t in e.py.items()}
    e.addr["down"] = "127.0.0.1:%d" % free_port()
    e.kind_of = {a: k for k, a in e.addr.items()}
    targets = ", ".join("'%s'" % a for a in [e.good.address] + sorted(e.addr.values()))
    cfg = wd / "faults.yml"
    cfg.write_text(config_text("2s", "2s", jobs=(
        "  - job_name: faults\n"
        "    static_configs:\n"
        "      - targets: [%s]\n" % targets + GOROUTINE_ONLY)))
    e.srv = module_server_factory(name="faults", config=str(cfg), max_body_size="1MiB")
    yield e
    for t in e.py.values():
        t.close()
    e.good.kill()


def by_kind(env):
    return {env.kind_of.get(t["labels"]["instance"], "good"): t for t in active_targets(env.srv)}


def rounds_done(env, n):
    """At least n scrapes of every target (counted by the Python servers for theirs)."""
    return all(t.count() >= n for k, t in env.py.items() if k != "slow")


def test_rounds_and_rss(env):
    srv = env.srv
    wait_for(lambda: rounds_done(env, 2), 30, "two rounds of scrapes")
    time.sleep(1)
    rss_early = rss_kb(srv.proc.pid)
    wait_for(lambda: rounds_done(env, 5), 40, "five rounds of scrapes")
    time.sleep(1)
    rss_late = rss_kb(srv.proc.pid)
    assert srv.running(), srv.log()[-3000:]
    assert srv.get("/-/ready")[0] == 200
    if sanitized_binary():
        return  # freed memory is quarantined: RSS says nothing
    # bounded: no growth from round to round (each oversized body is cut at the cap)
    assert rss_late - rss_early < 40 * 1024, ("RSS grew", rss_early, rss_late)
    assert rss_late < 600 * 1024, ("RSS", rss_late)
    env.rss = (rss_early, rss_late)


@pytest.mark.parametrize("kind", sorted(WHY))
def test_fault_is_down_with_reason(env, kind):
    t = by_kind(env)[kind]
    assert t["health"] == "down", t
    assert re.search(WHY[kind], t["lastError"], re.I), (kind, t["lastError"])
    assert t["lastScrape"] != "0001-01-01T00:00:00Z", t
    assert stored(env.srv, instance=env.addr[kind]) == [], "nothing is stored for a failing target"


def test_good_target_up_and_stored(env):
    t = by_kind(env)["good"]
    assert t["health"] == "up" and t["lastError"] == "", t
    ss = stored(env.srv, instance=env.good.address)
    assert [s["labels"]["__name__"] for s in ss] == [GOROUTINE]
    assert len(ss[0]["profiles"]) >= 5, ss
    assert all(p["total"] > 0 for p in ss[0]["profiles"])


def test_failures_counted(env):
    m = env.srv.metrics()
    scrapes = m['profstore_scrapes_total{job="faults"}']
    failures = m['profstore_scrape_failures_total{job="faults"}']
    # 10 failing targets x >= 5 rounds (slow: fewer), the good one succeeds
    assert failures >= 9 * 5, m
    assert scrapes - failures >= 5, m
    assert m["profstore_scrape_targets"] == 11


def test_targets_that_recover(env):
    """A failing target that starts answering properly goes back to up (health is per scrape)."""
    py = env.py["http500"]
    orig = py.handler
    py.handler = lambda path, h: send_body(h, 200, env.good.fetch("/debug/pprof/goroutine"))
    try:
        wait_for(lambda: by_kind(env)["http500"]["health"] == "up", 10, "the recovered target to be up")
        assert by_kind(env)["http500"]["lastError"] == ""
        wait_for(lambda: stored(env.srv, instance=env.addr["http500"]), 10, "a profile of the recovered target")
    finally:
        py.handler = orig
    wait_for(lambda: by_kind(env)["http500"]["health"] == "down", 10, "the target to be down again")


def test_sigterm_while_scraping(env):
    """SIGTERM with transfers running (a slow target, 70 MB streams): a clean, quick exit. An ASan
    build also checks for leaks at exit; only reports that involve the scraper's code (scrape.c,
    sd.c, config.c, relabel.c, ingest.c, writer.c, libcurl) count here (the HTTP layer is not
    this test's business)."""
    wait_for(lambda: any(t["health"] != "unknown" for t in active_targets(env.srv)), 5, "scrapes")
    t0 = time.monotonic()
    rc = env.srv.stop(timeout=20)
    took = time.monotonic() - t0
    log = env.srv.log()
    assert "ERROR: AddressSanitizer" not in log, log[-5000:]
    if "ERROR: LeakSanitizer" in log:
        ours = [blk for blk in log.split("\n\n") if "leak of" in blk and
                re.search(r"/src/(scrape|discovery|config|ingest)/[a-z_]+\.c|libcurl", blk)]
        assert not ours, "\n\n".join(ours)[:5000]
    else:
        assert rc == 0, (rc, log[-3000:])
    assert took < 10, "stopping took %.1fs" % took


@pytest.mark.skipif(sanitized_binary(), reason="RSS of an ASan build (freed memory quarantined) says nothing")
def test_content_encoding_gzip_bomb(make_server, tmp_path):
    """Content-Encoding: gzip, 300 MB of zeros in ~300 KB: libcurl inflates it (Accept-Encoding is
    sent); the body cap must apply to what is buffered, so memory stays within ~the cap."""
    bomb = gzip.compress(b"\0" * (300 * 1000 * 1000), 6)
    assert len(bomb) < 1_000_000

    def handler(path, h):
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(bomb)))
        h.end_headers()
        h.wfile.write(bomb)

    py = PyTarget(handler)
    try:
        cfg = tmp_path / "bomb.yml"
        cfg.write_text(config_text("2s", "2s", jobs=(
            "  - job_name: bomb\n"
            "    static_configs:\n"
            "      - targets: ['%s']\n" % py.address + GOROUTINE_ONLY)))
        srv = make_server(config=str(cfg), max_body_size="1MiB")
        rss0 = rss_kb(srv.proc.pid)
        wait_for(lambda: py.count() >= 2, 30, "two scrapes of the bomb")
        wait_for(lambda: active_targets(srv)[0]["health"] != "unknown", 10, "a result")
        time.sleep(1.5)
        t = active_targets(srv)[0]
        rss1 = rss_kb(srv.proc.pid)
        assert srv.running()
        assert t["health"] == "down", t
        grew_mib = (rss1 - rss0) / 1024
        assert grew_mib < 140, ("a 300 MB decoded body was buffered: RSS grew by %.0f MiB (cap 64 MiB); lastError=%r"
                                % (grew_mib, t["lastError"]))
        assert re.search(r"exceeds the limit", t["lastError"]), t["lastError"]
    finally:
        py.close()


@pytest.mark.skipif(sanitized_binary(), reason="RSS of an ASan build (freed memory quarantined) says nothing")
def test_oversized_bodies_not_retained(make_server, tmp_path):
    """Four targets that stream 70 MB each: every scrape is cut at the 64 MiB cap. Between rounds
    the server must give that memory back; keeping each target's 64 MiB buffer after the failed
    scrape pins cap x (such targets) for as long as they are configured."""
    pys = [PyTarget(HANDLERS["huge"]) for _ in range(4)]
    try:
        cfg = tmp_path / "huge.yml"
        cfg.write_text(config_text("2s", "2s", jobs=(
            "  - job_name: huge\n"
            "    static_configs:\n"
            "      - targets: [%s]\n" % ", ".join("'%s'" % p.address for p in pys) + GOROUTINE_ONLY)))
        srv = make_server(config=str(cfg), max_body_size="1MiB")
        rss0 = rss_kb(srv.proc.pid)
        wait_for(lambda: all(p.count() >= 2 for p in pys), 30, "two rounds")
        wait_for(lambda: all(t["health"] == "down" for t in active_targets(srv)), 10, "the results")
        for t in active_targets(srv):
            assert re.search(WHY["huge"], t["lastError"]), t
        # the lowest RSS over a whole interval: what stays between the transfers
        low = min(rss_kb(srv.proc.pid) for _ in range(25) if time.sleep(0.1) is None)
        assert srv.running()
        kept_mib = (low - rss0) / 1024
        assert kept_mib < 64, ("%.0f MiB kept between rounds by 4 targets whose bodies were over the cap "
                               "(RSS %d -> %d KiB)" % (kept_mib, rss0, low))
    finally:
        for p in pys:
            p.close()
