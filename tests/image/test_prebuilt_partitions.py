"""PartitionRecords decoded straight into registrations (`entries.PrebuiltPartition`, built
in C by `_speedups.c`'s pb_build) give a loader exactly what decoding the record and
replaying it give: the same registration with the same interned tuples, the same images,
errors and counts; any record the builder cannot vouch for comes as its LogEntry."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataDelta, MetadataImage, image_digest, intern, registration_from_record
from kraftsim.image.loader.loading import load_path, load_snapshot
from kraftsim.image.loader.metadata_loader import MetadataLoader
from kraftsim.image.synthetic import ClusterShape, cluster_records
from kraftsim.protocol import fastpath
from kraftsim.protocol.batch import parse_batch
from kraftsim.protocol.batch_io import BatchToWrite, encode_batches
from kraftsim.protocol.entries import LogEntry, Payload, PrebuiltPartition, decode_batch, decode_batch_prebuilt
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.registry import Registry, builtin_schema_dir, iter_schema_files, load_schema_file
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.snapshot import SnapshotStream, read_snapshot, write_snapshot
from kraftsim.testing.strategies import messages
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY, uid
from tests.image.test_bulk_replay import partition_record, record_lists, reference_registration

PR = REGISTRY["PartitionRecord"]
TUPLE_FIELDS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "elr", "last_known_elr")
BUILT = fastpath.HAVE_SPEEDUPS and fastpath.ENABLED and fastpath.try_bulk_replay_run() is not None
needs_c = pytest.mark.skipif(not BUILT, reason="the C fast path is off or not built")


def batch_of(payloads: list[Payload], registry: Registry = REGISTRY) -> Any:
    data = b"".join(encode_batches([BatchToWrite(0, 1, 0, False, payloads)]))
    return parse_batch(data)


def usual(m: Any) -> bool:
    """The shape the builder takes (as `partition.fast_from_record`)."""
    return bool(m.replicas and m.isr and m.leader_recovery_state in (0, 1)
                and not (m.removing_replicas or m.adding_replicas or m.eligible_leader_replicas or m.last_known_elr)
                and (not m.directories or len(m.directories) == len(m.replicas)) and len(m.replicas) < 8
                and not m._unknown)


partition_messages = (st.integers(0, PR.schema.versions.hi).flatmap(
    lambda v: st.tuples(st.just(v), messages(PR, v, unknown_tags=True) | messages(PR, v, edge=True)))
    | st.builds(lambda p: (p.version, p.message), partition_record()))


@needs_c
@settings(max_examples=400, deadline=None)
@given(partition_messages, st.booleans())
def test_a_prebuilt_partition_is_the_reading_of_its_record(vm, seen) -> None:
    """Built: the registration registration_from_record gives, with its very tuples; else the
    record's LogEntry, as decode_batch gives it. Once the record's tuples are interned, the
    usual shape is always built (so the fast path cannot silently stop working)."""
    version, m = vm
    if seen:
        try:
            registration_from_record(m)  # (interns its tuples)
        except KraftsimError:
            pass
    batch = batch_of([Payload(PR, version, m)])
    [got] = decode_batch_prebuilt(batch, REGISTRY)
    if type(got) is not PrebuiltPartition:
        assert not (seen and usual(m))
        assert got == decode_batch(batch, REGISTRY)[0]
        return
    want = reference_registration(m)
    assert usual(m) and got.topic_id == m.topic_id and got.partition_id == m.partition_id
    assert got.registration == want
    assert all(getattr(got.registration, f) is getattr(want, f) for f in TUPLE_FIELDS)


@needs_c
@settings(max_examples=300, deadline=None)
@given(partition_messages, st.data())
def test_damaged_bytes_are_built_only_as_the_decoder_reads_them(vm, data) -> None:
    """One byte of a PartitionRecord's value changed, cut or added: the builder reads the bytes
    itself, so whatever it builds must be what the decoder makes of the same bytes, read into
    a registration; where the decoder gives up, so does the builder's batch."""
    version, m = vm
    value = encode_metadata_record(PR, m, version)
    batch = batch_of([Payload(PR, version, m)])
    raw = bytes(batch.raw)
    at = raw.index(value)
    i = data.draw(st.integers(0, len(value) - 1))
    change = data.draw(st.sampled_from(["set", "cut", "add"]))
    byte = bytes([data.draw(st.integers(0, 255))])
    damaged = (value[:i] + byte + value[i + 1:] if change == "set" else value[:i] + value[i + 1:] if change == "cut"
               else value[:i] + byte + value[i:])
    if len(damaged) != len(value):  # (the record's length prefix says how long its value is)
        return
    body = raw[:at] + damaged + raw[at + len(value):]
    try:
        registration_from_record(m)  # (interns the original's tuples: the damaged ones may share them)
    except KraftsimError:
        pass
    args = (body, 61, len(body), 1, 0, 1, 0, fastpath.decode_table(REGISTRY))
    plain = fastpath._c.decode_records(*args)
    built = fastpath._c.decode_records(*args, fastpath.prebuilt_record_type(REGISTRY))
    if plain is None:
        assert built is None
        return
    [entry], [got] = plain, built
    if type(got) is PrebuiltPartition:
        want = reference_registration(entry.message)
        assert (got.topic_id, got.partition_id) == (entry.message.topic_id, entry.message.partition_id)
        assert got.registration == want
    else:
        assert got == entry


