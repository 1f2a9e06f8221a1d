"""The UI's time bar, time zone, units, legend and theme (issue 26 items 1, 4 and 8: web/ui/js/time.js,
query.js, graph.js, settings.js) in headless Chromium against a real server holding the ui_server
fixture's pushes (ui_util.py: instances a, b of job api and c of job worker, a CPU profile each every
5 min over an hour, heap and goroutines of a; a scraped gotarget).

Expected values come from the fixtures (README totals), from Python's own calendar arithmetic and
from the server's HTTP answers, never from the page."""

import calendar
import datetime as dt
import time
import urllib.parse

import pytest

from conftest import README_TOTALS, fixture_bytes
from ui_util import CPU_NS, browser, chromium_driver, ui_server  # noqa: F401 (fixtures)
from ui_util import no_errors, state, wait_graph

PRESETS = ["5m", "15m", "30m", "1h", "3h", "6h", "12h", "24h", "2d", "7d", "30d"]
KOLKATA = dt.timezone(dt.timedelta(hours=5, minutes=30))  # UTC+5:30: no DST, not the machine's zone
HEAP = "memory:inuse_space:bytes:space:bytes"
EVIL = "<img src=x onerror=window.__pwned=1>"


def url(path, **params):
    return "%s?%s" % (path, urllib.parse.urlencode(params, quote_via=urllib.parse.quote))


def wait_url(browser, **want):
    cond = " && ".join("new URLSearchParams(location.search).get(%r) === %s" % (k, "null" if v is None else repr(str(v)))
                       for k, v in want.items())
    browser.wait_js(cond, 10, "the URL to hold %r" % want)


def utc_text(sec, seconds=True):
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.gmtime(sec))


def zoned(sec, tz):
    return dt.datetime.fromtimestamp(sec, tz)


def tick_texts(splits, tz):
    """What the time axis must say at these ticks (time.js fmtTick, 24-hour)."""
    incr = splits[1] - splits[0]
    out = []
    for i, t in enumerate(splits):
        d = zoned(t, tz)
        day = d.strftime("%m-%d")
        if incr >= 86400:
            out.append(day)
            continue
        hm = d.strftime("%H:%M:%S" if incr < 60 else "%H:%M")
        out.append(hm + "\n" + day if i == 0 or zoned(splits[i - 1], tz).day != d.day else hm)
    return out


@pytest.fixture
def kolkata(browser):
    """The browser's own zone is UTC+5:30 for the test (so "local" and UTC differ)."""
    browser.driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Kolkata"})
    try:
        yield
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})
        browser.js("try { localStorage.clear(); } catch (e) {}")


