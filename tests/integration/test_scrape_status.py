"""What /api/v1/targets and /metrics say about a target's scrapes, against one server:

  - a CPU profile of a real Go target (gotarget) every 2 s (so ?seconds=2, back to back): its
    lastScrapeDuration is the whole scrape (2 s and a little), and lastScrape is when that scrape
    began (Prometheus semantics), not when it ended or when the next one began;
  - files named in the configuration that do not exist (basic_auth password_file, authorization
    credentials_file, tls_config ca_file): the target is down with an error naming the file, no
    request is sent without the credentials, and once the file is there the target is up;
  - file_sd patterns that match no file: profstore_sd_file_patterns_unmatched{job} in /metrics."""

import base64
import datetime
import re
import threading
import time

import pytest

from conftest import fixture_bytes, require_tool
from scrape_util import GOROUTINE_ONLY, GoTarget, PyTarget, active_targets, config_text, send_body, wait_for, \
    write_atomic

GOOD_PROFILE = fixture_bytes("go/goroutine-01.pb.gz")
CPU_ONLY = """    profiling_config:
      pprof_config:
        memory: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        goroutine: {enabled: false}
        process_cpu: {enabled: true}
"""


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_status")
    e = Env()
    e.g = GoTarget(wd, seed=2).start()
    e.auth = []  # Authorization headers the Python target got
    e.lock = threading.Lock()

    def handle(path, h):
        with e.lock:
            e.auth.append(h.headers.get("Authorization"))
        send_body(h, 200, GOOD_PROFILE)

    e.py = PyTarget(handle)
    e.pwfile = wd / "secret" / "password"
    e.tokfile = wd / "secret" / "token"
    e.cafile = wd / "secret" / "ca.pem"
    e.sd = wd / "sd"
    e.sd.mkdir()
    write_atomic(e.sd / "a.json", '[{"targets": ["%s"]}]\n' % e.py.address)
    cfg = wd / "status.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: cpu\n"
        "    scrape_interval: 2s\n"
        "    scrape_timeout: 2s\n"
        "    static_configs: [{targets: ['%s']}]\n" % e.g.address + CPU_ONLY +
        "  - job_name: pw\n"
        "    basic_auth: {username: alice, password_file: '%s'}\n"
        "    static_configs: [{targets: ['%s']}]\n" % (e.pwfile, e.py.address) + GOROUTINE_ONLY +
        "  - job_name: tok\n"
        "    authorization: {credentials_file: '%s'}\n"
        "    static_configs: [{targets: ['%s']}]\n" % (e.tokfile, e.py.address) + GOROUTINE_ONLY +
        "  - job_name: tls\n"
        "    tls_config: {ca_file: '%s'}\n"
        "    static_configs: [{targets: ['%s']}]\n" % (e.cafile, e.py.address) + GOROUTINE_ONLY +
        "  - job_name: files\n"
        "    file_sd_configs:\n"
        "      - files: ['%s/*.json', '%s/*.yml']\n"
        "        refresh_interval: 1m\n"
        "      - files: ['%s/none/*.json']\n" % (e.sd, e.sd, wd) + GOROUTINE_ONLY +
        "  - job_name: nofiles\n"
        "    file_sd_configs: [{files: ['%s/*.yaml']}]\n" % e.sd + GOROUTINE_ONLY)))
    e.srv = module_server_factory(name="scrape_status", config=str(cfg))
    yield e
    e.g.kill()
    e.py.close()


def parse_time(s):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", s)
    assert m, s
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + m.group(2)) if m.group(2) else 0.0)


def target_of(env, job):
    ts = [t for t in active_targets(env.srv) if t["scrapePool"] == job]
    assert len(ts) == 1, (job, ts)
    return ts[0]


