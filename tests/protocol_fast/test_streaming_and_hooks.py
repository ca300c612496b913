"""The chunked reader, the codec and framing hooks, and the decoder's memory paths.

Each fast-path feature here is compared with the pure-Python result it must equal, and
each switch is checked to route where it says.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.protocol import batch_io, fastpath, framing
from kraftsim.protocol.batch import TornTail
from kraftsim.protocol.entries import Payload, encode_control_batch, encode_data_batch
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import default_registry

from ._support import REPO, needs_speedups, oracle_files, outcome, pure_read, rel, same, same_outcome

REGISTRY = default_registry()
PARTITION = REGISTRY["PartitionRecord"]
TOPIC = REGISTRY["TopicRecord"]


def snapshot_bytes(partitions: int, batch_records: int = 100) -> bytes:
    """A snapshot-like run of batches: header, TopicRecords and PartitionRecords, footer."""
    header = REGISTRY["SnapshotHeaderRecord"]
    footer = REGISTRY["SnapshotFooterRecord"]
    dirs = [Uuid(bytes([b]) * 16) for b in range(1, 5)]
    payloads = []
    for p in range(partitions):
        if p % 10 == 0:
            topic_id = Uuid(p.to_bytes(16, "big"))
            payloads.append(Payload(TOPIC, 0, TOPIC.new(name=f"t{p // 10}", topic_id=topic_id)))
        replicas = [1 + (p + k) % 4 for k in range(3)]
        payloads.append(Payload(PARTITION, 2, PARTITION.new(
            partition_id=p % 10, topic_id=topic_id, replicas=replicas, isr=replicas[:2], leader=replicas[0],
            leader_epoch=p % 7, partition_epoch=1000 + p, directories=[dirs[r - 1] for r in replicas])))
    out = [encode_control_batch(0, [Payload(header, 0, header.new(version=0, last_contained_log_timestamp=5))],
                                epoch=3, timestamp=5)]
    offset = 1
    for i in range(0, len(payloads), batch_records):
        chunk = payloads[i : i + batch_records]
        out.append(encode_data_batch(offset, chunk, epoch=3, timestamp=5))
        offset += len(chunk)
    out.append(encode_control_batch(offset, [Payload(footer, 0, footer.new(version=0))], epoch=3, timestamp=5))
    return b"".join(out)


SNAPSHOT = snapshot_bytes(2_000)


def chunks_of(data: bytes, chunk: int) -> tuple[list[list], object]:
    """Every list iter_log_entries yields, and its return value."""
    gen = batch_io.iter_log_entries(data, REGISTRY, chunk=chunk)
    lists = []
    while True:
        try:
            lists.append(next(gen))
        except StopIteration as stop:
            return lists, stop.value


# ------------------------------------------------------------------------------ iter_log_entries


@pytest.mark.parametrize("chunk", [1, 7, 100, 1024, 10**9])
@pytest.mark.parametrize("pure", [False, True], ids=["fast", "pure"])
def test_chunks_concatenate_to_read_log_entries(chunk, pure):
    expected, tail = pure_read(SNAPSHOT, REGISTRY)
    assert tail is None
    if pure:
        with fastpath.pure_python():
            lists, end = chunks_of(SNAPSHOT, chunk)
    else:
        lists, end = chunks_of(SNAPSHOT, chunk)
    assert end is None
    same([e for part in lists for e in part], expected, f"chunk {chunk}")
    # whole batches, at least `chunk` entries per list except the last
    assert all(len(part) >= min(chunk, len(expected)) for part in lists[:-1])
    offsets = [e.offset for e in expected]
    starts = {e.offset for part in lists for e in part[:1]}
    batch_starts = {0, *range(1, offsets[-1], 100), offsets[-1]}
    assert starts <= batch_starts


@pytest.mark.parametrize("path", oracle_files(), ids=rel)
def test_chunks_of_every_oracle_file(path):
    data = path.read_bytes()
    expected = pure_read(data, REGISTRY)
    lists, end = chunks_of(data, 64)
    same(([e for part in lists for e in part], end), expected, rel(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(0, len(SNAPSHOT)), chunk=st.integers(1, 700))
def test_torn_tail_is_the_return_value(cut, chunk):
    data = SNAPSHOT[:cut]
    expected_entries, expected_tail = pure_read(data, REGISTRY)
    lists, end = chunks_of(data, chunk)
    same([e for part in lists for e in part], expected_entries, "entries")
    assert (end is None) == (expected_tail is None)
    if end is not None:
        assert isinstance(end, TornTail) and end.position == expected_tail.position


def test_an_error_comes_after_the_good_chunks():
    data = bytearray(SNAPSHOT)
    pieces = batch_io.read_log_entries(bytes(data), REGISTRY)[0]
    assert pieces
    # break the CRC of the 5th data batch: chunks before it are yielded, then the error
    from kraftsim.protocol.batch import split_batches

    batches = list(split_batches(bytes(data)))
    bad = batches[5]
    data[bad.position + 30] ^= 0xFF
    good_before = sum(1 for b in batches[:5] for _ in range(int.from_bytes(b.data[57:61], "big")))
    gen = batch_io.iter_log_entries(bytes(data), REGISTRY, chunk=1)
    got = []
    with pytest.raises(KraftsimError) as fast_err:
        for part in gen:
            got += part
    assert len(got) == good_before
    pure_outcome = outcome(lambda: pure_read(bytes(data), REGISTRY))
    assert pure_outcome[0] == "error" and pure_outcome[1] == (type(fast_err.value), str(fast_err.value))


def test_chunk_must_be_positive():
    with pytest.raises(ValueError, match="chunk must be at least 1"):
        next(batch_io.iter_log_entries(SNAPSHOT, REGISTRY, chunk=0))


# ------------------------------------------------------------------------------ codec and framing hooks


@needs_speedups
def test_codec_decoder_and_encoder_are_the_c_drop_ins():
    for version in (0, 1, 2):
        dec, enc = PARTITION.codec.decoder(version), PARTITION.codec.encoder(version)
        assert isinstance(dec, fastpath._c.FastDecoder) and dec.pure is PARTITION.codec.pure_decoder(version)
        assert isinstance(enc, fastpath._c.FastEncoder) and enc.pure is PARTITION.codec.pure_encoder(version)
    msg = PARTITION.new(partition_id=4, replicas=[1, 2, 3], isr=[1, 2], directories=[Uuid.ZERO] * 3)
    data = PARTITION.encode(msg, 2)
    with fastpath.pure_python():
        assert PARTITION.encode(msg, 2) == data
        pure = PARTITION.decode(data, 2)
    fast = PARTITION.decode(data, 2)
    same(fast, pure, "RecordType.decode")
    assert not gc.is_tracked(fast.replicas) and gc.is_tracked(pure.replicas)  # C built the first


@needs_speedups
def test_framing_decode_routes_through_c_with_the_same_result_and_errors():
    msg = PARTITION.new(partition_id=4, replicas=[1, 2, 3], isr=[1, 2])
    value = framing.encode_metadata_record(PARTITION, msg, 2)
    fast = framing.decode_metadata_record(REGISTRY, value)
    with fastpath.pure_python():
        pure = framing.decode_metadata_record(REGISTRY, value)
    same(tuple(fast), tuple(pure), "framed")
    assert type(fast) is type(pure)
    assert not gc.is_tracked(fast.message.replicas) and gc.is_tracked(pure.message.replicas)
    for bad in (value[:-1], value + b"\x00", b"\x00" + value[1:], b"\x01\x7f\x00", value[:3] + b"\xff" * 4):
        with fastpath.pure_python():
            expected = outcome(lambda: framing.decode_metadata_record(REGISTRY, bad))
        same_outcome(outcome(lambda: framing.decode_metadata_record(REGISTRY, bad)), expected, repr(bad))


@needs_speedups
def test_decode_table_follows_registry_changes():
    reg = REGISTRY.with_schema_dirs([])
    value = framing.encode_metadata_record(TOPIC, TOPIC.new(name="a"), 0)
    first = fastpath.decode_table(reg)
    assert fastpath.decode_table(reg) is first  # cached while the registry is unchanged
    reg.add(reg["TopicRecord"].schema)  # replaced: a new RecordType for apiKey 2
    assert fastpath.decode_table(reg) is not first
    assert framing.decode_metadata_record(reg, value).record_type is reg["TopicRecord"]


def test_pure_python_env_var_gives_the_generated_functions():
    code = (
        "from kraftsim.protocol.registry import default_registry\n"
        "rt = default_registry()['PartitionRecord']\n"
        "print(rt.codec.decoder(2) is rt.codec.pure_decoder(2), rt.codec.encoder(2) is rt.codec.pure_encoder(2))\n"
    )
    env = dict(os.environ, KRAFTSIM_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


# ------------------------------------------------------------------------------ encoder special cases


@needs_speedups
@pytest.mark.parametrize("field,value", [
    ("replicas", [1, True, 3]),            # a bool is an int, but not an exact one
    ("replicas", [1, 2**31, 3]),           # out of int32 range
    ("replicas", [1, -(2**31) - 1]),
    ("replicas", [2**31 - 1, -(2**31)]),   # the edges, in range
    ("replicas", [1, 2.0]),
    ("replicas", (1, 2)),                  # not a list
    ("directories", [Uuid.ZERO, b"x" * 15]),  # a 15-byte id
    ("directories", [Uuid.ZERO, b"y" * 16]),  # plain bytes
    ("directories", [Uuid.ZERO, "not bytes"]),
    ("topic_id", b"z" * 17),
    ("partition_id", 2**40),
    ("leader_recovery_state", 1),          # a tagged field off its default
])
def test_encoder_shortcuts_match_python(field, value):
    msg = PARTITION.new(partition_id=1, replicas=[1, 2, 3], isr=[1, 2, 3], directories=[Uuid.ZERO] * 3)
    setattr(msg, field, value)
    for version in (0, 1, 2):
        with fastpath.pure_python():
            expected = outcome(lambda: PARTITION.encode(msg, version))
        same_outcome(outcome(lambda: PARTITION.encode(msg, version)), expected, f"{field} v{version}")


@needs_speedups
@pytest.mark.parametrize("name", ["plain", "", "ünïcödé", "x" * 300, "\U0001f600"])
def test_string_shortcut_matches_python(name):
    class Name(str):
        pass

    for value in (name, Name(name)):
        msg = TOPIC.new(name=value, topic_id=Uuid.ZERO)
        with fastpath.pure_python():
            expected = outcome(lambda: TOPIC.encode(msg, 0))
        same_outcome(outcome(lambda: TOPIC.encode(msg, 0)), expected, repr(value))


# ------------------------------------------------------------------------------ decoder memory paths


@needs_speedups
def test_messages_are_built_without_calling_the_class_only_when_that_is_the_same():
    """direct_new for every shipped Struct; a class with __post_init__ is called as usual."""
    for rt in REGISTRY.by_name.values():
        for version in range(rt.schema.versions.lo, rt.schema.versions.hi + 1):
            assert fastpath.program_for_codec(rt.codec, version).direct_new, (rt.name, version)
    calls = []

    class Checked(PARTITION.cls):
        def __post_init__(self):
            calls.append(self.partition_id)

    compiler = fastpath._Compiler(PARTITION.nested)
    program = compiler.program(PARTITION.schema.body, 2, True, Checked)
    assert not program.direct_new
    data = PARTITION.encode(PARTITION.new(partition_id=9, replicas=[1]), 2)
    msg, end = program.decode(data)
    assert type(msg) is Checked and calls == [9] and end == len(data)
    assert msgspec.structs.asdict(msg) == msgspec.structs.asdict(PARTITION.decode(data, 2))


@needs_speedups
def test_large_decodes_same_with_and_without_populating_pages():
    data = snapshot_bytes(40_000, batch_records=1000)
    assert len(data) > 4 << 20  # large enough for the populate path
    assert fastpath.info()["populate"] in (0, 1)
    with_pages = batch_io.read_log_entries(data, REGISTRY)
    fastpath._c.configure(populate=False)
    try:
        assert fastpath.info()["populate"] == 0
        without = batch_io.read_log_entries(data, REGISTRY)
        encoded_without = batch_io.encode_batches([batch_io.BatchToWrite(0, 1, 2, False, [
            Payload(e.record_type, e.version, e.message) for e in with_pages[0] if not e.control])])
    finally:
        fastpath._c.configure(populate=True)
    same(with_pages, without, "populate")
    encoded_with = batch_io.encode_batches([batch_io.BatchToWrite(0, 1, 2, False, [
        Payload(e.record_type, e.version, e.message) for e in with_pages[0] if not e.control])])
    assert encoded_with == encoded_without
    # the decoded lists are complete, independent objects
    a, b = with_pages[0][5].message, with_pages[0][15].message
    assert a.removing_replicas == [] and a.removing_replicas is not b.removing_replicas
    a.removing_replicas.append(7)
    assert b.removing_replicas == []
