"""The UI's profile types, service list, empty state and selector errors (web/ui/js/types.js,
services.js, query.js, main.js) in headless Chromium, and the server's merge of profile types of
one measure that they rely on (src/query ps_query_single_type).

The store (pushed, the last push at the current minute less 1):
  service_name="checkout"  instance a: go/heap-01 (period space/bytes), go/cpu-01 and cpu-02 (delta)
                           instance b: go/heap-01 without its period type (the sample type stands in)
  service_name="frontend"  instance c: go/cpu-03 pushed with delta=false (cumulative), go/goroutine-01
  job="batch"              go/cpu-04 (no service_name)
Expected values come from the fixtures' README totals and the server's HTTP answers."""

import json
import time
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import README_TOTALS, fixture_bytes
from ui_util import browser, chromium_driver  # noqa: F401 (fixtures)
from ui_util import no_errors, state, wait_graph

INUSE = "memory:inuse_space:bytes:space:bytes"
INUSE_NOPERIOD = "memory:inuse_space:bytes:inuse_space:bytes"
ALLOC = "memory:alloc_space:bytes:space:bytes"
CPU_DELTA = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
CPU_CUMUL = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
GOROUTINE = "goroutine:goroutine:count:goroutine:count"
HEAP_INUSE = README_TOTALS["go/heap-01.pb.gz"][3]  # 1,048,832 bytes

# the picker: one entry per measure, [value, text] in order (under optgroups by name)
PICKER = [
    [GOROUTINE, "goroutine — goroutine (count)"],
    ["memory:alloc_objects:count:space:bytes", "memory — alloc_objects (count)"],
    [ALLOC, "memory — alloc_space (bytes)"],
    ["memory:inuse_objects:count:space:bytes", "memory — inuse_objects (count)"],
    [INUSE, "memory — inuse_space (bytes)"],
    [CPU_CUMUL, "process_cpu — cpu (nanoseconds) cumulative"],
    [CPU_DELTA, "process_cpu — cpu (nanoseconds) per interval"],
    ["process_cpu:samples:count:cpu:nanoseconds", "process_cpu — samples (count) cumulative"],
    ["process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu — samples (count) per interval"],
]


def heap_without_period() -> bytes:
    p = pd.decode(fixture_bytes("go/heap-01.pb.gz"))
    p.period_type = None
    p.period = 0
    return pd.encode(p, gzip_level=1)


class Store:
    def __init__(self, srv, end):
        self.srv = srv
        self.end = end
        self.start = end - 900

    def push(self, body, ts, labels, **extra):
        q = {"time": str(ts), "labels": "{%s}" % ",".join('%s=%s' % (k, json.dumps(v)) for k, v in labels.items())}
        q.update(extra)
        st, js = self.srv.push(body if isinstance(body, bytes) else fixture_bytes(body),
                               query=urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
        assert st == 200, (body if isinstance(body, str) else "bytes", st, self.srv.last_raw[:300])

    def get(self, path, **params):
        return self.srv.get(path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote))

    def url(self, view="graph", **params):
        p = {"from": self.start, "to": self.end + 60}
        p.update(params)
        return self.srv.url("/%s?%s" % (view, urllib.parse.urlencode(p, quote_via=urllib.parse.quote)))


