"""Browser harness for the web UI tests (test_ui_*.py) and bench/ui: headless Debian Chromium through
chromedriver (python3-selenium), against a real profstore holding pushed fixtures and a scraped gotarget.

Fixtures (import them into a test module: `from ui_util import browser, ui_server  # noqa: F401`):

    ui_server      (module) a UiData: .srv (conftest.Server), .gotarget (scrape_util.GoTarget), .pushed
                   (the pushes: PushedProfile), .t_first / .t_last (unix s of the first and last push),
                   .instances, .types; the server scrapes gotarget every 5 s as job "gotarget"
                   (labels env="test", instance) and the fixture returns once every profile type of
                   it is stored (about 10 s: the delta types need two scrapes).
    browser        (function) a Browser on the session's Chromium, its logs drained at the start of
                   the test, screenshots into the test's tmp_path (and $PS_UI_SCREENSHOTS, when set).

Browser:
    open(path_or_url, width=1280)  loads a page (paths are relative to the ui_server's URL)
    wait_for(css, timeout=10)      the first element matching css once it is displayed
    wait_js(expr, timeout=10)      polls `return (expr)` until truthy; returns the value
    js(script, *args)              driver.execute_script
    console_errors()               the console's errors and uncaught exceptions since the test began
    failed_requests()              requests since the test began that failed or got a status >= 400:
                                   [(url, status or error text)]
    screenshot(name)               PNG of the window -> path (tmp_path/name.png; $PS_UI_SCREENSHOTS/name.png too)
    set_width(px)                  1280 or 800 (height 900)

Standalone (bench/ui): `start_chromium()` gives a driver, `UiData.start(workdir)` a server with data.
synthetic_profile(ts, k) is the 12,420-node CPU profile of test_ui_flame's 8,192-node test and bench/ui.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from conftest import Server, fixture_bytes
from scrape_util import TYPES as SCRAPED_TYPES
from scrape_util import GoTarget, active_targets, config_text, wait_for

CHROMIUM = os.environ.get("PS_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PS_CHROMEDRIVER", "/usr/bin/chromedriver")
WIDTHS = (1280, 800)
HEIGHT = 900


# ---- Chromium ---------------------------------------------------------------------------------

def start_chromium(width: int = 1280, height: int = HEIGHT):
    """A headless Chromium driven by chromedriver, logging the console (browser log) and the
    network (performance log). Skips the test when Chromium, chromedriver or selenium is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("python3-selenium is not installed")
    for p in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(p):
            pytest.skip("%s is not installed (Debian chromium, chromium-driver)" % p)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-extensions", "--no-first-run", "--no-default-browser-check", "--disable-sync",
              "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
              "--metrics-recording-only", "--password-store=basic", "--hide-scrollbars",
              "--force-device-scale-factor=1", "--window-size=%d,%d" % (width, height), "--lang=en-US"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_path=os.devnull)
    drv = webdriver.Chrome(service=service, options=opts)
    drv.set_page_load_timeout(30)
    drv.set_script_timeout(30)
    return drv


@dataclass
class NetEvent:
    url: str
    status: Optional[int] = None
    error: Optional[str] = None
    method: str = "GET"


