"""Malformed input: the fast path fails exactly where, and exactly as, the pure path does.

The C code never builds an error message: it gives the input back to the pure-Python
code. These tests check that it gives up on every input Python rejects (truncations, bad
lengths, bad varints, bad UTF-8, bad CRCs, bad record framing, garbage after a message)
and that it never gives up on valid input in a way that changes the result (record
headers, huge timestamp deltas and compressed batches go through the fallback or are
handled, with the same values).
"""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol import fastpath
from kraftsim.protocol import batch_io
from kraftsim.protocol.batch import Record, build_batch_from_records, crc32c, parse_batch, parse_records, split_batches
from kraftsim.protocol.entries import Payload, decode_batch, encode_control_batch, encode_data_batch
from kraftsim.protocol.framing import decode_metadata_record, read_frame_header
from kraftsim.protocol.primitives import varint_bytes
from kraftsim.protocol.registry import default_registry

from ._support import (
    ORACLE,
    distinct_oracle_values,
    fast_codec,
    needs_speedups,
    oracle_files,
    outcome,
    pure_codec,
    pure_read,
    same,
    same_outcome,
)

pytestmark = needs_speedups

REGISTRY = default_registry()
needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


def _codec_for(value: bytes, control: bool, key: bytes | None):
    """(decoder pair, body position) of a record value, or None when its header is unusable."""
    try:
        if control:
            rt = REGISTRY.by_control_type.get(int.from_bytes(key[2:4], "big", signed=True))
            version = int.from_bytes(value[:2], "big", signed=True)
            pos = 0
        else:
            api_key, version, pos = read_frame_header(value)
            rt = REGISTRY.by_api_key[api_key]
        return rt, version, pos
    except Exception:
        return None


def _compare_value(value: bytes, control: bool, key: bytes | None, full: bytes) -> None:
    """Decode `value` (a mutation of `full`) both ways, at the framing and the codec level."""
    if not control:
        with fastpath.pure_python():
            pure = outcome(lambda: decode_metadata_record(REGISTRY, value))
        same_outcome(outcome(lambda: batch_io.decode_metadata_record(REGISTRY, value)), pure, "framed")
        if pure[0] == "error":
            assert fastpath.try_decode_metadata_record(REGISTRY, value) is None
    found = _codec_for(full, control, key)
    if found is None:
        return
    rt, version, pos = found
    if version not in rt.schema.versions:
        return
    pdec, _ = pure_codec(rt, version)
    fdec, _ = fast_codec(rt, version)
    for start in {pos, 0}:
        with fastpath.pure_python():
            pure = outcome(lambda: pdec(value, start))
        same_outcome(outcome(lambda: fdec(value, start)), pure, f"{rt.name} v{version} @ {start}")


@needs_oracle
def test_every_truncation_of_every_distinct_record_value():
    values = distinct_oracle_values()
    assert values
    for full, control, key in values:
        for cut in range(len(full)):
            _compare_value(full[:cut], control, key, full)


@needs_oracle
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_record_values(data):
    full, control, key = data.draw(st.sampled_from(distinct_oracle_values()))
    value = bytearray(full)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "append"]))
        i = data.draw(st.integers(0, max(len(value) - 1, 0)))
        if kind == "flip" and value:
            value[i] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set" and value:
            value[i] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC3, 0xED]))
        elif kind == "insert":
            value[i:i] = data.draw(st.binary(min_size=1, max_size=3))
        elif kind == "delete" and value:
            del value[i]
        else:
            value += data.draw(st.binary(min_size=1, max_size=3))
    _compare_value(bytes(value), control, key, full)


@settings(max_examples=500, deadline=None)
@given(body=st.binary(max_size=64), count=st.integers(-2, 6))
def test_parse_records_random_bytes(body, count):
    with fastpath.pure_python():
        pure = outcome(lambda: parse_records(body, count))
    same_outcome(outcome(lambda: batch_io.parse_records(body, count)), pure, "parse_records")
    if pure[0] == "error":
        assert fastpath.try_parse_records(body, count) is None


def _record(*, length_fix: int = 0, attributes: int = 0, ts_raw: bytes = b"\x00", offset_delta: int = 0,
            key: bytes | None = None, value: bytes | None = b"\x01\x14\x00\x00", headers: bytes = b"\x00") -> bytes:
    body = bytes([attributes]) + ts_raw + varint_bytes(offset_delta)
    body += b"\x01" if key is None else varint_bytes(len(key)) + key
    body += b"\x01" if value is None else varint_bytes(len(value)) + value
    body += headers
    return varint_bytes(len(body) + length_fix) + body