def test_parsing_like_grafana(ui_server, browser, kolkata):
    """time.js's date math and absolute times, against Python's calendar, in UTC and in UTC+5:30."""
    browser.open(url("/graph", type=CPU_NS))
    wait_graph(browser)
    now = calendar.timegm((2026, 12, 5, 11, 47, 23))  # a Saturday
    got = browser.js_async("""
        const done = arguments[arguments.length - 1];
        import('/ui/js/time.js').then((t) => {
          const now = arguments[0], out = {};
          for (const z of ['utc', 'local']) for (const [k, up] of arguments[1]) out[z + '|' + k + '|' + up] = t.parseTime(k, {now, z, roundUp: up});
          out.zoomRel = t.zoomOut({start: Math.floor(now) - 3600, end: Math.floor(now), relative: true}, '', now);
          out.zoomAbs = t.zoomOut({start: now - 7200, end: now - 3600, relative: false}, 'b', now);
          out.zoomOdd = t.zoomOut({start: now - 2700, end: now, relative: true}, '', now);
          out.left = t.shift({start: now - 7200, end: now - 3600, relative: false}, -1, '', now);
          out.right = t.shift({start: now - 7200, end: now - 3600, relative: false}, 1, '', now);
          out.rightPast = t.shift({start: now - 2400, end: now - 600, relative: false}, 1, 'c', now);
          done(out);
        });""", now, [[k, up] for k in ("now", "now-30m", "now-2d", "now+1h", "now/d", "now-1d/d", "now/w", "now-1M",
                                       "2026-12-01 14:03", "2026-12-01 14:03:05", "2026-12-01", "2026-12-01T14:03:05Z",
                                       "1764597780", "1764597780000", "2026-02-30", "yesterday", "now-5x")
                     for up in (False, True)])
    day = calendar.timegm((2026, 12, 5, 0, 0, 0))
    k_day = day - 19800  # the same day in UTC+5:30 began 5 h 30 min earlier
    want = {
        "now": now, "now-30m": now - 1800, "now-2d": now - 172800, "now+1h": now + 3600,
        "2026-12-01T14:03:05Z": calendar.timegm((2026, 12, 1, 14, 3, 5)),
        "1764597780": 1764597780, "1764597780000": 1764597780,
        "2026-02-30": None, "yesterday": None, "now-5x": None,
    }
    for z, base, zday in (("utc", 0, day), ("local", -19800, k_day)):
        for up in (False, True):
            w = dict(want)
            w["now/d"] = zday + (86399 if up else 0)
            w["now-1d/d"] = zday - 86400 + (86399 if up else 0)
            w["now/w"] = zday - 5 * 86400 + (7 * 86400 - 1 if up else 0)  # Monday 2026-11-30
            w["now-1M"] = calendar.timegm((2026, 11, 5, 11, 47, 23))
            w["2026-12-01 14:03"] = calendar.timegm((2026, 12, 1, 14, 3, 0)) + base
            w["2026-12-01 14:03:05"] = calendar.timegm((2026, 12, 1, 14, 3, 5)) + base
            w["2026-12-01"] = calendar.timegm((2026, 12, 1, 0, 0, 0)) + base + (86399 if up else 0)
            assert {k: got["%s|%s|%s" % (z, k, str(up).lower())] for k in w} == w, (z, up)
    assert got["zoomRel"] == {"range": None, "from": "now-2h", "to": "now"}
    assert got["zoomAbs"] == {"brange": None, "bfrom": str(now - 9000), "bto": str(now - 1800)}
    assert got["zoomOdd"] == {"range": None, "from": "now-90m", "to": "now"}
    assert got["left"] == {"range": None, "from": str(now - 9000), "to": str(now - 5400)}
    assert got["right"] == {"range": None, "from": str(now - 5400), "to": str(now - 1800)}
    assert got["rightPast"] == {"crange": "30m", "cfrom": None, "cto": None}
    no_errors(browser)


