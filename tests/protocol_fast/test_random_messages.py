"""Hypothesis: random messages of every record type and version, fast path vs pure path.

For each (record type, version): random valid messages (the generator in _support walks
the schema) are encoded by both paths (same bytes, or the same exception), and those bytes
are decoded by both (same values, types included). Also: invalid field values, non-default
values in absent fields, random unknown tagged fields, and whole batches.

A kitchen-sink schema covers what the shipped schemas do not: non-flexible versions (int16
string and int32 array lengths, no tagged section, a tagged field written in order), every
primitive type in arrays, tagged structs/arrays/bytes, nullable arrays of structs, nested
structs three levels deep.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol import fastpath
from kraftsim.protocol import batch_io
from kraftsim.protocol.entries import Payload, decode_batch, encode_data_batch
from kraftsim.protocol.batch import parse_batch
from kraftsim.protocol.registry import Registry, default_registry

from ._support import (
    ABSENT_STRUCT_TOML,
    KITCHEN_SINK_TOML,
    custom_record_type,
    fast_codec,
    invalid_values,
    messages,
    needs_speedups,
    outcome,
    pure_codec,
    same,
    same_outcome,
    versions_to_test,
)

pytestmark = needs_speedups

REGISTRY = default_registry()
KITCHEN = custom_record_type(KITCHEN_SINK_TOML)
ABSENT = custom_record_type(ABSENT_STRUCT_TOML)
ALL_TYPES = [*REGISTRY.by_name.values(), KITCHEN, ABSENT]
CASES = [(rt, v) for rt in ALL_TYPES for v in versions_to_test(rt)]

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_message(rt, version, message, valid: bool = True) -> None:
    pdec, penc = pure_codec(rt, version)
    fdec, fenc = fast_codec(rt, version)

    def enc(fn, pure: bool):
        out = bytearray()
        if pure:
            with fastpath.pure_python():
                fn(message, out)
        else:
            fn(message, out)
        return bytes(out)

    pure_out = outcome(lambda: enc(penc, True))
    fast_out = outcome(lambda: enc(fenc, False))
    same_outcome(fast_out, pure_out, f"encode {rt.name} v{version}")
    if pure_out[0] != "ok":
        return
    data = pure_out[1]
    if valid:  # the C program itself (no fallback) handles every valid message
        program = fastpath.program_for_codec(rt.codec, version)
        assert program.encode(message) == data
        msg, end = program.decode(data)
        assert end == len(data)
        with fastpath.pure_python():
            same(msg, pdec(data, 0)[0], "program.decode")
    # Decode at an offset too, with trailing bytes, as the framing layer does.
    for prefix, suffix in ((b"", b""), (b"\x01\x02\x03", b"\xff\xee")):
        buf = prefix + data + suffix
        with fastpath.pure_python():
            pure_dec = outcome(lambda: pdec(buf, len(prefix)))
        fast_dec = outcome(lambda: fdec(buf, len(prefix)))
        same_outcome(fast_dec, pure_dec, f"decode {rt.name} v{version}")
        if valid:
            assert pure_dec[0] == "ok" and pure_dec[1][1] == len(prefix) + len(data)


@pytest.mark.parametrize("rt,version", CASES, ids=[f"{rt.name}-v{v}" for rt, v in CASES])
@SETTINGS
@given(data=st.data())
def test_random_messages_same_bytes_and_values(rt, version, data):
    _check_message(rt, version, data.draw(messages(rt, version)))


@pytest.mark.parametrize("rt,version", CASES, ids=[f"{rt.name}-v{v}" for rt, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_invalid_field_values_same_error(rt, version, data):
    """One field set to a value of the wrong type or range: the same exception (or the same bytes)."""
    message = data.draw(messages(rt, version))
    fields = rt.schema.body.fields
    if not fields:
        return
    f = data.draw(st.sampled_from(fields))
    bad = data.draw(invalid_values(f))
    setattr(message, f.py_name, bad)
    _check_message(rt, version, message, valid=False)


@pytest.mark.parametrize("rt,version", CASES, ids=[f"{rt.name}-v{v}" for rt, v in CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_unknown_tags_of_any_kind_same_bytes(rt, version, data):
    """_unknown with used tags, duplicates, odd containers: the fast path falls back identically."""
    message = data.draw(messages(rt, version))
    entry = st.tuples(st.integers(0, 12), st.binary(max_size=4))
    message._unknown = data.draw(st.one_of(
        st.lists(entry, max_size=4).map(tuple),
        st.lists(entry, max_size=3),  # a list, not a tuple
        st.just(((-1, b"x"),)),
        st.just(((2**70, b"x"),)),
        st.just(((1, "not bytes"),)),
        st.just(((1, b"a", b"b"),)),
    ))
    _check_message(rt, version, message, valid=False)


def test_absent_field_with_a_value_same_error():
    rt = KITCHEN
    for version in (2, 3, 4, 5):  # Removed (0-1) is absent from 2 on
        message = rt.cls(removed=3)
        _check_message(rt, version, message, valid=False)
    message = rt.cls(later=9)  # Later exists from 5
    for version in range(5):
        _check_message(rt, version, message, valid=False)


def test_absent_struct_field_is_refused_like_python():
    rt = ABSENT
    _check_message(rt, 0, rt.cls(n=1))
    _check_message(rt, 1, rt.cls(n=1), valid=False)  # Python compares the default instance with None: refused
    _check_message(rt, 1, rt.cls(n=1, old=None))


def test_duck_typed_and_subclassed_messages():
    """Objects that are not exactly the record's class take the getattr path or Python's."""
    rt = REGISTRY["PartitionRecord"]
    base = rt.cls(partition_id=3, replicas=[1, 2], isr=(1, 2))  # a tuple where a list is expected
    _check_message(rt, 2, base, valid=False)

    class Duck:
        def __init__(self, m):
            for name in m.__struct_fields__:
                setattr(self, name, getattr(m, name))

    _check_message(rt, 2, Duck(rt.cls(partition_id=3, replicas=[1, 2])), valid=False)
    _check_message(rt, 0, object(), valid=False)


@SETTINGS
@given(data=st.data())
def test_random_data_batches(data):
    """Whole batches of random metadata payloads: same batch bytes, same decoded entries."""
    types = [rt for rt in REGISTRY.metadata_types()]
    payloads = []
    for _ in range(data.draw(st.integers(0, 8))):
        rt = data.draw(st.sampled_from(types))
        version = data.draw(st.sampled_from(versions_to_test(rt)))
        payloads.append(Payload(rt, version, data.draw(messages(rt, version))))
    base = data.draw(st.integers(0, 2**40))
    epoch = data.draw(st.integers(-(2**31), 2**31 - 1))
    ts = data.draw(st.integers(-(2**63), 2**63 - 1))
    with fastpath.pure_python():
        pure_out = outcome(lambda: encode_data_batch(base, payloads, epoch=epoch, timestamp=ts))
    fast_out = outcome(lambda: batch_io.encode_data_batch(base, payloads, epoch=epoch, timestamp=ts))
    same_outcome(fast_out, pure_out, "encode_data_batch")
    if pure_out[0] != "ok":
        return
    raw = pure_out[1]
    batch = parse_batch(raw)
    with fastpath.pure_python():
        pure_entries = decode_batch(batch, REGISTRY)
    same(batch_io.decode_batch(batch, REGISTRY), pure_entries, "decode_batch")
    same(batch_io.read_log_entries(raw * 2, REGISTRY)[0], pure_entries * 2, "read_log_entries")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_encode_batches_equals_per_batch_encoding(data):
    """Many batches in one call (data, control, invalid ones mixed): item for item the per-batch result or error."""
    metadata_types = REGISTRY.metadata_types()
    header = REGISTRY["SnapshotHeaderRecord"]
    batches = []
    for _ in range(data.draw(st.integers(0, 6))):
        kind = data.draw(st.sampled_from(["data", "data", "control", "bad"]))
        if kind == "control":
            payloads = [Payload(header, 0, header.new(version=0, last_contained_log_timestamp=data.draw(st.integers(0, 2**40))))]
        else:
            payloads = []
            for _ in range(data.draw(st.integers(0, 4))):
                rt = data.draw(st.sampled_from(metadata_types))
                version = data.draw(st.sampled_from(versions_to_test(rt)))
                payloads.append(Payload(rt, version, data.draw(messages(rt, version))))
            if kind == "bad" and payloads:
                payloads[-1] = Payload(payloads[-1].record_type, 99, payloads[-1].message)
        batches.append(batch_io.BatchToWrite(data.draw(st.integers(0, 2**40)), data.draw(st.integers(0, 2**31 - 1)),
                                             data.draw(st.integers(0, 2**42)), kind == "control", payloads))

    def one_by_one():
        from kraftsim.protocol.entries import encode_control_batch
        with fastpath.pure_python():
            return [(encode_control_batch if b.control else encode_data_batch)(b.base_offset, b.payloads, epoch=b.epoch,
                                                                              timestamp=b.timestamp) for b in batches]

    same_outcome(outcome(lambda: batch_io.encode_batches(batches)), outcome(one_by_one), "encode_batches")


@settings(max_examples=40, deadline=None)
@given(base=st.one_of(st.integers(), st.just(None), st.just(1.0)), epoch=st.one_of(st.integers(), st.just("1")),
       ts=st.one_of(st.integers(), st.just(None)))
def test_batch_header_arguments_out_of_range_same_error(base, epoch, ts):
    rt = REGISTRY["NoOpRecord"]
    payloads = [Payload(rt, 0, rt.new())]
    with fastpath.pure_python():
        pure_out = outcome(lambda: encode_data_batch(base, payloads, epoch=epoch, timestamp=ts))
    same_outcome(outcome(lambda: batch_io.encode_data_batch(base, payloads, epoch=epoch, timestamp=ts)), pure_out,
                 "header arguments")


def test_payload_shapes():
    """Generators are never consumed by the fast path; bad versions and record types fall back."""
    rt = REGISTRY["FeatureLevelRecord"]
    msg = rt.new(name="metadata.version", feature_level=27)
    gen = (p for p in [Payload(rt, 0, msg)])
    assert fastpath.try_encode_data_batch(0, gen, 1, 0) is None
    assert len(list(gen)) == 1  # untouched
    for bad in ([Payload(rt, 1, msg)], [Payload(rt, -1, msg)], [Payload(rt, True, msg)],
                [Payload(REGISTRY["SnapshotHeaderRecord"], 0, msg)], [(rt, 0, msg)], [Payload("x", 0, msg)]):
        assert fastpath.try_encode_data_batch(0, bad, 1, 0) is None
        with fastpath.pure_python():
            pure_out = outcome(lambda: encode_data_batch(0, bad, epoch=1, timestamp=0))
        same_outcome(outcome(lambda: batch_io.encode_data_batch(0, bad, epoch=1, timestamp=0)), pure_out, repr(bad))


def test_registry_changes_are_seen():
    """The decode table follows a registry that changes after first use."""
    reg = Registry(rt.schema for rt in REGISTRY.by_name.values())
    rt = reg["NoOpRecord"]
    raw = batch_io.encode_data_batch(0, [Payload(rt, 0, rt.new())], epoch=0, timestamp=0)
    batch = parse_batch(raw)
    assert fastpath.try_decode_batch(batch, reg)[0].record_type is rt
    new_rt = reg.add(rt.schema)  # replaced by a new RecordType object
    assert new_rt is not rt
    assert fastpath.try_decode_batch(batch, reg)[0].record_type is new_rt
    reg._forget(new_rt)
    assert fastpath.try_decode_batch(batch, reg) is None
    with pytest.raises(Exception) as exc:
        batch_io.decode_batch(batch, reg)
    assert "Unknown metadata id 20" in str(exc.value)


from kraftsim.testing import strategies as ks  # noqa: E402


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_project_strategies_messages(data):
    rt, version = data.draw(ks.record_versions())
    _check_message(rt, version, data.draw(ks.messages(rt, version, unknown_tags=True)))
