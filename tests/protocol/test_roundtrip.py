"""Property tests of the protocol layer, driven by the record schemas.

For every record type at every valid version (kraftsim.testing.strategies):
message codec identity both ways, unknown tagged fields kept, metadata framing and
control records, Kafka's refusal to write a non-default field a version lacks, and
record batches (plain, control, several in a file, every compression codec) that parse
back entry for entry.
"""

from __future__ import annotations

import re

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.errors import UnsupportedVersionException
from kraftsim.protocol import compression
from kraftsim.protocol.batch import BatchSlice, build_batch, parse_batch, split_batches, stored_crc
from kraftsim.protocol.control import decode_control_record, encode_control_record
from kraftsim.protocol.entries import Payload, decode_batch, encode_control_batch, encode_data_batch
from kraftsim.protocol.framing import decode_metadata_record, encode_metadata_record
from kraftsim.protocol.registry import RecordType, default_registry
from kraftsim.protocol.schema import FieldSpec
from kraftsim.testing import strategies as ks

REGISTRY = default_registry()
RECORD_VERSIONS = ks.all_record_versions(REGISTRY)
IDS = [f"{rt.name}-v{v}" for rt, v in RECORD_VERSIONS]

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BATCH = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_every_record_type_and_version_is_covered():
    # 26 metadata + 5 control record types; the strategies must not skip any version.
    names = {rt.name for rt, _ in RECORD_VERSIONS}
    assert names == set(REGISTRY.by_name)
    for rt in REGISTRY.by_name.values():
        got = sorted(v for r, v in RECORD_VERSIONS if r is rt)
        assert got == list(range(rt.schema.versions.lo, rt.schema.versions.hi + 1)), rt.name


# ---------------------------------------------------------------------------- message codec


