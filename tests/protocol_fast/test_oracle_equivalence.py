"""The fast path equals the pure path on every record of every file in ../shared/oracle.

Decode: value for value, type for type (tests/protocol_fast/_support.same).
Encode: byte for byte, and equal to the original file's bytes for every data batch.
Skipped when ../shared/oracle is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.protocol import fastpath
from kraftsim.protocol import batch_io
from kraftsim.protocol.batch import BatchSlice, parse_batch, parse_records, split_batches
from kraftsim.protocol.entries import Payload, decode_batch, encode_data_batch
from kraftsim.protocol.framing import decode_metadata_record, encode_metadata_record, read_frame_header
from kraftsim.protocol.registry import default_registry

from ._support import ORACLE, fast_codec, fast_encode, needs_speedups, oracle_files, pure_codec, pure_encode, pure_read, rel, same

pytestmark = [
    needs_speedups,
    pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present"),
]

REGISTRY = default_registry()
FILES = oracle_files()


def _batches(data: bytes) -> list:
    out = []
    with fastpath.pure_python():
        for piece in split_batches(data):
            assert isinstance(piece, BatchSlice), "oracle files have no torn tails"
            batch = parse_batch(piece.data)
            out.append((batch, decode_batch(batch, REGISTRY)))
    return out


def test_oracle_present_and_complete():
    assert len(FILES) >= 90, f"expected the 92 oracle .log/.checkpoint files, found {len(FILES)}"


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_read_log_entries_equals_pure_pipeline(path: Path):
    data = path.read_bytes()
    pure_entries, pure_tail = pure_read(data, REGISTRY)
    fast_entries, fast_tail = batch_io.read_log_entries(data, REGISTRY)
    assert fast_tail is None and pure_tail is None
    same(fast_entries, pure_entries, rel(path))


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_every_batch_decodes_and_encodes_identically(path: Path):
    data = path.read_bytes()
    for batch, pure_entries in _batches(data):
        where = f"{rel(path)} @ {batch.base_offset}"
        body = batch.raw[61:]
        with fastpath.pure_python():
            pure_records = parse_records(body, batch.records_count)
        same(batch_io.parse_records(body, batch.records_count), pure_records, where)
        same(batch_io.decode_batch(batch, REGISTRY), pure_entries, where)
        if batch.is_control:
            assert fastpath.try_decode_batch(batch, REGISTRY) is None  # control batches stay in Python
            continue
        fast_try = fastpath.try_decode_batch(batch, REGISTRY)
        assert fast_try is not None, f"{where}: the C decoder gave up on a valid oracle batch"
        same(fast_try, pure_entries, where)
        payloads = [Payload(e.record_type, e.version, e.message) for e in pure_entries]
        with fastpath.pure_python():
            pure_batch = encode_data_batch(batch.base_offset, payloads, epoch=batch.partition_leader_epoch,
                                           timestamp=batch.base_timestamp)
            pure_values = [encode_metadata_record(p.record_type, p.message, p.version) for p in payloads]
        fast_batch = fastpath.try_encode_data_batch(batch.base_offset, payloads, batch.partition_leader_epoch,
                                                    batch.base_timestamp)
        assert fast_batch is not None, f"{where}: the C encoder gave up on a valid oracle batch"
        assert fast_batch == pure_batch == batch.raw, where
        assert fastpath.try_encode_values(payloads) == pure_values == [r.value for r in pure_records], where


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_encode_batches_rewrites_the_file(path: Path):
    """The whole file in one encode_batches call (control batches included) is the file."""
    data = path.read_bytes()
    batches = [batch_io.BatchToWrite(b.base_offset, b.partition_leader_epoch, b.base_timestamp, b.is_control,
                                     [Payload(e.record_type, e.version, e.message) for e in entries])
               for b, entries in _batches(data)]
    assert b"".join(batch_io.encode_batches(batches)) == data
    with fastpath.pure_python():
        assert b"".join(batch_io.encode_batches(batches)) == data


def _distinct_values() -> dict[bytes, tuple[bool, bytes | None]]:
    """Every distinct (control?, key, value) of the oracle, keyed by value."""
    seen: dict[bytes, tuple[bool, bytes | None]] = {}
    with fastpath.pure_python():
        for path in FILES:
            for piece in split_batches(path.read_bytes()):
                batch = parse_batch(piece.data)
                for rec in batch.records():
                    seen.setdefault(rec.value, (batch.is_control, rec.key))
    return seen


DISTINCT = _distinct_values() if FILES else {}


def test_distinct_values_per_record_codec():
    """Every distinct record value: the codec-level C decoder/encoder equal the generated Python ones."""
    assert len(DISTINCT) > 1000
    for value, (control, key) in DISTINCT.items():
        if control:
            ctype = int.from_bytes(key[2:4], "big", signed=True)
            rt = REGISTRY.by_control_type.get(ctype)
            if rt is None:
                continue
            version = int.from_bytes(value[:2], "big", signed=True)
            pos = 0
        else:
            api_key, version, pos = read_frame_header(value)
            rt = REGISTRY.by_api_key[api_key]
        pdec, penc = pure_codec(rt, version)
        fdec, fenc = fast_codec(rt, version)
        with fastpath.pure_python():
            pure_msg, pure_end = pdec(value, pos)
        fast_msg, fast_end = fdec(value, pos)
        assert fast_end == pure_end == len(value)
        same(fast_msg, pure_msg, rt.name)
        assert fast_encode(fenc, pure_msg) == pure_encode(penc, pure_msg) == value[pos:]
        if not control:
            with fastpath.pure_python():
                pure_rec = decode_metadata_record(REGISTRY, value)
            same(fastpath.try_decode_metadata_record(REGISTRY, value), pure_rec, rt.name)