@pytest.fixture(scope="module")
def store(module_server_factory):
    srv = module_server_factory(name="uitypes")
    end = (int(time.time()) // 60) * 60 - 60
    s = Store(srv, end)
    t1, t2 = end - 300, end
    s.push("go/heap-01.pb.gz", t1, {"service_name": "checkout", "instance": "a"})
    s.push(heap_without_period(), t1, {"service_name": "checkout", "instance": "b"})
    s.push("go/cpu-01.pb.gz", t1, {"service_name": "checkout", "instance": "a"})
    s.push("go/cpu-02.pb.gz", t2, {"service_name": "checkout", "instance": "a"})
    s.push("go/cpu-03.pb.gz", t1, {"service_name": "frontend", "instance": "c"}, delta="false")
    s.push("go/goroutine-01.pb.gz", t1, {"service_name": "frontend", "instance": "c"})
    s.push("go/cpu-04.pb.gz", t1, {"job": "batch"})
    return s


def wait_panel(browser):
    browser.wait_js("psApp.view.panel.fg && !psApp.view.panel.el.classList.contains('busy')", 15, "the panel")
    return browser.js("return psApp.view.panel.totalEl.dataset;")


def services(browser):
    """[(service, [profile names])] as the list shows them, once loaded."""
    browser.wait_js("document.querySelectorAll('ul.svc-list li.svc').length > 0", 15, "the service list")
    return browser.js("return [...document.querySelectorAll('ul.svc-list li.svc')].map(li => ["
                      "li.querySelector('.svc-name').textContent,"
                      "[...li.querySelectorAll('.svc-type')].map(b => b.textContent)]);")


# ---- the server: types of one measure merge ------------------------------------------------------

def test_api_merges_types_of_one_measure(store):
    both = '{__name__=~"%s|%s", service_name="checkout"}' % (INUSE, INUSE_NOPERIOD)
    st, _, body = store.get("/api/v1/profiles/query", query=both, start=store.start, end=store.end,
                            format="flamegraph")
    assert st == 200, body
    assert json.loads(body)["total"] == 2 * HEAP_INUSE
    # the pprof is of the type with a period of its own
    st, _, body = store.get("/api/v1/profiles/query", query=both, start=store.start, end=store.end)
    assert st == 200
    p = pd.decode(body)
    assert p.type_names() == [("inuse_space", "bytes")]
    assert p.period_type_names() == ("space", "bytes")
    # each alone: one instance's heap
    for t in (INUSE, INUSE_NOPERIOD):
        st, _, body = store.get("/api/v1/profiles/query", query=t, start=store.start, end=store.end, format="flamegraph")
        assert st == 200 and json.loads(body)["total"] == HEAP_INUSE
    # a diff of one against the other: the same measure, so no error; compare - base = 0
    st, _, body = store.get("/api/v1/profiles/diff", base=INUSE, compare=INUSE_NOPERIOD, base_start=store.start,
                            base_end=store.end, compare_start=store.start, compare_end=store.end, format="top")
    assert st == 200, body
    # two measures: a precise 400
    mixed = '{__name__=~"%s|%s"}' % (INUSE, ALLOC)
    st, _, body = store.get("/api/v1/profiles/query", query=mixed, start=store.start, end=store.end, format="top")
    assert st == 400
    assert json.loads(body)["error"] == (
        "the selector matches series of 2 profile types (%s, %s); merging different types is meaningless (%s and %s "
        "are not the same measure: name, sample type, unit and delta must agree): add __name__ or a profile type to "
        "the selector" % (ALLOC, INUSE, ALLOC, INUSE))
    # delta and cumulative CPU are not one measure either
    st, _, body = store.get("/api/v1/profiles/query", query='{__name__=~"%s|%s"}' % (CPU_DELTA, CPU_CUMUL),
                            start=store.start, end=store.end, format="top")
    assert st == 400
    assert json.loads(body)["error"].startswith(
        "the selector matches series of 2 profile types (%s, %s); merging different types is meaningless (%s and %s "
        "are not the same measure" % (CPU_DELTA, CPU_CUMUL, CPU_DELTA, CPU_CUMUL))


# ---- item 4: types told apart, merged where one measure; the empty state ----------------------------

def test_picker_merges_one_measure_and_says_what_differs(store, browser):
    types = store.srv.get_json("/api/v1/profiles/types")["data"]
    assert len(types) == 13  # 4 memory types twice, 4 process_cpu types, goroutine
    browser.open(store.url(type=INUSE, sel='service_name="checkout"'))
    wait_graph(browser)
    opts = browser.js("return [...document.querySelectorAll('select.type option')].map(o => [o.value, o.textContent]);")
    assert opts == PICKER
    groups = browser.js("return [...document.querySelectorAll('select.type optgroup')].map(g => g.label);")
    assert groups == ["goroutine", "memory", "process_cpu"]
    title = browser.js("return document.querySelector('select.type option[value=\"%s\"]').title;" % INUSE)
    assert title == "2 stored types merged (periods none, space/bytes): %s, %s" % (INUSE_NOPERIOD, INUSE)
    # the graph: both instances (one series of each stored type); the panel: both heaps merged
    labels = sorted(browser.js("return psApp.view.graph.u.series.slice(1).map(s => s.label);"))
    assert labels == ['{instance="a", service_name="checkout"}', '{instance="b", service_name="checkout"}']
    assert wait_panel(browser)["total"] == str(2 * HEAP_INUSE)
    # the stand-in id in a URL selects the same entry (the URL then names the entry)
    browser.open(store.url(type=INUSE_NOPERIOD, sel='service_name="checkout"'))
    browser.wait_js("new URLSearchParams(location.search).get('type') === '%s'" % INUSE, 10)
    assert wait_panel(browser)["total"] == str(2 * HEAP_INUSE)
    no_errors(browser)


def test_empty_state_hint_only_for_an_empty_store(store, browser):
    browser.open(store.url(type=INUSE, sel='service_name="frontend"'))
    box = browser.wait_for(".view-msg .empty.nodata")
    browser.wait_js("document.querySelectorAll('.view-msg button.other-type').length === 3", 10, "the other types")
    assert box.text == ('No profiles of memory — inuse_space (bytes) match {service_name="frontend"} in this range.\n'
                        "This selector has profiles of:\n"
                        "goroutine — goroutine (count)\n"
                        "process_cpu — cpu (nanoseconds) cumulative\n"
                        "process_cpu — samples (count) cumulative")
    page = browser.js("return document.body.innerText;")
    assert "scrape or push" not in page and "/api/v1/profiles/write" not in page
    browser.screenshot("types-nodata")
    browser.js("document.querySelector('.view-msg button.other-type[data-type=\"%s\"]').click();" % GOROUTINE)
    browser.wait_js("new URLSearchParams(location.search).get('type') === '%s'" % GOROUTINE, 10)
    wait_graph(browser)
    st, _, body = store.get("/api/v1/profiles/query", query=GOROUTINE + '{service_name="frontend"}', start=store.start,
                            end=store.end + 60, format="flamegraph")
    assert st == 200 and json.loads(body)["total"] == 26  # as the README and go tool pprof: one sample has an empty stack
    assert wait_panel(browser)["total"] == "26"
    assert browser.js("return document.querySelector('.view-msg').textContent;") == ""
    # nothing anywhere for the selector: says so, still no push hint
    browser.open(store.url(type=INUSE, sel='service_name="nope"'))
    box = browser.wait_for(".view-msg .empty.nodata")
    browser.wait_js("document.querySelector('.view-msg .empty.nodata .hint')", 10)
    assert box.text == ('No profiles of memory — inuse_space (bytes) match {service_name="nope"} in this range.\n'
                        "Nothing in this range matches the selector in any profile type: widen the range or change "
                        "the selector.")
    # compare: an empty side says so without the hint
    browser.open(store.url("compare", type=INUSE, bsel='service_name="nope"', csel='service_name="checkout"'))
    browser.wait_js("psApp.view && psApp.view.left.fg && psApp.view.right.fg", 15)
    assert browser.js("return psApp.view.left.msg.textContent;") == "No profiles in this window."
    assert "scrape or push" not in browser.js("return document.body.innerText;")
    no_errors(browser)


# ---- item 5: the service list, autocompletion across types, selector errors ------------------------

def test_service_list_one_click(store, browser):
    browser.open(store.srv.url("/graph?range=1h"))
    wait_graph(browser)
    assert state(browser)["type"] == CPU_DELTA
    assert services(browser) == [["checkout", ["memory", "process_cpu"]], ["frontend", ["goroutine", "process_cpu"]]]
    assert browser.js("return document.querySelector('details.services summary').textContent;") == \
        "Services by service_name · 2"
    browser.js("window.scrollTo(0, 0);")
    assert browser.js("return document.documentElement.scrollWidth <= window.innerWidth;") is True
    browser.screenshot("services-1280")
    browser.set_width(800)
    browser.wait_js("document.documentElement.scrollWidth <= window.innerWidth", 5, "nothing wider than 800 px")
    browser.screenshot("services-800")
    browser.set_width(1280)
    # one click on a service: its selector, and a type it has (frontend has only cumulative CPU)
    browser.js("document.querySelector('li.svc[data-service=\"frontend\"] .svc-name').click();")
    browser.wait_js("new URLSearchParams(location.search).get('sel') === 'service_name=\"frontend\"'", 10)
    assert state(browser)["type"] == CPU_CUMUL
    wait_graph(browser)
    assert wait_panel(browser)["total"] == str(README_TOTALS["go/cpu-03.pb.gz"][1])
    assert browser.js("return document.querySelector('input.selector').value;") == 'service_name="frontend"'
    assert browser.js("return [...document.querySelectorAll('li.svc[aria-current=true]')].map(l => l.dataset.service);") \
        == ["frontend"]
    # one click on a profile name of a service: that service and that profile (memory: inuse_space)
    browser.js("document.querySelector('li.svc[data-service=\"checkout\"] .svc-type[data-type=\"%s\"]').click();" % INUSE)
    browser.wait_js("new URLSearchParams(location.search).get('type') === '%s'" % INUSE, 10)
    assert state(browser)["sel"] == 'service_name="checkout"'
    assert wait_panel(browser)["total"] == str(2 * HEAP_INUSE)
    browser.wait_js("document.querySelector('li.svc[data-service=\"checkout\"] .svc-type.on').textContent === 'memory'", 10)
    # the service name keeps the type when the service has it
    browser.js("document.querySelector('li.svc[data-service=\"checkout\"] .svc-name').click();")
    time.sleep(0.3)
    assert state(browser)["type"] == INUSE
    no_errors(browser)


def test_service_list_falls_back_to_job_and_shows_names_as_text(make_server, browser):
    srv = make_server(name="jobs")
    s = Store(srv, (int(time.time()) // 60) * 60 - 60)
    hostile = '<img src=x onerror="window.pwned=1">'
    s.push("go/cpu-01.pb.gz", s.end, {"job": "api"})
    s.push("go/cpu-02.pb.gz", s.end, {"job": hostile})
    s.push("go/goroutine-01.pb.gz", s.end, {"job": "api"})
    browser.open(srv.url("/graph?range=1h"))
    assert services(browser) == [["<img src=x onerror=\"window.pwned=1\">", ["process_cpu"]],
                                 ["api", ["goroutine", "process_cpu"]]]
    assert browser.js("return document.querySelector('details.services summary').textContent;") == "Services by job · 2"
    assert browser.js("return document.querySelectorAll('#view img').length;") == 0
    assert browser.js("return window.pwned === undefined;") is True
    browser.js("document.querySelectorAll('li.svc .svc-name')[0].click();")
    browser.wait_js("new URLSearchParams(location.search).get('sel') === %s" % json.dumps("job=" + json.dumps(hostile)), 10)
    assert wait_panel(browser)["total"] == str(README_TOTALS["go/cpu-02.pb.gz"][1])
    no_errors(browser)


def test_autocomplete_across_types(store, browser):
    from selenium.webdriver.common.keys import Keys
    browser.open(store.url(type=GOROUTINE))
    wait_graph(browser)
    sel = browser.wait_for("input.selector")
    sel.click()
    browser.wait_for("ul.suggest li")
    names = browser.js("return [...document.querySelectorAll('ul.suggest li')].map(li => li.textContent);")
    assert sorted(names) == ["instance", "job", "service_name"]
    # values of every type: checkout has no goroutine profile, it is offered all the same
    sel.send_keys('service_name="')
    browser.wait_js("[...document.querySelectorAll('ul.suggest li')].map(li => li.textContent).join(',') === 'checkout,frontend'",
                    10, "service_name values across types")
    # and filtered by the matchers typed: instance b has only the period-less heap
    sel.send_keys(Keys.ESCAPE)
    browser.js("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'));", sel)
    sel.send_keys('instance="b", service_name="')
    browser.wait_js("[...document.querySelectorAll('ul.suggest li')].map(li => li.textContent).join(',') === 'checkout'",
                    10, "service_name of instance b")
    no_errors(browser)


@pytest.mark.parametrize("typ", [CPU_DELTA, INUSE])
def test_selector_error_points_at_the_typed_column(store, browser, typ):
    from selenium.webdriver.common.keys import Keys
    browser.open(store.url(type=typ))
    wait_graph(browser)
    sel = browser.wait_for("input.selector")
    typed = ' service_name="checkout" inst'
    sel.send_keys(typed, Keys.ESCAPE, Keys.ENTER)
    err = browser.wait_for(".view-msg .error")
    col = typed.index("inst") + 1  # 26
    assert col == 26
    assert err.text == ('query: selector, column 26: parse error: unexpected identifier "inst" in label matching, '
                        'expected "," or "}"\n{%s}\n%s^' % (typed, " " * 26))
    # the profile panel says the same
    perr = browser.wait_for(".panel .error")
    assert perr.text.startswith("profile: selector, column 26: parse error: unexpected identifier \"inst\"")
    assert sel.get_attribute("aria-invalid") == "true"
    assert browser.js("return arguments[0].selectionStart;", sel) == 25
    # the server's own position is in the query the UI built (after the type): not what the user sees
    internal = browser.js("return psApp.state.selector(arguments[0], arguments[1]);", typ, typed.strip())
    st, _, body = store.get("/api/v1/query", query="%s[900s]" % internal, time=store.end + 60)
    assert st == 400
    assert json.loads(body)["error"].startswith('invalid parameter "query": 1:%d: parse error: unexpected identifier'
                                                % (internal.index("inst") + 1))
    browser.screenshot("selector-error")
    # fixed and run: the mark goes
    sel.send_keys(Keys.END, Keys.BACKSPACE * 5, Keys.ENTER)
    browser.wait_js("!document.querySelector('input.selector').hasAttribute('aria-invalid')", 10)
    assert [e for e in browser.console_errors() if "status of 400" not in e] == []


def test_compare_selector_error_names_its_side(store, browser):
    bad = 'service_name="checkout" inst'
    browser.open(store.url("compare", type=INUSE, bsel='service_name="checkout"', csel=bad))
    err = browser.wait_for(".view-msg .error")
    assert err.text == ('compare: selector, column 25: parse error: unexpected identifier "inst" in label matching, '
                        'expected "," or "}"\n{%s}\n%s^' % (bad, " " * 25))
    # the comparison bar's input is marked, the baseline's is not
    assert browser.js("return [...document.querySelectorAll('input.selector')].map(i => i.getAttribute('aria-invalid'));") \
        == [None, "true"]
    assert [e for e in browser.console_errors() if "status of 400" not in e] == []
