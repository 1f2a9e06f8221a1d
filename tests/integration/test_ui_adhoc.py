"""The UI's shared profiles (web/ui/js/shared.js) in headless Chromium: a pprof file chosen with the
upload page's file picker, a folded file dropped on its drop zone and a `perf script` capture
become shared views; the
share button's link, opened in a fresh tab, shows the same top table (every row's values as
/api/v1/profiles/adhoc answers them); two shared profiles checked in the list open their diff.
No console error, no failed request."""

import json
import urllib.parse

from conftest import PPROF_DIR
from ui_util import Browser, browser, chromium_driver  # noqa: F401

FOLDED = "a;b;c 3\na;b 2\nz 1\n"
PERF = PPROF_DIR.parent / "perf" / "prog-script.txt"


def rows(b: Browser):
    b.wait_js("document.querySelectorAll('.ptable tbody tr').length > 0", timeout=15, what="the top table")
    return b.js("""return [...document.querySelectorAll('.ptable tbody tr')].map(tr =>
        [tr.dataset.name, ...[...tr.querySelectorAll('td.num')].map(td => Number(td.dataset.value))]);""")


def api_rows(srv, **params):
    st, _, body = srv.get("/api/v1/profiles/adhoc?" + urllib.parse.urlencode(dict(params, format="top", limit="500")))
    assert st == 200, body[:300]
    out = [[r["function"], r["flat"], r["flat%"], r["cum"], r["cum%"]] for r in json.loads(body)["rows"]]
    return sorted(out, key=lambda r: (-abs(r[1]), r[0]))  # the table's order: |flat| descending, then name


def test_upload_share_open_diff(make_server, browser):  # noqa: F811
    srv = make_server(retention="0")
    browser.base_url = srv.url("")
    browser.open("/upload")
    browser.wait_for(".dropzone")
    # the file input is reachable from the keyboard (a native control, in the Tab order)
    assert browser.js("return document.querySelector('#adhoc-file').tabIndex") == 0
    assert browser.js("return document.querySelector('nav a[aria-current=page]').dataset.view") == "upload"
    # the file picker: a gzipped pprof
    from selenium.webdriver.common.by import By
    browser.driver.find_element(By.CSS_SELECTOR, "#adhoc-file").send_keys(str(PPROF_DIR / "go" / "cpu-01.pb.gz"))
    browser.wait_js("location.pathname === '/shared'", what="the shared view")
    id1 = urllib.parse.parse_qs(urllib.parse.urlparse(browser.driver.current_url).query)["id"][0]
    assert id1.endswith("-cpu-01.pb.gz")
    got = rows(browser)
    assert got == api_rows(srv, id=id1, type="samples")
    assert got[0][0] == "compress/flate.(*compressor).findMatch" and got[0][1] == 73
    # the sample type picker: cpu
    browser.js("const s = document.querySelector('select.adhoc-type'); s.value = 'cpu'; s.dispatchEvent(new Event('change'));")
    browser.wait_js("location.search.includes('st=cpu')")
    browser.wait_js("document.querySelector('.ptable tbody tr td.num').dataset.value === '730000000'", what="cpu rows")
    cpu = rows(browser)
    assert cpu == api_rows(srv, id=id1, type="cpu")
    # share: the link of this view, opened in a fresh tab, shows the same table
    from selenium.webdriver.common.keys import Keys
    browser.wait_for("button.adhoc-share").send_keys(Keys.ENTER)  # the keyboard: Enter on the focused button
    link = browser.wait_js("document.querySelector('input.adhoc-link').value")
    assert link == browser.driver.current_url and "st=cpu" in link
    first = browser.driver.current_window_handle
    browser.driver.switch_to.new_window("tab")
    browser.driver.get(link)
    assert rows(browser) == cpu
    assert browser.js("return document.querySelector('.adhoc-title').textContent").startswith("cpu-01.pb.gz uploaded ")
    browser.screenshot("shared-cpu")
    browser.driver.close()
    browser.driver.switch_to.window(first)
    # the drop zone: a folded file dropped on it
    browser.open("/upload")
    browser.wait_for(".adhoc-table")
    browser.js("""const dt = new DataTransfer();
        dt.items.add(new File([arguments[0]], 'stacks.txt', {type: 'text/plain'}));
        document.querySelector('.dropzone').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));""",
               FOLDED)
    browser.wait_js("location.pathname === '/shared' && location.search.includes('stacks.txt')", what="the dropped file's view")
    assert rows(browser) == [["c", 3, 50, 3, 50], ["b", 2, 33.33, 5, 83.33], ["z", 1, 16.67, 1, 16.67], ["a", 0, 0, 5, 83.33]]
    id2 = urllib.parse.parse_qs(urllib.parse.urlparse(browser.driver.current_url).query)["id"][0]
    # the list, newest first; two checked open their diff (the first checked is the baseline)
    browser.open("/upload")
    browser.wait_for(".adhoc-table")
    assert browser.js("return [...document.querySelectorAll('.adhoc-table tbody tr')].map(r => r.dataset.id)") == [id2, id1]
    browser.screenshot("upload")
    browser.js("document.querySelector('tr[data-id=\"%s\"] input').click()" % id1)
    browser.js("document.querySelector('tr[data-id=\"%s\"] input').click()" % id2)
    browser.wait_for("button.adhoc-diff:enabled").click()
    browser.wait_js("location.search.includes('compare=')", what="the diff view")
    assert rows(browser) == api_rows(srv, id=id1, compare=id2, type="samples")
    assert browser.js("return document.querySelector('.panel .total').dataset.left") == "298"
    assert browser.js("return document.querySelector('.panel .total').dataset.right") == "6"
    browser.screenshot("shared-diff")
    assert browser.console_errors() == []
    assert browser.failed_requests() == []
    # the file picker: a real `perf script` capture; the page's hint names the four formats
    browser.open("/upload")
    browser.wait_for(".adhoc-table")
    hint = browser.text("#adhoc-help")
    for fmt in ("pprof file", "flamebearer JSON", "perf script", "folded stacks"):
        assert fmt in hint, hint
    browser.driver.find_element(By.CSS_SELECTOR, "#adhoc-file").send_keys(str(PERF))
    browser.wait_js("location.pathname === '/shared' && location.search.includes('prog-script.txt')",
                    what="the perf capture's view")
    id3 = urllib.parse.parse_qs(urllib.parse.urlparse(browser.driver.current_url).query)["id"][0]
    got = rows(browser)
    assert got == api_rows(srv, id=id3, type="samples")
    assert got[:3] == [["leaf_a", 84, 66.67, 85, 67.46], ["leaf_b", 41, 32.54, 41, 32.54],
                       ["irqentry_exit_to_user_mode", 1, 0.79, 1, 0.79]]
    assert browser.console_errors() == []
    assert browser.failed_requests() == []
    # an unknown id: the server's words (and the browser's own log line of the 404, nothing else)
    browser.reset_logs()
    browser.open("/shared?id=01AAAAAAAAAAAAAAAAAAAAAAAA-gone")
    assert "profile 01AAAAAAAAAAAAAAAAAAAAAAAA-gone not found" in browser.text(".view-msg .error")
    assert [e.split(" - ", 1)[1] for e in browser.console_errors()] == \
        ["Failed to load resource: the server responded with a status of 404 (Not Found)"]