def replay_outcome(base: MetadataImage, entries: list) -> tuple[MetadataDelta, list]:
    d = MetadataDelta(base)
    errors: list = []
    d.replay_all(entries, on_error=lambda r, e: errors.append((type(e), str(e), d.records_replayed)))
    return d, errors


@needs_c
@settings(max_examples=200, deadline=None)
@given(record_lists(), st.booleans())
def test_replaying_prebuilt_partitions_equals_replaying_their_records(records, twice) -> None:
    """Topics created, removed and missing, other records between: the same delta, image,
    errors (text and count) as the decoded records give, in C runs and in the Python loop."""
    batch = batch_of(records)
    if twice:  # (the first decode and replay intern the tuples, so the second builds)
        replay_outcome(MetadataImage(), decode_batch(batch, REGISTRY))
    prebuilt = decode_batch_prebuilt(batch, REGISTRY)
    want_d, want_e = replay_outcome(MetadataImage(), decode_batch(batch, REGISTRY))
    for run in (True, False):
        if run:
            got_d, got_e = replay_outcome(MetadataImage(), prebuilt)
        else:
            with fastpath.pure_python():  # (the Python loop takes the PrebuiltPartitions itself)
                got_d, got_e = replay_outcome(MetadataImage(), prebuilt)
        assert got_e == want_e and got_d.records_replayed == want_d.records_replayed
        for tid, td in got_d.topics.changed.items():
            assert list(td.changes.items()) == list(want_d.topics.changed[tid].changes.items())
        got, want = got_d.apply(), want_d.apply()
        assert got == want and image_digest(got) == image_digest(want)


def test_replicas_met_first_are_not_built_until_interned() -> None:
    """The builder only reuses tuples: a record whose replicas nobody interned yet comes as its
    LogEntry (the Python reading interns them), and the next record with them is built."""
    if not BUILT:
        pytest.skip("the C fast path is off or not built")
    fresh = [901, 902, 903]
    assert intern.find_ints(tuple(fresh)) is None
    p = Payload(PR, 2, PR.new(topic_id=intern.MIGRATING, partition_id=0, replicas=fresh, isr=fresh, leader=901))
    [first] = decode_batch_prebuilt(batch_of([p]), REGISTRY)
    assert type(first) is LogEntry
    registration_from_record(first.message)
    [second] = decode_batch_prebuilt(batch_of([p]), REGISTRY)
    assert type(second) is PrebuiltPartition and second.registration.replicas is intern.find_ints(tuple(fresh))


