#!/usr/bin/env python3
"""bench/grpc_listener.py - the gRPC listener (grpc/) beside the main HTTP port, in one run of one server:
health checks per second (grpc.health.v1.Health/Check with grpcio, one call at a time and 64 in
flight on one channel; GET /-/healthy over one HTTP/1.1 keep-alive connection), and the round trip
of a 1 MiB request message (the OTLP Export method, which answers INVALID_ARGUMENT once the whole
message, random bytes, is in; beside a 1 MiB POST /api/v1/profiles/write of bytes that are not a profile, answered
400 once read). Prints, never asserts.

    bench/grpc_listener.py [--profstore BUILD/profstore] [--calls 5000] [--rounds 50]
"""

import argparse
import http.client
import os
import statistics
import tempfile
import time
from pathlib import Path

import bench_env  # noqa: F401  (tests/integration on sys.path, PROFSTORE_BIN)

HEALTH = "/grpc.health.v1.Health/Check"
EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"


def ident(b):
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()
    if a.profstore:
        os.environ["PROFSTORE_BIN"] = str(Path(a.profstore).resolve())
    import grpc
    from conftest import Server, free_port

    gport = free_port()
    with tempfile.TemporaryDirectory() as td:
        srv = Server(Path(td), extra_args=["--grpc.listen-address", "127.0.0.1:%d" % gport,
                                           "--grpc.max-recv-msg-size", "4MiB"], max_body_size="4MiB")
        srv.start()
        try:
            ch = grpc.insecure_channel("127.0.0.1:%d" % gport,
                                       options=[("grpc.max_send_message_length", -1)])
            check = ch.unary_unary(HEALTH, request_serializer=ident, response_deserializer=ident)
            export = ch.unary_unary(EXPORT, request_serializer=ident, response_deserializer=ident)
            assert check(b"", timeout=5) == b"\x08\x01"
            for _ in range(200):
                check(b"", timeout=5)
            t0 = time.perf_counter()
            for _ in range(a.calls):
                check(b"", timeout=5)
            seq = a.calls / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            pending = []
            done = 0
            while done < a.calls:
                while len(pending) < 64 and done + len(pending) < a.calls:
                    pending.append(check.future(b"", timeout=10))
                pending.pop(0).result()
                done += 1
            par = a.calls / (time.perf_counter() - t0)

            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            for _ in range(200):
                conn.request("GET", "/-/healthy")
                conn.getresponse().read()
            t0 = time.perf_counter()
            for _ in range(a.calls):
                conn.request("GET", "/-/healthy")
                r = conn.getresponse()
                r.read()
                assert r.status == 200
            h1 = a.calls / (time.perf_counter() - t0)

            big = os.urandom(1 << 20)
            times = []
            for _ in range(a.rounds):
                t0 = time.perf_counter()
                try:
                    export(big, timeout=30)
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
                times.append(time.perf_counter() - t0)
            g_rt = statistics.median(times)
            times = []
            for _ in range(a.rounds):
                t0 = time.perf_counter()
                conn.request("POST", "/api/v1/profiles/write", body=big)
                r = conn.getresponse()
                r.read()
                assert r.status == 400, r.status
                times.append(time.perf_counter() - t0)
            h_rt = statistics.median(times)
            print("gRPC Health/Check, one at a time:     %8.0f calls/s (%.0f µs each)" % (seq, 1e6 / seq))
            print("gRPC Health/Check, 64 in flight:      %8.0f calls/s" % par)
            print("HTTP/1.1 GET /-/healthy, keep-alive:  %8.0f requests/s (%.0f µs each)" % (h1, 1e6 / h1))
            print("1 MiB request, gRPC Export (invalid):  %8.2f ms median round trip of %d" % (g_rt * 1e3, a.rounds))
            print("1 MiB request, HTTP/1.1 POST (400):   %8.2f ms median round trip of %d" % (h_rt * 1e3, a.rounds))
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
