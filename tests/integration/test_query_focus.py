"""focus, ignore, hide, show and show_from on the merge endpoints, and format=list: the server's
answers equal `go tool pprof` run with the same flags on the same download (-top rows and totals,
the filtered pprof download read with no flags, the flame graph's total), the line view equals
`go tool pprof -list` line by line, and a bad regexp is a precise 400."""

import json
import re
import urllib.parse

import pytest

from conftest import CPU_TYPE, QUERY_T0, go_pprof, parse_pprof_top, pprof_quantity, require_tool

T0 = QUERY_T0
FILES = ["go/cpu-0%d.pb.gz" % i for i in range(1, 4)]
SEL = CPU_TYPE + '{job="focus"}'
RANGE = dict(query=SEL, start=T0, end=T0 + 60)

# each a set of pprof flags: by function name, by file name (main.go, zsortinterface.go), regexps
# with alternation and classes, every filter, and filters together
CASES = [
    {"focus": "sort\\."},
    {"ignore": "runtime"},
    {"focus": "flate", "ignore": "matchLen"},
    {"hide": "runtime\\.|sort\\.pdqsort"},
    {"show": "sort|main"},
    {"show_from": "main\\."},
    {"show_from": "pdqsort"},
    {"focus": "main\\.go"},
    {"focus": "zsortinterface"},
    {"focus": "mallocgc", "hide": "^runtime\\.(mallocgc|memclr)", "show_from": "main"},
    {"ignore": "[Ss]ort|flate"},
    {"focus": "no-such-function-anywhere"},
]


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="focus", retention="0")
    for i, rel in enumerate(FILES):
        st, _ = s.push(rel, labels='{job="focus",instance="a:6060"}', time=str(T0 + 10 * (i + 1)))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


@pytest.fixture(scope="module")
def go():
    return require_tool("go")


def path(endpoint="/api/v1/profiles/query", **params):
    return endpoint + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def fetch(srv, p, want=200):
    st, hdrs, body = srv.get(p, timeout=60)
    assert st == want, (p, st, body[:500])
    return body


def flags(case):
    return ["-%s=%s" % (k, v) for k, v in case.items()]


def ns_rows(rows):
    """(flat ns, cum ns, name) sorted as the server's top table sorts them"""
    out = [(round(pprof_quantity(r[0])), round(pprof_quantity(r[3])), r[5].replace(" (partial-inline)", ""))
           for r in rows]
    return sorted(out, key=lambda r: (-abs(r[0]), -abs(r[1]), r[2]))


def header_facts(h):
    """pprof's header lines but Active filters (the flags themselves) and Time"""
    out, in_filters = [], False
    for l in h:
        if l.startswith("Active filters:"):
            in_filters = True
            continue
        if in_filters and l.startswith("   "):
            continue
        in_filters = False
        if not l.startswith("Time:"):
            out.append(l)
    return out


def totals(h):
    """(the whole profile's total, what the rows account for) from pprof's -top header: "Showing nodes
    accounting for X, P% of T total", or with no rows "Total samples = T" and 0"""
    line = [l for l in h if "Showing nodes accounting for" in l]
    if not line:
        t = [l for l in h if "Total samples = " in l][0]
        return round(pprof_quantity(t.split("Total samples = ")[1].split()[0])), 0
    x = line[0].split("Showing nodes accounting for ")[1]
    return round(pprof_quantity(x.split(" of ")[1].split()[0])), round(pprof_quantity(x.split(",")[0]))


TOP = ["-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", "-symbolize=none"]


@pytest.fixture(scope="module")
def full(srv, tmp_path_factory):
    f = tmp_path_factory.mktemp("focus") / "merged.pb.gz"
    f.write_bytes(fetch(srv, path(**RANGE)))
    return f


