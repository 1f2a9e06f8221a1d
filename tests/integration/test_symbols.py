"""Native frames symbolized when read (--symbols.dir): a C program compiled here with gcc -g -O2
(inlined functions), stripped, its split debug file (objcopy --only-keep-debug) under a
.build-id directory; an OTLP profile of it with unsymbolized locations (a PIE mapping at a process
address, every byte address of its functions from nm); then profstore's functions, files, lines,
columns and inline chains equal eu-addr2line -i -f -a (elfutils) for every address, in the pprof
of /api/v1/profiles/query, the top table, flame graph and /pyroscope/render name them, `go tool
pprof -list work` shows work's source lines with their samples. Without the file the frames
read as module+0xoffset, and they are symbolized once the file is placed (no restart)."""

import json
import re
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

import pprof_decode as pd
from otlp_util import Builder, post

T0 = 1796022000 * 10**9  # 2026-11-30T07:00:00Z
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
BASE = 0x555555554000  # where the (position independent) program is mapped

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) long mix(long x) { return x * 2654435761L ^ (x >> 7); }
static inline __attribute__((always_inline)) long step(long x)
{
    return mix(x) + mix(x + 1);
}
__attribute__((noinline)) long work(long n)
{
    long a = 0;
    for (long i = 0; i < n; i++)
        a += step(a + i);
    return a;
}
int main(int argc, char **argv)
{
    printf("%ld\n", work(argc > 1 ? atol(argv[1]) : 10));
    return 0;
}
"""


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


class Program:
    """The program, its build id, its debug file and its executable load segment."""

    def __init__(self, d: Path, source: str = PROG, compiler: str = "gcc", src_name: str = "prog.c"):
        src = d / src_name
        src.write_text(source)
        self.exe = d / "prog"
        run(compiler, "-g", "-O2", "-o", str(self.exe), str(src))
        self.debug = d / "prog.debug"
        run("objcopy", "--only-keep-debug", str(self.exe), str(self.debug))
        run("strip", str(self.exe))
        self.build_id = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", str(self.exe))).group(1)
        loads = [l.split() for l in run("readelf", "-lW", str(self.exe)).splitlines() if l.strip().startswith("LOAD")]
        text = [l for l in loads if "E" in l[6:-1]][0]
        self.p_offset, self.p_vaddr, self.p_filesz = int(text[1], 16), int(text[2], 16), int(text[4], 16)
        self.syms = {}
        for line in run("nm", "-S", str(self.debug)).splitlines():
            f = line.split()
            if len(f) == 4 and self.wanted(f[2], f[3]):
                self.syms[f[3]] = (int(f[0], 16), int(f[1], 16))
        if type(self) is Program:
            assert sorted(self.syms) == ["main", "work"], self.syms
        self.addrs = sorted({a for start, size in self.syms.values() for a in range(start, start + size)})
        # the executable segment mapped at BASE + its page, as /proc/PID/maps shows it
        self.m_start = BASE + (self.p_vaddr & ~0xfff)
        self.m_offset = self.p_offset & ~0xfff
        self.m_limit = self.m_start + ((self.p_filesz + (self.p_vaddr & 0xfff) + 0xfff) & ~0xfff)

    @staticmethod
    def wanted(kind: str, name: str) -> bool:
        """The functions whose every byte is an address of the profile (nm's type and name)."""
        return kind in "tT" and name in ("work", "main")

    def proc_addr(self, vaddr: int) -> int:
        return self.m_start + (vaddr - self.p_vaddr) + (self.p_offset - self.m_offset)

    def place(self, symdir: Path):
        d = symdir / ".build-id" / self.build_id[:2]
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.debug, d / (self.build_id[2:] + ".debug"))

    def addr2line(self):
        """{vaddr: [(function, file, line, column), ...] innermost first} from eu-addr2line -i -f -a."""
        out = run("eu-addr2line", "-i", "-f", "-a", "-e", str(self.debug), *["%#x" % a for a in self.addrs])
        res, cur, lines = {}, None, out.splitlines()
        i = 0
        while i < len(lines):
            if re.fullmatch(r"0x[0-9a-f]+", lines[i]):
                cur = int(lines[i], 16)
                res[cur] = []
                i += 1
                continue
            # the innermost of an inline chain reads "NAME inlined at FILE:LINE:COL in CALLER"
            # (elfutils 0.188): its name is NAME, the rest is the next frame's
            fn, loc = re.sub(r" inlined at .* in \S+$", "", lines[i]), lines[i + 1]
            i += 2
            m = re.fullmatch(r"(.*?):(\d+)(?::(\d+))?", loc)
            file, ln, col = m.group(1), int(m.group(2)), int(m.group(3) or 0)
            res[cur].append(("" if fn == "??" else fn, "" if file == "??" else file, ln, col))
        assert sorted(res) == self.addrs
        return res


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return Program(tmp_path_factory.mktemp("prog"))


