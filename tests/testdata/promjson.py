#!/usr/bin/python3
"""promjson.py - a captured Prometheus remote-write or remote-read body as JSON (the .json files
beside the .bin files in tests/testdata/prometheus, which the unit tests compare with their decoder).

    promjson.py write|read|readresp FILE.bin > FILE.json

write: a snappy-compressed prompb.WriteRequest; read: a ReadRequest; readresp: a ReadResponse
(SAMPLES). Snappy block format via python3-snappy; the protobuf is walked by hand (field numbers of
Prometheus' prompb/remote.proto and types.proto), so no generated code is needed. Output: indent 1,
labels as an object, samples as {"value", "timestamp_ms"}, exemplars and histograms counted,
hints' fields in the order they come on the wire (after "grouping")."""

import json
import struct
import sys

import snappy

METRIC_TYPES = ["UNKNOWN", "COUNTER", "GAUGE", "HISTOGRAM", "GAUGEHISTOGRAM", "SUMMARY", "INFO", "STATESET"]
MATCHER_TYPES = ["EQ", "NEQ", "RE", "NRE"]
RESPONSE_TYPES = ["SAMPLES", "STREAMED_XOR_CHUNKS"]


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def fields(b):
    """(field number, wire type, value) of each field of message b: ints for varints, bytes for
    length-delimited and fixed-size fields."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d at %d" % (wt, i))
        yield num, wt, v


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def enum(names, v):
    return names[v] if v < len(names) else v


def strings(b, **names):
    """A message of string fields: {name: text} for the numbers given as name=number."""
    by_num = {n: k for k, n in names.items()}
    return {by_num[n]: v.decode() for n, _, v in fields(b) if n in by_num}


def timeseries(b):
    ts = {"labels": {}, "samples": [], "exemplars": 0, "histograms": 0}
    for n, _, v in fields(b):
        if n == 1:
            lb = strings(v, name=1, value=2)
            ts["labels"][lb.get("name", "")] = lb.get("value", "")
        elif n == 2:
            s = {"value": 0.0, "timestamp_ms": 0}
            for m, _, x in fields(v):
                if m == 1:
                    s["value"] = struct.unpack("<d", x)[0]
                elif m == 2:
                    s["timestamp_ms"] = int64(x)
            ts["samples"].append(s)
        elif n == 3:
            ts["exemplars"] += 1
        elif n == 4:
            ts["histograms"] += 1
    return ts


def write_request(b):
    out = {"timeseries": [], "metadata": []}
    for n, _, v in fields(b):
        if n == 1:
            out["timeseries"].append(timeseries(v))
        elif n == 3:
            md = {}
            for m, _, x in fields(v):
                if m == 1:
                    md["type"] = enum(METRIC_TYPES, x)
                elif m == 2:
                    md["metric_family_name"] = x.decode()
                elif m == 4:
                    md["help"] = x.decode()
                elif m == 5:
                    md["unit"] = x.decode()
            out["metadata"].append(md)
    return out


HINTS = {1: "step_ms", 2: "func", 3: "start_ms", 4: "end_ms", 6: "by", 7: "range_ms"}


def query(b):
    q = {"matchers": [], "hints": None}
    start = end = 0
    for n, _, v in fields(b):
        if n == 1:
            start = int64(v)
        elif n == 2:
            end = int64(v)
        elif n == 3:
            m = {"type": "EQ", "name": "", "value": ""}
            for k, _, x in fields(v):
                if k == 1:
                    m["type"] = enum(MATCHER_TYPES, x)
                elif k == 2:
                    m["name"] = x.decode()
                elif k == 3:
                    m["value"] = x.decode()
            q["matchers"].append(m)
        elif n == 4:
            h = {"grouping": []}
            for k, _, x in fields(v):
                if k == 5:
                    h["grouping"].append(x.decode())
                elif k == 2:
                    h["func"] = x.decode()
                elif k == 6:
                    h["by"] = bool(x)
                elif k in HINTS:
                    h[HINTS[k]] = int64(x)
            q["hints"] = h
    if q["hints"] is None:
        del q["hints"]
    q["start_timestamp_ms"], q["end_timestamp_ms"] = start, end
    return q


def read_request(b):
    out = {"queries": [], "accepted_response_types": []}
    for n, wt, v in fields(b):
        if n == 1:
            out["queries"].append(query(v))
        elif n == 2 and wt == 0:
            out["accepted_response_types"].append(enum(RESPONSE_TYPES, v))
        elif n == 2:  # packed
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out["accepted_response_types"].append(enum(RESPONSE_TYPES, x))
    return out


def read_response(b):
    return {"results": [[timeseries(t) for m, _, t in fields(r) if m == 1] for n, _, r in fields(b) if n == 1]}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read", "readresp"):
        sys.exit(__doc__)
    raw = snappy.uncompress(open(sys.argv[2], "rb").read())
    msg = {"write": write_request, "read": read_request, "readresp": read_response}[sys.argv[1]](raw)
    sys.stdout.write(json.dumps(msg, indent=1) + "\n")


if __name__ == "__main__":
    main()
