#!/usr/bin/python3
"""capture.py - an HTTP server on 127.0.0.1 that keeps what real clients send (tests/testdata/make.sh).

    capture.py --port P --out DIR [--max N]

Every request gets one line in DIR/requests.log (method, URL, body length, Content-Type). The first
N (default 5) of each kind are saved as DIR/KIND-NN.bin (the body, byte for byte) and
DIR/KIND-NN.txt (the request line, the headers as received, in order, a blank line and
"# body: N bytes, sha256 H"). Kinds: remote-write (POST /api/v1/write with series),
remote-write-metadata (one with metadata only), remote-read (/api/v1/read), ingest (/ingest),
push (Connect /push.v1.PusherService/Push), other. Answers: 200 with an empty body; /api/v1/read an empty ReadResponse (one empty result per
query, snappy), which Prometheus' remote read accepts."""

import argparse
import hashlib
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import snappy

sys.dont_write_bytecode = True  # no __pycache__ in tests/testdata
from promjson import fields  # noqa: E402


def kind_of(path, body):
    path = path.split("?")[0]
    if path.endswith("/api/v1/write"):
        try:
            nums = {n for n, _, _ in fields(snappy.uncompress(body))}
        except Exception:
            return "remote-write"
        return "remote-write-metadata" if 1 not in nums and 3 in nums else "remote-write"
    if path.endswith("/api/v1/read"):
        return "remote-read"
    if path.endswith("/ingest"):
        return "ingest"
    if path.endswith("/push.v1.PusherService/Push"):
        return "push"
    return "other"


class Capture(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    out = "."
    most = 5
    counts = {}
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def handle_any(self):
        body = self.body()
        kind = kind_of(self.path, body)
        with self.lock:
            n = self.counts[kind] = self.counts.get(kind, 0) + 1
            with open(os.path.join(self.out, "requests.log"), "a") as log:
                log.write("%s %s len=%d content-type=%s\n" % (self.command, self.path, len(body),
                                                               self.headers.get("Content-Type")))
            if n <= self.most:
                base = os.path.join(self.out, "%s-%02d" % (kind, n))
                with open(base + ".bin", "wb") as f:
                    f.write(body)
                with open(base + ".txt", "w") as f:
                    f.write(self.requestline + "\n")
                    for k, v in self.headers.items():
                        f.write("%s: %s\n" % (k, v))
                    f.write("\n# body: %d bytes, sha256 %s\n" % (len(body), hashlib.sha256(body).hexdigest()))
        answer, ctype = b"", "text/plain"
        if kind == "remote-read":
            queries = sum(1 for n, _, _ in fields(snappy.uncompress(body)) if n == 1)
            answer, ctype = snappy.compress(b"\x0a\x00" * queries), "application/x-protobuf"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if answer:
            self.send_header("Content-Encoding", "snappy")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_POST = do_GET = do_PUT = handle_any


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    Capture.out, Capture.most = a.out, a.max
    ThreadingHTTPServer(("127.0.0.1", a.port), Capture).serve_forever()


if __name__ == "__main__":
    main()
