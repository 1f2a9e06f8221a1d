"""The documentation against the code, so that neither drifts:

- docs/ARCHITECTURE.md's layout: its rooms are the folders scripts/check-includes.sh checks, and
  its "may use" table is the include rule the script enforces, room by room;
- docs/FORMAT.md's schema version is storage/store.h's PS_SCHEMA_VERSION;
- every relative link of the README, CONTRIBUTING.md, bench/RESULTS.md and docs/*.md names a file
  that exists and, with #anchor, a heading (or <a id>) of it;
- every route of web/routes.c is in docs/api.md; every flag of `profstore --help` is in
  docs/flags.md's table (or docs/configuration.md's, while it had one) and the other way round;
- the backup recipe of docs/operations.md (mdb_copy of a running store) gives a store that a second
  profstore opens with the same profiles, byte for byte."""

import re
import subprocess
import unicodedata
import urllib.parse
from pathlib import Path

from conftest import PROFSTORE_BIN, REPO, require_tool

DOCS = REPO / "docs"


def md_table(text: str, header: str):
    """The rows of the markdown table whose header line starts with `header`, as lists of cells."""
    lines = text.split("\n")
    i = next(n for n, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for ln in lines[i + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip().strip("|").split("|")])
    return rows


# ---- the layout and the include rule -------------------------------------------------------------

def include_rules():
    """scripts/check-includes.sh's rules of the product's folders: {folder: (prefix, set allowed)};
    the rows of tests and benchmarks (no library of their own: prefix "-") are not rooms."""
    script = (REPO / "scripts" / "check-includes.sh").read_text()
    body = re.search(r"^rules='\n(.*?)^'", script, re.S | re.M).group(1)
    out = {}
    for ln in body.splitlines():
        parts = ln.split()
        if parts and parts[1] != "-":
            out[parts[0].rstrip("/")] = (parts[1], set(parts[2:]))
    return out


def test_architecture_layout_matches_include_rule():
    arch = (DOCS / "ARCHITECTURE.md").read_text()
    rules = include_rules()
    # the rooms of the layout table are the folders the script checks
    layout = md_table(arch, "| folder | library | API header |")
    folders = [r[0].strip("`").rstrip("/") for r in layout]
    assert sorted(folders) == sorted(rules), (folders, sorted(rules))
    for r in layout:  # library ps_<prefix>, API headers under the prefix
        prefix = rules[r[0].strip("`").rstrip("/")][0]
        if prefix != "main":
            assert r[1] == "ps_" + prefix, r
            assert all(h.startswith(prefix + "/") for h in re.findall(r"`([^`]+)`", r[2])), r
    # the dependency table is the rule, room by room ("all of the above": every room listed before)
    by_prefix = {p: allowed for p, allowed in rules.values()}
    seen = []
    deps = md_table(arch, "| library | may use |")
    assert len(deps) >= 13, deps
    for lib_cell, use in deps:
        libs = [x.strip() for x in lib_cell.split(",")]
        if use.startswith("all of the above"):
            but = re.search(r"but (\w+)", use)
            want = (set(seen) - {but.group(1) if but else None}) | ({"web"} if use.endswith("and web") else set())
        elif use.startswith("("):
            want = set()
        else:
            want = {re.sub(r"\s*\(.*?\)", "", x).strip() for x in use.split(",")}
        for lib in libs:
            prefix = "main" if lib == "main.c" else lib
            allowed = by_prefix[prefix] - {"core"} if prefix != "core" else by_prefix[prefix]
            assert allowed == want - {"core"}, "%s: ARCHITECTURE.md says %s, check-includes.sh %s" % (
                lib, sorted(want), sorted(by_prefix[prefix]))
            if prefix != "core":
                assert "core" in want and "core" in by_prefix[prefix], lib
        seen += [x if x != "main.c" else "main" for x in libs]
    assert sorted(seen) == sorted(by_prefix), (seen, sorted(by_prefix))


# ---- FORMAT.md's schema version ------------------------------------------------------------------

def test_format_schema_version_is_the_codes():
    store_h = (REPO / "storage" / "store.h").read_text()
    code = int(re.search(r"#define PS_SCHEMA_VERSION (\d+)", store_h).group(1))
    fmt = (DOCS / "FORMAT.md").read_text()
    assert fmt.split("\n")[0] == "# On-disk format (schema version %d)" % code
    versioning = fmt[fmt.index("## Versioning"):]
    assert "`info[\"schema\"]` holds the schema version as `u32 BE` (`00 00 00 %02x`)" % code in versioning
    rows = md_table(versioning, "| version | what changed |")
    assert [int(r[0]) for r in rows] == list(range(1, code + 1))


# ---- links ---------------------------------------------------------------------------------------