@pytest.mark.parametrize(("rt", "version"), RECORD_VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_encode_then_decode_is_identity(rt: RecordType, version: int, data: st.DataObject):
    msg = data.draw(ks.messages(rt, version), label="message")
    encoded = rt.encode(msg, version)
    decoded = rt.decode(encoded, version)
    assert decoded == msg
    assert rt.encode(decoded, version) == encoded


@pytest.mark.parametrize(("rt", "version"), RECORD_VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_unknown_tagged_fields_survive_decode_then_encode(rt: RecordType, version: int, data: st.DataObject):
    assert version in rt.schema.flexible_versions  # every KRaft record is flexible 0+
    msg = data.draw(ks.messages(rt, version, unknown_tags=True), label="message")
    encoded = rt.encode(msg, version)
    decoded = rt.decode(encoded, version)
    assert decoded == msg  # unknown tags, top-level and nested, are kept as (tag, bytes)
    assert decoded._unknown == msg._unknown
    assert rt.encode(decoded, version) == encoded
    # And they are really on the wire: without them the bytes are different.
    if msg._unknown:
        stripped = msgspec.structs.replace(msg, _unknown=())
        assert rt.encode(stripped, version) != encoded


@pytest.mark.parametrize(("rt", "version"), RECORD_VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_framing_round_trip(rt: RecordType, version: int, data: st.DataObject):
    msg = data.draw(ks.messages(rt, version, unknown_tags=data.draw(st.booleans(), label="unknown tags")), label="message")
    if rt.schema.kind == "metadata":
        value = encode_metadata_record(rt, msg, version)
        # frame version 1, apiKey and version as uvarints, then the body
        assert value[0] == 1
        decoded = decode_metadata_record(REGISTRY, value)
        assert decoded.record_type is rt
        assert decoded.version == version
        assert decoded.message == msg
        assert encode_metadata_record(rt, decoded.message, version) == value
    else:
        key, value = encode_control_record(rt, msg)
        assert key == bytes([0, 0, 0, rt.schema.control_type])
        assert int.from_bytes(value[:2], "big", signed=True) == version
        decoded = decode_control_record(REGISTRY, key, value)
        assert decoded is not None
        assert decoded.record_type is rt
        assert decoded.version == version
        assert decoded.message == msg


# ------------------------------------------------------- writing a field the version lacks


def _absent_field_cases() -> list[tuple[RecordType, int, tuple[FieldSpec, ...]]]:
    """(record type, version, path to a field absent at that version), nested paths too.

    A nested path goes through fields present at the version (arrays of structs or structs)
    and ends at a field of the inner struct that the version does not have.
    """
    cases = []

    def walk(rt: RecordType, version: int, fields, path):
        for f in fields:
            if not f.present_in(version):
                cases.append((rt, version, path + (f,)))
            elif f.struct is not None:
                walk(rt, version, f.struct.fields, path + (f,))

    for rt, version in RECORD_VERSIONS:
        walk(rt, version, rt.schema.body.fields, ())
    return cases


ABSENT_CASES = _absent_field_cases()


def test_absent_field_cases_include_known_ones():
    names = {(rt.name, v, ".".join(f.name for f in path)) for rt, v, path in ABSENT_CASES}
    assert ("RegisterBrokerRecord", 0, "InControlledShutdown") in names
    assert ("PartitionRecord", 1, "EligibleLeaderReplicas") in names
    assert ("PartitionChangeRecord", 0, "Directories") in names
    assert ("LeaderChangeMessage", 0, "Voters.VoterDirectoryId") in names
    assert ("LeaderChangeMessage", 0, "GrantingVoters.VoterDirectoryId") in names


def _with_path_value(rt: RecordType, msg, path: tuple[FieldSpec, ...], value):
    """`msg` with the field at `path` set to `value` (one struct element on the way down)."""
    if len(path) == 1:
        return msgspec.structs.replace(msg, **{path[0].py_name: value})
    head = path[0]
    inner_cls = rt.nested[head.struct.name]
    inner = _with_path_value(rt, inner_cls(), path[1:], value)
    return msgspec.structs.replace(msg, **{head.py_name: [inner] if head.is_array else inner})


@pytest.mark.parametrize(
    ("rt", "version", "path"),
    ABSENT_CASES,
    ids=[f"{rt.name}-v{v}-{'.'.join(f.name for f in p)}" for rt, v, p in ABSENT_CASES],
)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_writing_non_default_absent_field_is_refused(rt: RecordType, version: int, path, data: st.DataObject):
    field = path[-1]
    msg = data.draw(ks.messages(rt, version), label="message")
    value = data.draw(ks.non_default_values(field, rt.nested), label=field.name)
    bad = _with_path_value(rt, msg, path, value)
    expected = f"Attempted to write a non-default {field.json_name} at version {version}"
    with pytest.raises(UnsupportedVersionException, match=f"^{re.escape(expected)}$"):
        rt.encode(bad, version)
    # The default value itself is fine (it is what a reader of that version assumes).
    ok = _with_path_value(rt, msg, path, field.default_value()) if len(path) == 1 else msg
    rt.encode(ok, version)


def test_absent_field_text_is_kafkas():
    # Kafka: UnsupportedVersionException("Attempted to write a non-default inControlledShutdown at version 0")
    rt = REGISTRY["RegisterBrokerRecord"]
    with pytest.raises(UnsupportedVersionException) as e:
        rt.encode(rt.new(in_controlled_shutdown=True), 0)
    assert str(e.value) == "Attempted to write a non-default inControlledShutdown at version 0"


# ------------------------------------------------------------------------------- batches


def _check_entries(entries, payloads, base_offset, epoch, timestamp, control):
    assert len(entries) == len(payloads)
    for i, (entry, p) in enumerate(zip(entries, payloads)):
        assert entry.offset == base_offset + i
        assert entry.epoch == epoch
        assert entry.timestamp == timestamp
        assert entry.control is control
        assert entry.record_type is p.record_type
        assert entry.version == p.version
        assert entry.message == p.message


batch_headers = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, 2**62),
        "epoch": st.integers(0, 2**31 - 1),
        "timestamp": st.integers(-1, 2**50),
    }
)


