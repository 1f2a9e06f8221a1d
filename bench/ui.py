#!/usr/bin/env python3
"""bench/ui.py - the web UI in headless Chromium (the browser harness of tests/integration/ui_util.py),
against a real profstore holding 24 h of a synthetic CPU profile whose call tree has 12,420 nodes
(one profile every 5 min: 288; the last hour is 12 of them). Prints, never asserts:

  - time to first flame graph: the app page (/graph with type, selector and range in its URL, as a
    shared link opens it), from the start of the navigation to the flame graph drawn on its canvas
    (performance.now() in the page), for the 1 h and the 24 h merge (max_nodes=8192, the app's);
  - flame-graph draw time of those merges (8,192 nodes kept, the rest merged into "other"), measured
    in the page with performance.now() around FlameGraph's draw: the first draw (setData), the median
    and max of 20 redraws, the same with the canvas rasterised (a pixel read waits for it), and the
    cost of one mousemove over the graph (hover);
  - the time of the flame graph request itself (fetch + JSON parse in the page) for each merge;
  - the heatmap of individual profiles (web/ui/js/heatmap.js) of 7 d x 100 series (a second server:
    one CPU fixture profile per series every 30 min, 33,600 profiles): Heatmap.load in the page
    (SelectHeatmap request, JSON parse, canvas draw) and the app's /graph?hm=1 from navigation start
    to the heatmap drawn.
  - focus/ignore recomputation of the 24 h merge: what the panel asks when a filter is set from a
    frame's menu (with focus= or ignore= on one function), from the requests' start to the answers
    parsed, beside the same requests without a filter (median of 5 each, alternating), both ways:
    format=flamegraph and format=top together (two merges, as panel.js asked before) and
    format=flamegraph&top=500 (one merge, as it asks now); the answers must be equal;
  - on the heatmap's server, time to the first flame graph of its 7 d (the app's /graph link).
Targets: a draw under 200 ms; the 7 d heatmap under 300 ms; focus/ignore recomputation for 24 h under 200 ms.

    bench/ui.py [--profstore BUILD/profstore] [--redraws 20] [--keep]

Needs Debian's chromium, chromium-driver and python3-selenium (scripts/install-deps.sh); without them
it says so and exits 0 (bench/run.sh goes on).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import bench_env  # noqa: F401  (tests/integration on sys.path, PROFSTORE_BIN)

CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
STEP = 300
POINTS_24H = 288
MAX_NODES = 8192
JOB = "bench"
VARIANTS = 4  # distinct value sets (encoding one takes a while in Python); time= sets each push's time


def push_day(srv, end: int) -> float:
    """POINTS_24H profiles STEP apart, the last at end; returns the seconds it took."""
    t0 = time.monotonic()
    from ui_util import synthetic_profile
    bodies = [synthetic_profile(end, k) for k in range(VARIANTS)]
    labels = 'job="%s",instance="synth:1"' % JOB
    for k in range(POINTS_24H):
        ts = end - (POINTS_24H - 1 - k) * STEP
        q = urllib.parse.urlencode({"time": str(ts), "labels": labels}, quote_via=urllib.parse.quote)
        st, _ = srv.push(bodies[k % VARIANTS], query=q)
        if st != 200:
            raise SystemExit("push %d: %d %r" % (k, st, srv.last_raw[:300]))
    return time.monotonic() - t0


# a page-independent measurement: FlameGraph (web/ui/js/flame.js) in a bare container
DRAW_JS = """
const [query, start, end, maxNodes, redraws, done] = arguments;
(async () => {
  const { FlameGraph } = await import('/ui/js/flame.js');
  document.body.replaceChildren();
  const box = document.createElement('div');
  box.style.width = '1240px';
  document.body.append(box);
  const q = new URLSearchParams({ query, start, end, format: 'flamegraph', max_nodes: maxNodes });
  const t0 = performance.now();
  const res = await fetch('/api/v1/profiles/query?' + q);
  const fg = await res.json();
  const fetchMs = performance.now() - t0;
  const f = new FlameGraph(box, {});
  f.setData(fg, { unit: 'nanoseconds' });
  const first = f.lastDrawMs;
  const draws = [], raster = [];
  const ctx = f.canvas ? f.canvas.getContext('2d') : null;
  for (let k = 0; k < redraws; k++) { f.draw(); draws.push(f.lastDrawMs); }
  for (let k = 0; k < redraws; k++) {
    const t = performance.now(); f.draw(); if (ctx) ctx.getImageData(0, 0, 1, 1); raster.push(performance.now() - t);
  }
  let hover = null;
  if (f.canvas) {
    const r = f.canvas.getBoundingClientRect(), n = 300, th = performance.now();
    for (let k = 0; k < n; k++) {
      f.canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + (k * 7) % r.width,
        clientY: r.top + 9 + 18 * (k % 3), bubbles: true }));
    }
    hover = (performance.now() - th) / n;
  }
  let nodes = 0;
  for (const lv of fg.levels) nodes += lv.length / 4;
  done({ fetchMs, first, draws, raster, hover, nodes, total: fg.total, names: fg.names.length });
})().catch((e) => done({ error: String(e && e.stack || e) }));
"""

# the panel's requests with extra parameters; ms from their start to the answers parsed. one=false:
# format=flamegraph and format=top together (two merges, what panel.js asked before); one=true:
# format=flamegraph&top=500, the top table inside the flame graph answer (one merge, what it asks now)
RECOMPUTE_JS = """
const [query, start, end, maxNodes, extra, one, done] = arguments;
(async () => {
  const base = { query, start, end, ...extra };
  const q1 = new URLSearchParams({ ...base, format: 'flamegraph', max_nodes: maxNodes, ...(one ? { top: 500 } : {}) });
  const q2 = new URLSearchParams({ ...base, format: 'top', limit: 500 });
  const t0 = performance.now();
  const [fg, top] = await Promise.all([fetch('/api/v1/profiles/query?' + q1).then((r) => r.json()),
    one ? Promise.resolve(null) : fetch('/api/v1/profiles/query?' + q2).then((r) => r.json())]);
  const rows = one ? (fg.top ? fg.top.rows : null) : top.rows;
  done({ ms: performance.now() - t0, total: fg.total, rows: rows ? rows.length : -1,
         topTotal: one ? (fg.top ? fg.top.total : -1) : top.total });
})().catch((e) => done({ error: String(e && e.stack || e) }));
"""

# time to first flame graph on the app page: from navigation start to the first draw of a flame
# graph (a canvas inside FlameGraph's .flame container) after the flamegraph answer arrived, taken
# at the animation frame that follows that draw (FlameGraph draws synchronously in setData). The
# hook is installed before any script of the page runs.
FIRST_HOOK = """
window.__psFirst = null;
let answered = false, armed = false;
const origFetch = window.fetch;
window.fetch = function (input, init) {
  const url = String(input && input.url || input);
  const p = origFetch.apply(this, arguments);
  if (url.includes('/api/v1/profiles/query') && url.includes('format=flamegraph'))
    p.then((r) => { if (r.ok) answered = true; }, () => {});
  return p;
};
const origFill = CanvasRenderingContext2D.prototype.fillRect;
CanvasRenderingContext2D.prototype.fillRect = function () {
  if (answered && !armed && this.canvas && this.canvas.closest && this.canvas.closest('.flame')) {
    armed = true;
    requestAnimationFrame(() => { window.__psFirst = performance.now(); });
  }
  return origFill.apply(this, arguments);
};
"""


def app_first_flame(b, query_sel, start, end, timeout=60.0):
    """Opens the app's /graph for CPU_NS{query_sel} over [start, end] (a fresh navigation); returns
    the ms from navigation start to the first flame graph drawn."""
    url = "/graph?" + urllib.parse.urlencode({"type": CPU_NS, "sel": query_sel, "from": str(start), "to": str(end)},
                                             quote_via=urllib.parse.quote)
    b.driver.get("about:blank")
    b.open(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = b.js("return window.__psFirst")
        if r:
            return r
        time.sleep(0.02)
    raise AssertionError("no flame graph on %s after %.0fs; console: %r" % (url, timeout, b.console_errors()))


HEAT_SERIES = 100
HEAT_EVERY = 1800
HEAT_DAYS = 7
HEAT_FILES = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz"]

HEAT_JS = """
const [type, sel, start, end, runs, done] = arguments;
(async () => {
  const { Heatmap } = await import('/ui/js/heatmap.js');
  document.body.replaceChildren();
  const box = document.createElement('div');
  box.style.width = '1240px';
  document.body.append(box);
  const ms = [];
  let total = 0, cells = 0;
  for (let k = 0; k < runs; k++) {
    const hm = new Heatmap(box, {});
    const t = performance.now();
    total = await hm.load({ type, sel, start, end, sampleUnit: 'nanoseconds' });
    hm.canvas.getContext('2d').getImageData(0, 0, 1, 1);
    ms.push(performance.now() - t);
    cells = hm.cells.length;
    hm.destroy();
  }
  done({ ms, total, cells });
})().catch((e) => done({ error: String(e && e.stack || e) }));
"""


def push_heat(srv, end: int) -> float:
    """HEAT_SERIES series of job "heat", one profile each every HEAT_EVERY s over HEAT_DAYS days up to
    end, in time order per series (4 connections); returns the seconds it took."""
    import http.client
    import threading
    from conftest import fixture_bytes
    bodies = [fixture_bytes(f) for f in HEAT_FILES]
    n = HEAT_DAYS * 86400 // HEAT_EVERY
    jobs = [(s, end - k * HEAT_EVERY) for k in range(n - 1, -1, -1) for s in range(HEAT_SERIES)]
    errors = []

    def worker(part):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        for i, (s, ts) in enumerate(part):
            q = urllib.parse.urlencode({"time": str(ts), "labels": 'job="heat",instance="i%03d"' % s},
                                       quote_via=urllib.parse.quote)
            c.request("POST", "/api/v1/profiles/write?" + q, body=bodies[(s + ts // HEAT_EVERY) % len(bodies)])
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                errors.append((s, ts, r.status, body[:200]))
                return
        c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(jobs[i::4],)) for i in range(4)]  # a series stays in one
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("bench/ui: heatmap push failed: %r" % errors[:3])
    return time.monotonic() - t0


def bench_heatmap(work: Path, drv) -> None:
    """The 7 d x 100 series heatmap (see the docstring), on its own server."""
    import conftest
    import ui_util
    srv = conftest.Server(work / "heat")
    srv.start()
    try:
        end = int(time.time())
        secs = push_heat(srv, end)
        n = HEAT_DAYS * 86400 // HEAT_EVERY * HEAT_SERIES
        print()
        print("heatmap of %d d x %d series (%d profiles, one per series every %d s), pushed in %.1f s:"
              % (HEAT_DAYS, HEAT_SERIES, n, HEAT_EVERY, secs))
        b = ui_util.Browser(drv, srv.url(""), work)
        start = end - HEAT_DAYS * 86400
        b.open("/-/healthy")
        b.js_async(HEAT_JS, CPU_NS, 'job="heat"', start, end, 1)  # warm up
        r = b.js_async(HEAT_JS, CPU_NS, 'job="heat"', start, end, 7)
        if "error" in r:
            raise SystemExit("bench/ui: the heatmap failed: %s" % r["error"])
        if r["total"] != n:
            raise SystemExit("bench/ui: the heatmap counted %d profiles, not %d" % (r["total"], n))
        print("  Heatmap.load (request + parse + draw, %d cells): median %.1f ms, max %.1f ms of %d (target < 300 ms)"
              % (r["cells"], statistics.median(r["ms"]), max(r["ms"]), len(r["ms"])))
        url = "/graph?" + urllib.parse.urlencode({"type": CPU_NS, "sel": 'job="heat"', "from": str(start), "to": str(end),
                                                  "hm": "1"}, quote_via=urllib.parse.quote)
        runs = []
        for _ in range(3):
            b.driver.get("about:blank")
            b.open(url)
            t = b.wait_js("window.psApp && psApp.view && psApp.view.heat && psApp.view.heat.loadedAt", 60, "the heatmap")
            runs.append(t)
        flames = [app_first_flame(b, 'job="heat"', start, end) for _ in range(3)]
        print("  the app's /graph over these 7 d, navigation start -> flame graph drawn: median %.0f ms (runs %s; "
              "target < 1.5 s)" % (statistics.median(flames), ", ".join("%.0f" % x for x in flames)))
        print("  the app's /graph?hm=1 over 7 d, navigation start -> heatmap drawn (graph, flame graph and table "
              "loading beside it): median %.0f ms (runs %s)" % (statistics.median(runs), ", ".join("%.0f" % x for x in runs)))
    finally:
        srv.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profstore", default=os.environ["PROFSTORE_BIN"])
    ap.add_argument("--redraws", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    a = ap.parse_args()
    os.environ["PROFSTORE_BIN"] = a.profstore
    import conftest  # noqa: F401  (PROFSTORE_BIN is read at import)
    conftest.PROFSTORE_BIN = a.profstore
    import ui_util
    for p in (ui_util.CHROMIUM, ui_util.CHROMEDRIVER):
        if not os.path.exists(p):
            print("bench/ui: %s is not installed (scripts/install-deps.sh installs chromium, chromium-driver): skipped" % p)
            return 0
    try:
        import selenium  # noqa: F401
    except ImportError:
        print("bench/ui: python3-selenium is not installed: skipped")
        return 0

    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    srv = conftest.Server(work / "srv")
    srv.start()
    drv = None
    try:
        end = (int(time.time()) // STEP) * STEP
        secs = push_day(srv, end)
        print("data: %d synthetic CPU profiles (12,420-node call tree), one every %d s over 24 h, pushed in %.1f s"
              % (POINTS_24H, STEP, secs))
        drv = ui_util.start_chromium()
        b = ui_util.Browser(drv, srv.url(""), work)
        sel = 'job="%s"' % JOB
        q = CPU_NS + "{" + sel + "}"
        windows = [("1h", end - 3600 + 1, end), ("24h", end - 86400 + 1, end)]
        print()
        print("flame graph draw (FlameGraph in a 1240 px container, max_nodes=%d, %d redraws):" % (MAX_NODES, a.redraws))
        print("  %-4s %9s %7s %10s %10s %9s %14s %14s %10s" % ("", "profiles", "nodes", "request", "first", "median",
                                                              "max", "rasterised", "hover"))
        b.open("/-/healthy")  # warm up: the first query of a fresh server reads its pages from disk
        b.js_async(DRAW_JS, q, str(windows[-1][1]), str(windows[-1][2]), str(MAX_NODES), 1)
        for name, start, stop in windows:
            b.open("/-/healthy")
            r = b.js_async(DRAW_JS, q, str(start), str(stop), str(MAX_NODES), a.redraws)
            if "error" in r:
                raise SystemExit("bench/ui: the page failed: %s" % r["error"])
            nprof = (stop - start) // STEP + 1
            print("  %-4s %9d %7d %8.1f ms %7.1f ms %6.1f ms %11.1f ms %8.1f ms %7.3f ms"
                  % (name, nprof, r["nodes"], r["fetchMs"], r["first"], statistics.median(r["draws"]), max(r["draws"]),
                     statistics.median(r["raster"]), r["hover"] or 0.0, ))
        print("  (nodes: the %d kept and the \"other\" ones; request: fetch + JSON parse of format=flamegraph;\n"
              "   first: setData, decoding included; median/max: draw() alone; rasterised: draw() + a pixel read;\n"
              "   hover: one mousemove; target: draw < 200 ms)" % MAX_NODES)
        print()
        name, start, stop = windows[-1]
        focus_fn = "^github\\.com/synth/p3/q4\\.Work$"
        cases = [("none", {}), ("focus", {"focus": focus_fn}), ("ignore", {"ignore": focus_fn})]
        ways = [("two", False), ("one", True)]
        runs = {(c, w): [] for c, _ in cases for w, _ in ways}
        totals = {}
        for _ in range(5):
            for c, extra in cases:
                for w, one in ways:
                    r = b.js_async(RECOMPUTE_JS, q, str(start), str(stop), str(MAX_NODES), extra, one)
                    if "error" in r:
                        raise SystemExit("bench/ui: the page failed: %s" % r["error"])
                    runs[(c, w)].append(r["ms"])
                    got = (r["total"], r["rows"], r["topTotal"])
                    if totals.setdefault(c, got) != got:
                        raise SystemExit("bench/ui: %s: the %s-request answer %r differs from %r" % (c, w, got, totals[c]))
        print("focus/ignore recomputation, %s, median of 5 (two: format=flamegraph and format=top together, as"
              " panel.js asked before; one: format=flamegraph&top=500, as it asks now):" % name)
        for c, extra in cases:
            for w, _ in ways:
                print("  %-6s %-3s %7.1f ms (runs %s; flame graph total %d, %d top rows)%s"
                      % (c, w, statistics.median(runs[(c, w)]), ", ".join("%.0f" % x for x in runs[(c, w)]), totals[c][0],
                         totals[c][1], "  %s=%s" % (c, focus_fn) if extra else ""))
        print("  (target: focus/ignore < 200 ms)")
        print()
        print("time to first flame graph (the app's /graph link, navigation start -> flame graph drawn):")
        if srv.get("/ui/js/main.js")[0] != 200:
            print("  skipped: this build has no app page (web/ui/js/main.js)")
            return 0
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_HOOK})
        for name, start, stop in windows:
            runs = []
            for _ in range(3):
                runs.append(app_first_flame(b, sel, start, stop))
            print("  %-4s %7.0f ms (median of 3; runs %s)" % (name, statistics.median(runs),
                                                               ", ".join("%.0f" % x for x in runs)))
        errs = b.console_errors()
        if errs:
            print("console errors: %r" % errs[:5])
        bench_heatmap(work, drv)
    finally:
        if drv is not None:
            drv.quit()
        srv.kill()
        if not a.keep:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
