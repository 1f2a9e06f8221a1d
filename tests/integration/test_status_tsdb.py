"""GET /api/v1/status/tsdb: Prometheus' shape (headStats, the four top lists, `limit`) over what
is stored, and profstore's storage figures under "storage" (equal to /metrics' profstore_storage_*),
against known pushes: exact counts, order (value descending, then name), the profiles' time range."""

import urllib.parse

import pytest

CPU = ["process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", "process_cpu:samples:count:cpu:nanoseconds:delta"]
HEAP = ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
        "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]
T0 = 1796022000


def push(srv, rel, ts, **labels):
    q = urllib.parse.urlencode({"time": str(ts), "labels": ",".join('%s="%s"' % kv for kv in labels.items())})
    st, js = srv.push(rel, query=q)
    assert st == 200, srv.last_raw


def tsdb(srv, **params):
    js = srv.get_json("/api/v1/status/tsdb" + ("?" + urllib.parse.urlencode(params) if params else ""))
    assert js["status"] == "success"
    return js["data"]


def stats(rows):
    return [(r["name"], r["value"]) for r in rows]


def test_empty_store(server):
    d = tsdb(server)
    assert d["headStats"] == {"numSeries": 0, "numLabelPairs": 0, "chunkCount": 0, "minTime": 0, "maxTime": 0}
    for k in ("seriesCountByMetricName", "labelValueCountByLabelName", "memoryInBytesByLabelName",
              "seriesCountByLabelValuePair"):
        assert d[k] == [], k
    assert d["storage"]["profileSeries"] == 0 and d["storage"]["floatSeries"] == 0


def test_counts_of_known_pushes(server):
    push(server, "go/cpu-01.pb.gz", T0, job="api", instance="a:6060")
    push(server, "go/cpu-02.pb.gz", T0 + 600, job="api", instance="a:6060")
    push(server, "go/cpu-03.pb.gz", T0 + 300, job="api", instance="b:6060")
    push(server, "go/heap-01.pb.gz", T0 + 1200, job="db", instance="a:6060")
    d = tsdb(server)
    hs = d["headStats"]
    assert hs == {"numSeries": 8, "numLabelPairs": 2 + 2 + 6, "chunkCount": 0,
                  "minTime": T0 * 1000, "maxTime": (T0 + 1200) * 1000}
    # 2 CPU types x 2 instances, 4 heap types x 1
    assert stats(d["seriesCountByMetricName"]) == [(CPU[0], 2), (CPU[1], 2), (HEAP[0], 1), (HEAP[1], 1),
                                                   (HEAP[2], 1), (HEAP[3], 1)]
    assert stats(d["labelValueCountByLabelName"]) == [("__name__", 6), ("instance", 2), ("job", 2)]
    assert stats(d["memoryInBytesByLabelName"]) == [("__name__", sum(map(len, CPU + HEAP))),
                                                    ("instance", 12), ("job", 5)]
    assert stats(d["seriesCountByLabelValuePair"]) == [
        ("instance=a:6060", 6), ("job=api", 4), ("job=db", 4),
        ("__name__=" + CPU[0], 2), ("__name__=" + CPU[1], 2), ("instance=b:6060", 2),
        ("__name__=" + HEAP[0], 1), ("__name__=" + HEAP[1], 1), ("__name__=" + HEAP[2], 1), ("__name__=" + HEAP[3], 1)]
    st = d["storage"]
    m = server.metrics()
    assert (st["profileSeries"], st["floatSeries"]) == (8, 0)
    assert st["headRecords"] == m["profstore_storage_head_records"] == 2 * 3 + 4
    assert st["chunks"] == m["profstore_storage_chunks"]
    assert st["stackNodes"] == m["profstore_storage_stack_nodes"]
    assert st["fileBytes"] == m["profstore_storage_file_bytes"]
    assert st["usedBytes"] == m["profstore_storage_used_bytes"]
    assert set(st) == {"profileSeries", "floatSeries", "headRecords", "chunks", "floatHeads", "floatChunks",
                       "stackNodes", "strings", "functions", "locations", "mappings", "metricMetadata",
                       "fileBytes", "usedBytes"}

    d2 = tsdb(server, limit=2)
    assert stats(d2["seriesCountByMetricName"]) == [(CPU[0], 2), (CPU[1], 2)]
    assert stats(d2["seriesCountByLabelValuePair"]) == [("instance=a:6060", 6), ("job=api", 4)]
    assert stats(d2["labelValueCountByLabelName"]) == [("__name__", 6), ("instance", 2)]
    assert d2["headStats"] == hs


@pytest.mark.parametrize("limit", ["0", "-1", "x", "10001", "1.5"])
def test_bad_limit(server, limit):
    st, _, body = server.get("/api/v1/status/tsdb?limit=" + limit)
    assert st == 400
    assert body == (b'{"status":"error","errorType":"bad_data","error":"invalid parameter \\"limit\\": expected an '
                    b'integer from 1 to 10000, got \\"' + limit.encode() + b'\\""}\n')


def test_get_only(server):
    st, h, _ = server.request("POST", "/api/v1/status/tsdb", body=b"")
    assert (st, h["allow"]) == (405, "GET")