@BATCH
@given(
    head=batch_headers,
    payloads=st.lists(ks.metadata_payloads(REGISTRY, unknown_tags=True), min_size=1, max_size=8),
)
def test_data_batch_parses_back_entry_for_entry(head, payloads):
    raw = encode_data_batch(head["base_offset"], payloads, epoch=head["epoch"], timestamp=head["timestamp"])
    (piece,) = list(split_batches(raw))
    assert isinstance(piece, BatchSlice) and piece.data == raw and piece.base_offset == head["base_offset"]
    batch = parse_batch(raw)
    assert not batch.is_control
    assert batch.records_count == len(payloads)
    assert batch.last_offset == head["base_offset"] + len(payloads) - 1
    _check_entries(decode_batch(batch, REGISTRY), payloads, control=False, **head)
    assert batch.reencode() == raw
    assert stored_crc(raw) == batch.crc  # (the header's CRC read in place, as the nodes' batch keys read it)


@BATCH
@given(
    head=batch_headers,
    payloads=st.lists(ks.control_payloads(REGISTRY, unknown_tags=True), min_size=1, max_size=4),
)
def test_control_batch_parses_back_entry_for_entry(head, payloads):
    raw = encode_control_batch(head["base_offset"], payloads, epoch=head["epoch"], timestamp=head["timestamp"])
    batch = parse_batch(raw)
    assert batch.is_control
    _check_entries(decode_batch(batch, REGISTRY), payloads, control=True, **head)
    assert batch.reencode() == raw


@BATCH
@given(
    epoch=st.integers(0, 2**31 - 1),
    timestamp=st.integers(0, 2**45),
    batches=st.lists(
        st.tuples(st.booleans(), st.lists(ks.metadata_payloads(REGISTRY), min_size=1, max_size=4),
                  st.lists(ks.control_payloads(REGISTRY), min_size=1, max_size=2)),
        min_size=1,
        max_size=5,
    ),
)
def test_a_file_of_batches_splits_and_parses_back(epoch, timestamp, batches):
    data = bytearray()
    expected: list[tuple[int, bool, Payload]] = []
    offset = 0
    for control, data_payloads, control_payloads in batches:
        chosen = control_payloads if control else data_payloads
        encode = encode_control_batch if control else encode_data_batch
        data += encode(offset, chosen, epoch=epoch, timestamp=timestamp)
        expected += [(offset + i, control, p) for i, p in enumerate(chosen)]
        offset += len(chosen)
    pieces = list(split_batches(bytes(data)))
    assert all(isinstance(p, BatchSlice) for p in pieces)
    assert len(pieces) == len(batches)
    entries = [e for p in pieces for e in decode_batch(parse_batch(p.data), REGISTRY)]
    assert [(e.offset, e.control, e.record_type, e.version, e.message) for e in entries] == [
        (o, c, p.record_type, p.version, p.message) for o, c, p in expected
    ]
    assert b"".join(p.data for p in pieces) == bytes(data)


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD],
                         ids=lambda c: compression.NAMES[c])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    head=batch_headers,
    payloads=st.lists(ks.metadata_payloads(REGISTRY), min_size=1, max_size=12),
    copies=st.integers(1, 40),
)
def test_compressed_batch_reads_back(codec, head, payloads, copies):
    payloads = payloads * copies  # repetition, so the compressors have something to do
    values = [(None, encode_metadata_record(p.record_type, p.message, p.version)) for p in payloads]
    raw = build_batch(head["base_offset"], values, epoch=head["epoch"], timestamp=head["timestamp"],
                      compression_codec=codec)
    batch = parse_batch(raw)
    assert batch.compression == codec
    assert [(r.key, r.value) for r in batch.records()] == values
    _check_entries(decode_batch(batch, REGISTRY), payloads, control=False, **head)
    # Same records, same codec: the batch is rebuilt to the same bytes.
    assert batch.reencode() == raw
    # And the uncompressed batch of the same records holds the same entries.
    plain = parse_batch(build_batch(head["base_offset"], values, epoch=head["epoch"], timestamp=head["timestamp"]))
    assert decode_batch(plain, REGISTRY) == decode_batch(batch, REGISTRY)