def test_cpu_scrape_duration_and_start(env):
    """Each new lastScrape is seen at most a poll after its scrape ended: then lastScrape is about
    lastScrapeDuration before the moment it was seen, and the duration covers the 2 s profile."""
    seen = []  # (wall time first seen, lastScrape, lastScrapeDuration, health)
    last = None
    # the scraper thread takes the configuration after the server answers (a busy machine: later)
    wait_for(lambda: [t for t in active_targets(env.srv) if t["scrapePool"] == "cpu"], 10, "the cpu target")
    deadline = time.time() + 25
    while len(seen) < 4 and time.time() < deadline:
        t = target_of(env, "cpu")
        now = time.time()
        if t["lastScrape"] != last and t["lastScrape"] != "0001-01-01T00:00:00Z":
            last = t["lastScrape"]
            seen.append((now, parse_time(last), t["lastScrapeDuration"], t["health"]))
        time.sleep(0.05)
    assert len(seen) == 4, seen
    for now, start, dur, health in seen[1:]:  # the first may have been seen late
        assert health == "up", seen
        assert 2.0 <= dur <= 3.0, ("the duration of a 2 s CPU scrape", dur, seen)
        assert start <= now - 1.9, ("lastScrape is when the 2 s scrape began, not when it ended", now - start)
        # began at now - (time since its end) - duration: the end is at most a poll (and a request) ago
        assert now - dur - 0.5 <= start <= now - dur + 0.1, ("lastScrape is the scrape's start", now - start, dur)
    # back to back: each scrape starts about when the one before ended
    for (_, s0, d0, _), (_, s1, _, _) in zip(seen[1:], seen[2:]):
        assert s0 + d0 - 0.1 <= s1 <= s0 + d0 + 0.5, seen


MISSING = {
    "pw": ("pwfile", "unable to read basic auth password file %s: No such file or directory"),
    "tok": ("tokfile", "unable to read authorization credentials file %s: No such file or directory"),
    "tls": ("cafile", "unable to read tls_config ca_file %s: No such file or directory"),
}


@pytest.mark.parametrize("job", ["pw", "tok", "tls"])
def test_missing_file_fails_the_scrape(env, job):
    attr, msg = MISSING[job]
    want = msg % getattr(env, attr)
    t = wait_for(lambda: (lambda t: t if t["health"] == "down" else None)(target_of(env, job)), 10,
                 "job %s down" % job)
    assert t["lastError"] == want, t
    assert t["lastScrape"] != "0001-01-01T00:00:00Z", t
    assert t["lastScrapeDuration"] == 0, t
    m = env.srv.metrics()
    assert m['profstore_scrape_failures_total{job="%s"}' % job] == m['profstore_scrapes_total{job="%s"}' % job] >= 1
    assert "job=%s" % job in env.srv.log() and want in env.srv.log()


def test_no_request_without_the_password(env):
    wait_for(lambda: target_of(env, "pw")["health"] == "down" and target_of(env, "tok")["health"] == "down", 10,
             "pw and tok down")
    time.sleep(1.5)
    with env.lock:
        sent = list(env.auth)
    # the Python target is also the file_sd job's (no credentials) and the tls job's (never reached)
    assert all(a is None for a in sent), sent
    # the files appear: the next scrapes send them
    env.pwfile.parent.mkdir(exist_ok=True)
    env.pwfile.write_text("s3cret\n")
    env.tokfile.write_text("tok-123\n")
    wait_for(lambda: target_of(env, "pw")["health"] == "up" and target_of(env, "tok")["health"] == "up", 10,
             "pw and tok up once their files exist")
    assert target_of(env, "pw")["lastError"] == ""
    with env.lock:
        sent = set(env.auth)
    assert "Basic " + base64.b64encode(b"alice:s3cret").decode() in sent, sent
    assert "Bearer tok-123" in sent, sent
    # tls: an (empty) CA file is enough for an http:// target
    env.cafile.write_text("")
    wait_for(lambda: target_of(env, "tls")["health"] == "up", 10, "tls up once its CA file exists")


def unmatched(env):
    m = env.srv.metrics()
    return {j: m.get('profstore_sd_file_patterns_unmatched{job="%s"}' % j) for j in ("files", "nofiles", "cpu")}


def test_file_sd_patterns_matching_nothing(env):
    # files: "*.json" matches a.json, "*.yml" and ".../none/*.json" match nothing; nofiles: "*.yaml" nothing;
    # jobs without file_sd have no such gauge
    assert unmatched(env) == {"files": 2, "nofiles": 1, "cpu": None}
    assert [t["scrapePool"] for t in active_targets(env.srv) if t["scrapePool"] in ("files", "nofiles")] == ["files"]
    log = env.srv.log()
    assert 'file_sd_configs[0].files[1]: \\"%s/*.yml\\" matches no file' % env.sd in log or \
        'file_sd_configs[0].files[1]: "%s/*.yml" matches no file' % env.sd in log, log[-3000:]
    # a file appears for nofiles' pattern (inotify): it matches now
    write_atomic(env.sd / "n.yaml", "- targets: ['%s']\n" % env.py.address)
    wait_for(lambda: unmatched(env)["nofiles"] == 0, 10, "the nofiles pattern to match")
    assert unmatched(env) == {"files": 2, "nofiles": 0, "cpu": None}
    wait_for(lambda: [t for t in active_targets(env.srv) if t["scrapePool"] == "nofiles"], 10, "nofiles' target")
