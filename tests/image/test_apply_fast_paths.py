"""The fast paths of applying commits give exactly what the plain paths give.

- `PartitionRegistration.merge` (a shortcut for the usual ISR / leader change) equals
  `merge_plain` (Kafka's rule, field by field), errors included.
- `replay_records` merging PartitionChangeRecords straight into their topics equals
  `MetadataDelta.replay` record by record with the plain merge: images, layout, digests,
  errors and counts.
- The loader, which hands each run of plain records to `replay_records`, ends with the
  image, faults and offsets of replaying every record alone.
- `ChunkMap.updated` / `sorted_items` / `values` behave as a dict.
- `TopicsDelta.apply` (no look-up for a changed topic of the base) gives the image a
  replay from nothing gives.
- Applying a commit rebuilds each changed topic of the base with one `ChunkMap.updated`
  (every change to it at once), copying only the chunks the changes fall in.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import CommittedBatch, MetadataDelta, MetadataImage, MetadataLoader, MetadataReplayError, \
    image_digest, intern
from kraftsim.image import PartitionRegistration
from kraftsim.image.components.partition import fast_merge
from kraftsim.image.pmap import CHUNK_BITS, CHUNK_MASK, ChunkMap
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.testing.strategies import messages
from tests.image.helpers import REGISTRY, rec, replay
from tests.image.test_bulk_replay import (
    DIRS, NAMES, TOPIC_IDS, as_entries, fast_replay, partition_record, same_result, slow_replay,
)

PCR = REGISTRY["PartitionChangeRecord"]
brokers = st.lists(st.integers(0, 4), max_size=4)


@contextmanager
def plain_merge() -> Iterator[None]:
    """`merge` replaced by `merge_plain` meanwhile: the reference the shortcut must agree with."""
    fast = PartitionRegistration.merge
    PartitionRegistration.merge = PartitionRegistration.merge_plain  # type: ignore[method-assign]
    try:
        yield
    finally:
        PartitionRegistration.merge = fast  # type: ignore[method-assign]


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except KraftsimError as e:
        return type(e), str(e)


@st.composite
def registrations(draw: Any) -> PartitionRegistration:
    replicas = intern.ints(draw(st.lists(st.integers(0, 4), max_size=4, unique=True)))
    n = draw(st.sampled_from([len(replicas), len(replicas), 0, 1, 2]))  # (mismatched lengths too)
    dirs = intern.uuids(draw(st.lists(st.sampled_from(DIRS), min_size=n, max_size=n)))
    lists = [intern.ints(draw(brokers)) for _ in range(5)]
    return PartitionRegistration(replicas, dirs, lists[0], lists[1], lists[2], draw(st.integers(-1, 4)),
                                 draw(st.sampled_from([0, 1])), draw(st.integers(0, 5)), draw(st.integers(0, 5)),
                                 lists[3], lists[4])


@st.composite
def change_records(draw: Any) -> Any:
    """PartitionChangeRecords of the usual shapes (ISR and leader only) and of any shape."""
    fields: dict[str, Any] = dict(topic_id=draw(st.sampled_from(TOPIC_IDS)), partition_id=draw(st.integers(0, 3)),
                                  isr=draw(st.none() | brokers), leader=draw(st.sampled_from([-2, -2, -1, 0, 1, 3])),
                                  leader_recovery_state=draw(st.sampled_from([-1, -1, 0, 1, 2])))
    for name in ("replicas", "removing_replicas", "adding_replicas", "eligible_leader_replicas", "last_known_elr"):
        if draw(st.integers(0, 4)) == 0:
            fields[name] = draw(brokers)
    if draw(st.integers(0, 4)) == 0:
        fields["directories"] = draw(st.lists(st.sampled_from(DIRS), max_size=4))
    return rec("PartitionChangeRecord", **fields)


@settings(max_examples=400, deadline=None)
@given(registrations(), change_records().map(lambda p: p.message)
       | st.integers(0, PCR.schema.versions.hi).flatmap(lambda v: messages(PCR, v)))
def test_merge_equals_the_plain_merge(p: PartitionRegistration, r: Any) -> None:
    got, want = outcome(p.merge, r), outcome(p.merge_plain, r)
    assert got == want
    if isinstance(want, PartitionRegistration):
        assert all(getattr(got, f) is getattr(want, f) for f in TUPLE_FIELDS)  # interned: shared


#: A registration's fields that hold interned tuples.
TUPLE_FIELDS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "elr", "last_known_elr")


@settings(max_examples=400, deadline=None)
@given(registrations(), change_records().map(lambda p: p.message)
       | st.integers(0, PCR.schema.versions.hi).flatmap(lambda v: messages(PCR, v)))
def test_the_c_merge_equals_the_plain_merge_where_it_answers(p: PartitionRegistration, r: Any) -> None:
    """bulk.py's `fast_merge` (C) gives merge_plain's registration, its tuples the same
    interned objects, or None (bulk then calls merge())."""
    if fast_merge is None:
        pytest.skip("the C extension is not built")
    got = fast_merge(p, r)
    if got is not None:
        want = p.merge_plain(r)
        assert type(got) is PartitionRegistration and got == want
        assert all(getattr(got, f) is getattr(want, f) for f in TUPLE_FIELDS)


def test_the_c_merge_takes_the_usual_changes_and_declines_the_rest() -> None:
    if fast_merge is None:
        pytest.skip("the C extension is not built")
    p = PartitionRegistration(intern.ints((1, 2, 3)), intern.migrating(3), intern.ints((1, 2, 3)), leader=1,
                              leader_epoch=4, partition_epoch=7)
    shrink = rec("PartitionChangeRecord", topic_id=TOPIC_IDS[0], partition_id=0, isr=[1, 2], leader=2).message
    intern.ints((1, 2))
    got = fast_merge(p, shrink)
    assert got == p.merge_plain(shrink) and got.isr is intern.ints((1, 2))
    assert (got.leader, got.leader_epoch, got.partition_epoch) == (2, 5, 8)
    same_leader = rec("PartitionChangeRecord", topic_id=TOPIC_IDS[0], partition_id=0, leader_recovery_state=1).message
    assert fast_merge(p, same_leader) == p.merge_plain(same_leader)
    declined = [
        rec("PartitionChangeRecord", topic_id=TOPIC_IDS[0], partition_id=0, isr=[3, 2, 1, 0, 4]).message,  # not interned
        rec("PartitionChangeRecord", topic_id=TOPIC_IDS[0], partition_id=0, replicas=[1, 2]).message,
        rec("PartitionChangeRecord", topic_id=TOPIC_IDS[0], partition_id=0, leader_recovery_state=2).message,
    ]
    assert [fast_merge(p, r) for r in declined] == [None, None, None]
    no_dirs = PartitionRegistration(intern.ints((1, 2)), intern.EMPTY, intern.ints((1, 2)))
    assert fast_merge(no_dirs, shrink) is None


@st.composite
def commit_records(draw: Any) -> list[Payload]:
    """Topics with partitions, then a mix in which PartitionChangeRecords dominate."""
    created = draw(st.lists(st.sampled_from(range(len(TOPIC_IDS))), unique=True))
    out = [rec("TopicRecord", name=NAMES[i], topic_id=TOPIC_IDS[i]) for i in created]
    out += [rec("PartitionRecord", topic_id=TOPIC_IDS[i], partition_id=p, replicas=[1, 2, 3], isr=[1, 2, 3],
                leader=1) for i in created for p in range(draw(st.integers(0, 4)))]
    tid = st.sampled_from(TOPIC_IDS)
    other = st.one_of(partition_record(),
                      st.builds(lambda n, t: rec("TopicRecord", name=n, topic_id=t), st.sampled_from(NAMES), tid),
                      st.builds(lambda t: rec("RemoveTopicRecord", topic_id=t), tid),
                      st.builds(lambda n: rec("ClearElrRecord", topic_name=n), st.sampled_from(NAMES + [""])),
                      st.just(rec("NoOpRecord")))
    return out + draw(st.lists(st.one_of(change_records(), change_records(), change_records(), other), max_size=40))


@settings(max_examples=300, deadline=None)
@given(commit_records(), st.booleans(), st.booleans())
def test_replay_records_merges_change_records_as_replay_does(recs, on_base, skip_errors) -> None:
    base = replay([rec("TopicRecord", name="a", topic_id=TOPIC_IDS[0]),
                   rec("PartitionRecord", topic_id=TOPIC_IDS[0], partition_id=0, replicas=[1, 2], isr=[1],
                       leader=1, eligible_leader_replicas=[2])]) if on_base else MetadataImage()
    for records in (recs, as_entries(recs)):
        with plain_merge():
            want = slow_replay(base, records, skip_errors)
        same_result(fast_replay(base, records, skip_errors), want, False)


@st.composite
def wide_commit_records(draw: Any) -> tuple[list[Payload], list[Payload]]:
    """Topics of up to 20 partitions, their ids in any order and with gaps (so positions run past
    the first 8-entry chunk and the key positions are not 0..n-1); then change records, some for
    partitions that do not exist, mixed with records that start or remove topics."""
    out: list[Payload] = []
    for i in draw(st.lists(st.sampled_from(range(len(TOPIC_IDS))), unique=True, min_size=1)):
        out.append(rec("TopicRecord", name=NAMES[i], topic_id=TOPIC_IDS[i]))
        n = draw(st.integers(0, 20))
        pids = draw(st.permutations(range(n)) | st.lists(st.integers(0, 24), unique=True, min_size=n, max_size=n))
        out += [rec("PartitionRecord", topic_id=TOPIC_IDS[i], partition_id=p, replicas=[1, 2, 3], isr=[1, 2, 3],
                    leader=1 + p % 3, leader_epoch=p, partition_epoch=2 * p) for p in pids]  # (each one differs)
    tid = st.sampled_from(TOPIC_IDS)
    change = st.builds(lambda t, p, isr, leader: rec("PartitionChangeRecord", topic_id=t, partition_id=p, isr=isr,
                                                     leader=leader),
                       tid, st.integers(0, 22), st.none() | brokers, st.sampled_from([-2, -2, -1, 1, 2]))
    other = st.one_of(change_records(), st.builds(lambda t: rec("RemoveTopicRecord", topic_id=t), tid),
                      st.builds(lambda n, t: rec("TopicRecord", name=n, topic_id=t), st.sampled_from(NAMES), tid))
    return out, draw(st.lists(st.one_of(change, change, change, other), max_size=60))


@settings(max_examples=200, deadline=None)
@given(wide_commit_records(), st.booleans())
def test_change_records_read_wide_base_topics_in_place(setup_and_changes, skip_errors) -> None:
    """The change path reads a base partition through its ChunkMap's layout (no call per record):
    the same images, errors and counts as record-by-record replay, on bases of many chunks."""
    setup, changes = setup_and_changes
    base = replay(setup)
    for records in (changes, as_entries(changes)):
        with plain_merge():
            want = slow_replay(base, records, skip_errors)
        same_result(fast_replay(base, records, skip_errors), want, False)


def as_batches(records: list[Payload], cuts: list[int]) -> list[CommittedBatch]:
    entries = [LogEntry(i, 1, 0, False, r.record_type, r.version, r.message) for i, r in enumerate(records)]
    bounds = sorted({c % (len(entries) + 1) for c in cuts} | {0, len(entries)})
    return [CommittedBatch(a, b - 1, 1, 0, 10, entries[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]


MV = [rec("FeatureLevelRecord", name="metadata.version", feature_level=21)]


@settings(max_examples=200, deadline=None)
@given(commit_records(), st.lists(st.integers(0, 60), max_size=6))
def test_the_loader_applies_runs_as_record_by_record_replay(recs, cuts) -> None:
    records = MV + recs + [rec("FeatureLevelRecord", name="group.version", feature_level=1)] + recs[:5]
    faults: list[str] = []
    loader = MetadataLoader(fault_handler=lambda f: faults.append(str(f)), clock_ns=lambda: 0)
    batches = as_batches(records, cuts)
    loader.set_high_watermark(len(records))
    for b in batches:
        loader.handle_commit([b])
    want, errors = MetadataImage(), []
    with plain_merge():
        for b in batches:  # (each batch is a commit: a delta of its own)
            d, more = slow_replay(want, list(b.entries), True)
            want = d.apply()
            errors += more
    assert loader.image.same_content(want) and image_digest(loader.image) == image_digest(want)
    assert len(faults) == len(errors)
    assert all(msg in f for f, (_, _, msg) in zip(faults, errors))
    assert loader.last_offset == len(records) - 1


@settings(max_examples=100, deadline=None)
@given(wide_commit_records(), st.lists(st.integers(0, 100), max_size=6))
def test_the_loader_applies_runs_on_wide_topics_as_record_by_record_replay(setup_and_changes, cuts) -> None:
    """As above, on topics of many chunks created by a commit of their own: faults (their
    texts) and offsets too."""
    setup, changes = setup_and_changes
    records = MV + setup + changes
    faults: list[str] = []
    loader = MetadataLoader(fault_handler=lambda f: faults.append(str(f)), clock_ns=lambda: 0)
    batches = as_batches(records, cuts + [len(MV) + len(setup)])
    loader.set_high_watermark(len(records))
    for b in batches:
        loader.handle_commit([b])
    want, errors = MetadataImage(), []
    with plain_merge():
        for b in batches:
            d, more = slow_replay(want, list(b.entries), True)
            want = d.apply()
            errors += more
    assert loader.image.same_content(want) and image_digest(loader.image) == image_digest(want)
    assert len(faults) == len(errors) and all(msg in f for f, (_, _, msg) in zip(faults, errors))
    assert loader.last_offset == len(records) - 1


def test_a_fault_that_stops_the_loader_leaves_the_offset_before_the_record() -> None:
    t = TOPIC_IDS[0]
    records = MV + [rec("TopicRecord", name="a", topic_id=t),
                    rec("PartitionRecord", topic_id=t, partition_id=0, replicas=[1], isr=[1], leader=1),
                    rec("PartitionChangeRecord", topic_id=t, partition_id=0, isr=[1], leader=-2),
                    rec("PartitionChangeRecord", topic_id=t, partition_id=7, isr=[1]),  # no such partition
                    rec("PartitionChangeRecord", topic_id=t, partition_id=0, isr=[], leader=-1)]
    loader = MetadataLoader(clock_ns=lambda: 0)
    loader.set_high_watermark(len(records))
    try:
        loader.handle_commit(as_batches(records, []))
    except KraftsimError as e:
        assert "from offset 4" in str(e) and "Unable to find partition" in str(e)
    else:
        raise AssertionError("the fault did not stop the loader")
    assert loader.last_offset == 3


def test_a_snapshot_fault_names_the_record_by_its_place_among_the_metadata_records() -> None:
    t = TOPIC_IDS[0]
    header = LogEntry(0, 1, 0, True, REGISTRY["SnapshotHeaderRecord"], 0,
                      REGISTRY["SnapshotHeaderRecord"].new(version=0, last_contained_log_timestamp=0))
    body = [rec("TopicRecord", name="a", topic_id=t),
            rec("PartitionChangeRecord", topic_id=t, partition_id=3, isr=[1]),  # fails: no partition 3
            rec("PartitionRecord", topic_id=TOPIC_IDS[1], partition_id=0, replicas=[1], isr=[1]),  # fails: no topic
            rec("PartitionRecord", topic_id=t, partition_id=0, replicas=[1], isr=[1], leader=1)]
    entries = [header] + [LogEntry(i + 1, 1, 0, False, r.record_type, r.version, r.message) for i, r in enumerate(body)]
    faults: list[str] = []
    loader = MetadataLoader(fault_handler=lambda f: faults.append(str(f)), clock_ns=lambda: 0)
    image = loader.handle_load_snapshot(iter(entries), end_offset=5, epoch=1, last_contained_log_timestamp=0)
    assert [f.split(" in snapshot")[0] for f in faults] == ["Error loading metadata log record 1",
                                                           "Error loading metadata log record 2"]
    assert list(image.topics.get_topic(t).partitions) == [0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), unique=True), st.dictionaries(st.integers(0, 70), st.integers(), max_size=12),
       st.booleans())
def test_chunk_maps_behave_as_dicts(keys, changes, dense) -> None:
    base = {k: -k for k in (range(len(keys)) if dense else keys)}
    m = ChunkMap.of(base)
    want = {**base, **changes}
    got = m.updated(changes)
    assert dict(got.items()) == want and list(got) == list(want) and list(got.values()) == list(want.values())
    assert got == want and got.sorted_items() == sorted(want.items())
    assert dict(m.items()) == base  # the old version is unchanged
    if all(k in base for k in changes):
        assert len(got.chunk_ids() & m.chunk_ids()) >= len(m.chunk_ids()) - len(changes)  # untouched chunks shared
    for mapping, items in ((got, want), (m, base), (base, base)):
        positions, chunks = ChunkMap.layout_of(mapping)  # (what bulk replay reads in place)
        assert list(positions) == list(items)
        assert {k: chunks[i >> CHUNK_BITS][i & CHUNK_MASK] for k, i in positions.items()} == items


def test_applying_changes_to_a_base_equals_replaying_all_from_nothing() -> None:
    t0, t1 = TOPIC_IDS[0], TOPIC_IDS[1]
    first = [rec("TopicRecord", name="a", topic_id=t0), rec("TopicRecord", name="b", topic_id=t1)] + [
        rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2], isr=[1, 2], leader=1)
        for t in (t0, t1) for p in range(20)]
    then = [rec("PartitionChangeRecord", topic_id=t0, partition_id=p, isr=[2], leader=2) for p in range(0, 20, 3)]
    then += [rec("RemoveTopicRecord", topic_id=t1), rec("TopicRecord", name="b", topic_id=t1),
             rec("PartitionRecord", topic_id=t1, partition_id=0, replicas=[3], isr=[3], leader=3)]
    applied = replay(then, base=replay(first))
    whole = replay(first + then)
    assert applied == whole and image_digest(applied) == image_digest(whole)
    assert applied.topics.get_topic(t0).sorted_partitions() == whole.topics.get_topic(t0).sorted_partitions()


def test_a_settled_delta_keeps_what_publishers_read_and_refuses_its_topics() -> None:
    """`settle` lets go of the topic changes of an applied delta (CommitShare keeps commits so):
    `apply()` still gives the applied topics, `metadata_version_changed()` stays, and reading
    the topic changes (or replaying into them) is an error, not an empty answer."""
    t = TOPIC_IDS[0]
    base = replay([rec("TopicRecord", name="a", topic_id=t)] + [
        rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2], isr=[1, 2], leader=1) for p in range(12)])
    d = MetadataDelta(base)
    d.replay_all(MV + [rec("PartitionChangeRecord", topic_id=t, partition_id=p, isr=[2], leader=2) for p in (1, 9)])
    applied = d.apply()
    d.settle(applied)
    again = d.apply()
    assert again.topics is applied.topics and again == applied
    assert d.metadata_version_changed() == 21
    for use in (lambda: d.topics, lambda: d.replay(rec("TopicRecord", name="b", topic_id=TOPIC_IDS[1]))):
        with pytest.raises(MetadataReplayError, match="let go"):
            use()
    untouched = MetadataDelta(base)
    untouched.replay_all(MV)
    untouched.settle(untouched.apply())  # (no topic changes: nothing to let go)
    assert untouched.topics.image is base.topics


@contextmanager
def counted_updates() -> Iterator[list[ChunkMap[Any, Any]]]:
    """`ChunkMap.updated` counted meanwhile: the maps it was called on, in order."""
    real = ChunkMap.updated
    calls: list[ChunkMap[Any, Any]] = []

    def counting(self: ChunkMap[Any, Any], changes: Any) -> ChunkMap[Any, Any]:
        calls.append(self)
        return real(self, changes)

    ChunkMap.updated = counting  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        ChunkMap.updated = real  # type: ignore[method-assign]


@settings(max_examples=150, deadline=None)
@given(wide_commit_records())
def test_a_commit_rebuilds_each_changed_base_topic_once(setup_and_changes) -> None:
    """Applying a commit gathers its changes per topic: one `ChunkMap.updated` per changed topic
    of the base (each chunk a change falls in copied once, every other chunk and the key
    positions shared), and each topic's partitions are what the plain path gives (the base
    topic's partitions as a dict, updated with the changes in order)."""
    setup, changes = setup_and_changes
    base = replay(setup)
    delta = MetadataDelta(base)
    delta.replay_all(changes, lambda r, e: None)
    pending = {tid: (td.image.partitions, dict(td.changes), td.fresh) for tid, td in delta.topics.changed.items()}
    with counted_updates() as calls:
        applied = delta.apply()
    rebuilt = [parts for parts, ch, fresh in pending.values() if ch and not fresh and isinstance(parts, ChunkMap)]
    assert sorted(map(id, calls)) == sorted(map(id, rebuilt))  # once each, and only those
    for tid, (parts, ch, fresh) in pending.items():
        topic = applied.topics.get_topic(tid)
        want = {**dict(parts.items()), **ch}
        assert dict(topic.partitions.items()) == want and list(topic.partitions) == list(want)
        if fresh or not isinstance(parts, ChunkMap) or not all(k in parts for k in ch):
            continue
        (old_pos, old_chunks), (new_pos, new_chunks) = ChunkMap.layout_of(parts), ChunkMap.layout_of(topic.partitions)
        touched = {old_pos[k] >> CHUNK_BITS for k in ch}
        assert new_pos is old_pos
        assert all((new is old) == (c not in touched) for c, (old, new) in enumerate(zip(old_chunks, new_chunks)))
