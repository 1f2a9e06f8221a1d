#!/usr/bin/python3
"""The OpenTelemetry eBPF profiler against profstore's gRPC listener, on this machine (opt-in:
`make ebpf-check EBPF_PROFILER_SRC=<checkout>`; root, a kernel with eBPF, perf events and BTF; not
part of `make test`: it profiles the whole host for a minute and its samples are random).

What it does: compiles test_symbols.py's C program here (gcc -g -O2, inlined mix/step in work),
strips it and puts its debug file (objcopy --only-keep-debug) under DIR/.build-id/; starts profstore
with --grpc.listen-address and --symbols.dir DIR, the profiler with -collection-agent on that port
(h2c), runs the program for SECONDS and stops it. Then it checks, exactly:
- the program's series: unknown_service:prog with its executable name, path and pid as labels;
- every location of the program's frames arrived unsymbolized (no lines) in a mapping named by the
  executable with the program's GNU build id, and the same locations read back symbolized;
- every address of the program's mapping gets the function, file, line, column and inline chain
  that eu-addr2line -i -f prints for it from the debug file (the program itself is stripped);
- frames of libraries without a debug file read as module+0xoffset with their build id;
- the samples' stacks hold work under main (and mix/step inlined into work).
It prints a summary: load time of the profiler, samples, CPU seconds, the top of the flame graph.

    tests/ebpf/check.py --profiler /tmp/profstore-ebpf-profiler/ebpf-profiler [--seconds 20] [--via-collector]

--via-collector puts the OpenTelemetry Collector (tests/otelcol) between them: the profiler sends
to its otlp receiver, its otlp_grpc exporter to profstore; the checks are the same.
"""
import argparse
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
import pprof_decode as pd  # noqa: E402
from test_symbols import Program  # noqa: E402  (the C program and its eu-addr2line reader)

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
_started = []  # processes started here: killed at exit if a check failed while they ran


