"""A small stdlib-only pprof (perftools.profiles.Profile) decoder and encoder for the tests.

decode(data) accepts gzipped or raw protobuf and returns a Profile whose fields mirror
proto/profile.proto with plain Python values (string indexes kept as indexes). Repeated scalar
fields are accepted both packed (wire type 2) and unpacked (wire type 0), as Go writes both.

encode(profile, gzip_level=None) writes a Profile back. It does not validate anything, so the
tests can build deliberately broken profiles (string index out of range, undefined ids, wrong
value counts, no sample types) by editing a decoded or hand-built Profile.

canonical(profile, type_index) gives the multiset that the round-trip tests compare: after
summing samples with identical (stack, labels) and dropping zero values, a dict
{(stack, labels): value} where stack and labels are fully resolved (no ids or string indexes).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

__all__ = [
    "Profile", "ValueType", "Sample", "Label", "Mapping", "Location", "Line", "Function",
    "decode", "encode", "canonical", "totals", "gunzip_if_needed", "DecodeError",
    "minimal_profile",
]


class DecodeError(ValueError):
    pass


# ---- wire level ---------------------------------------------------------------------------

WT_VARINT, WT_I64, WT_LEN, WT_I32 = 0, 1, 2, 5


def read_varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint too long")


def to_signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= (1 << 63) else v


def iter_fields(buf: bytes):
    """Yields (field number, wire type, value): int for varint/fixed, bytes for LEN."""
    pos = 0
    n = len(buf)
    while pos < n:
        tag, pos = read_varint(buf, pos)
        num, wt = tag >> 3, tag & 7
        if num == 0:
            raise DecodeError("field number 0")
        if wt == WT_VARINT:
            v, pos = read_varint(buf, pos)
        elif wt == WT_LEN:
            ln, pos = read_varint(buf, pos)
            if pos + ln > n:
                raise DecodeError("length-delimited field runs past the end")
            v = bytes(buf[pos:pos + ln])
            pos += ln
        elif wt == WT_I64:
            if pos + 8 > n:
                raise DecodeError("truncated fixed64")
            v = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wt == WT_I32:
            if pos + 4 > n:
                raise DecodeError("truncated fixed32")
            v = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise DecodeError("unsupported wire type %d" % wt)
        yield num, wt, v


def repeated_varints(wt: int, v) -> List[int]:
    """One unpacked element (wire type 0) or a packed run (wire type 2)."""
    if wt == WT_VARINT:
        return [v]
    if wt != WT_LEN:
        raise DecodeError("repeated varint field with wire type %d" % wt)
    out = []
    pos = 0
    while pos < len(v):
        x, pos = read_varint(v, pos)
        out.append(x)
    return out


def put_varint(out: bytearray, v: int) -> None:
    v &= (1 << 64) - 1  # negative int64 -> 10-byte two's complement, as protobuf does
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def varint(v: int) -> bytes:
    """v as a protobuf varint (put_varint's bytes)."""
    out = bytearray()
    put_varint(out, v)
    return bytes(out)


def put_tag(out: bytearray, num: int, wt: int) -> None:
    put_varint(out, (num << 3) | wt)


def put_len(out: bytearray, num: int, payload: bytes) -> None:
    put_tag(out, num, WT_LEN)
    put_varint(out, len(payload))
    out += payload


def put_int(out: bytearray, num: int, v: int, always: bool = False) -> None:
    if v or always:
        put_tag(out, num, WT_VARINT)
        put_varint(out, v)


def put_packed(out: bytearray, num: int, values: List[int], packed: bool = True) -> None:
    if not values:
        return
    if packed:
        body = bytearray()
        for x in values:
            put_varint(body, x)
        put_len(out, num, bytes(body))
    else:
        for x in values:
            put_tag(out, num, WT_VARINT)
            put_varint(out, x)


# ---- messages -----------------------------------------------------------------------------

@dataclass
class ValueType:
    type: int = 0
    unit: int = 0


@dataclass
class Label:
    key: int = 0
    str: int = 0
    num: int = 0
    num_unit: int = 0


@dataclass
class Sample:
    location_id: List[int] = field(default_factory=list)
    value: List[int] = field(default_factory=list)
    label: List[Label] = field(default_factory=list)


@dataclass
class Mapping:
    id: int = 0
    memory_start: int = 0
    memory_limit: int = 0
    file_offset: int = 0
    filename: int = 0
    build_id: int = 0
    has_functions: bool = False
    has_filenames: bool = False
    has_line_numbers: bool = False
    has_inline_frames: bool = False


@dataclass
class Line:
    function_id: int = 0
    line: int = 0
    column: int = 0


@dataclass
class Location:
    id: int = 0
    mapping_id: int = 0
    address: int = 0
    line: List[Line] = field(default_factory=list)
    is_folded: bool = False


@dataclass
class Function:
    id: int = 0
    name: int = 0
    system_name: int = 0
    filename: int = 0
    start_line: int = 0


@dataclass
class Profile:
    sample_type: List[ValueType] = field(default_factory=list)
    sample: List[Sample] = field(default_factory=list)
    mapping: List[Mapping] = field(default_factory=list)
    location: List[Location] = field(default_factory=list)
    function: List[Function] = field(default_factory=list)
    string_table: List[str] = field(default_factory=list)
    drop_frames: int = 0
    keep_frames: int = 0
    time_nanos: int = 0
    duration_nanos: int = 0
    period_type: Optional[ValueType] = None
    period: int = 0
    comment: List[int] = field(default_factory=list)
    default_sample_type: int = 0
    doc_url: int = 0

    # helpers
    def s(self, i: int) -> str:
        if i < 0 or i >= len(self.string_table):
            raise DecodeError("string index %d out of range (%d strings)" % (i, len(self.string_table)))
        return self.string_table[i]

    def type_names(self) -> List[Tuple[str, str]]:
        return [(self.s(t.type), self.s(t.unit)) for t in self.sample_type]

    def period_type_names(self) -> Optional[Tuple[str, str]]:
        if self.period_type is None:
            return None
        return (self.s(self.period_type.type), self.s(self.period_type.unit))


def _decode_value_type(b: bytes) -> ValueType:
    vt = ValueType()
    for num, wt, v in iter_fields(b):
        if num == 1:
            vt.type = to_signed64(v)
        elif num == 2:
            vt.unit = to_signed64(v)
    return vt


def _decode_label(b: bytes) -> Label:
    lb = Label()
    for num, wt, v in iter_fields(b):
        if num == 1:
            lb.key = to_signed64(v)
        elif num == 2:
            lb.str = to_signed64(v)
        elif num == 3:
            lb.num = to_signed64(v)
        elif num == 4:
            lb.num_unit = to_signed64(v)
    return lb


def _decode_sample(b: bytes) -> Sample:
    s = Sample()
    for num, wt, v in iter_fields(b):
        if num == 1:
            s.location_id.extend(repeated_varints(wt, v))
        elif num == 2:
            s.value.extend(to_signed64(x) for x in repeated_varints(wt, v))
        elif num == 3:
            s.label.append(_decode_label(v))
    return s


def _decode_mapping(b: bytes) -> Mapping:
    m = Mapping()
    for num, wt, v in iter_fields(b):
        if num == 1:
            m.id = v
        elif num == 2:
            m.memory_start = v
        elif num == 3:
            m.memory_limit = v
        elif num == 4:
            m.file_offset = v
        elif num == 5:
            m.filename = to_signed64(v)
        elif num == 6:
            m.build_id = to_signed64(v)
        elif num == 7:
            m.has_functions = bool(v)
        elif num == 8:
            m.has_filenames = bool(v)
        elif num == 9:
            m.has_line_numbers = bool(v)
        elif num == 10:
            m.has_inline_frames = bool(v)
    return m


def _decode_line(b: bytes) -> Line:
    ln = Line()
    for num, wt, v in iter_fields(b):
        if num == 1:
            ln.function_id = v
        elif num == 2:
            ln.line = to_signed64(v)
        elif num == 3:
            ln.column = to_signed64(v)
    return ln


def _decode_location(b: bytes) -> Location:
    loc = Location()
    for num, wt, v in iter_fields(b):
        if num == 1:
            loc.id = v
        elif num == 2:
            loc.mapping_id = v
        elif num == 3:
            loc.address = v
        elif num == 4:
            loc.line.append(_decode_line(v))
        elif num == 5:
            loc.is_folded = bool(v)
    return loc


def _decode_function(b: bytes) -> Function:
    f = Function()
    for num, wt, v in iter_fields(b):
        if num == 1:
            f.id = v
        elif num == 2:
            f.name = to_signed64(v)
        elif num == 3:
            f.system_name = to_signed64(v)
        elif num == 4:
            f.filename = to_signed64(v)
        elif num == 5:
            f.start_line = to_signed64(v)
    return f


def gunzip_if_needed(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    return data


def decode(data: bytes) -> Profile:
    buf = gunzip_if_needed(data)
    p = Profile()
    for num, wt, v in iter_fields(buf):
        if num == 1:
            p.sample_type.append(_decode_value_type(v))
        elif num == 2:
            p.sample.append(_decode_sample(v))
        elif num == 3:
            p.mapping.append(_decode_mapping(v))
        elif num == 4:
            p.location.append(_decode_location(v))
        elif num == 5:
            p.function.append(_decode_function(v))
        elif num == 6:
            p.string_table.append(v.decode("utf-8"))
        elif num == 7:
            p.drop_frames = to_signed64(v)
        elif num == 8:
            p.keep_frames = to_signed64(v)
        elif num == 9:
            p.time_nanos = to_signed64(v)
        elif num == 10:
            p.duration_nanos = to_signed64(v)
        elif num == 11:
            p.period_type = _decode_value_type(v)
        elif num == 12:
            p.period = to_signed64(v)
        elif num == 13:
            p.comment.extend(to_signed64(x) for x in repeated_varints(wt, v))
        elif num == 14:
            p.default_sample_type = to_signed64(v)
        elif num == 15:
            p.doc_url = to_signed64(v)
    return p


# ---- encoding -----------------------------------------------------------------------------

def _enc_value_type(vt: ValueType) -> bytes:
    out = bytearray()
    put_int(out, 1, vt.type)
    put_int(out, 2, vt.unit)
    return bytes(out)


def encode(p: Profile, gzip_level: Optional[int] = None, packed: bool = True) -> bytes:
    """Encodes p. gzip_level None = raw protobuf. packed=False writes repeated scalars unpacked."""
    out = bytearray()
    for vt in p.sample_type:
        put_len(out, 1, _enc_value_type(vt))
    for s in p.sample:
        b = bytearray()
        put_packed(b, 1, s.location_id, packed)
        put_packed(b, 2, s.value, packed)
        for lb in s.label:
            lbb = bytearray()
            put_int(lbb, 1, lb.key)
            put_int(lbb, 2, lb.str)
            put_int(lbb, 3, lb.num)
            put_int(lbb, 4, lb.num_unit)
            put_len(b, 3, bytes(lbb))
        put_len(out, 2, bytes(b))
    for m in p.mapping:
        b = bytearray()
        put_int(b, 1, m.id)
        put_int(b, 2, m.memory_start)
        put_int(b, 3, m.memory_limit)
        put_int(b, 4, m.file_offset)
        put_int(b, 5, m.filename)
        put_int(b, 6, m.build_id)
        put_int(b, 7, int(m.has_functions))
        put_int(b, 8, int(m.has_filenames))
        put_int(b, 9, int(m.has_line_numbers))
        put_int(b, 10, int(m.has_inline_frames))
        put_len(out, 3, bytes(b))
    for loc in p.location:
        b = bytearray()
        put_int(b, 1, loc.id)
        put_int(b, 2, loc.mapping_id)
        put_int(b, 3, loc.address)
        for ln in loc.line:
            lb = bytearray()
            put_int(lb, 1, ln.function_id)
            put_int(lb, 2, ln.line)
            put_int(lb, 3, ln.column)
            put_len(b, 4, bytes(lb))
        put_int(b, 5, int(loc.is_folded))
        put_len(out, 4, bytes(b))
    for f in p.function:
        b = bytearray()
        put_int(b, 1, f.id)
        put_int(b, 2, f.name)
        put_int(b, 3, f.system_name)
        put_int(b, 4, f.filename)
        put_int(b, 5, f.start_line)
        put_len(out, 5, bytes(b))
    for s in p.string_table:
        put_len(out, 6, s.encode("utf-8") if isinstance(s, str) else bytes(s))
    put_int(out, 7, p.drop_frames)
    put_int(out, 8, p.keep_frames)
    put_int(out, 9, p.time_nanos)
    put_int(out, 10, p.duration_nanos)
    if p.period_type is not None:
        put_len(out, 11, _enc_value_type(p.period_type))
    put_int(out, 12, p.period)
    put_packed(out, 13, p.comment, packed)
    put_int(out, 14, p.default_sample_type)
    put_int(out, 15, p.doc_url)
    raw = bytes(out)
    if gzip_level is None:
        return raw
    return gzip.compress(raw, compresslevel=gzip_level)


def minimal_profile() -> Profile:
    """A small valid CPU-like profile: two sample types, two functions, three samples."""
    st = ["", "samples", "count", "cpu", "nanoseconds", "main", "work", "main.go", "/bin/app", "kernel", "fast"]
    p = Profile(string_table=st)
    p.sample_type = [ValueType(1, 2), ValueType(3, 4)]
    p.period_type = ValueType(3, 4)
    p.period = 10000000
    p.time_nanos = 1_700_000_000_000_000_000
    p.duration_nanos = 1_000_000_000
    p.mapping = [Mapping(id=1, memory_start=0x400000, memory_limit=0x800000, filename=8, has_functions=True)]
    p.function = [Function(id=1, name=5, filename=7, start_line=3), Function(id=2, name=6, filename=7, start_line=10)]
    p.location = [
        Location(id=1, mapping_id=1, address=0x401000, line=[Line(function_id=1, line=5)]),
        Location(id=2, mapping_id=1, address=0x402000, line=[Line(function_id=2, line=12)]),
    ]
    p.sample = [
        Sample(location_id=[2, 1], value=[3, 30000000], label=[Label(key=9, str=10)]),
        Sample(location_id=[1], value=[1, 10000000]),
        Sample(location_id=[2, 1], value=[2, 20000000]),
    ]
    return p


# ---- comparison ---------------------------------------------------------------------------

def _mapping_key(p: Profile, maps: Dict[int, Mapping], mid: int):
    if mid == 0:
        return None
    m = maps[mid]
    return (p.s(m.filename), p.s(m.build_id), m.memory_start, m.memory_limit, m.file_offset)


def _location_key(p: Profile, locs, fns, maps, lid: int):
    loc = locs[lid]
    frames = []
    for ln in loc.line:
        if ln.function_id:
            f = fns[ln.function_id]
            frames.append((p.s(f.name), p.s(f.system_name), p.s(f.filename), f.start_line, ln.line, ln.column))
        else:
            frames.append((None, None, None, None, ln.line, ln.column))
    return (tuple(frames), loc.address, _mapping_key(p, maps, loc.mapping_id))


def canonical(p: Profile, type_index: int) -> Dict[tuple, int]:
    """{(stack, labels): summed value} for one sample type, zero values dropped.

    stack: tuple (leaf first) of (frames, address, mapping) with frames a tuple of
    (function name, system name, file, start line, line, column) per inline frame and mapping
    (file, build id, start, limit, offset) or None; labels: sorted (key, str, num, num unit).
    """
    locs = {l.id: l for l in p.location}
    fns = {f.id: f for f in p.function}
    maps = {m.id: m for m in p.mapping}
    loc_cache: Dict[int, tuple] = {}
    acc: Dict[tuple, int] = {}
    for s in p.sample:
        v = s.value[type_index]
        stack = []
        for lid in s.location_id:
            k = loc_cache.get(lid)
            if k is None:
                k = loc_cache[lid] = _location_key(p, locs, fns, maps, lid)
            stack.append(k)
        labels = tuple(sorted((p.s(l.key), p.s(l.str), l.num, p.s(l.num_unit)) for l in s.label))
        key = (tuple(stack), labels)
        acc[key] = acc.get(key, 0) + v
    return {k: v for k, v in acc.items() if v != 0}


def totals(p: Profile) -> List[int]:
    """Sum of values per sample type."""
    t = [0] * len(p.sample_type)
    for s in p.sample:
        for i, v in enumerate(s.value):
            if i < len(t):
                t[i] += v
    return t
