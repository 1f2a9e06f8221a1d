"""Writes are decoded on the decode pool (--ingest.decode-threads), not on the HTTP threads: under a
flood of concurrent pushes /-/healthy keeps answering; past --ingest.decode-queue-max-bytes a push
is refused at once (429 with Retry-After, in its API's error shape), and every 200 is durable."""

import json
import os
import socket
import threading
import time

from conftest import fixture_bytes, recv_all

CPU = "go/cpu-01.pb.gz"


def raw_post(port, path, body, headers):
    """A POST whose last byte is held back: returns (socket, the last byte)."""
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n"
            % (path, len(body), "".join("%s: %s\r\n" % kv for kv in headers.items()))).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(head + body[:-1])
    return s, body[-1:]


def raw_push(port, body, job):
    return raw_post(port, "/api/v1/profiles/write?labels=%%7Bjob%%3D%%22%s%%22%%7D" % job, body,
                    {"Content-Type": "application/octet-stream"})


def read_answer(s):
    data = recv_all(s)
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    hdrs = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return int(lines[0].split()[1]), hdrs, body


def test_health_answers_under_a_push_flood(make_server):
    srv = make_server(retention="0", threads="1", extra_args=["--ingest.decode-threads", "2"])
    body = fixture_bytes(CPU)
    stop = threading.Event()
    codes = []

    def sender(i):
        n = 0
        while not stop.is_set():
            st, _ = srv.push(body, labels='{job="f%d",n="%d"}' % (i, n))
            codes.append(st)
            n += 1

    ts = [threading.Thread(target=sender, args=(i,)) for i in range(12)]
    for t in ts:
        t.start()
    try:
        time.sleep(0.3)
        for _ in range(20):  # each answers while the pushes are being decoded
            st, _, data = srv.get("/-/healthy", timeout=10)
            assert st == 200, data
            time.sleep(0.05)
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert set(codes) <= {200, 429}, set(codes)
    ok = codes.count(200)
    assert ok > 0
    assert srv.metrics()["profstore_ingest_profiles_total"] == ok