class Browser:
    """One Chromium session with the logs of the current test (see the module docstring)."""

    def __init__(self, driver, base_url: str = "", tmp_dir: Optional[Path] = None):
        self.driver = driver
        self.base_url = base_url.rstrip("/")
        self.tmp_dir = Path(tmp_dir) if tmp_dir else None
        self._console: List[dict] = []
        self._requests: Dict[str, NetEvent] = {}
        self.width = None

    # ---- logs ----
    def drain(self) -> None:
        """Reads the logs so far (the browser hands each entry out once)."""
        for e in self.driver.get_log("browser"):
            self._console.append(e)
        for e in self.driver.get_log("performance"):
            try:
                msg = json.loads(e["message"])["message"]
            except (KeyError, ValueError):
                continue
            m, p = msg.get("method"), msg.get("params", {})
            rid = p.get("requestId")
            if m == "Network.requestWillBeSent":
                req = p.get("request", {})
                self._requests[rid] = NetEvent(req.get("url", ""), method=req.get("method", "GET"))
            elif m == "Network.responseReceived" and rid in self._requests:
                self._requests[rid].status = p.get("response", {}).get("status")
            elif m == "Network.loadingFailed" and rid in self._requests:
                if not p.get("canceled"):
                    self._requests[rid].error = p.get("errorText", "failed")

    def reset_logs(self) -> None:
        self.drain()
        self._console.clear()
        self._requests.clear()

    def console_errors(self) -> List[str]:
        """Errors logged to the console and uncaught exceptions (level SEVERE), as message texts."""
        self.drain()
        return [e.get("message", "") for e in self._console if e.get("level") == "SEVERE"]

    def console(self) -> List[dict]:
        self.drain()
        return list(self._console)

    def failed_requests(self) -> List[Tuple[str, object]]:
        self.drain()
        out = []
        for ev in self._requests.values():
            if ev.url.startswith("data:") or ev.url.startswith("blob:"):
                continue
            if ev.error is not None:
                out.append((ev.url, ev.error))
            elif ev.status is not None and ev.status >= 400:
                out.append((ev.url, ev.status))
        return out

    def requests(self) -> List[NetEvent]:
        self.drain()
        return list(self._requests.values())

    # ---- pages ----
    def url(self, path: str) -> str:
        if path.startswith("http://") or path.startswith("https://"):
            return path
        return self.base_url + ("" if path.startswith("/") else "/") + path

    def set_width(self, width: int) -> None:
        if width != self.width:
            self.driver.set_window_size(width, HEIGHT)
            self.width = width

    def open(self, path: str = "/", width: int = 1280) -> None:
        self.set_width(width)
        self.driver.get(self.url(path))

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def js_async(self, script: str, *args):
        """execute_async_script: the script calls arguments[arguments.length - 1](value)."""
        return self.driver.execute_async_script(script, *args)

    def wait_js(self, expr: str, timeout: float = 10.0, what: Optional[str] = None):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.js("return (%s);" % expr)
            except Exception as e:  # noqa: BLE001 (a page still loading throws; keep polling)
                last = e
            else:
                if last:
                    return last
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %.0fs waiting for %s (last: %r); console errors: %r"
                                     % (timeout, what or expr, last, self.console_errors()))
            time.sleep(0.05)

    def wait_for(self, css: str, timeout: float = 10.0):
        from selenium.webdriver.common.by import By
        deadline = time.monotonic() + timeout
        while True:
            for el in self.driver.find_elements(By.CSS_SELECTOR, css):
                try:
                    if el.is_displayed():
                        return el
                except Exception:  # noqa: BLE001 (stale: the page re-rendered it)
                    pass
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %.0fs waiting for %r at %s; console errors: %r"
                                     % (timeout, css, self.driver.current_url, self.console_errors()))
            time.sleep(0.05)

    def find_all(self, css: str):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str, timeout: float = 10.0) -> str:
        return self.wait_for(css, timeout).text

    def screenshot(self, name: str) -> Path:
        """Writes name.png into the test's tmp dir (and into $PS_UI_SCREENSHOTS when set)."""
        base = self.tmp_dir or Path(".")
        path = base / (name + ".png")
        self.driver.save_screenshot(str(path))
        extra = os.environ.get("PS_UI_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(extra) / (name + ".png"))
        return path

    def http_get(self, path: str) -> Tuple[int, Dict[str, str], bytes]:
        """A plain GET (not through the browser) to the server the pages come from."""
        from scrape_util import http_get
        return http_get(self.url(path))


@pytest.fixture(scope="session")
def chromium_driver():
    drv = start_chromium()
    yield drv
    try:
        drv.quit()
    except Exception:  # noqa: BLE001
        pass


@pytest.fixture
def browser(request, chromium_driver, tmp_path):
    """A Browser on the session's Chromium for this test (see the module docstring). Its base URL
    is the ui_server's when the test also uses that fixture (else set browser.base_url)."""
    base = ""
    if "ui_server" in request.fixturenames:
        base = request.getfixturevalue("ui_server").srv.url("")
    b = Browser(chromium_driver, base, tmp_path)
    b.reset_logs()
    b.width = None
    return b


# ---- the server with data ---------------------------------------------------------------------

STEP_S = 300  # one push per series every 5 min
POINTS = 12   # over the last hour
INSTANCES = {  # instance -> (job, CPU fixtures it pushes in turn)
    "a:6060": ("api", ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz"]),
    "b:6060": ("api", ["go/cpu-04.pb.gz", "go/cpu-05.pb.gz"]),
    "c:6060": ("worker", ["go/cpu-seed2-01.pb.gz"]),
}
HEAP_INSTANCE = "a:6060"  # also pushes go/heap-01.pb.gz and go/goroutine-01.pb.gz at every point
CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
CPU_SAMPLES = "process_cpu:samples:count:cpu:nanoseconds:delta"
GOTARGET_JOB = "gotarget"



# ---- what the UI tests ask of a page --------------------------------------------------------

def state(browser) -> Dict[str, str]:
    """The page's URL query as a dict: the view's state."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(browser.driver.current_url).query))


def no_errors(browser) -> None:
    """Nothing on the console, no failed request."""
    assert browser.console_errors() == []
    assert browser.failed_requests() == []


def wait_graph(browser) -> None:
    """The Graph view has drawn its graph."""
    browser.wait_js("window.psApp && psApp.view && psApp.view.graph && psApp.view.graph.u", 15, "the graph")


def synthetic_profile(ts: int, k: int = 0) -> bytes:
    """A Go-like CPU profile: 20 x 20 x 30 leaves under main, 12,420 named nodes; values vary with k."""
    import pprof_decode as pd
    st = ["", "samples", "count", "cpu", "nanoseconds", "synth.go"]
    p = pd.Profile(string_table=st)
    p.sample_type = [pd.ValueType(1, 2), pd.ValueType(3, 4)]
    p.period_type = pd.ValueType(3, 4)
    p.period = 10_000_000
    p.time_nanos = ts * 10**9
    p.duration_nanos = 10 * 10**9
    p.mapping = [pd.Mapping(id=1, memory_start=0x400000, memory_limit=0x8000000, filename=0, has_functions=True)]

    def fn(name):
        st.append(name)
        fid = len(p.function) + 1
        p.function.append(pd.Function(id=fid, name=len(st) - 1, filename=5, start_line=1))
        p.location.append(pd.Location(id=fid, mapping_id=1, address=0x400000 + 16 * fid,
                                      line=[pd.Line(function_id=fid, line=1)]))
        return fid

    for a in range(20):
        fa = fn("github.com/synth/p%d.Run" % a)
        for b in range(20):
            fb = fn("github.com/synth/p%d/q%d.Work" % (a, b))
            for c in range(30):
                fc = fn("github.com/synth/leaf%d.Leaf_%d_%d_%d" % (c % 7, a, b, c))
                v = 1 + (a * 7919 + b * 104729 + c * 1299709 + k * 31) % 97
                p.sample.append(pd.Sample(location_id=[fc, fb, fa], value=[v, v * 10_000_000]))
    return pd.encode(p, gzip_level=1)


@dataclass
class PushedProfile:
    file: str
    ts: int  # unix seconds
    labels: Dict[str, str]  # job, instance (and version)
    series: List[dict] = field(default_factory=list)  # the push answer's series


@dataclass
class UiData:
    srv: Server
    gotarget: Optional[GoTarget]
    pushed: List[PushedProfile]
    t_first: int
    t_last: int
    instances: Dict[str, Tuple[str, List[str]]]

    def selector(self, **labels) -> str:
        return "{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}"

    def pushes(self, file_prefix: str = "go/cpu", **labels) -> List[PushedProfile]:
        return [p for p in self.pushed if p.file.startswith(file_prefix)
                and all(p.labels.get(k) == v for k, v in labels.items())]

    def types(self) -> List[str]:
        js = self.srv.get_json("/api/v1/profiles/types")
        return sorted(t["id"] for t in js["data"])

    def query_json(self, path: str, **params) -> dict:
        return self.srv.get_json(path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))

    @staticmethod
    def start(workdir: Path, scrape: bool = True, end: Optional[int] = None, extra_jobs: str = "") -> "UiData":
        """A server in workdir with the pushes of the module docstring (the last at `end`, default
        the current minute less 1), scraping a gotarget when scrape (and go is there); extra_jobs:
        more scrape_configs entries (YAML, indented as config_text's jobs)."""
        workdir = Path(workdir)
        g = None
        flags = {}
        if scrape and shutil.which("go"):
            g = GoTarget(workdir / "gotarget", seed=1).start()
            cfg = workdir / "ui.yml"
            cfg.write_text(config_text("5s", "5s", jobs=(
                "  - job_name: %s\n"
                "    static_configs: [{targets: ['%s'], labels: {env: 'test'}}]\n" % (GOTARGET_JOB, g.address))
                + extra_jobs))
            flags["config"] = str(cfg)
        srv = Server(workdir / "srv", **flags)
        srv.start()
        end = end if end is not None else (int(time.time()) // 60) * 60 - 60
        pushed = push_fixtures(srv, end)
        data = UiData(srv, g, pushed, pushed[0].ts, end, INSTANCES)
        if g is not None:
            # every profile type of a Go target stored (the delta ones need two scrapes), so what the
            # tests read of the labels and types does not change under them any more
            want = {t for ts in SCRAPED_TYPES.values() for t in ts if not t.startswith("threadcreate")}
            q = "/api/v1/label/__name__/values?" + urllib.parse.urlencode({"match[]": '{job="%s"}' % GOTARGET_JOB})
            wait_for(lambda: want <= set(srv.get_json(q)["data"]), 40, "every profile type of gotarget stored")
        return data

    def stop(self) -> None:
        self.srv.kill()
        if self.gotarget is not None:
            self.gotarget.kill()


def push_fixtures(srv: Server, end: int) -> List[PushedProfile]:
    """Pushes POINTS profiles per instance, STEP_S apart, the last at `end` (unix s), in time order."""
    pushed = []
    for k in range(POINTS):
        ts = end - (POINTS - 1 - k) * STEP_S
        for inst, (job, files) in INSTANCES.items():
            labels = {"job": job, "instance": inst, "version": "v1" if k < POINTS // 2 else "v2"}
            todo = [files[k % len(files)]]
            if inst == HEAP_INSTANCE:
                todo += ["go/heap-01.pb.gz", "go/goroutine-01.pb.gz"]
            for f in todo:
                q = urllib.parse.urlencode({"time": str(ts), "labels": ",".join('%s="%s"' % kv for kv in labels.items())},
                                           quote_via=urllib.parse.quote)
                st, js = srv.push(fixture_bytes(f), query=q)
                assert st == 200, (f, ts, st, srv.last_raw[:300])
                pushed.append(PushedProfile(f, ts, dict(labels), js["data"]["series"]))
    return pushed


@contextlib.contextmanager
def ui_data(workdir: Path, **kw):
    """UiData.start(workdir, **kw) for a with block; its log goes into a failing test's report."""
    from conftest import _active_servers
    d = UiData.start(workdir, **kw)
    _active_servers.append(d.srv)
    try:
        yield d
    finally:
        d.stop()
        if d.srv in _active_servers:
            _active_servers.remove(d.srv)


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory):
    with ui_data(tmp_path_factory.mktemp("ui")) as d:
        yield d
