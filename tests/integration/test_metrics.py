"""GET /metrics: per-handler request counters and duration histograms (handler = route pattern),
and the process_* metrics of Prometheus' client_golang process collector, checked against /proc
of the server process. Parsed with a small text exposition format parser (and promtool, if
installed)."""

import os
import re
import subprocess
import shutil
import time

import pytest


BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def parse_exposition(text):
    """Text format 0.0.4 -> (types {family: type}, samples [(name, {label: value}, float)]).
    Fails on a line that is not a comment, a TYPE/HELP line or a sample."""
    types, samples = {}, []
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] == "TYPE":
                assert parts[2] not in types, "TYPE twice for %s" % parts[2]
                types[parts[2]] = parts[3]
            continue
        m = _LINE.match(line)
        assert m, "not a sample line: %r" % line
        labels = {}
        if m.group(2):
            pos, s = 0, m.group(2)
            while pos < len(s):
                lm = _LABEL.match(s, pos)
                assert lm, "bad labels in %r" % line
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
        samples.append((m.group(1), labels, float(m.group(3))))
    return types, samples


def scrape(srv):
    st, hdrs, body = srv.get("/metrics")
    assert st == 200, body[:300]
    assert hdrs["content-type"].startswith("text/plain; version=0.0.4")
    return body.decode()


def requests_by(samples):
    """{(handler, code): value} of profstore_http_requests_total."""
    return {(l["handler"], l["code"]): v for n, l, v in samples if n == "profstore_http_requests_total"}


def one(samples, name):
    vals = [v for n, l, v in samples if n == name]
    assert len(vals) == 1, (name, vals)
    return vals[0]


def test_request_counters_and_histograms(server):
    types0, s0 = parse_exposition(scrape(server))
    before = requests_by(s0)
    for i, rel in enumerate(["go/cpu-01.pb.gz", "go/heap-01.pb.gz", "go/goroutine-01.pb.gz"]):
        st, _ = server.push(rel, labels='{job="m%d"}' % i)
        assert st == 200, server.last_raw
    for label in ("job", "instance"):  # two raw paths, one route pattern
        assert server.get_json("/api/v1/label/%s/values" % label)["status"] == "success"
    assert server.get("/api/v1/no/such/thing")[0] == 404
    text = scrape(server)
    types, s1 = parse_exposition(text)
    after = requests_by(s1)

    diff = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert diff == {("/api/v1/profiles/write", "200"): 3, ("/api/v1/label/:name/values", "200"): 2,
                    ("other", "404"): 1, ("/metrics", "200"): 1}, diff
    assert not [k for k in after if k[0].startswith("/api/v1/label/job")], "raw paths are not handlers"
    assert types["profstore_http_requests_total"] == "counter"
    assert types["profstore_http_request_duration_seconds"] == "histogram"

    # one histogram per handler seen, its _count equal to the handler's answers
    handlers = {h for h, _ in after}
    assert handlers == {"/-/ready", "/metrics", "/api/v1/profiles/write", "/api/v1/label/:name/values", "other"}
    for h in handlers:
        buckets = [(l["le"], v) for n, l, v in s1
                   if n == "profstore_http_request_duration_seconds_bucket" and l["handler"] == h]
        assert [le for le, _ in buckets] == BUCKETS, (h, buckets)
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), ("buckets must be cumulative", h, counts)
        count = [v for n, l, v in s1 if n == "profstore_http_request_duration_seconds_count" and l["handler"] == h]
        total = sum(v for (hh, _), v in after.items() if hh == h)
        assert count == [total], (h, count, total)
        assert counts[-1] == total
        dsum = [v for n, l, v in s1 if n == "profstore_http_request_duration_seconds_sum" and l["handler"] == h]
        assert len(dsum) == 1 and 0 <= dsum[0] < 10 * total, (h, dsum)
    # a push waits for its commit (fsync): it takes longer than nothing
    wsum = [v for n, l, v in s1 if n == "profstore_http_request_duration_seconds_sum"
            and l["handler"] == "/api/v1/profiles/write"]
    assert wsum[0] > 0

    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr


def test_error_answers_counted_under_their_route(server):
    _, s0 = parse_exposition(scrape(server))
    before = requests_by(s0)
    assert server.push(b"plain text", labels='{job="x"}')[0] == 400  # refused before the writer
    assert server.push("go/block-01.pb.gz")[0] == 400                  # needs name=
    assert server.request("GET", "/api/v1/profiles/write")[0] == 405
    assert server.get("/api/v1/query")[0] == 400                       # no query=
    _, s1 = parse_exposition(scrape(server))
    after = requests_by(s1)
    diff = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert diff == {("/api/v1/profiles/write", "400"): 2, ("/api/v1/profiles/write", "405"): 1,
                    ("/api/v1/query", "400"): 1, ("/metrics", "200"): 1}, diff
    errors = lambda s: {l["class"]: v for n, l, v in s if n == "profstore_http_errors_total"}
    assert {c: v - errors(s0)[c] for c, v in errors(s1).items()} == {"4xx": 4, "5xx": 0}


def _proc_stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields  # fields[0] is field 3 (state)


def _btime():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return int(line.split()[1])
    raise AssertionError("no btime in /proc/stat")


def _fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def _idle_fds(pid, timeout=5.0):
    """The server's descriptor count once it is idle (the connections of earlier requests are
    closed): the same count over 100 ms."""
    deadline = time.monotonic() + timeout
    last, since = _fds(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.01)
        n = _fds(pid)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= 0.1:
            return n
    raise AssertionError("descriptor count of pid %d does not settle" % pid)