def test_full_decode_queue_429_every_200_durable(make_server):
    # one decode thread, one body waiting at most: of 24 pushes arriving at once, the first is being
    # decoded, the second waits, the others are refused until the queue has room again
    srv = make_server(retention="0", threads="1",
                      extra_args=["--ingest.decode-threads", "1", "--ingest.decode-queue-max-bytes", "1"])
    body = fixture_bytes(CPU)
    held = [raw_push(srv.port, body, "j%d" % i) for i in range(24)]
    # then a remote write and a Connect push (bodies nobody decodes when they are refused)
    held.append(raw_post(srv.port, "/api/v1/write", b"x" * 40000,
                         {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"}))
    held.append(raw_post(srv.port, "/push.v1.PusherService/Push", b"x" * 40000, {"Content-Type": "application/proto"}))
    for s, last in held:
        s.sendall(last)
    answers = [read_answer(s) for s, _ in held]
    rw, connect, answers = answers[-2], answers[-1], answers[:-2]
    codes = [a[0] for a in answers]
    assert set(codes) <= {200, 429}, codes
    refused = [a for a in answers if a[0] == 429]
    assert refused, "no push was refused"
    for st, hdrs, data in refused:
        assert hdrs["retry-after"] == "1"
        assert data.startswith(b'{"status":"error","errorType":"unavailable","error":"overloaded: '), data
        assert b"--ingest.decode-queue-max-bytes=1); retry later" in data, data
    # refused: remote write 503 in text (Prometheus retries it), Connect resource_exhausted (429)
    if rw[0] != 400:  # 400: it got decoded (not snappy)
        assert (rw[0], rw[1]["retry-after"], rw[1]["content-type"]) == (503, "1", "text/plain; charset=utf-8"), rw
        assert rw[2].startswith(b"overloaded: ") and rw[2].endswith(b"retry later\n"), rw
    # decoded (the queue had room again): the garbage is refused by the decoder, also with
    # resource_exhausted (its decode memory bound), but without Retry-After
    connect_refused = connect[2].startswith(b'{"code":"resource_exhausted","message":"overloaded: ')
    if connect_refused:
        assert (connect[0], connect[1]["retry-after"]) == (429, "1"), connect
    else:
        assert b'"message":"protobuf: decoding push.v1.PushRequest' in connect[2], connect
    m = srv.metrics()
    assert m["profstore_ingest_decode_rejected_total"] == len(refused) + (rw[0] == 503) + connect_refused
    assert m["profstore_ingest_decode_threads"] == 1
    ok = sorted("j%d" % i for i, a in enumerate(answers) if a[0] == 200)
    srv.restart(kill=True)  # every 200 is durable
    assert sorted({s["labels"]["job"] for s in srv.series()}) == ok


def thread_priorities(pid):
    """{tid: (nice, scheduling policy)} of every thread of pid, from /proc/<pid>/task/<tid>/stat."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        fields = open("/proc/%d/task/%s/stat" % (pid, tid)).read().rsplit(")", 1)[1].split()
        out[int(tid)] = (int(fields[16]), int(fields[38]))  # stat fields 19 (nice) and 41 (policy)
    return out


def test_decode_threads_run_below_the_loops(make_server):
    # under a push flood every decode thread always has work: at nice 5 (SCHED_OTHER) a loop that
    # has a 429 or /-/healthy to answer gets the CPU before them; query threads stay SCHED_IDLE
    # (policy 5) at nice 19; the loops, the writer and the rest at nice 0
    srv = make_server(threads="2", extra_args=["--ingest.decode-threads", "3", "--query.max-concurrency", "4"])
    deadline = time.monotonic() + 10
    while True:  # each pool thread sets its own priority as it starts, maybe after /-/ready
        prio = thread_priorities(srv.proc.pid)
        by = {}
        for nice, policy in prio.values():
            by[(nice, policy)] = by.get((nice, policy), 0) + 1
        if (by.get((5, 0)), by.get((19, 5))) == (3, 4) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert by.pop((5, 0)) == 3, prio
    assert by.pop((19, 5)) == 4, prio
    assert list(by) == [(0, 0)], prio
    assert by[(0, 0)] >= 3, prio  # main, the writer, the two loops at least


def test_threads_are_named(make_server):
    # what top -H, ps -L and perf show: each thread says what it is, and the pools' priorities
    # go with their names
    srv = make_server(threads="2", extra_args=["--ingest.decode-threads", "3", "--query.max-concurrency", "4"])
    want = ["decode-0", "decode-1", "decode-2", "http-0", "http-1", "profstore", "query-0", "query-1", "query-2",
            "query-3", "syncer", "writer"]

    def expected(name):
        return (5, 0) if name.startswith("decode-") else (19, 5) if name.startswith("query-") else (0, 0)

    deadline = time.monotonic() + 10
    while True:  # pool threads name themselves, then set their priority, as they start
        got = []
        for tid, p in thread_priorities(srv.proc.pid).items():
            got.append((open("/proc/%d/task/%d/comm" % (srv.proc.pid, tid)).read().strip(), p))
        got.sort()
        if got == [(n, expected(n)) for n in want] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got == [(n, expected(n)) for n in want]


def read_answers(s, n):
    """n HTTP/1 answers read off s in order: [(status, body)]."""
    data, out = b"", []
    while len(out) < n:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            lines = data[:head_end].decode().split("\r\n")
            hdrs = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
            end = head_end + 4 + int(hdrs["content-length"])
            if len(data) >= end:
                out.append((int(lines[0].split()[1]), data[head_end + 4:end]))
                data = data[end:]
                continue
        part = s.recv(65536)
        assert part, "the connection closed after %d answers" % len(out)
        data += part
    return out


def push_request(body, job, last=False):
    return (("POST /api/v1/profiles/write?labels=%%7Bjob%%3D%%22%s%%22%%7D HTTP/1.1\r\nHost: x\r\n"
             "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n%s\r\n")
            % (job, len(body), "Connection: close\r\n" if last else "")).encode() + body


def test_pipelined_pushes_each_answered(make_server):
    # HTTP/1 pushes pipelined on one connection, 6 x ~11 KB: while one is decoded its connection is
    # read on (the next ones pile up in h2o's input buffer, which grows and moves); each is
    # answered in order and stored
    srv = make_server(retention="0", threads="1", extra_args=["--ingest.decode-threads", "1"])
    body = fixture_bytes(CPU)
    jobs = ["p%d" % i for i in range(6)]
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"".join(push_request(body, j, last=(i == len(jobs) - 1)) for i, j in enumerate(jobs)))
    answers = read_answers(s, len(jobs))
    assert recv_all(s) == b""
    s.close()
    for (st, data), job in zip(answers, jobs):
        js = json.loads(data)
        assert (st, js["data"]["samples"], js["data"]["duplicate"]) == (200, 272, False), data
        assert [x["labels"]["job"] for x in js["data"]["series"]] == [job, job], data
    assert sorted({x["labels"]["job"] for x in srv.series()}) == jobs
    assert srv.metrics()["profstore_ingest_profiles_total"] == len(jobs)


def test_push_whose_client_half_closes_is_stored(make_server):
    # a write runs to its end: 16 pushes, each half-closed (EOF) by its client as soon as sent,
    # queue behind one decode thread; every one is still decoded, stored and answered 200
    srv = make_server(retention="0", threads="1", extra_args=["--ingest.decode-threads", "1"])
    body = fixture_bytes(CPU)
    jobs = ["h%d" % i for i in range(16)]
    socks = []
    for j in jobs:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall(push_request(body, j))
        s.shutdown(socket.SHUT_WR)
        socks.append(s)
    answers = [read_answers(s, 1)[0] for s in socks]
    for s in socks:
        s.close()
    assert [st for st, _ in answers] == [200] * len(jobs), answers
    assert sorted({x["labels"]["job"] for x in srv.series()}) == sorted(jobs)
    assert srv.metrics()["profstore_ingest_profiles_total"] == len(jobs)


def pb_field(num, wire, payload):
    """One protobuf field: a varint (wire 0), 8 bytes (wire 1) or length-delimited bytes (wire 2)."""
    def varint(n):
        out = b""
        while True:
            out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if n == 0:
                return out
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 1:
        return key + payload
    return key + varint(len(payload)) + payload


def rw_body(series):
    """A snappy remote-write 1.0 body: series [(labels dict, t_ms, value)], one sample each."""
    import snappy
    import struct
    req = b""
    for labels, t, v in series:
        ts = b"".join(pb_field(1, 2, pb_field(1, 2, k.encode()) + pb_field(2, 2, labels[k].encode()))
                      for k in sorted(labels))
        ts += pb_field(2, 2, pb_field(1, 1, struct.pack("<d", v)) + pb_field(2, 0, t))
        req += pb_field(1, 2, ts)
    return snappy.compress(req)


def decode_thread_switches(pid):
    """The context switches of the decode threads of pid so far."""
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        if open("/proc/%d/task/%s/comm" % (pid, tid)).read().startswith("decode-"):
            for line in open("/proc/%d/task/%s/status" % (pid, tid)):
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
    return n


def test_small_remote_write_decoded_on_its_loop(make_server):
    # a remote-write body of at most 2 KiB (PS_RUN_HERE_MAX: a request of a few samples) is decoded
    # on its loop, no decode thread woken for it, and answered only once durable (kill -9 keeps
    # every 204); a larger body goes to the decode pool
    srv = make_server(retention="0", threads="1", extra_args=["--ingest.decode-threads", "2"])
    h = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
         "X-Prometheus-Remote-Write-Version": "0.1.0"}
    t0 = int(time.time() * 1000) // 1000 * 1000 - 60000
    time.sleep(0.2)  # the decode threads started and sleep
    before = decode_thread_switches(srv.proc.pid)
    for i in range(30):
        body = rw_body([({"__name__": "small_total", "job": "here"}, t0 + 1000 * i, float(i))])
        assert len(body) <= 2048
        st, _, data = srv.request("POST", "/api/v1/write", body=body, headers=h)
        assert st == 204, data
    # pipelined on one connection: read on while each is written, answered in order
    reqs = b""
    for i in range(30, 36):
        body = rw_body([({"__name__": "small_total", "job": "here"}, t0 + 1000 * i, float(i))])
        reqs += ("POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s%s\r\n"
                 % (len(body), "".join("%s: %s\r\n" % kv for kv in h.items()),
                    "Connection: close\r\n" if i == 35 else "")).encode() + body
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(reqs)
    assert read_answers(s, 6) == [(204, b"")] * 6
    assert recv_all(s) == b""
    s.close()
    assert decode_thread_switches(srv.proc.pid) == before
    big = rw_body([({"__name__": "big_total", "job": "pool", "i": "%05d" % i}, t0, float(i)) for i in range(300)])
    assert len(big) > 2048
    st, _, data = srv.request("POST", "/api/v1/write", body=big, headers=h)
    assert st == 204, data
    assert decode_thread_switches(srv.proc.pid) > before
    srv.restart(kill=True)
    got = {}
    for s in srv.get_json("/api/v1/debug/series")["data"]:
        if s.get("kind") == "float":
            got.setdefault(s["labels"]["__name__"], []).append([x[:2] for x in s["samples"]])
    assert got["small_total"] == [[[t0 + 1000 * i, str(i)] for i in range(36)]]
    assert len(got["big_total"]) == 300