def push(srv, prog):
    b = Builder()
    sc = b.resource({"service.name": "native"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, T0, 10**10)
    m = b.mapping("/opt/app/prog", prog.m_start, prog.m_limit, prog.m_offset, prog.build_id)
    for a in prog.addrs:
        b.sample(p, [b.location(prog.proc_addr(a), m)], 1)
    r = post(srv.port, b.req)
    assert r.status == 200, r


def query(srv, fmt=None):
    q = {"query": CPU + '{service_name="native"}', "start": str(T0 // 10**9 - 60), "end": str(T0 // 10**9 + 60)}
    if fmt:
        q["format"] = fmt
    st, _, body = srv.get("/api/v1/profiles/query?" + urllib.parse.urlencode(q))
    assert st == 200, body[:300]
    return body


def stacks(prof):
    """{process address: [(function, file, line, column), ...]} of a pprof, or the
    module+0xoffset name of a location without lines."""
    locs = {l.id: l for l in prof.location}
    fns = {f.id: f for f in prof.function}
    maps = {m.id: m for m in prof.mapping}
    out = {}
    for s in prof.sample:
        assert len(s.location_id) == 1
        l = locs[s.location_id[0]]
        if l.line:
            out[l.address] = [(prof.s(fns[x.function_id].name), prof.s(fns[x.function_id].filename), x.line, x.column)
                              for x in l.line]
        else:
            m = maps[l.mapping_id]
            out[l.address] = "%s+%#x" % (prof.s(m.filename), l.address - m.memory_start + m.file_offset)
    return out


def test_frames_equal_eu_addr2line(make_server, prog, tmp_path):
    symdir = tmp_path / "debug"
    symdir.mkdir()
    prog.place(symdir)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push(srv, prog)
    want = prog.addr2line()
    got = stacks(pd.decode(query(srv)))
    assert got == {prog.proc_addr(a): want[a] for a in prog.addrs}
    # the program has inlined frames, and they are in the answer
    chains = {tuple(f[0] for f in v) for v in got.values()}
    assert ("mix", "step", "work") in chains and ("step", "work") in chains
    # the top table: the innermost frame's function and file, flat = its addresses' samples
    top = json.loads(query(srv, "top"))
    unit = top["total"] // len(prog.addrs)
    assert top["total"] == unit * len(prog.addrs) and unit > 0
    leaf = {}
    for v in want.values():
        leaf[(v[0][0], v[0][1])] = leaf.get((v[0][0], v[0][1]), 0) + unit
    assert {(r["function"], r["file"]): r["flat"] for r in top["rows"]} == leaf
    # the flame graph names every function of the chains, and nothing else
    fg = json.loads(query(srv, "flamegraph"))
    assert sorted(fg["names"]) == sorted({"total"} | {f[0] for v in want.values() for f in v})
    # Pyroscope's /pyroscope/render (Grafana's flame graph): the same names
    q = urllib.parse.urlencode({"query": CPU + '{service_name="native"}', "from": str(T0 // 10**9 - 60),
                                "until": str(T0 // 10**9 + 60)})
    st, _, body = srv.get("/pyroscope/render?" + q)
    assert st == 200, body[:300]
    fb = json.loads(body)["flamebearer"]
    assert sorted(fb["names"]) == sorted(fg["names"]) and fb["numTicks"] == top["total"]


def test_unsymbolized_until_the_file_is_placed(make_server, prog, tmp_path):
    symdir = tmp_path / "debug"
    symdir.mkdir()
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push(srv, prog)
    got = stacks(pd.decode(query(srv)))
    assert got == {prog.proc_addr(a): "/opt/app/prog+%#x" % (prog.proc_addr(a) - prog.m_start + prog.m_offset)
                   for a in prog.addrs}
    prog.place(symdir)
    time.sleep(1.1)  # a build id with no file is looked at again after a second
    want = prog.addr2line()
    got = stacks(pd.decode(query(srv)))
    assert got == {prog.proc_addr(a): want[a] for a in prog.addrs}


def test_broken_debug_file_leaves_frames(make_server, prog, tmp_path):
    symdir = tmp_path / "debug"
    d = symdir / ".build-id" / prog.build_id[:2]
    d.mkdir(parents=True)
    (d / (prog.build_id[2:] + ".debug")).write_bytes(b"\x7fELF" + b"\x02\x01\x01" + b"\xff" * 200)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push(srv, prog)
    got = stacks(pd.decode(query(srv)))
    assert got == {prog.proc_addr(a): "/opt/app/prog+%#x" % (prog.proc_addr(a) - prog.m_start + prog.m_offset)
                   for a in prog.addrs}
    assert srv.get("/-/healthy")[0] == 200


def test_go_tool_pprof_lists_the_source(make_server, prog, tmp_path):
    """`go tool pprof -list work` on the downloaded pprof: work's source lines in prog.c, flat the
    samples whose innermost frame is work at that line, cum those whose work frame (innermost or
    calling an inlined one) is at that line, as eu-addr2line puts them."""
    from conftest import go_pprof
    symdir = tmp_path / "debug"
    symdir.mkdir()
    prog.place(symdir)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    push(srv, prog)
    f = tmp_path / "native.pb.gz"
    f.write_bytes(query(srv))
    want = prog.addr2line()
    r = go_pprof(["-list", "^work$", "-symbolize=none", str(f)], tmp_path)
    assert "ROUTINE ======================== work in %s" % (prog.exe.parent / "prog.c") in r.stdout, r.stdout
    unit = json.loads(query(srv, "top"))["total"] // len(prog.addrs)
    flat, cum = {}, {}
    for v in want.values():
        w = [fr for fr in v if fr[0] == "work"]
        if w:
            cum[w[0][2]] = cum.get(w[0][2], 0) + unit
            if v[0][0] == "work":
                flat[v[0][2]] = flat.get(v[0][2], 0) + unit
    units = {"ms": 10**6, "s": 10**9, "ns": 1, "us": 10**3}
    got_flat, got_cum = {}, {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s+(?:(\d+)(ms|s|ns|us)|\.)\s+(?:(\d+)(ms|s|ns|us)|\.)\s+(\d+):", line)
        if m:
            if m.group(1):
                got_flat[int(m.group(5))] = int(m.group(1)) * units[m.group(2)]
            if m.group(3):
                got_cum[int(m.group(5))] = int(m.group(3)) * units[m.group(4)]
    assert (got_flat, got_cum) == (flat, cum), r.stdout