@atexit.register
def _kill_started():
    for p in _started:
        if p.poll() is None:
            p.kill()
            p.wait()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_for(what, cond, timeout, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            sys.exit("FAIL: %s: the process exited %d\n%s" % (what, proc.returncode, log.read_text() if log else ""))
        if time.monotonic() > deadline:
            sys.exit("FAIL: %s not within %d s\n%s" % (what, timeout, log.read_text()[-5000:] if log else ""))
        time.sleep(0.1)


class Profstore:
    def __init__(self, binary, work: Path, gport, symdir=None, name="profstore"):
        self.port = free_port()
        self.log = work / (name + ".log")
        args = [binary, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", str(work / "data"), "--threads", "2",
                "--grpc.listen-address", "127.0.0.1:%d" % gport, "--web.enable-admin-api"]
        if symdir:
            args += ["--symbols.dir", str(symdir)]
        self.proc = subprocess.Popen(args, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        _started.append(self.proc)
        wait_for("profstore ready", lambda: "profstore is ready" in self.log.read_text(), 30, self.proc, self.log)

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=60) as r:
            return r.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
    print("ok:", what.split("\n")[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiler", default=os.environ.get("PS_EBPF_PROFILER"), required=False)
    ap.add_argument("--profstore", default=os.environ.get("PROFSTORE_BIN", str(REPO / "build" / "profstore")))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--via-collector", action="store_true",
                    help="the profiler sends to the OpenTelemetry Collector (scripts/install-otelcol.sh), "
                         "whose otlp_grpc exporter sends to profstore")
    a = ap.parse_args()
    if not a.profiler:
        sys.exit("usage: check.py --profiler PATH (scripts/build-ebpf-profiler.sh builds one)")
    if os.geteuid() != 0:
        sys.exit("FAIL: the eBPF profiler needs root")
    if not Path("/sys/kernel/tracing/events").is_dir() and not Path("/sys/kernel/debug/tracing/events").is_dir():
        # the profiler attaches to the sched_process_free tracepoint: tracefs must be mounted
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        print("mounted tracefs on /sys/kernel/tracing (the profiler's tracepoints need it)")
    work = Path(tempfile.mkdtemp(prefix="ps-ebpf-check-"))
    print("work dir:", work)
    (work / "prog").mkdir()
    prog = Program(work / "prog")
    symdir = work / "debug"
    prog.place(symdir)
    gport = free_port()
    ps = Profstore(a.profstore, work, gport, symdir)

    target, col = gport, None
    if a.via_collector:
        col = start_collector(work, gport)
        target = col[1]
    plog = work / "profiler.log"
    t0 = time.monotonic()
    prof = subprocess.Popen([a.profiler, "-collection-agent", "127.0.0.1:%d" % target, "-disable-tls",
                             "-reporter-interval", "2s", "-samples-per-second", "20"],
                            stdout=open(plog, "wb"), stderr=subprocess.STDOUT)
    _started.append(prof)
    try:
        wait_for("the profiler attached", lambda: "Attached sched monitor" in plog.read_text(), 300, prof, plog)
        load = time.monotonic() - t0
        print("profiler loaded and attached in %.1f s" % load)
        p = subprocess.Popen([str(prog.exe), "100000000000000"], stdout=subprocess.DEVNULL)
        _started.append(p)
        time.sleep(a.seconds)
        with open("/proc/%d/stat" % p.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        cpu_s = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
        p.kill()
        p.wait()
        # the reporter sends every 2 s (+-20% jitter): wait for two quiet rounds
        sel = '%s{service_name="unknown_service:prog",process_pid="%d"}' % (CPU, p.pid)

        def count():
            js = json.loads(ps.get("/api/v1/debug/series"))["data"]
            return sum(len(s["profiles"]) for s in js if s["labels"].get("process_pid") == str(p.pid))
        last, stable = -1, 0
        deadline = time.monotonic() + 60
        while stable < 2 and time.monotonic() < deadline:
            time.sleep(2.5)
            n = count()
            stable = stable + 1 if n == last and n > 0 else 0
            last = n
        check(last > 0, "profiles of the program arrived (%d profiles)" % last)
    finally:
        prof.send_signal(signal.SIGTERM)
        try:
            prof.wait(30)
        except subprocess.TimeoutExpired:
            prof.kill()
        if col:
            col[0].send_signal(signal.SIGTERM)
            col[0].wait(30)

    series = [s for s in json.loads(ps.get("/api/v1/debug/series"))["data"]
              if s["labels"].get("process_pid") == str(p.pid)]
    check([s["labels"] for s in series] == [{
        "__name__": CPU, "service_name": "unknown_service:prog", "process_executable_name": "prog",
        "process_executable_path": str(prog.exe), "process_pid": str(p.pid)}],
        "one series, labels %s" % [s["labels"] for s in series])
    end = int(time.time()) + 1
    q = "/api/v1/profiles/query?" + urllib.parse.urlencode({"query": sel, "start": end - 900, "end": end})
    sym = pd.decode(ps.get(q))
    ps.stop()
    plain = Profstore(a.profstore, work, free_port(), name="plain")  # the same store, no --symbols.dir
    unsym = pd.decode(plain.get(q))
    plain.stop()

    def prog_mapping(pr):
        ms = [m for m in pr.mapping if pr.s(m.build_id) == prog.build_id]
        check(len(ms) == 1 and pr.s(ms[0].filename) == "prog",
              "the program's mapping: file prog, build id %s (%s)" % (prog.build_id, [(pr.s(m.filename), pr.s(m.build_id)) for m in pr.mapping]))
        return ms[0]
    mu, ms = prog_mapping(unsym), prog_mapping(sym)
    ulocs = {l.address: l for l in unsym.location if l.mapping_id == mu.id}
    slocs = {l.address: l for l in sym.location if l.mapping_id == ms.id}
    check(sorted(ulocs) == sorted(slocs) and ulocs, "the same %d program addresses in both reads" % len(ulocs))
    check(all(not l.line for l in ulocs.values()), "stored unsymbolized: no lines at any program address")
    others = [(unsym.s(m.filename), unsym.s(m.build_id)) for m in unsym.mapping if m.id != mu.id]
    check(all(bid for _, bid in others), "every other mapping has a build id too: %s" % others)

    def vaddr(addr):  # docs/operations.md#symbols: file offset, then the executable PT_LOAD segment
        return addr - ms.memory_start + ms.file_offset - prog.p_offset + prog.p_vaddr
    prog.addrs = sorted({vaddr(x) for x in slocs})
    want = prog.addr2line()
    fns = {f.id: f for f in sym.function}
    got = {vaddr(x): [(sym.s(fns[ln.function_id].name), sym.s(fns[ln.function_id].filename), ln.line, ln.column)
                      for ln in l.line] for x, l in slocs.items()}
    bad = {"%#x" % k: (got[k], want[k]) for k in want if got[k] != want[k]}
    check(not bad, "every program address symbolized as eu-addr2line -i -f says (%d addresses)\n%s"
          % (len(want), json.dumps(bad, indent=1)))
    # library frames without a debug file: module+0xoffset (the flame graph's names)
    top = json.loads(ps_get_top(a.profstore, work, q))
    names = {r["function"] for r in top["rows"]}
    libs = {n for n in names if "+0x" in n}
    check(all(n.split("+0x")[0] in {f for f, _ in others} for n in libs),
          "library frames as module+0xoffset: %s" % sorted(libs))

    locs = {l.id: l for l in sym.location}

    def stack(s):  # root first, inline frames expanded (outermost first)
        out = []
        for lid in reversed(s.location_id):
            l = locs[lid]
            out += [sym.s(fns[ln.function_id].name) for ln in reversed(l.line)] if l.line else ["?"]
        return out
    total = sum(s.value[0] for s in sym.sample)
    def under_main_work(st):
        return "work" in st and "main" in st and st.index("main") < st.index("work")
    in_work = sum(s.value[0] for s in sym.sample if under_main_work(stack(s)))
    chains = {tuple(f[0] for f in v) for v in want.values()}
    check(("mix", "step", "work") in chains, "an inline chain mix < step < work among the sampled addresses")
    print("%d samples at 20 Hz (%.2f s of CPU; %d distinct stacks); the program used %.2f s of CPU in %.0f s "
          "(/proc/PID/stat); under main > work: %.1f%%" % (total // sym.period, total / 1e9, len(sym.sample), cpu_s,
                                                           a.seconds, 100.0 * in_work / max(total, 1)))
    for r in top["rows"][:8]:
        print("  flat %6.2f s  %s  %s" % (r["flat"] / 1e9, r["function"], r.get("file", "")))
    check(in_work * 10 >= total * 9, "at least 90% of the CPU time under main > work")
    print("PASS")


def start_collector(work, gport):
    """The Collector of tests/otelcol: otlp receiver (gRPC) -> otlp_grpc exporter to profstore (h2c)."""
    d = os.environ.get("PS_OTELCOL_DIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "profstore-otelcol")
    subprocess.run([str(REPO / "scripts" / "install-otelcol.sh"), d], check=True)
    port = free_port()
    cfg = {"receivers": {"otlp": {"protocols": {"grpc": {"endpoint": "127.0.0.1:%d" % port}}}},
           "exporters": {"otlp_grpc": {"endpoint": "127.0.0.1:%d" % gport, "tls": {"insecure": True}}},
           "service": {"telemetry": {"metrics": {"level": "none"}},
                       "pipelines": {"profiles": {"receivers": ["otlp"], "exporters": ["otlp_grpc"]}}}}
    (work / "collector.yaml").write_text(json.dumps(cfg))
    log = work / "collector.log"
    p = subprocess.Popen([os.path.join(d, "otelcol"), "--config=%s" % (work / "collector.yaml"),
                          "--feature-gates=service.profilesSupport"], stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    _started.append(p)
    wait_for("the Collector ready", lambda: "Everything is ready" in log.read_text(), 120, p, log)
    print("the profiler sends to the Collector v0.165.0 on port %d, which exports to profstore" % port)
    return p, port


def ps_get_top(binary, work, q):
    srv = Profstore(binary, work, free_port(), work / "debug", name="top")
    try:
        return srv.get(q + "&format=top")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
