"""Overload has a defined answer: past the write queue's bound (--storage.write-queue-max-items,
--storage.write-queue-max-bytes) pushes get 429 (remote write 503: Prometheus 2.42 retries a 429 only
with retry_on_http_429) with Retry-After and a message in the API's error shape, health and reads
keep answering, and every 200 is durable. Gzip bombs in parallel stay within the process-wide
budget of bytes being decompressed at once (--max-inflated-total): each is refused (413 at its own
limit, 503 + Retry-After past the budget) and the server's peak RSS grows by about the budget, not
by the bombs times the threads. (The 10x load for 60 s is bench/overload.py.)"""

import gzip
import json
import threading
import time
import urllib.parse
import zlib

from conftest import fixture_bytes
from pyro_util import connect_call, cpu_push_request, pyro_pb
from test_remote_write import pb, post, v1_body  # noqa: F401 (pb: the fixture)


def wait_queued(srv, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while srv.metrics()["profstore_write_queue_items"] != n:
        assert time.monotonic() < deadline, "the queue never held %d" % n
        time.sleep(0.01)


def test_full_queue_429_with_retry_after_every_200_durable(make_server, pb):
    # a long group-commit delay holds the second push queued (the first commits at once)
    srv = make_server(retention="0", storage_commit_delay="3s", storage_write_queue_max_items="1")
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}')
    assert st == 200, js
    held = {}
    t = threading.Thread(target=lambda: held.update(r=srv.push("go/cpu-02.pb.gz", labels='{job="b"}')))
    t.start()
    wait_queued(srv, 1)
    want = ("write queue is full (1 requests, 0 MiB waiting for the writer; limits --storage.write-queue-max-items=1, "
            "--storage.write-queue-max-bytes=256 MiB): retry later")
    # the native push: 429, Prometheus' envelope
    st, js = srv.push("go/cpu-03.pb.gz", labels='{job="c"}')
    assert (st, js) == (429, {"status": "error", "errorType": "unavailable", "error": want})
    assert srv.last_headers["retry-after"] == "1"
    # remote write: 503 (retried by every Prometheus), text
    st, hdrs, data = post(srv, v1_body(pb, [({"__name__": "up", "job": "x"}, [(int(time.time()) * 1000, 1)])]))
    assert (st, data.decode(), hdrs["retry-after"]) == (503, want + "\n", "1")
    # Connect push: resource_exhausted (429)
    req = cpu_push_request(fixture_bytes("go/cpu-04.pb.gz"))
    r = connect_call(srv.port, "push.v1.PusherService/Push", req, resp_type=pyro_pb().push.PushResponse)
    assert (r.status, r.error, r.headers["retry-after"]) == (429, {"code": "resource_exhausted", "message": want}, "1")
    # Pyroscope's /ingest: 429
    q = urllib.parse.urlencode({"name": "app.cpu", "from": int(time.time()) - 10})
    st, hdrs, body = srv.request("POST", "/ingest?" + q, body=b"a;b;c 10\n")
    assert (st, json.loads(body)["error"], hdrs["retry-after"]) == (429, want, "1")
    # health and reads keep answering meanwhile
    assert srv.get("/-/healthy")[0] == 200
    assert srv.get_json("/api/v1/labels")["status"] == "success"
    m = srv.metrics()
    assert m['profstore_writes_refused_total{reason="queue_full"}'] == 4
    assert m["profstore_write_queue_bytes"] > len(fixture_bytes("go/cpu-02.pb.gz"))
    t.join()
    assert held["r"][0] == 200, held
    srv.restart(kill=True)  # every 200 is durable
    assert sorted(s["labels"]["job"] for s in srv.series()) == ["a", "a", "b", "b"]


def test_queue_bound_in_bytes(make_server):
    srv = make_server(retention="0", storage_commit_delay="3s", storage_write_queue_max_bytes="32KiB")
    assert srv.push("go/cpu-01.pb.gz", labels='{job="a"}')[0] == 200
    held = {}
    t = threading.Thread(target=lambda: held.update(r=srv.push("go/heap-01.pb.gz", labels='{job="b"}')))
    t.start()
    wait_queued(srv, 1)
    qb = int(srv.metrics()["profstore_write_queue_bytes"])
    assert qb > 32 << 10  # one request alone is always taken, whatever its size
    st, js = srv.push("go/cpu-03.pb.gz", labels='{job="c"}')
    assert (st, js["error"]) == (429, "write queue is full (1 requests, %d MiB waiting for the writer; limits "
                                      "--storage.write-queue-max-items=8192, --storage.write-queue-max-bytes=0 MiB): "
                                      "retry later" % (qb >> 20))
    t.join()
    assert held["r"][0] == 200


def bomb(inflated):
    """A gzip member of inflated zero bytes (~1/1000 of it), built without holding it whole."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    out = [z.compress(chunk) for _ in range(inflated >> 20)]
    out.append(z.flush())
    return b"".join(out)


def vm_hwm(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmHWM")


def test_gzip_bombs_in_parallel_stay_within_the_budget(make_server):
    limit = 64 << 20
    srv = make_server(retention="0", threads=4, max_inflated_size="64MiB")  # the budget: the same 64 MiB
    body = bomb(255 << 20)
    assert len(body) < 300000
    assert srv.push("go/cpu-01.pb.gz", labels='{job="warm"}')[0] == 200
    base = vm_hwm(srv.proc.pid)
    results = [None] * 8

    def one(i):
        results[i] = srv.push(body, labels='{job="bomb%d"}' % i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r[0] for r in results)
    # each is refused: 413 when it ran into its own limit, 503 when the others held the budget
    # (two growing at once can both be refused, so which ones get 413 is the scheduler's call)
    assert set(statuses) <= {413, 503}, results
    for st, js in results:
        if st == 413:
            assert js["error"] == "decompressed body exceeds %d bytes" % limit, js
        else:
            assert js["error"].startswith("too much is being decompressed at once ("), js
            assert js["error"].endswith(" of %d bytes, --max-inflated-total): retry later" % limit), js
    assert srv.metrics()['profstore_writes_refused_total{reason="inflate_budget"}'] == statuses.count(503)
    # the peak grew by the budget (64 MiB of output being inflated at once) plus the bodies and
    # zlib's state (~300 KiB each), not by 4 threads x 64 MiB
    grown = vm_hwm(srv.proc.pid) - base
    assert grown < limit + (16 << 20), "VmHWM grew by %d MiB" % (grown >> 20)
    # alone, a bomb always gets its own full limit: 413, never the budget's 503
    st, js = srv.push(body, labels='{job="alone"}')
    assert (st, js["error"]) == (413, "decompressed body exceeds %d bytes" % limit), js
    st, js = srv.push("go/cpu-02.pb.gz", labels='{job="after"}')
    assert st == 200, js
