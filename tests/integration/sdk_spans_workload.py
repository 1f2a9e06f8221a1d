"""The Python side of test_sdk_spans.py: a program profiled by the real Pyroscope Python SDK
(pyroscope-io, with pyroscope-otel's span processor on an OpenTelemetry tracer provider) doing CPU
work inside two root spans, so that each span's samples carry the tags span_id, span_name and
trace_id. Run by the venv's python (SERVER_URL, APP_NAME, WORK_S from the environment); prints one
line per span, "span <name> <16-hex span id> <32-hex trace id>", and "pushed" after shutdown (which
sends the last report)."""

import os
import time

import pyroscope
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pyroscope.otel import PyroscopeSpanProcessor


def hash_work(seconds):
    """FNV-1a over a buffer in Python (hashlib would leave the GIL, and gil_only sampling with it)."""
    end = time.time() + seconds
    buf = bytes(range(256)) * 16
    while time.time() < end:
        h = 0xcbf29ce484222325
        for b in buf:
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff


def sort_work(seconds):
    end = time.time() + seconds
    while time.time() < end:
        sorted((i * 7919) % 4093 for i in range(4096))


def main():
    pyroscope.configure(application_name=os.environ.get("APP_NAME", "pyspanapp"),
                        server_address=os.environ["SERVER_URL"], sample_rate=100, tags={"env": "test"},
                        oncpu=True, gil_only=True)
    provider = TracerProvider()
    provider.add_span_processor(PyroscopeSpanProcessor())
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("sdk_spans_workload")
    work = float(os.environ.get("WORK_S", "1.5"))
    for name, fn in (("hash-span", hash_work), ("sort-span", sort_work)):
        with tracer.start_as_current_span(name) as span:  # a root span: its samples get span_id
            ctx = span.get_span_context()
            print("span %s %016x %032x" % (name, ctx.span_id, ctx.trace_id), flush=True)
            fn(work)
    pyroscope.shutdown()
    print("pushed", flush=True)


if __name__ == "__main__":
    main()
