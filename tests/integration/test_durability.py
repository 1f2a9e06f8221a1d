"""Crash durability: several threads stream pushes (Go cpu-01..05 and heap-01, increasing time=
values, labels per thread); at a random moment the server gets SIGKILL; after a restart on the same
data dir every acknowledged profile must be there with exactly its total, and every stored profile
must be complete (its total is the original's, all series of one push are there or none). Rounds
accumulate on one data dir; some run with --storage.compact-max-profiles 5 and explicit compactions
so that kills also land during compaction."""

import http.client
import os
import random
import threading
import time

import pprof_decode as pd
from conftest import fixture_bytes, fixture_profile

SEED = int(os.environ.get("PS_DURABILITY_SEED", "20261130"))
ROUNDS = int(os.environ.get("PS_DURABILITY_ROUNDS", "16"))
THREADS = 4
FILES = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz",
         "go/heap-01.pb.gz"]
CPU_TYPES = ["process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"]
HEAP_TYPES = ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
              "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]


def types_of(rel):
    return HEAP_TYPES if "heap" in rel else CPU_TYPES


class Ledger:
    """What was attempted and what was acknowledged, per (thread label, ts)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.attempts = {}  # (thread, ts) -> file
        self.acked = {}  # (thread, ts) -> file
        self.errors = []  # unexpected statuses

    def attempt(self, th, ts, rel):
        with self.lock:
            self.attempts[(th, ts)] = rel

    def ack(self, th, ts, rel):
        with self.lock:
            self.acked[(th, ts)] = rel


def pusher(srv, th, seqs, ledger, stop, base_ns, rnd_seed):
    rnd = random.Random(rnd_seed)
    labels = '{job="durability",thread="%s"}' % th
    while not stop.is_set():
        seq = seqs[th]
        seqs[th] = seq + 1
        ts = base_ns + seq * 1_000_000_000 + int(th[1:]) * 1_000_000
        rel = FILES[rnd.randrange(len(FILES))]
        ledger.attempt(th, ts, rel)
        try:
            st, js = srv.push(fixture_bytes(rel), time=str(ts // 10**9) + ".%03d" % (ts // 10**6 % 1000),
                              labels=labels, timeout=10)
        except (OSError, http.client.HTTPException, AttributeError):
            # AttributeError: http.client's response on a socket the SIGKILL closed under it
            # ('NoneType' object has no attribute 'makefile')
            if stop.is_set() or not srv.running():
                return
            time.sleep(0.01)
            continue
        if st == 200:
            ok = js["data"]["timestamp_ns"] == ts and [s["profile_type"] for s in js["data"]["series"]] == types_of(rel)
            if not ok:
                with ledger.lock:
                    ledger.errors.append((th, ts, rel, "bad success answer", js))
            ledger.ack(th, ts, rel)
        else:
            with ledger.lock:
                ledger.errors.append((th, ts, rel, st, srv.last_raw[:300]))


def compactor(srv, stop, rnd_seed):
    rnd = random.Random(rnd_seed)
    while not stop.is_set():
        try:
            srv.request("POST", "/api/v1/admin/compact", timeout=10)
        except (OSError, http.client.HTTPException, AttributeError):  # http.client on a socket the kill closed
            if stop.is_set() or not srv.running():
                return
        time.sleep(rnd.uniform(0.01, 0.05))


def verify(srv, ledger, rnd, deep=2):
    expected_totals = {rel: pd.totals(fixture_profile(rel)) for rel in FILES}
    stored = {}  # (thread, type) -> {ts: profile}
    sids = {}
    for s in srv.series():
        lb = s["labels"]
        if lb.get("job") != "durability":
            continue
        key = (lb["thread"], lb["__name__"])
        sids[key] = s["id"]
        tss = [p["ts"] for p in s["profiles"]]
        assert tss == sorted(tss) and len(set(tss)) == len(tss), "profiles of %s not in order: %s" % (key, tss)
        stored[key] = {p["ts"]: p for p in s["profiles"]}
    problems = []
    # every acknowledged push is there, exactly
    for (th, ts), rel in sorted(ledger.acked.items()):
        for i, typ in enumerate(types_of(rel)):
            p = stored.get((th, typ), {}).get(ts)
            if p is None:
                problems.append("acknowledged %s %s at %d is missing" % (th, typ, ts))
            elif p["total"] != expected_totals[rel][i]:
                problems.append("acknowledged %s %s at %d: total %d, want %d (%s)"
                                % (th, typ, ts, p["total"], expected_totals[rel][i], rel))
    # every stored profile is one that was pushed, complete, with all its sibling series
    seen = set()
    for (th, typ), profs in stored.items():
        for ts, p in profs.items():
            rel = ledger.attempts.get((th, ts))
            if rel is None:
                problems.append("stored %s %s at %d was never pushed" % (th, typ, ts))
                continue
            if typ not in types_of(rel):
                problems.append("stored %s %s at %d: that push was %s" % (th, typ, ts, rel))
                continue
            i = types_of(rel).index(typ)
            if p["total"] != expected_totals[rel][i]:
                problems.append("stored %s %s at %d is incomplete: total %d, want %d (%s)"
                                % (th, typ, ts, p["total"], expected_totals[rel][i], rel))
            if (th, ts) not in seen:
                seen.add((th, ts))
                missing = [t for t in types_of(rel) if ts not in stored.get((th, t), {})]
                if missing:
                    problems.append("push %s at %d (%s) is only partly stored: missing %s" % (th, ts, rel, missing))
    assert not problems, "%d problems:\n%s" % (len(problems), "\n".join(problems[:30]))
    # a few stored profiles read back in full (stacks, not just totals)
    keys = sorted(seen)
    for th, ts in rnd.sample(keys, min(deep, len(keys))):
        rel = ledger.attempts[(th, ts)]
        orig = fixture_profile(rel)
        i = rnd.randrange(len(types_of(rel)))
        got = pd.decode(srv.profile_bytes(sids[(th, types_of(rel)[i])], ts))
        assert pd.canonical(got, 0) == pd.canonical(orig, i), "stored %s %s at %d differs from %s" % (
            th, types_of(rel)[i], ts, rel)
    return len(seen)


def test_sigkill_durability(make_server, tmp_path):
    rnd = random.Random(SEED)
    data_dir = tmp_path / "data"
    srv = make_server(start=False, data_dir=data_dir)
    ledger = Ledger()
    threads = ["t%d" % i for i in range(THREADS)]
    seqs = {th: 0 for th in threads}
    base_ns = (int(time.time()) - 3 * 3600) * 10**9
    t0 = time.monotonic()
    acked_per_round = []
    for rnd_no in range(ROUNDS):
        compacting = rnd_no % 2 == 1
        srv.flags.pop("storage_compact_max_profiles", None)
        srv.start(**({"storage_compact_max_profiles": 5} if compacting else {}))
        verify(srv, ledger, rnd)
        stop = threading.Event()
        workers = [threading.Thread(target=pusher, args=(srv, th, seqs, ledger, stop, base_ns, rnd.random()))
                   for th in threads]
        if compacting:
            workers.append(threading.Thread(target=compactor, args=(srv, stop, rnd.random())))
        n_before = len(ledger.acked)
        for w in workers:
            w.start()
        time.sleep(rnd.uniform(0.05, 0.4))
        srv.kill()
        stop.set()
        for w in workers:
            w.join(15)
            assert not w.is_alive(), "a pusher hung after the kill"
        acked_per_round.append(len(ledger.acked) - n_before)
        assert not ledger.errors, "pushes refused while the server was up: %r" % ledger.errors[:5]
    srv.flags.pop("storage_compact_max_profiles", None)
    srv.start()
    stored = verify(srv, ledger, rnd, deep=5)
    # the test means something only if pushes were acknowledged in most rounds and compaction ran
    print("acked per round", acked_per_round, "attempts", len(ledger.attempts),
          {k: v for k, v in srv.metrics().items() if "chunks" in k or "head" in k})
    assert sum(1 for n in acked_per_round if n > 0) >= ROUNDS // 2, acked_per_round
    # every acknowledged push is stored (verify checks each); a push may also be stored whose
    # answer the kill cut off, but nothing that was never sent
    assert len(ledger.acked) <= stored <= len(ledger.attempts)
    m = srv.metrics()
    assert m["profstore_storage_chunks"] >= 1, "no chunk was ever written"
    # after all the crashes, a compaction of everything still works and loses nothing
    res = srv.post_json("/api/v1/admin/compact")
    assert res["status"] == "success"
    verify(srv, ledger, rnd, deep=3)
    srv.restart()
    verify(srv, ledger, rnd, deep=3)
    assert time.monotonic() - t0 < 90
