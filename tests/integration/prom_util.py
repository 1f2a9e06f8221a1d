"""A real Prometheus 2.42 (Debian's /usr/bin/prometheus) for the tests that compare profstore with it,
and a comparison of two Prometheus HTTP API answers.

    prometheus_binary()                 the binary (skips the test when it is not installed)
    PromConfig(...)                     a generated prometheus.yml: scrape jobs (1 s), remote_write
                                        and/or remote_read to a profstore, external labels
    Prometheus(workdir, config, ...)    one process on a free loopback port with its own data dir:
                                        start() (waits for /-/ready), stop() (SIGTERM, waits), kill()
                                        (proc_util.ChildProcess: killed at exit if left running),
                                        api(path, **params), query(expr, t), query_range(expr, a, b, step),
                                        self_metric(name) (its own /metrics), wait_sent(ts) (remote_write
                                        has sent every sample up to ts)
    prometheus fixture                  factory: prometheus(config, **kw) -> started Prometheus, all
                                        stopped at teardown
    diff_answers(a, b, ordered=False)   None when two answers ({"status","data":{"resultType","result"}})
                                        agree: same series sets, same timestamps, values within 1e-9
                                        relative (NaN == NaN, +Inf == +Inf); else a message saying where
    promtool(args...)                   runs promtool query ...; parse_promtool(text) -> comparable rows

Prometheus adds its external labels to every series it remote-writes but not to its own query
answers: a comparison config sets none (PromConfig's default).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from conftest import free_port
from proc_util import ChildProcess

PROMETHEUS = os.environ.get("PS_PROMETHEUS_BIN", "/usr/bin/prometheus")
PROMTOOL = os.environ.get("PS_PROMTOOL_BIN", "/usr/bin/promtool")

# Prometheus 3, as scripts/install-prometheus3.sh builds it into the peers cache (not a Debian
# package: too heavy to build in `make test`, so its tests run there only when it is cached, and
# always in `make test-peers`, which builds it and sets PS_REQUIRE_PROMETHEUS3=1).
PROM3_RELEASE = "3.16.0"
PROM3_DIR = os.environ.get("PS_PEERS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "profstore-peers")
PROMETHEUS3 = os.environ.get("PS_PROMETHEUS3_BIN") or os.path.join(PROM3_DIR, "prometheus-" + PROM3_RELEASE, "bin",
                                                                   "prometheus")
PROM3_NOT_CACHED = "Prometheus 3 is not cached"  # conftest.ALLOWED_SKIPS names it


def prometheus3_binary() -> str:
    """The Prometheus 3 binary; skips (an allowed skip in `make test`) when it is not cached, fails
    under PS_REQUIRE_PROMETHEUS3=1."""
    if not os.access(PROMETHEUS3, os.X_OK):
        msg = "%s (%s; scripts/install-prometheus3.sh builds it)" % (PROM3_NOT_CACHED, PROMETHEUS3)
        if os.environ.get("PS_REQUIRE_PROMETHEUS3") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return PROMETHEUS3


def prometheus_binary() -> str:
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    return PROMETHEUS


def promtool_binary() -> str:
    if not os.access(PROMTOOL, os.X_OK):
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return PROMTOOL


# ---- configuration ---------------------------------------------------------------------------

class PromConfig:
    """prometheus.yml for a test. jobs: {job_name: [address, ...]} scraped every scrape_interval;
    job_labels: {job_name: {label: value}} (static target labels); keep: {job_name: regex} keeps
    only the metric names that match (metric_relabel_configs); self_job: a job that scrapes this
    Prometheus itself (its own histograms and summaries), its address filled in at start."""

    def __init__(self, jobs: Optional[Dict[str, List[str]]] = None, scrape_interval: str = "1s",
                 remote_write: Optional[str] = None, remote_read: Optional[str] = None,
                 external_labels: Optional[Dict[str, str]] = None, job_labels=None, keep=None,
                 self_job: Optional[str] = None, read_recent: bool = True,
                 remote_write_extra: Sequence[str] = (), job_extra: Optional[Dict[str, List[str]]] = None):
        self.jobs = dict(jobs or {})
        self.scrape_interval = scrape_interval
        self.remote_write = remote_write
        self.remote_read = remote_read
        self.external_labels = dict(external_labels or {})
        self.job_labels = dict(job_labels or {})
        self.keep = dict(keep or {})
        self.self_job = self_job
        self.read_recent = read_recent
        self.remote_write_extra = list(remote_write_extra)  # more keys of the remote_write entry
        self.job_extra = dict(job_extra or {})              # more keys of a scrape job

    def text(self, own_address: str) -> str:
        q = json.dumps  # a JSON string is a YAML double-quoted scalar
        out = ["global:", "  scrape_interval: %s" % self.scrape_interval,
               "  scrape_timeout: %s" % self.scrape_interval, "  evaluation_interval: %s" % self.scrape_interval]
        if self.external_labels:
            out.append("  external_labels:")
            out += ["    %s: %s" % (k, q(v)) for k, v in sorted(self.external_labels.items())]
        jobs = dict(self.jobs)
        if self.self_job:
            jobs[self.self_job] = [own_address]
        if jobs:
            out.append("scrape_configs:")
        for name, targets in jobs.items():
            out += ["  - job_name: %s" % q(name),
                    "    static_configs:",
                    "      - targets: [%s]" % ", ".join(q(t) for t in targets)]
            if self.job_labels.get(name):
                out.append("        labels: {%s}" % ", ".join("%s: %s" % (k, q(v))
                                                          for k, v in sorted(self.job_labels[name].items())))
            out += ["    %s" % line for line in self.job_extra.get(name, [])]
            if name in self.keep:
                out += ["    metric_relabel_configs:",
                        "      - source_labels: [__name__]",
                        "        regex: %s" % q(self.keep[name]),
                        "        action: keep"]
        if self.remote_write:
            out += ["remote_write:",
                    "  - url: %s" % q(self.remote_write),
                    "    remote_timeout: 5s",
                    "    queue_config: {batch_send_deadline: 500ms, max_samples_per_send: 2000,"
                    " min_backoff: 100ms, max_backoff: 1s}",
                    "    metadata_config: {send: true, send_interval: 5s}"]
            out += ["    %s" % line for line in self.remote_write_extra]
        if self.remote_read:
            out += ["remote_read:",
                    "  - url: %s" % q(self.remote_read),
                    "    remote_timeout: 10s",
                    "    read_recent: %s" % ("true" if self.read_recent else "false")]
        return "\n".join(out) + "\n"


# ---- the process -----------------------------------------------------------------------------

class PromError(RuntimeError):
    pass


class Prometheus(ChildProcess):
    READY_TIMEOUT = 30.0
    STOP_TIMEOUT = 20.0

    def __init__(self, workdir: Path, config: PromConfig, extra_args: Sequence[str] = (),
                 receiver: bool = False, binary: Optional[str] = None):
        self.binary = binary  # None: Debian's Prometheus 2.42 (prometheus_binary())
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.extra_args = list(extra_args)
        self.receiver = receiver
        self.port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = self.workdir / "prometheus.log"
        self.data_dir = self.workdir / "data"
        self.config_path = self.workdir / "prometheus.yml"

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.port

    def url(self, path: str = "/") -> str:
        return "http://%s%s" % (self.address, path)

    def start(self) -> "Prometheus":
        binary = self.binary or prometheus_binary()
        self.port = free_port()
        self.config_path.write_text(self.config.text(self.address))
        args = [binary, "--config.file=%s" % self.config_path, "--storage.tsdb.path=%s" % self.data_dir,
                "--web.listen-address=%s" % self.address, "--log.level=info"]
        if self.receiver:
            args.append("--web.enable-remote-write-receiver")
        args += self.extra_args
        logf = open(self.log_path, "ab")
        logf.write(("\n==== %s\n" % " ".join(args)).encode())
        logf.flush()
        self.proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=str(self.workdir))
        logf.close()
        self.track()
        deadline = time.monotonic() + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PromError("prometheus exited with %s: %s" % (self.proc.returncode, self.log()))
            try:
                if self.request("GET", "/-/ready", timeout=1.0)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise PromError("prometheus not ready after %.0fs: %s" % (self.READY_TIMEOUT, self.log()))

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    # ---- HTTP ----
    def request(self, method: str, path: str, body: Optional[bytes] = None, headers=None, timeout: float = 30.0):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=dict({"Connection": "close"}, **(headers or {})))
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def api(self, path: str, **params) -> dict:
        return api_get(self.port, path, params)

    def query(self, expr: str, t: Optional[float] = None) -> dict:
        return self.api("/api/v1/query", query=expr, time=t)

    def query_range(self, expr: str, start: float, end: float, step: float) -> dict:
        return self.api("/api/v1/query_range", query=expr, start=start, end=end, step=step)

    def self_metric(self, name: str, labels: Optional[Dict[str, str]] = None) -> List[float]:
        """Values of one metric in this Prometheus' own /metrics (every series whose labels include
        labels)."""
        st, _, body = self.request("GET", "/metrics")
        assert st == 200
        out = []
        for line in body.decode().splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            head, _, val = line.rpartition(" ")
            if head.split("{")[0] != name:
                continue
            if labels and not all('%s="%s"' % kv in head for kv in labels.items()):
                continue
            out.append(float(val))
        return out

    def wait_sent(self, ts: float, timeout: float = 30.0) -> None:
        """Waits until remote_write has sent every sample with a timestamp up to ts (unix seconds)."""
        deadline = time.monotonic() + timeout
        last = []
        while time.monotonic() < deadline:
            last = self.self_metric("prometheus_remote_storage_queue_highest_sent_timestamp_seconds")
            if last and min(last) >= ts:
                return
            time.sleep(0.2)
        raise PromError("remote_write did not send up to %.3f within %.0fs (highest sent %s): %s"
                        % (ts, timeout, last, self.log()))


@pytest.fixture
def prometheus(tmp_path):
    """Factory: prometheus(config, name=None, receiver=False, extra_args=(), binary=None) -> a started
    Prometheus (binary: e.g. prometheus3_binary(); default Debian's 2.42);
    all stopped at teardown (their logs are in the test's tmp dir)."""
    made: List[Prometheus] = []

    def factory(config: PromConfig, name: Optional[str] = None, **kw) -> Prometheus:
        p = Prometheus(tmp_path / (name or "prom%d" % len(made)), config, **kw)
        made.append(p)
        return p.start()

    yield factory
    for p in made:
        p.stop()


def api_get(port: int, path: str, params: Dict[str, object], method: str = "POST", timeout: float = 60.0) -> dict:
    """A Prometheus API call as Grafana makes it (POST form), decoded; any status (errors are JSON)."""
    form = urllib.parse.urlencode({k: fmt_param(v) for k, v in params.items() if v is not None})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if method == "POST":
            conn.request("POST", path, body=form.encode(),
                         headers={"Content-Type": "application/x-www-form-urlencoded", "Connection": "close"})
        else:
            conn.request("GET", path + "?" + form, headers={"Connection": "close"})
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    try:
        js = json.loads(body)
    except ValueError:
        js = {"status": "error", "errorType": "not_json", "error": body[:300].decode(errors="replace")}
    js["_http_status"] = r.status
    return js


def fmt_param(v) -> str:
    if isinstance(v, float):
        return "%.3f" % v
    return str(v)


# ---- comparing answers -----------------------------------------------------------------------

REL_TOL = 1e-9


def parse_value(s: str) -> float:
    return float(s)  # Go's strings: "NaN", "+Inf", "-Inf", "1e-07", ...


def values_agree(a: float, b: float, rel: float = REL_TOL) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    if a == b:
        return True
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _key(metric: dict) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted(metric.items()))


def _fmt_key(k) -> str:
    return "{" + ", ".join('%s="%s"' % kv for kv in k) + "}"


def diff_answers(a: dict, b: dict, ordered: bool = False, rel: float = REL_TOL) -> Optional[str]:
    """None when a and b (decoded API answers) agree, else what differs, naming a as "want" (the
    reference, e.g. Prometheus) and b as "got". ordered: the order of an instant vector's values
    counts too (sort(), topk), series with equal values may trade places."""
    if a.get("status") != b.get("status"):
        return "status: want %s (%s), got %s (%s)" % (a.get("status"), a.get("error"), b.get("status"), b.get("error"))
    if a.get("status") != "success":
        return None if a.get("errorType") == b.get("errorType") else \
            "errorType: want %s, got %s" % (a.get("errorType"), b.get("errorType"))
    da, db = a["data"], b["data"]
    if da["resultType"] != db["resultType"]:
        return "resultType: want %s, got %s" % (da["resultType"], db["resultType"])
    rt = da["resultType"]
    if rt in ("scalar", "string"):
        (ta, va), (tb, vb) = da["result"], db["result"]
        if ta != tb:
            return "%s time: want %s, got %s" % (rt, ta, tb)
        if rt == "string":
            return None if va == vb else "string: want %r, got %r" % (va, vb)
        return None if values_agree(parse_value(va), parse_value(vb), rel) else "scalar: want %s, got %s" % (va, vb)
    ra, rb = da["result"], db["result"]
    ka, kb = [_key(s["metric"]) for s in ra], [_key(s["metric"]) for s in rb]
    if len(set(ka)) != len(ka) or len(set(kb)) != len(kb):
        return "duplicate series in an answer"
    if set(ka) != set(kb):
        missing = sorted(set(ka) - set(kb))
        extra = sorted(set(kb) - set(ka))
        return "series differ: missing %s; extra %s" % ([_fmt_key(k) for k in missing[:5]],
                                                       [_fmt_key(k) for k in extra[:5]])
    if ordered and rt == "vector" and ka != kb:
        # the values must come in the same order; series with equal values may trade places
        va = [parse_value(s["value"][1]) for s in ra]
        vb = [parse_value(s["value"][1]) for s in rb]
        if not all(values_agree(x, y, rel) for x, y in zip(va, vb)):
            return "order differs: want %s, got %s" % (
                ["%s %s" % (_fmt_key(k), s["value"][1]) for k, s in zip(ka, ra)],
                ["%s %s" % (_fmt_key(k), s["value"][1]) for k, s in zip(kb, rb)])
    mb = {k: s for k, s in zip(kb, rb)}
    for k, sa in zip(ka, ra):
        sb = mb[k]
        if rt == "vector":
            pa, pb = [sa["value"]], [sb["value"]]
        else:
            pa, pb = sa["values"], sb["values"]
        if [p[0] for p in pa] != [p[0] for p in pb]:
            ta, tb = [p[0] for p in pa], [p[0] for p in pb]
            only_a = sorted(set(ta) - set(tb))
            only_b = sorted(set(tb) - set(ta))
            return "%s: timestamps differ: %d vs %d points; only in want %s; only in got %s" % (
                _fmt_key(k), len(ta), len(tb), only_a[:5], only_b[:5])
        for (t, va), (_, vb) in zip(pa, pb):
            if not values_agree(parse_value(va), parse_value(vb), rel):
                return "%s @%s: want %s, got %s" % (_fmt_key(k), t, va, vb)
    return None


def _points_by_time(ans: dict):
    """{timestamp: [(series key, value)]} of a vector or matrix answer."""
    out: Dict[float, list] = {}
    d = ans["data"]
    for s in d["result"]:
        k = _key(s["metric"])
        for t, v in ([s["value"]] if d["resultType"] == "vector" else s["values"]):
            out.setdefault(t, []).append((k, parse_value(v)))
    return out


def diff_kselect(want: dict, got: dict, inner: dict, rel: float = REL_TOL) -> Optional[str]:
    """None when got is as right an answer of topk/bottomk as want, where series whose values tie at
    the k-th place may be picked either way (Prometheus picks by the order its storage hands series
    over, which differs between its head, remote_read and profstore). inner is want's server's answer
    for the selected expression over the same times. At every timestamp the values picked must be
    the same multiset (and, for a vector, come in the same order), and every point got picked must
    be that series' value in inner."""
    d = diff_answers(want, got, ordered=True, rel=rel)
    if d is None:
        return None
    if want.get("status") != "success" or got.get("status") != "success" or \
            want["data"]["resultType"] != got["data"]["resultType"]:
        return d
    pw, pg, pi = _points_by_time(want), _points_by_time(got), _points_by_time(inner)
    if sorted(pw) != sorted(pg):
        return "timestamps differ: only in want %s; only in got %s" % (
            sorted(set(pw) - set(pg))[:5], sorted(set(pg) - set(pw))[:5])
    for t in sorted(pw):
        vw, vg = [v for _, v in pw[t]], [v for _, v in pg[t]]
        if want["data"]["resultType"] == "matrix":
            vw, vg = sorted(vw), sorted(vg)
        if len(vw) != len(vg) or not all(values_agree(a, b, rel) for a, b in zip(vw, vg)):
            return "@%s: values picked differ: want %s, got %s (%s)" % (t, vw, vg, d)
        truth = dict(pi.get(t, []))
        for k, v in pg[t]:
            if k not in truth or not values_agree(truth[k], v, rel):
                return "@%s: %s is %s in the input, got %s (%s)" % (t, _fmt_key(k), truth.get(k), v, d)
    return None


# ---- promtool --------------------------------------------------------------------------------

def promtool(*args: str, timeout: float = 60.0, env=None, tool: Optional[str] = None) -> subprocess.CompletedProcess:
    """tool: another promtool (Prometheus 3's, beside its binary); default Debian's 2.42."""
    return subprocess.run([tool or promtool_binary()] + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)


def parse_promtool(text: str) -> Dict[str, List[Tuple[float, str]]]:
    """promtool query instant/range output -> {series: [(value, "@[t]"), ...]}:

        instant:  up{job="a"} => 1 @[1796021924.802]
        range:    up{job="a"} =>
                  1 @[1796021924.802]
                  ...
        scalar:   scalar: 2 @[4]
    """
    out: Dict[str, List[Tuple[float, str]]] = {}
    cur = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("scalar: "):
            v, _, t = line[8:].strip().partition(" ")
            out.setdefault("scalar", []).append((float(v), t))
        elif " => " in line:
            series, _, rest = line.partition(" => ")
            cur = series
            out.setdefault(series, [])
            if rest.strip():
                v, _, t = rest.strip().partition(" ")
                out[series].append((float(v), t))
        elif line.endswith(" =>"):
            cur = line[:-3]
            out.setdefault(cur, [])
        else:
            v, _, t = line.strip().partition(" ")
            out.setdefault(cur or "", []).append((float(v), t))
    return out


def diff_promtool(a: str, b: str, rel: float = REL_TOL) -> Optional[str]:
    pa, pb = parse_promtool(a), parse_promtool(b)
    if set(pa) != set(pb):
        return "series differ: only in want %s; only in got %s" % (sorted(set(pa) - set(pb))[:5],
                                                                   sorted(set(pb) - set(pa))[:5])
    for k in pa:
        if [t for _, t in pa[k]] != [t for _, t in pb[k]]:
            return "%s: timestamps differ" % k
        for (va, t), (vb, _) in zip(pa[k], pb[k]):
            if not values_agree(va, vb, rel):
                return "%s %s: want %s, got %s" % (k, t, va, vb)
    return None