def _partition_record_changed(change: Any) -> Registry:
    """The default schemas, PartitionRecord's fields passed through `change`."""
    schemas = []
    for s in (load_schema_file(p) for p in iter_schema_files([builtin_schema_dir()])):
        if s.name == "PartitionRecord":
            s = dataclasses.replace(s, body=dataclasses.replace(s.body, fields=tuple(change(list(s.body.fields)))))
        schemas.append(s)
    return Registry(schemas)


def _swap_first_two(fields: list) -> list:
    return [fields[1], fields[0], *fields[2:]]


def _recovering_by_default(fields: list) -> list:
    return [dataclasses.replace(f, default=1) if f.name == "LeaderRecoveryState" else f for f in fields]


@pytest.mark.parametrize("change", [_swap_first_two, _recovering_by_default])
def test_only_kafkas_layout_is_built(change: Any) -> None:
    """A registry whose PartitionRecord is laid out otherwise (two fields swapped) or leaves out
    other values (a recovery state of 1 when a record has none) gets no builder, and its
    records come as LogEntries; the default registry's is Kafka's."""
    assert fastpath.prebuilt_record_type(REGISTRY) is PR
    other = _partition_record_changed(change)
    assert fastpath.prebuilt_record_type(other) is None
    m = other["PartitionRecord"].new(topic_id=intern.MIGRATING, partition_id=0, replicas=[1], isr=[1], leader=1)
    registration_from_record(m)
    entries = decode_batch_prebuilt(batch_of([Payload(other["PartitionRecord"], 2, m)]), other)
    assert [type(e) for e in entries] == [LogEntry]


def test_without_the_c_decoder_the_entries_are_decode_batchs() -> None:
    p = Payload(PR, 2, PR.new(topic_id=intern.MIGRATING, partition_id=0, replicas=[1], isr=[1], leader=1))
    registration_from_record(p.message)
    with fastpath.pure_python():
        assert decode_batch_prebuilt(batch_of([p]), REGISTRY) == decode_batch(batch_of([p]), REGISTRY)


def test_a_snapshot_loads_the_same_with_prebuilt_partitions(tmp_path) -> None:
    """The loader's path end to end (load_path of a streamed snapshot, and load_snapshot of a
    read one): the same image, record count and faults as decoding every record gives,
    including a PartitionRecord of a topic the snapshot does not hold."""
    records = list(cluster_records(ClusterShape(brokers=5, topics=40, partitions=7), default_catalog(), "4.0-IV3"))
    orphan = Payload(PR, 2, PR.new(topic_id=uid(999), partition_id=0, replicas=[1, 2], isr=[2], leader=2))
    path = write_snapshot(tmp_path, SnapshotId(len(records) + 1, 1), records[:50] + [orphan] + records[50:],
                          last_contained_log_timestamp=0, time_ms=0, fsync=False)

    def load(stream: bool) -> tuple[Any, int, list[str]]:
        faults: list[str] = []
        if stream:
            got = load_path(path, fault_handler=lambda f: faults.append(str(f)))
            return got.image, got.records, faults
        loader = MetadataLoader(fault_handler=lambda f: faults.append(str(f)))
        n = load_snapshot(loader, read_snapshot(path, REGISTRY), end_offset=len(records) + 1, epoch=1)
        return loader.image, n, faults

    with fastpath.pure_python():
        want = load(True)
    assert want[1] == len(records) + 1 and len(want[2]) == 1 and "Unable to find topic" in want[2][0]
    for stream in (True, False):
        assert load(stream) == want
        if BUILT:  # (the first load interned the tuples: this one was built)
            with SnapshotStream(path, REGISTRY) as snap:
                built = sum(type(e) is PrebuiltPartition for batch in snap.loader_batches() for e in batch)
            assert built == 40 * 7 + 1  # (every PartitionRecord, the orphan too)
