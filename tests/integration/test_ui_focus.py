"""The UI's filters and line view (web/ui/js/focus.js, panel.js, flame.js, table.js) in headless
Chromium against a real server: a frame's context menu (right click; Shift+F10 and the context-menu
key on a focused table row or flame frame) sets focus / ignore / hide / show_from in the URL, the
panel's answer is the server's with those parameters, chips show and remove them; the line view
shows the server's format=list lines; hostile function and file names stay text.

Expected values come from the server's own HTTP answers (test_query_focus.py checks those against
go tool pprof), never from the page."""

import json
import re
import urllib.parse

import pytest

import pprof_decode as pd
from ui_util import CPU_NS, browser, chromium_driver, ui_server  # noqa: F401 (fixtures)
from ui_util import no_errors, state


def rng(ui):
    return ui.t_first - 60, ui.t_last + 60


def graph_url(ui, **params):
    a, b = rng(ui)
    p = {"type": CPU_NS, "from": a, "to": b, "sel": 'job="api"'}
    p.update(params)
    return "/graph?" + urllib.parse.urlencode(p, quote_via=urllib.parse.quote)


def exact_re(name):
    return "^" + re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", name) + "$"


def wait_panel(browser):
    browser.wait_js("window.psApp && psApp.view && psApp.view.panel && psApp.view.panel.fg && "
                    "!psApp.view.panel.el.classList.contains('busy')", 20, "the panel")
    return int(browser.js("return psApp.view.panel.totalEl.dataset.total;"))


def server_total(ui, **filters):
    a, b = rng(ui)
    fg = ui.query_json("/api/v1/profiles/query", query=CPU_NS + '{job="api"}', start=str(a), end=str(b),
                       format="flamegraph", max_nodes="8192", **filters)
    return fg["total"]


def menu_items(browser):
    browser.wait_for(".ctx-menu")
    return browser.js("return [...document.querySelectorAll('.ctx-menu .ctx-item')].map(b => b.dataset.action);")


def row(browser, name):
    return browser.js("return [...document.querySelectorAll('.ptable tbody tr')].find(r => r.dataset.name === arguments[0]);",
                      name)


def right_click_row(browser, name):
    """A real right click on the top table's row of name; the menu opens for it. On a loaded machine
    the page may still move under the pointer (a later draw above the table): when the menu opened
    for another row, it is closed and the row clicked again (three times at most)."""
    from selenium.webdriver.common.action_chains import ActionChains
    for _ in range(3):
        tr = row(browser, name)
        browser.js("arguments[0].scrollIntoView({block: 'center'});", tr)
        ActionChains(browser.driver).context_click(tr).perform()
        if browser.text(".ctx-menu .ctx-title") == name:
            break
        browser.js("document.dispatchEvent(new MouseEvent('mousedown', {bubbles: true}));")  # an outside click closes it
        browser.wait_js("!document.querySelector('.ctx-menu')", 5, "the menu closed")
    assert browser.text(".ctx-menu .ctx-title") == name, browser.js(
        "const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height, arguments[0].isConnected, "
        "document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).outerHTML.slice(0, 200)];", tr)
    return tr