@pytest.mark.parametrize("case", CASES, ids=lambda c: "&".join("%s=%s" % kv for kv in c.items()))
def test_filters_equal_go_pprof(srv, go, full, tmp_path, case):
    ref = go_pprof(TOP + flags(case) + [str(full)], tmp_path)
    rh, rrows = parse_pprof_top(ref.stdout)
    want = ns_rows(rrows)
    whole, shown = totals(rh)

    # the filtered download, read by pprof with no flags, has pprof's rows and what they account for
    f = tmp_path / "filtered.pb.gz"
    f.write_bytes(fetch(srv, path(**RANGE, **case)))
    got = go_pprof(TOP + [str(f)], tmp_path)
    gh, grows = parse_pprof_top(got.stdout)
    assert ns_rows(grows) == want, "server:\n%s\n--- go tool pprof %s:\n%s" % (got.stdout, flags(case), ref.stdout)
    assert totals(gh)[1] == shown, (got.stdout, ref.stdout)

    # the top table: pprof's rows, and its total (the whole profile's: percentages of it, as pprof's)
    top = json.loads(fetch(srv, path(**RANGE, **case, format="top")))
    assert top["total"] == whole
    assert [(r["flat"], r["cum"], r["function"]) for r in top["rows"]] == want
    for r in top["rows"]:
        assert r["flat%"] == round(100.0 * r["flat"] / whole, 2)
    # the flame graph's root: what is left
    fg = json.loads(fetch(srv, path(**RANGE, **case, format="flamegraph")))
    assert fg["total"] == shown
    if "no-such" in case.get("focus", ""):
        assert want == [] and shown == 0 and whole > 0
    else:
        assert 0 < shown < whole or ("hide" in case or "show" in case) and shown == whole


def test_filters_on_a_diff_and_instant(srv, go, tmp_path):
    """the same parameters on /api/v1/profiles/diff (both sides filtered: pprof -diff_base with the
    flags) and on an instant query"""
    case = {"focus": "sort"}
    base = tmp_path / "base.pb.gz"
    cmp = tmp_path / "cmp.pb.gz"
    base.write_bytes(fetch(srv, path(query=SEL, time=T0 + 10, lookback="5s")))
    cmp.write_bytes(fetch(srv, path(query=SEL, time=T0 + 20, lookback="5s")))
    ref = go_pprof(TOP + flags(case) + ["-diff_base=" + str(base), str(cmp)], tmp_path)
    d = tmp_path / "diff.pb.gz"
    d.write_bytes(fetch(srv, path("/api/v1/profiles/diff", base=SEL, compare=SEL, base_time=T0 + 10,
                                  compare_time=T0 + 20, lookback="5s", **case)))
    got = go_pprof(TOP + [str(d)], tmp_path)
    assert ns_rows(parse_pprof_top(got.stdout)[1]) == ns_rows(parse_pprof_top(ref.stdout)[1])
    one = go_pprof(TOP + flags(case) + [str(cmp)], tmp_path)
    top = json.loads(fetch(srv, path(query=SEL, time=T0 + 20, lookback="5s", format="top", **case)))
    assert [(r["flat"], r["cum"], r["function"]) for r in top["rows"]] == ns_rows(parse_pprof_top(one.stdout)[1])


# ---- format=list: go tool pprof -list ----------------------------------------------------------

def pprof_list(text):
    """go tool pprof -list output -> (total line, [(name, file, flat, cum, {line: (flat, cum)})]):
    only the lines with a value ('.' is none)."""
    out, cur = [], None
    total = None
    for l in text.splitlines():
        if l.startswith("Total: "):
            total = round(pprof_quantity(l.split()[1]))
            continue
        m = re.match(r"ROUTINE =+ (.*) in (.*)$", l)
        if m:
            cur = [m.group(1), m.group(2), 0, 0, {}]
            out.append(cur)
            continue
        m = re.match(r"\s*(\S+)\s+(\S+) \(flat, cum\)", l)
        if m and cur is not None:
            cur[2], cur[3] = round(pprof_quantity(m.group(1))), round(pprof_quantity(m.group(2)))
            continue
        m = re.match(r"\s*(\S+)\s+(\S+)\s+(\d+):", l)
        if m and cur is not None and (m.group(1) != "." or m.group(2) != "."):
            q = lambda s: 0 if s == "." else round(pprof_quantity(s))
            cur[4][int(m.group(3))] = (q(m.group(1)), q(m.group(2)))
    return total, [tuple(x) for x in out]