def test_process_metrics_match_proc(make_server):
    t_launch = time.time()
    srv = make_server(retention="0")
    pid = srv.proc.pid
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_before = sum(int(x) for x in _proc_stat(pid)[11:13]) / ticks
    fds_before = _idle_fds(pid)
    text = scrape(srv)
    types, samples = parse_exposition(text)
    stat = _proc_stat(pid)
    fds_after = _idle_fds(pid)

    for name, typ in (("process_cpu_seconds_total", "counter"), ("process_resident_memory_bytes", "gauge"),
                      ("process_virtual_memory_bytes", "gauge"), ("process_open_fds", "gauge"),
                      ("process_max_fds", "gauge"), ("process_start_time_seconds", "gauge")):
        assert types.get(name) == typ, (name, types.get(name))

    with open("/proc/%d/status" % pid) as f:
        rss = [int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")][0]
    got_rss = one(samples, "process_resident_memory_bytes")
    assert abs(got_rss - rss) <= 0.1 * rss, (got_rss, rss)
    vsize = int(stat[20])
    got_vsize = one(samples, "process_virtual_memory_bytes")
    assert abs(got_vsize - vsize) <= 0.1 * vsize, (got_vsize, vsize)

    start = _btime() + int(stat[19]) / ticks
    got_start = one(samples, "process_start_time_seconds")
    assert abs(got_start - start) <= 1, (got_start, start)
    assert abs(got_start - t_launch) <= 1, (got_start, t_launch)

    cpu_after = sum(int(x) for x in stat[11:13]) / ticks
    assert cpu_before <= one(samples, "process_cpu_seconds_total") <= cpu_after

    # while answering, the server holds one more descriptor than when idle: the scrape's connection
    assert fds_before == fds_after, (fds_before, fds_after)
    assert one(samples, "process_open_fds") == fds_before + 1
    with open("/proc/%d/limits" % pid) as f:
        soft = [line[len("Max open files"):].split()[0] for line in f if line.startswith("Max open files")][0]
    assert one(samples, "process_max_fds") == float(soft)


def test_duration_starts_with_the_request_not_the_connection(server):
    """On a kept-alive connection the clock starts at each request, not when the connection (or
    its previous request) began: a fast request after an idle second is in the le=0.5 bucket."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/-/healthy")
        conn.getresponse().read()
        time.sleep(0.6)
        conn.request("GET", "/api/v1/labels")
        r = conn.getresponse()
        r.read()
        assert r.status == 200
    finally:
        conn.close()
    _, samples = parse_exposition(scrape(server))
    b = {l["le"]: v for n, l, v in samples
         if n == "profstore_http_request_duration_seconds_bucket" and l["handler"] == "/api/v1/labels"}
    assert b["0.5"] == 1 and b["+Inf"] == 1, b


def test_job_names_escaped_in_label_values(make_server, tmp_path):
    """A job name with a quote, a backslash and a newline is written as the text format escapes it,
    and the page still parses (the scrapes of its unreachable target count as failures)."""
    from conftest import free_port
    from scrape_util import wait_for
    job = 'a"b\\c\nd'
    cfg = tmp_path / "profstore.yml"
    cfg.write_text("global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
                   "scrape_configs:\n"
                   "  - job_name: \"a\\\"b\\\\c\\nd\"\n"
                   "    static_configs: [{targets: ['127.0.0.1:%d']}]\n"
                   "    profiling_config: {pprof_config: {process_cpu: {enabled: false}, memory: {enabled: false},"
                   " block: {enabled: false}, mutex: {enabled: false}}}\n" % free_port())
    srv = make_server(config=str(cfg), retention="0")

    def failures():
        _, samples = parse_exposition(scrape(srv))
        v = [(l, x) for n, l, x in samples if n == "profstore_scrape_failures_total"]
        return v if v and v[0][1] >= 1 else None
    got = wait_for(failures, 10, "a failed scrape")
    assert [l for l, _ in got] == [{"job": 'a\\"b\\\\c\\nd'}]
    text = scrape(srv)
    assert 'profstore_scrapes_total{job="a\\"b\\\\c\\nd"} ' in text
    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
    # the targets API has the name as it is
    st, _, body = srv.get("/api/v1/targets")
    import json
    assert [t["scrapePool"] for t in json.loads(body)["data"]["activeTargets"]] == [job]


def test_writer_transaction_histogram(server):
    """profstore_writer_transaction_duration_seconds: one observation per write transaction
    (profstore_writer_batches_total of them), cumulative buckets, Prometheus' le values."""
    now = int(time.time())
    for k in range(5):  # each waits for its answer: a transaction each
        st, js = server.push("go/cpu-01.pb.gz", time=str(now - 60 + k), labels='{job="h"}')
        assert st == 200, js
    types, samples = parse_exposition(scrape(server))
    assert types["profstore_writer_transaction_duration_seconds"] == "histogram"
    b = [(l["le"], v) for n, l, v in samples if n == "profstore_writer_transaction_duration_seconds_bucket"]
    assert [le for le, _ in b] == ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
                                   "2.5", "10", "+Inf"]
    assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), b
    batches = one(samples, "profstore_writer_batches_total")
    assert batches == 5
    assert b[-1][1] == batches
    assert one(samples, "profstore_writer_transaction_duration_seconds_count") == batches
    assert 0 < one(samples, "profstore_writer_transaction_duration_seconds_sum") < 10 * batches
    # each push was alone on the decode threads when the writer took it: no transaction waited
    assert types["profstore_writer_decode_waits_total"] == "counter"
    assert one(samples, "profstore_writer_decode_waits_total") == 0