def test_menu_on_a_row_focuses_and_the_chip_removes_it(ui_server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    browser.open(graph_url(ui_server))
    whole = wait_panel(browser)
    assert whole == server_total(ui_server)
    name = browser.js("return psApp.view.panel.top.rows.find(r => r.function.startsWith('sort.')).function;")
    tr = row(browser, name)
    # the row says where the function is: the server's file and start line
    a, b = rng(ui_server)
    top = ui_server.query_json("/api/v1/profiles/query", query=CPU_NS + '{job="api"}', start=str(a), end=str(b),
                               format="top", limit="500")
    r = [x for x in top["rows"] if x["function"] == name][0]
    assert r["line"] > 0 and r["file"]
    assert browser.js("return arguments[0].querySelector('td.loc').textContent;", tr) == "%s:%d" % (r["file"], r["line"])
    assert browser.js("return psApp.view.panel.files.get(arguments[0]);", name) == "%s:%d" % (r["file"], r["line"])
    assert name and tr, browser.js("return [location.href, psApp.view.panel.top.rows.slice(0, 5).map(r => r.function)];")
    browser.js("arguments[0].scrollIntoView({block: 'center'});", tr)
    ActionChains(browser.driver).context_click(tr).perform()
    assert menu_items(browser) == ["focus", "ignore", "hide", "show_from", "sandwich", "copy", "source"]
    assert browser.text(".ctx-menu .ctx-title") == name, browser.js(
        "const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height, "
        "document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).outerHTML.slice(0, 200)];", tr)
    assert browser.js("return document.activeElement.dataset.action;") == "focus"
    browser.js("document.querySelector('.ctx-menu [data-action=focus]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('focus')", 10, "focus in the URL")
    assert state(browser)["focus"] == exact_re(name)
    got = wait_panel(browser)
    want = server_total(ui_server, focus=exact_re(name))
    assert got == want and 0 < want < whole
    # every request of the panel carried it, the pprof link too
    link = urllib.parse.parse_qs(urllib.parse.urlparse(browser.js("return psApp.view.panel.pprofLink.href;")).query)
    assert link["focus"] == [exact_re(name)]
    assert browser.js("return document.querySelector('.chips .chip[data-kind=focus] .chip-re').textContent;") == exact_re(name)
    # the menu over the filtered view, for docs/ui-focus.png
    right_click_row(browser, browser.js("return psApp.view.panel.top.rows[1].function;"))
    browser.screenshot("ui-focus")
    browser.js("document.querySelector('.ctx-menu [data-action=copy]').focus();")
    from selenium.webdriver.common.keys import Keys
    ActionChains(browser.driver).send_keys(Keys.ESCAPE).perform()
    browser.wait_js("!document.querySelector('.ctx-menu')", 5, "the menu closed")
    # the chip's × takes it away
    browser.js("document.querySelector('.chips .chip[data-kind=focus] .chip-x').click();")
    browser.wait_js("!new URLSearchParams(location.search).get('focus')", 10, "focus gone")
    assert wait_panel(browser) == whole
    assert browser.js("return document.querySelector('.chips').hidden;") is True
    # back brings it back (the filters live in the URL)
    browser.driver.back()
    browser.wait_js("new URLSearchParams(location.search).get('focus')", 10, "focus back")
    assert wait_panel(browser) == want
    no_errors(browser)


def test_keyboard_menu_ignores_and_hides(ui_server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    browser.open(graph_url(ui_server))
    whole = wait_panel(browser)
    name = browser.js("return psApp.view.panel.top.rows[0].function;")
    browser.js("arguments[0].focus();", row(browser, name))
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.F10).key_up(Keys.SHIFT).perform()
    assert menu_items(browser)[0] == "focus"
    ActionChains(browser.driver).send_keys(Keys.ARROW_DOWN).perform()
    assert browser.js("return document.activeElement.dataset.action;") == "ignore"
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    browser.wait_js("new URLSearchParams(location.search).get('ignore')", 10, "ignore in the URL")
    assert state(browser)["ignore"] == exact_re(name)
    assert wait_panel(browser) == server_total(ui_server, ignore=exact_re(name)) < whole
    # the flame graph: a focused frame's menu by Shift+F10; Escape closes it and gives focus back
    browser.js("const c = document.querySelector('.pflame canvas.flame-canvas'); c.scrollIntoView({block: 'center'}); c.focus();")
    ActionChains(browser.driver).send_keys(Keys.ARROW_DOWN).perform()
    child = browser.js("const p = psApp.view.panel.flame; return p.m.names[p.m.name[p.focusIdx]];")
    assert child
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.F10).key_up(Keys.SHIFT).perform()
    assert browser.wait_for(".ctx-menu .ctx-title").text == child
    ActionChains(browser.driver).send_keys(Keys.ESCAPE).perform()
    browser.wait_js("!document.querySelector('.ctx-menu')", 5, "the menu closed")
    assert browser.js("return document.activeElement.classList.contains('flame-canvas');") is True
    # hide from the flame graph's menu: both filters in the URL, the answer is the server's with both
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.F10).key_up(Keys.SHIFT).perform()
    browser.wait_for(".ctx-menu")
    browser.js("document.querySelector('.ctx-menu [data-action=hide]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('hide')", 10, "hide in the URL")
    s = state(browser)
    assert (s["ignore"], s["hide"]) == (exact_re(name), exact_re(child))
    assert wait_panel(browser) == server_total(ui_server, ignore=exact_re(name), hide=exact_re(child))
    assert sorted(browser.js("return [...document.querySelectorAll('.chips .chip')].map(c => c.dataset.kind);")) \
        == ["hide", "ignore"]
    browser.js("document.querySelector('.chips .chips-clear').click();")
    browser.wait_js("!new URLSearchParams(location.search).get('hide') && !new URLSearchParams(location.search).get('ignore')",
                    10, "filters cleared")
    assert wait_panel(browser) == whole
    no_errors(browser)