def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (not - and _), spaces to -."""
    s = heading.strip().lower()
    s = "".join(c for c in s if c in " -_" or unicodedata.category(c)[0] in "LN")
    return s.replace(" ", "-")


def anchors(path: Path):
    text = path.read_text()
    out, fence = set(), False
    counts = {}
    for ln in text.split("\n"):
        if ln.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"#{1,6} (.*)", ln)
        if m:
            a = slug(m.group(1))
            n = counts.get(a, 0)
            counts[a] = n + 1
            out.add(a if n == 0 else "%s-%d" % (a, n))
    out |= set(re.findall(r'<a id="([^"]+)"', text))
    return out


def test_doc_links_resolve():
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "bench" / "RESULTS.md"] + sorted(DOCS.glob("*.md"))
    bad = []
    for f in files:
        text = re.sub(r"```.*?```", "", f.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (f.parent / urllib.parse.unquote(path)).resolve() if path else f
            if not dest.exists():
                bad.append("%s: %s: no such file" % (f.relative_to(REPO), target))
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append("%s: %s: no such heading" % (f.relative_to(REPO), target))
    assert not bad, "\n".join(bad)


# ---- routes and flags ----------------------------------------------------------------------------

def test_every_route_is_in_api_md():
    api = (DOCS / "api.md").read_text()
    src = (REPO / "web" / "routes.c").read_text()
    routes = re.findall(r'^\s*\{"(/[^"]*)", M_', src, re.M)
    assert "/api/v1/profiles/write" in routes and len(routes) == 48, routes
    missing = [r for r in routes if r != "/" and not re.search(r"[`\s]%s(?![\w/-])" % re.escape(r), api)]
    assert not missing, missing
    for extra in ("/api/v1/label/<name>/values", "/ui/<path>"):
        assert extra in api, extra
    # the Connect methods: their service in api.md, each method by name
    methods = re.findall(r'^\s*\{"/([\w.]+)/(\w+)", ps_connect_', src, re.M)
    assert len(methods) == 28, methods
    missing = [s + "/" + m for s, m in methods
               if s not in api or ("`%s`" % m not in api and "/%s/%s" % (s, m) not in api)]
    assert not missing, missing


def help_flags():
    r = subprocess.run([PROFSTORE_BIN, "--help"], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    flags = set(re.findall(r"^\s+(--[a-z0-9.-]+)", out, re.M))
    assert "--listen" in flags and "--data-dir" in flags, out
    return {f for f in flags if not f.startswith("--help") and f != "--version"}


def test_flag_table_is_the_binarys():
    """The flag table of configuration.md, or, once it links there instead, of docs/flags.md."""
    conf = (DOCS / "configuration.md").read_text()
    sec = conf[conf.index("## Command-line flags"):]
    text = sec if "\n| flag |" in sec else (DOCS / "flags.md").read_text()
    table = {f for f in re.findall(r"^\| `(--[a-z0-9.-]+)", text, re.M)
             if not f.startswith("--help") and f != "--version"}
    assert table == help_flags(), (sorted(table - help_flags()), sorted(help_flags() - table))


# ---- the backup recipe ---------------------------------------------------------------------------

def test_backup_recipe_copies_a_running_store(make_server, tmp_path):
    ops = (DOCS / "operations.md").read_text()
    m = re.search(r"`mdb_copy DATA_DIR DEST_DIR`", ops)
    assert m, "operations.md: the backup command"
    mdb_copy = require_tool("mdb_copy")
    a = make_server(name="a", retention="0")
    for i, f in enumerate(("go/cpu-01.pb.gz", "go/heap-01.pb.gz")):
        st, js = a.push(f, labels='{job="backup"}', time=str(1796022000 + i))
        assert st == 200, js
    dest = tmp_path / "copy"
    dest.mkdir()
    r = subprocess.run([mdb_copy, str(a.data_dir), str(dest)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["data.mdb"]
    st, js = a.push("go/cpu-02.pb.gz", labels='{job="backup"}', time="1796022010")  # after the copy
    assert st == 200, js
    b = make_server(name="b", data_dir=dest, retention="0")
    want = {k: v for k, v in a.series_by_labels().items()}
    got = b.series_by_labels()
    assert sorted(got) == sorted(want)
    for k, s in got.items():
        times = [p["ts"] for p in s["profiles"]]
        assert times == [p["ts"] for p in want[k]["profiles"]][:len(times)] and len(times) >= 1, k
        if "process_cpu" in k[0][1]:
            assert len(times) == 1  # cpu-02 came after the copy
        for p in s["profiles"]:
            assert b.profile_bytes(s["id"], p["ts"]) == a.profile_bytes(want[k]["id"], p["ts"])