def _batch(records: bytes, count: int, *, attributes: int = 0, fix_crc: bool = True) -> bytes:
    after_crc = struct.pack(">hiqqqhii", attributes, count - 1, 5, 5, -1, -1, -1, count) + records
    crc = crc32c(after_crc) if fix_crc else 0
    return struct.pack(">qiibI", 100, len(after_crc) + 9, 3, 2, crc) + after_crc


NOOP = b"\x01\x14\x00\x00"
HANDMADE = {
    "ok": _batch(_record(), 1),
    "two records": _batch(_record() + _record(offset_delta=1), 2),
    "record count too high": _batch(_record(), 2),
    "record count too low": _batch(_record() + _record(offset_delta=1), 1),
    "negative record count": _batch(_record(), -1),
    "length too long": _batch(_record(length_fix=1), 1),
    "length too short": _batch(_record(length_fix=-1), 1),
    "negative length": _batch(b"\x01" + _record()[1:], 1),
    "header present": _batch(_record(headers=b"\x02\x04hk\x02v"), 1),
    "null header value": _batch(_record(headers=b"\x02\x04hk\x01"), 1),
    "negative headers": _batch(_record(headers=b"\x01"), 1),
    "bad header utf-8": _batch(_record(headers=b"\x02\x04\xff\xfe\x01"), 1),
    "header count past the end": _batch(_record(headers=b"\x08\x04hk\x02v"), 1),
    "negative timestamp delta": _batch(_record(ts_raw=varint_bytes(-5)), 1),
    "huge timestamp delta (70-bit varlong)": _batch(_record(ts_raw=b"\xff" * 9 + b"\x7f"), 1),
    "64-bit timestamp delta": _batch(_record(ts_raw=b"\xfe" + b"\xff" * 8 + b"\x01"), 1),
    "11-byte varlong": _batch(_record(ts_raw=b"\xff" * 10 + b"\x01"), 1),
    "6-byte varint": _batch(_record()[:1] + b"\x00\x00" + b"\xff" * 5 + b"\x01", 1),
    "key present": _batch(_record(key=b"abc"), 1),
    "null value": _batch(_record(value=None), 1),
    "non-zero attributes": _batch(_record(attributes=0x7F), 1),
    "big offset delta": _batch(_record(offset_delta=2**31 - 1), 1),
    "negative offset delta": _batch(_record(offset_delta=-7), 1),
    "frame version 0": _batch(_record(value=b"\x00\x14\x00\x00"), 1),
    "frame version 2": _batch(_record(value=b"\x02\x14\x00\x00"), 1),
    "unknown api key": _batch(_record(value=b"\x01\x7f\x00\x00"), 1),
    "api key too large": _batch(_record(value=b"\x01\x80\x80\x02\x00\x00"), 1),
    "unknown version": _batch(_record(value=b"\x01\x14\x05\x00"), 1),
    "garbage after message": _batch(_record(value=NOOP + b"\x00"), 1),
    "tagged section truncated": _batch(_record(value=b"\x01\x14\x00"), 1),
    "unknown tag": _batch(_record(value=b"\x01\x14\x00\x01\x05\x02ab"), 1),
    "unknown tag too long": _batch(_record(value=b"\x01\x14\x00\x01\x05\x09ab"), 1),
    "bad crc": _batch(_record(), 1, fix_crc=False),
    "control batch": _batch(_record(key=b"\x00\x00\x00\x03", value=b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 1,
                            attributes=0x20),
    "gzip batch": _batch(gzip.compress(_record() + _record(offset_delta=1), mtime=0), 2, attributes=1),
    "bad gzip": _batch(b"not gzip", 1, attributes=1),
    "unknown codec": _batch(_record(), 1, attributes=6),
    "magic 1": _batch(_record(), 1)[:16] + b"\x01" + _batch(_record(), 1)[17:],
}


# Cases the C decoder must decode itself (the others it hands to Python).
HANDLED_IN_C = {"ok", "two records", "big offset delta", "negative offset delta", "non-zero attributes", "key present",
                "gzip batch", "unknown tag", "negative timestamp delta"}


@pytest.mark.parametrize("name", sorted(HANDMADE))
def test_handmade_batches(name):
    raw = HANDMADE[name]
    for data in (raw, raw + HANDMADE["ok"], HANDMADE["ok"] + raw, raw[:-1], raw + b"\x00" * 13):
        pure = outcome(lambda: pure_read(data, REGISTRY))
        same_outcome(outcome(lambda: batch_io.read_log_entries(data, REGISTRY)), pure, name)
    with fastpath.pure_python():
        pure_batch = outcome(lambda: parse_batch(raw))
    if pure_batch[0] == "ok":
        batch = pure_batch[1]
        with fastpath.pure_python():
            pure = outcome(lambda: decode_batch(batch, REGISTRY))
            pure_records = outcome(lambda: batch.records())
        same_outcome(outcome(lambda: batch_io.decode_batch(batch, REGISTRY)), pure, name)
        handled = fastpath.try_decode_batch(batch, REGISTRY) is not None
        assert handled == (name in HANDLED_IN_C), name
        body = batch.raw[61:]
        if not batch.compression:
            same_outcome(outcome(lambda: batch_io.parse_records(body, batch.records_count)), pure_records, name)


def test_gzip_batches_are_decoded_in_c():
    batch = parse_batch(HANDMADE["gzip batch"])
    fast = fastpath.try_decode_batch(batch, REGISTRY)
    assert fast is not None and len(fast) == 2
    with fastpath.pure_python():
        same(fast, decode_batch(batch, REGISTRY), "gzip")


def test_headers_fall_back_with_the_same_records():
    raw = build_batch_from_records(0, [Record(0, 0, None, NOOP, (("h", b"v"), ("k", None)))], epoch=1, base_timestamp=2)
    batch = parse_batch(raw)
    assert fastpath.try_parse_records(raw[61:], 1) is None
    with fastpath.pure_python():
        same(batch_io.decode_batch(batch, REGISTRY), decode_batch(batch, REGISTRY), "headers")
        assert batch.records()[0].headers == (("h", b"v"), ("k", None))


@needs_oracle
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_oracle_files(data):
    """A real file cut, or with bytes changed (CRC kept or recomputed): same entries, tail or error."""
    files = [p for p in oracle_files() if p.stat().st_size < 300_000]
    path = data.draw(st.sampled_from(files))
    raw = bytearray(path.read_bytes())
    kind = data.draw(st.sampled_from(["cut", "flip", "flip-fix-crc"]))
    if kind == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    else:
        pieces = [p for p in split_batches(bytes(raw))]
        piece = data.draw(st.sampled_from(pieces))
        lo = piece.position + (61 if kind == "flip-fix-crc" else 0)
        hi = piece.position + len(piece.data) - 1
        if lo <= hi:
            i = data.draw(st.integers(lo, hi))
            raw[i] ^= 1 << data.draw(st.integers(0, 7))
        if kind == "flip-fix-crc":
            start = piece.position
            crc = crc32c(bytes(raw[start + 21 : start + len(piece.data)]))
            raw[start + 17 : start + 21] = struct.pack(">I", crc)
    raw = bytes(raw)
    pure = outcome(lambda: pure_read(raw, REGISTRY))
    same_outcome(outcome(lambda: batch_io.read_log_entries(raw, REGISTRY)), pure, f"{path.name} {kind}")


def test_control_and_data_batches_interleaved():
    header = REGISTRY["SnapshotHeaderRecord"]
    footer = REGISTRY["SnapshotFooterRecord"]
    noop = REGISTRY["NoOpRecord"]
    data = (
        encode_control_batch(0, [Payload(header, 0, header.new(version=0, last_contained_log_timestamp=9))], epoch=1, timestamp=9)
        + encode_data_batch(1, [Payload(noop, 0, noop.new())] * 3, epoch=1, timestamp=9)
        + encode_control_batch(4, [Payload(footer, 0, footer.new(version=0))], epoch=1, timestamp=9)
    )
    fast = batch_io.read_log_entries(data, REGISTRY)
    same(fast, pure_read(data, REGISTRY), "interleaved")
    assert [e.type_name for e in fast[0]] == ["SNAPSHOT_HEADER", "NO_OP_RECORD", "NO_OP_RECORD", "NO_OP_RECORD", "SNAPSHOT_FOOTER"]


def test_varint_edge_values_in_messages():
    """Compact lengths at varint size boundaries, and 5-byte varints with high bits."""
    rt = REGISTRY["ConfigRecord"]
    pdec, penc = pure_codec(rt, 0)
    fdec, fenc = fast_codec(rt, 0)
    for n in (0, 126, 127, 128, 16382, 16383, 16384, 70000):
        msg = rt.new(resource_type=2, resource_name="t" * n, name="n", value=None)
        out_p, out_f = bytearray(), bytearray()
        with fastpath.pure_python():
            penc(msg, out_p)
        fenc(msg, out_f)
        assert out_p == out_f
        with fastpath.pure_python():
            p = pdec(bytes(out_p), 0)
        same(fdec(bytes(out_p), 0), p, str(n))
    # a string length written as a 5-byte varint whose value overflows 32 bits
    for raw_len in (b"\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x01", b"\x81\x00"):
        value = b"\x02" + raw_len + b"abc" + b"\x00" * 8
        with fastpath.pure_python():
            p = outcome(lambda: pdec(value, 0))
        same_outcome(outcome(lambda: fdec(value, 0)), p, repr(raw_len))