def sources_for(answer, root):
    """pprof prints a listing only from the source file: files of "//" lines, long enough, under
    root, read with -trim_path=/ -source_path=root"""
    longest = {}
    for fn in answer["functions"]:
        n = max([l["line"] for l in fn["lines"]] + [0]) + 20
        longest[fn["file"]] = max(longest.get(fn["file"], 0), n)
    for f, n in longest.items():
        p = root / f.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("//\n" * n)


@pytest.mark.parametrize("regexp,case", [
    ("sort\\.pdqsort", {}),
    ("flate\\.\\(\\*compressor\\)", {}),
    ("main\\.", {}),
    ("runtime\\.mallocgc$", {}),
    ("sort\\.", {"focus": "insertion"}),
    ("main\\.", {"hide": "sort"}),
], ids=lambda x: str(x))
def test_list_equals_go_pprof_list(srv, go, full, tmp_path, regexp, case):
    ans = json.loads(fetch(srv, path(**RANGE, **case, format="list", list=regexp)))
    assert ans["functions"], ans
    src = tmp_path / "src"
    sources_for(ans, src)
    ref = go_pprof(["-list=" + regexp, "-symbolize=none", "-trim_path=/", "-source_path=" + str(src)] + flags(case)
                   + [str(full)], tmp_path)
    total, routines = pprof_list(ref.stdout)
    assert "Error" not in ref.stdout, ref.stdout
    assert ans["total"] == total
    got = [(f["name"], f["file"], f["flat"], f["cum"], {l["line"]: (l["flat"], l["cum"]) for l in f["lines"]})
           for f in ans["functions"]]
    assert got == routines, "server:\n%s\n--- go tool pprof -list:\n%s" % (json.dumps(ans, indent=1), ref.stdout)
    assert any(l["flat"] or l["cum"] for f in ans["functions"] for l in f["lines"])


def test_list_matches_nothing(srv):
    ans = json.loads(fetch(srv, path(**RANGE, format="list", list="no-such-function")))
    assert ans["functions"] == [] and ans["total"] > 0


# ---- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("param,value,msg", [
    ("focus", "(a", 'invalid parameter "focus": error parsing regexp "(a": missing closing ): `(a`'),
    ("ignore", "a**", 'invalid parameter "ignore": error parsing regexp "a**": invalid nested repetition operator: `**`'),
    ("hide", "[z-a]", 'invalid parameter "hide": error parsing regexp "[z-a]": invalid character class range: `z-a`'),
    ("show_from", "x(?=y)", 'invalid parameter "show_from": error parsing regexp "x(?=y)": invalid or unsupported Perl syntax: `(?=`'),
    ("list", "(a", 'invalid parameter "list": error parsing regexp "(a": missing closing ): `(a`'),
])
def test_bad_regexp_is_a_precise_400(srv, param, value, msg):
    extra = {"format": "list"} if param == "list" else {"format": "top"}
    st, _, body = srv.get(path(**RANGE, **extra, **{param: value}))
    assert st == 400, body
    assert json.loads(body)["error"] == msg


def test_list_parameter_rules(srv):
    st, _, body = srv.get(path(**RANGE, format="list"))
    assert st == 400 and json.loads(body)["error"].startswith('invalid parameter "list": missing'), body
    st, _, body = srv.get(path(**RANGE, format="top", list="x"))
    assert st == 400 and json.loads(body)["error"] == 'invalid parameter "list": goes with format=list only', body


def test_bad_regexp_for_go_pprof_is_its_text(srv, go, tmp_path):
    """the pprof download's error reaches go tool pprof as text it prints"""
    import subprocess
    from conftest import tool_env
    r = subprocess.run([go, "tool", "pprof", "-top", srv.url(path(**RANGE, focus="(a"))], capture_output=True,
                       text=True, env=tool_env(tmp_path), timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert 'invalid parameter "focus": error parsing regexp "(a": missing closing ): `(a`' in r.stderr, r.stderr