def test_time_bar_presets_typed_zoom_shift(ui_server, browser, kolkata):
    ui = ui_server
    t = sorted({p.ts for p in ui.pushes(instance="a:6060")})
    browser.open(url("/graph", type=CPU_NS, sel='instance="a:6060"', range="1h", tz="utc"))
    wait_graph(browser)
    opts = browser.js("return [...document.querySelectorAll('select.range option')].map(o => o.value);")
    assert opts == PRESETS + ["abs"]
    # a preset: the range and the URL
    from selenium.webdriver.support.ui import Select
    Select(browser.wait_for("select.range")).select_by_value("3h")
    wait_url(browser, range="3h")
    a, b = browser.wait_js("psApp.view.graph.u && psApp.view.graph.range[1] - psApp.view.graph.range[0] === 10800"
                           " && psApp.view.graph.range", 10, "3 h")
    assert abs(b - time.time()) < 30
    # "from – to…" starts from the preset as date math; typed relative times go into the URL as typed
    Select(browser.wait_for("select.range")).select_by_value("abs")
    fr, to = browser.wait_for("input.from"), browser.wait_for("input.to")
    assert (fr.get_attribute("value"), to.get_attribute("value")) == ("now-3h", "now")
    assert browser.js("return document.activeElement.classList.contains('from');") is True
    from selenium.webdriver.common.keys import Keys
    fr.clear()
    fr.send_keys("now-30m", Keys.ENTER)
    wait_url(browser, range=None, **{"from": "now-30m", "to": "now"})
    browser.wait_js("psApp.view.graph.range && psApp.view.graph.range[1] - psApp.view.graph.range[0] === 1800", 10)
    # absolute times, typed in the zone shown (UTC here): every push of a in the range, exactly
    fr.clear()
    fr.send_keys(utc_text(t[0] - 60))
    to.clear()
    to.send_keys(utc_text(t[-1] + 60), Keys.ENTER)
    wait_url(browser, **{"from": t[0] - 60, "to": t[-1] + 60})
    browser.wait_js("psApp.view.graph.range[0] === %d && psApp.view.graph.u" % (t[0] - 60), 10)
    data = browser.js("return psApp.view.graph.u.data;")
    pts = sorted((x, round(v * 1e9)) for s in data[1:] for x, v in zip(data[0], s) if v is not None)
    assert pts == sorted((p.ts, README_TOTALS[p.file][1]) for p in ui.pushes(instance="a:6060"))
    # the inputs show an absolute range in the zone, to the minute when it has no seconds
    assert fr.get_attribute("value") == utc_text(t[0] - 60, seconds=False)
    # zoom out: twice as long around the middle; shift: half a range earlier, later
    browser.open(url("/graph", type=CPU_NS, sel='instance="a:6060"', tz="utc", **{"from": t[0], "to": t[4]}))
    wait_graph(browser)
    browser.wait_for("button.zoomout").click()
    span = t[4] - t[0]
    wait_url(browser, **{"from": t[0] - span // 2, "to": t[4] + span // 2})
    assert browser.wait_js("psApp.view.graph.range[0] === %d && psApp.view.graph.range" % (t[0] - span // 2), 10) == \
        [t[0] - span // 2, t[4] + span // 2]
    browser.wait_for("button.earlier").click()
    wait_url(browser, **{"from": t[0] - 3 * span // 2, "to": t[4] - span // 2})
    # by keyboard: Tab from "earlier" to "zoom out" to "later", Enter presses it
    browser.js("document.querySelector('button.earlier').focus();")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).send_keys(Keys.TAB, Keys.TAB, Keys.ENTER).perform()
    wait_url(browser, **{"from": t[0] - span // 2, "to": t[4] + span // 2})
    browser.wait_js("psApp.view.graph.range[0] === %d" % (t[0] - span // 2), 10)
    # later, past now: the same length ending now (a range that moves)
    browser.open(url("/graph", type=CPU_NS, tz="utc", **{"from": t[-1] - 1800, "to": t[-1]}))
    wait_graph(browser)
    browser.wait_for("button.later").click()
    wait_url(browser, range="30m", **{"from": None, "to": None})
    assert Select(browser.wait_for("select.range")).first_selected_option.get_attribute("value") == "30m"
    # not a time: said next to the inputs, the URL and the graph stay
    browser.open(url("/graph", type=CPU_NS, tz="utc", **{"from": "now-1h", "to": "now"}))
    wait_graph(browser)
    before = browser.driver.current_url
    fr = browser.wait_for("input.from")
    fr.clear()
    fr.send_keys("yesterday", Keys.ENTER)
    assert browser.wait_for(".timeerr").text == '"yesterday" is not a time: now-30m, now, 2026-12-01 14:03'
    assert fr.get_attribute("aria-invalid") == "true"
    fr.clear()
    fr.send_keys("now+1h", Keys.ENTER)
    assert browser.wait_js("document.querySelector('.timeerr').textContent", 5) == "to must be after from"
    assert browser.driver.current_url == before
    no_errors(browser)


def test_one_time_zone_for_axis_selection_legend_and_inputs(ui_server, browser, kolkata):
    ui = ui_server
    t = sorted({p.ts for p in ui.pushes(instance="a:6060")})
    params = {"type": CPU_NS, "sel": 'instance="a:6060"', "from": t[0] - 60, "to": t[-1] + 60,
              "sfrom": "%.3f" % t[2], "sto": "%.3f" % t[5]}
    browser.open(url("/graph", tz="utc", **params))
    wait_graph(browser)
    splits = browser.wait_js("psApp.view.graph.u.axes[0]._splits", 10)
    assert browser.js("return psApp.view.graph.u.axes[0]._values;") == tick_texts(splits, dt.timezone.utc)
    sel = "Selection: %s UTC – %s UTC merged" % (utc_text(t[2]), utc_text(t[5]))
    assert browser.wait_for(".selinfo span").text == sel
    assert browser.js("return psApp.view.graph.u.series[0].value(psApp.view.graph.u, arguments[0]);", t[3]) == \
        utc_text(t[3]) + " UTC"
    assert browser.wait_for("input.from").get_attribute("value") == utc_text(t[0] - 60, seconds=False)
    # the picker: local (the browser's UTC+5:30), into the URL and localStorage; everything follows
    from selenium.webdriver.support.ui import Select
    tzsel = Select(browser.wait_for("select#tz"))
    assert [o.text for o in tzsel.options] == ["local time (UTC+5:30)", "UTC"]
    assert tzsel.first_selected_option.get_attribute("value") == "utc"
    tzsel.select_by_value("local")
    wait_url(browser, tz="local")
    assert browser.js("return localStorage.getItem('ps.tz');") == "local"
    browser.wait_js("psApp.view.graph.u.axes[0]._values[0] !== arguments[0]".replace("arguments[0]", repr(tick_texts(splits, dt.timezone.utc)[0])), 10)
    splits = browser.js("return psApp.view.graph.u.axes[0]._splits;")
    assert browser.js("return psApp.view.graph.u.axes[0]._values;") == tick_texts(splits, KOLKATA)
    kt = lambda s: zoned(s, KOLKATA).strftime("%Y-%m-%d %H:%M:%S") + " UTC+5:30"  # noqa: E731
    assert browser.wait_for(".selinfo span").text == "Selection: %s – %s merged" % (kt(t[2]), kt(t[5]))
    assert browser.js("return psApp.view.graph.u.series[0].value(psApp.view.graph.u, arguments[0]);", t[3]) == kt(t[3])
    assert browser.wait_for("input.from").get_attribute("value") == zoned(t[0] - 60, KOLKATA).strftime("%Y-%m-%d %H:%M")
    # a time typed now is read in UTC+5:30
    from selenium.webdriver.common.keys import Keys
    fr = browser.wait_for("input.from")
    fr.clear()
    fr.send_keys(zoned(t[1], KOLKATA).strftime("%Y-%m-%d %H:%M:%S"), Keys.ENTER)
    wait_url(browser, **{"from": t[1]})
    # a link's tz holds on the views it leads to (the nav links do not carry it)
    browser.js("localStorage.clear();")
    browser.open(url("/graph", tz="utc", **params))
    wait_graph(browser)
    browser.wait_for('nav a[data-view="compare"]').click()
    browser.wait_js("location.pathname === '/compare' && !new URLSearchParams(location.search).get('tz')", 10)
    assert Select(browser.wait_for("select#tz")).first_selected_option.get_attribute("value") == "utc"
    browser.js("localStorage.setItem('ps.tz', 'local');")
    # without tz in the URL the last pick (localStorage) holds: a new page of another view
    browser.open(url("/compare", type=CPU_NS, bfrom=t[0], bto=t[5], cfrom=t[6], cto=t[-1]))
    browser.wait_js("!!(psApp.view && psApp.view.bs && psApp.view.bs.graph.u)", 15)
    assert Select(browser.wait_for("select#tz")).first_selected_option.get_attribute("value") == "local"
    assert browser.wait_for("input.from").get_attribute("value") == zoned(t[0], KOLKATA).strftime("%Y-%m-%d %H:%M")
    no_errors(browser)


def test_auto_refresh_moves_a_relative_range(ui_server, browser):
    srv = ui_server.srv
    first = int(time.time()) - 20
    labels = 'job="live",instance="l:1"'

    def push(ts, f):
        st, _ = srv.push(fixture_bytes(f), query=urllib.parse.urlencode({"time": str(ts), "labels": labels}))
        assert st == 200

    push(first, "go/cpu-01.pb.gz")
    browser.open(url("/graph", type=CPU_NS, sel='job="live"', range="5m", refresh="10s"))
    wait_graph(browser)
    from selenium.webdriver.support.ui import Select
    assert Select(browser.wait_for("select.autorefresh")).first_selected_option.text == "every 10s"
    a0, b0 = browser.js("return psApp.view.graph.range;")
    assert b0 - a0 == 300
    assert browser.js("return psApp.view.graph.u.data[0];") == [first]
    assert [round(v * 1e9) for v in browser.js("return psApp.view.graph.u.data[1];")] == [2980000000]
    second = int(time.time())
    push(second, "go/cpu-02.pb.gz")
    # the next tick (10 s) asks for the last 5 minutes up to its own now: the new profile is on it
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.data[0].length === 2", 25, "the refreshed graph")
    a1, b1 = browser.js("return psApp.view.graph.range;")
    assert b1 - a1 == 300 and b1 >= second and b1 > b0
    assert browser.js("return psApp.view.graph.u.data[0];") == [first, second]
    assert [round(v * 1e9) for v in browser.js("return psApp.view.graph.u.data[1];")] == [2980000000, 2930000000]
    browser.wait_js("psApp.view.panel.fg && psApp.view.panel.totalEl.dataset.total === '%d'" % (2980000000 + 2930000000),
                    15, "the merged profile of both")
    # off: the select clears the key
    Select(browser.wait_for("select.autorefresh")).select_by_value("")
    wait_url(browser, refresh=None)
    # Compare has it too (in the baseline's bar): both sides' last 5 minutes move
    browser.open(url("/compare", type=CPU_NS, bsel='job="live"', csel='job="live"', brange="5m", crange="5m", refresh="10s"))
    browser.wait_js("!!(psApp.view && psApp.view.rb && psApp.view.bs.graph.u)", 15)
    assert [Select(s).first_selected_option.text for s in browser.find_all("select.autorefresh")] == ["every 10s"]
    b0, c0 = browser.js("return [psApp.view.rb.end, psApp.view.rc.end];")
    browser.wait_js("psApp.view.rb.end > %d && psApp.view.rc.end > %d" % (b0, c0), 25, "the refreshed compare view")
    assert browser.js("return [psApp.view.rb.end - psApp.view.rb.start, psApp.view.rc.end - psApp.view.rc.start];") == [300, 300]
    no_errors(browser)


def test_units_cores_bytes_and_legend_of_differing_labels(ui_server, browser):
    ui = ui_server
    a, b = ui.t_first - 60, ui.t_last + 60
    rng = {"from": a, "to": b}
    browser.open(url("/graph", type=CPU_NS, sel='job="api"', **rng))
    wait_graph(browser)
    # the legend: only the labels that differ; the shared one once above it
    rows = browser.js("return [...document.querySelectorAll('.graph .u-legend .u-series .u-label')].slice(1).map(e => e.textContent);")
    series = sorted({(p.labels["instance"], p.labels["version"]) for p in ui.pushes(job="api")})
    assert sorted(rows) == sorted('{instance="%s", version="%s"}' % s for s in series)
    assert browser.wait_for(".legend-common").text == 'every series: {job="api"}'
    # one series: all its labels
    browser.open(url("/graph", type=CPU_NS, sel='instance="c:6060", version="v1"', **rng))
    wait_graph(browser)
    assert browser.js("return [...document.querySelectorAll('.graph .u-legend .u-label')].slice(1).map(e => e.textContent);") == \
        ['{instance="c:6060", job="worker", version="v1"}']
    assert browser.js("return document.querySelector('.legend-common').textContent;") == ""
    # CPU as cores: each step's CPU seconds per second of the step (15 s here: 3420 s / 240 points)
    browser.open(url("/graph", type=CPU_NS, sel='instance="a:6060"', **rng))
    wait_graph(browser)
    assert browser.js("return psApp.view.graph.u.axes[1].label;") == "seconds"
    browser.wait_for('button.unit[data-unit="cores"]').click()
    wait_url(browser, cpu="cores")
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.axes[1].label === 'cores'", 10, "cores")
    assert browser.js("return psApp.view.graph.step;") == 15
    data = browser.js("return psApp.view.graph.u.data;")
    pts = sorted((x, round(v * 15 * 1e9)) for s in data[1:] for x, v in zip(data[0], s) if v is not None and v != 0)
    assert pts == sorted((p.ts, README_TOTALS[p.file][1]) for p in ui.pushes(instance="a:6060"))
    p0 = ui.pushes(instance="a:6060")[0]
    k = next(i for i, s in enumerate(data[1:]) if s[data[0].index(p0.ts)])
    assert browser.js("return psApp.view.graph.u.series[arguments[0]].value(psApp.view.graph.u, psApp.view.graph.u.data[arguments[0]][arguments[1]]);",
                      k + 1, data[0].index(p0.ts)) == "%.3g cores" % (README_TOTALS[p0.file][1] / 15e9)
    assert browser.js("return document.querySelector('button.unit[data-unit=cores]').getAttribute('aria-checked');") == "true"
    browser.wait_for('button.unit[data-unit="seconds"]').click()
    wait_url(browser, cpu=None)
    browser.wait_js("psApp.view.graph.u && psApp.view.graph.u.axes[1].label === 'seconds'", 10)
    # bytes with a binary prefix (the largest value: 1,048,832 B of in-use heap = 1.0002 MiB); no CPU switch
    browser.open(url("/graph", type=HEAP, sel='job="api"', **rng))
    wait_graph(browser)
    assert browser.js("return psApp.view.graph.u.axes[1].label;") == "bytes (MiB)"
    assert browser.js("return document.querySelector('.units').hidden;") is True
    data = browser.js("return psApp.view.graph.u.data;")
    vals = {round(v * 1048576) for s in data[1:] for v in s if v is not None}
    assert vals == {README_TOTALS["go/heap-01.pb.gz"][3]}
    assert browser.js("return psApp.view.graph.u.series[1].value(psApp.view.graph.u, arguments[0]);", 1048832 / 1048576) == "1.00 MiB"
    # counts as counts
    browser.open(url("/graph", type="goroutine:goroutine:count:goroutine:count", sel='job="api"', **rng))
    wait_graph(browser)
    assert browser.js("return psApp.view.graph.u.axes[1].label;") == "count"
    assert browser.js("return psApp.view.graph.u.series[1].value(psApp.view.graph.u, 26);") == "26"
    # "per interval" instead of a Greek letter in the picker
    assert browser.js("return document.querySelector('select.type option[value=\"%s\"]').textContent;" % CPU_NS) == \
        "process_cpu — cpu (nanoseconds) per interval"
    no_errors(browser)


def test_hostile_label_values_in_the_legend_are_text(ui_server, browser):
    srv = ui_server.srv
    ts = ui_server.t_last - 30
    for inst in ("e:1", "e:2"):
        lab = 'job="evil",instance="%s",evil="%s",team="%s"' % (inst, EVIL if inst == "e:1" else EVIL + "2", EVIL)
        st, _ = srv.push(fixture_bytes("go/cpu-01.pb.gz"), query=urllib.parse.urlencode({"time": str(ts), "labels": lab}))
        assert st == 200
    browser.open(url("/graph", type=CPU_NS, sel='job="evil"', **{"from": ts - 60, "to": ts + 60}))
    wait_graph(browser)
    rows = browser.js("return [...document.querySelectorAll('.graph .u-legend .u-label')].slice(1).map(e => e.textContent);")
    assert sorted(rows) == sorted(['{evil="%s", instance="e:1"}' % EVIL, '{evil="%s2", instance="e:2"}' % EVIL])
    assert browser.wait_for(".legend-common").text == 'every series: {job="evil", team="%s"}' % EVIL
    assert browser.js("return !window.__pwned && document.querySelectorAll('img, [onerror]').length === 0;") is True
    no_errors(browser)


def test_theme_picker_overrides_the_system(ui_server, browser):
    from selenium.webdriver.support.ui import Select
    browser.open(url("/graph", type=CPU_NS))
    wait_graph(browser)
    bg = "return getComputedStyle(document.body).backgroundColor;"
    assert browser.js(bg) == "rgb(255, 255, 255)"
    th = Select(browser.wait_for("select#theme"))
    assert [o.get_attribute("value") for o in th.options] == ["system", "light", "dark"]
    th.select_by_value("dark")
    assert browser.js(bg) == "rgb(13, 17, 23)"
    assert browser.js("return document.documentElement.dataset.theme;") == "dark"
    # the graph's axes drawn again in the dark theme's colour
    browser.wait_js("psApp.view.graph.u.axes[0].stroke(psApp.view.graph.u) === '#e6edf3'", 10, "the axis redrawn")
    browser.open(url("/graph", type=CPU_NS))  # kept (localStorage)
    wait_graph(browser)
    assert browser.js(bg) == "rgb(13, 17, 23)"
    # light while the system is dark; system follows it again
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        Select(browser.wait_for("select#theme")).select_by_value("light")
        assert browser.js(bg) == "rgb(255, 255, 255)"
        Select(browser.wait_for("select#theme")).select_by_value("system")
        assert browser.js(bg) == "rgb(13, 17, 23)"
        assert browser.js("return localStorage.getItem('ps.theme');") is None
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        browser.js("localStorage.clear();")
    no_errors(browser)


@pytest.mark.parametrize("width", [1280, 800])
def test_time_bar_layout_and_screenshots(ui_server, browser, width):
    """The Graph view with the time bar, UTC, CPU as cores: nothing wider than the window; the 1280 px
    shots are docs/ui-graph.png and docs/ui-graph-dark.png (PS_UI_SCREENSHOTS=docs)."""
    ui = ui_server
    t = sorted({p.ts for p in ui.pushes(job="api")})
    p = {"type": CPU_NS, "sel": 'job="api"', "from": "now-90m", "to": "now", "tz": "utc",
         "sfrom": "%.3f" % ((t[1] + t[2]) / 2), "sto": "%.3f" % ((t[6] + t[7]) / 2), "refresh": "1m"}
    browser.open(url("/graph", **p), width=width)
    wait_graph(browser)
    browser.wait_js("psApp.view.panel.fg && !psApp.view.panel.el.classList.contains('busy')", 15)
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser.driver).move_to_element(browser.wait_for("header.top .brand")).perform()
    assert browser.js("return document.documentElement.scrollWidth <= window.innerWidth;")
    browser.screenshot("ui-graph" if width == 1280 else "ui-graph-800")
    if width == 1280:
        from selenium.webdriver.support.ui import Select
        Select(browser.wait_for("select#theme")).select_by_value("dark")
        try:
            browser.wait_js("getComputedStyle(document.body).backgroundColor === 'rgb(13, 17, 23)'", 5)
            ActionChains(browser.driver).move_to_element(browser.wait_for("header.top .brand")).perform()
            browser.screenshot("ui-graph-dark")
        finally:
            browser.js("localStorage.clear();")
    # Compare with both time bars typed (from/to shown) and auto-refresh: nothing wider either
    browser.open(url("/compare", type=CPU_NS, bsel='job="api"', csel='job="api"', bfrom="now-90m", bto="now-45m",
                     cfrom=t[6], cto=t[-1], refresh="5m", tz="utc"), width=width)
    browser.wait_js("!!(psApp.view && psApp.view.diff && psApp.view.diff.fg)", 15)
    assert [i.get_attribute("value") for i in browser.find_all("input.from")] == ["now-90m", utc_text(t[6], seconds=False)]
    assert browser.js("return document.documentElement.scrollWidth <= window.innerWidth;")
    browser.screenshot("ui-compare-time-%d" % width)
    browser.js("localStorage.clear();")  # the tz=utc these links kept
    no_errors(browser)