def test_line_view_shows_the_servers_lines(ui_server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    a, b = rng(ui_server)
    browser.open(graph_url(ui_server))
    wait_panel(browser)
    name = browser.js("return psApp.view.panel.top.rows.find(r => r.function.startsWith('sort.')).function;")
    right_click_row(browser, name)
    browser.js("document.querySelector('.ctx-menu [data-action=source]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('src')", 10, "src in the URL")
    assert state(browser)["src"] == name
    browser.wait_js("document.querySelector('.source-view .source-lines')", 15, "the line view")
    want = ui_server.query_json("/api/v1/profiles/query", query=CPU_NS + '{job="api"}', start=str(a), end=str(b),
                                format="list", list=exact_re(name))
    assert want["functions"] and all(f["name"] == name for f in want["functions"])
    got = browser.js("return [...document.querySelectorAll('.source-view .source-fn')].map(f => [f.dataset.name, f.dataset.file,"
                     " [...f.querySelectorAll('tbody tr')].map(r => [+r.dataset.line, +r.dataset.flat, +r.dataset.cum])]);")
    assert got == [[f["name"], f["file"], [[l["line"], l["flat"], l["cum"]] for l in f["lines"]]] for f in want["functions"]]
    assert browser.js("return document.querySelector('.source-view tbody td.loc').textContent;") == \
        "%s:%d" % (want["functions"][0]["file"], want["functions"][0]["lines"][0]["line"])
    browser.js("document.querySelector('.source-view').scrollIntoView({block: 'center'});")
    browser.screenshot("ui-lines")
    # a reload shows it again; close removes it from the URL
    browser.driver.refresh()
    browser.wait_js("document.querySelector('.source-view:not([hidden]) .source-lines')", 15, "the line view after reload")
    browser.js("document.querySelector('.source-view .source-close').click();")
    browser.wait_js("!new URLSearchParams(location.search).get('src')", 10, "src gone")
    assert browser.js("return document.querySelector('.source-view').hidden;") is True
    no_errors(browser)


# ---- hostile names ------------------------------------------------------------------------------

EVIL_FN = "<img src=x onerror=window.__pwned=1>"
EVIL_FILE = "\"><svg/onload=window.__pwned=2>.go"
NOTHING_INJECTED = ("!window.__pwned && document.querySelectorAll('img, iframe, object, embed, svg, "
                    "[onerror], [onload], [onclick]').length === 0")


def evil_profile(ts):
    st = ["", "samples", "count", "cpu", "nanoseconds", EVIL_FILE, EVIL_FN, "main.main"]
    p = pd.Profile(string_table=st)
    p.sample_type = [pd.ValueType(1, 2), pd.ValueType(3, 4)]
    p.period_type = pd.ValueType(3, 4)
    p.period = 10_000_000
    p.time_nanos = ts * 10**9
    p.duration_nanos = 10 * 10**9
    p.mapping = [pd.Mapping(id=1, memory_start=0x400000, memory_limit=0x800000, filename=0, has_functions=True)]
    p.function = [pd.Function(id=1, name=6, filename=5, start_line=1), pd.Function(id=2, name=7, filename=5, start_line=1)]
    p.location = [pd.Location(id=1, mapping_id=1, address=0x400010, line=[pd.Line(function_id=1, line=7)]),
                  pd.Location(id=2, mapping_id=1, address=0x400020, line=[pd.Line(function_id=2, line=3)])]
    p.sample = [pd.Sample(location_id=[1, 2], value=[5, 50_000_000]), pd.Sample(location_id=[2], value=[3, 30_000_000])]
    return pd.encode(p, gzip_level=1)


def test_hostile_names_stay_text(module_server_factory, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    import time
    srv = module_server_factory(name="focusevil", retention="0")
    now = int(time.time())
    st, _ = srv.push(evil_profile(now - 120), query=urllib.parse.urlencode({"time": str(now - 120), "labels": '{job="evil"}'}))
    assert st == 200, srv.last_raw[:300]
    browser.base_url = srv.url("")
    q = {"type": CPU_NS, "from": now - 600, "to": now, "sel": 'job="evil"', "src": EVIL_FN, "focus": EVIL_FN}
    browser.open("/graph?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
    browser.wait_js("window.psApp && psApp.view && psApp.view.panel && psApp.view.panel.fg", 20, "the panel")
    browser.wait_js("document.querySelector('.source-view .source-lines')", 15, "the line view")
    # the focus regexp (the name itself, which matches itself) and the names are text
    assert browser.js("return document.querySelector('.chips .chip-re').textContent;") == EVIL_FN
    assert browser.js("return document.querySelector('.source-view .source-fn').dataset.file;") == EVIL_FILE
    assert browser.js("return document.querySelector('.source-view td.loc').textContent;") == EVIL_FILE + ":7"
    tr = row(browser, EVIL_FN)
    ActionChains(browser.driver).context_click(tr).perform()
    assert browser.wait_for(".ctx-menu .ctx-title").text == EVIL_FN
    assert browser.js("return %s;" % NOTHING_INJECTED) is True
    browser.js("document.querySelector('.ctx-menu [data-action=ignore]').click();")
    browser.wait_js("new URLSearchParams(location.search).get('ignore')", 10, "ignore in the URL")
    assert state(browser)["ignore"] == exact_re(EVIL_FN)
    assert browser.js("return %s;" % NOTHING_INJECTED) is True
    assert browser.console_errors() == []
