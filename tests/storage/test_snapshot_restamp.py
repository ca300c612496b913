"""Restamped copies made from the header alone (restamp_patches, a kernel copy) against the
plain definition (restamp_batches: every batch rewritten and its CRC recomputed), and the
batch writer's value path against its payload path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.protocol import fastpath
from kraftsim.protocol.batch import crc32c
from kraftsim.protocol.batch_io import encode_value_batch, encode_values
from kraftsim.protocol.entries import Payload, encode_data_batch
from kraftsim.storage import restamp as restamp_module
from kraftsim.storage.batchfile import records_size, values_size
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.restamp import crc32c_zero_extend, restamp_batches, restamp_patches
from kraftsim.storage.snapshot import file_identity, place_snapshot_copy, write_snapshot
from kraftsim.versions import default_catalog

REG = default_catalog().record_registry()
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def topic_records(names: list[str]) -> list[Payload]:
    rt = REG["TopicRecord"]
    return [Payload(rt, 0, rt.new(name=n, topic_id=bytes(16))) for n in names]


@st.composite
def snapshot_bytes(draw: st.DrawFn, tmp: Path) -> tuple[bytes, int]:
    """A snapshot file written at one timestamp: its bytes and that timestamp."""
    names = draw(st.lists(st.text("abcxyz-", min_size=1, max_size=40), min_size=0, max_size=300))
    stamp = draw(st.integers(-2**63, 2**63 - 1))
    d = tmp / f"w{len(list(tmp.iterdir()))}"
    d.mkdir()
    path = write_snapshot(d, SnapshotId(10, 2), topic_records(names), last_contained_log_timestamp=1, time_ms=stamp,
                          append_records=draw(st.integers(1, 20)), max_batch_bytes=draw(st.sampled_from([4000, 20000, 1 << 23])),
                          fsync=False)
    return path.read_bytes(), stamp


def patched(data: bytes, old: int, new: int) -> bytes | None:
    patches = restamp_patches(lambda at, n: data[at:at + n], len(data), old, new)
    if patches is None:
        return None
    out = bytearray(data)
    for at, b in patches:
        out[at:at + len(b)] = b
    return bytes(out)


@given(message=st.binary(max_size=64), zeros=st.integers(0, 100_000))
def test_zero_extension_is_the_crc_of_the_message_and_the_zeros(message: bytes, zeros: int) -> None:
    raw = crc32c(message) ^ crc32c(bytes(len(message)))
    assert crc32c_zero_extend(raw, zeros) == crc32c(message + bytes(zeros)) ^ crc32c(bytes(len(message) + zeros))


@SETTINGS
@given(data=st.data(), new=st.integers(-2**63, 2**63 - 1), wrong_old=st.booleans())
def test_patches_from_the_headers_give_the_restamped_bytes(tmp_path_factory: pytest.TempPathFactory,
                                                           data: st.DataObject, new: int, wrong_old: bool) -> None:
    raw, stamp = data.draw(snapshot_bytes(tmp_path_factory.mktemp("s")))
    old = stamp ^ 1 if wrong_old else stamp
    want = restamp_batches(raw, old, new)
    assert patched(raw, old, new) == want
    assert (want is None) == wrong_old


@SETTINGS
@given(data=st.data(), cut=st.integers(1, 200), flip=st.sampled_from([*range(8, 12), *range(27, 43)]))
def test_files_whose_framing_or_stamps_are_damaged_are_refused_as_the_plain_restamp_refuses_them(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, cut: int, flip: int) -> None:
    """(What the header walk reads: the lengths and timestamps. Damage inside a batch stays in
    the copy, where a reader's CRC check finds it, as it does in the source.)"""
    raw, stamp = data.draw(snapshot_bytes(tmp_path_factory.mktemp("d")))
    for damaged in (raw[:-cut], raw[:flip] + bytes([raw[flip] ^ 0x40]) + raw[flip + 1:]):
        assert patched(damaged, stamp, stamp ^ 5) == restamp_batches(damaged, stamp, stamp ^ 5)


@pytest.mark.parametrize("ways", ["kernel", "sendfile", "buffer"])
def test_a_restamped_copy_is_the_plain_restamp_whichever_way_the_bytes_are_copied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ways: str) -> None:
    def refuse(*args: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    if ways != "kernel":
        monkeypatch.setattr(restamp_module, "_copy_file_range", refuse)
    if ways == "buffer":
        monkeypatch.setattr(restamp_module, "_sendfile", refuse)
    for name in "abc":
        (tmp_path / name).mkdir()
    src = write_snapshot(tmp_path / "a", SnapshotId(10, 2), topic_records([f"t{i}" for i in range(3000)]),
                         last_contained_log_timestamp=1, time_ms=77, append_records=100, max_batch_bytes=20_000,
                         fsync=False)
    placed = place_snapshot_copy(src, file_identity(src), tmp_path / "b", SnapshotId(10, 2), fsync=False,
                                 restamp=(77, 1_700_000_000_123))
    assert placed is not None and placed.read_bytes() == restamp_batches(src.read_bytes(), 77, 1_700_000_000_123)
    assert os.stat(placed).st_ino != os.stat(src).st_ino
    # a file not written at that timestamp: nothing is placed
    assert place_snapshot_copy(src, file_identity(src), tmp_path / "c", SnapshotId(10, 2), fsync=False,
                               restamp=(78, 5)) is None
    assert list((tmp_path / "c").iterdir()) == []


@SETTINGS
@given(names=st.lists(st.text(min_size=0, max_size=300), max_size=80), base=st.integers(0, 2**40),
       stamp=st.integers(-2**63, 2**63 - 1), first=st.integers(0, 70_000), fast=st.booleans())
def test_value_batches_and_sizes_are_the_payload_batches_and_sizes(
        monkeypatch: pytest.MonkeyPatch, names: list[str], base: int, stamp: int, first: int, fast: bool) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", fast)  # (the C functions, or the pure ones)
    payloads = topic_records(names)
    values = encode_values(payloads)
    if payloads:
        assert encode_value_batch(base, values, epoch=3, timestamp=stamp) == encode_data_batch(
            base, payloads, epoch=3, timestamp=stamp)
    assert values_size(values, first) == records_size([len(v) for v in values], first)
