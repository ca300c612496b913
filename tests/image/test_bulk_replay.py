"""The bulk paths (replay_all, bulk map construction, lent partition dicts) give exactly what
the record-by-record paths give, errors included."""

from __future__ import annotations

import gc
from functools import reduce
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataDelta, MetadataImage, MetadataReplayError, image_digest
from kraftsim.image import intern
from kraftsim.image import PartitionRegistration, registration_from_record
from kraftsim.image.components.partition import fast_from_record
from kraftsim.image.pmap import PMap, hash_int, hash_str, hash_uuid
from kraftsim.image.synthetic import ClusterShape, cluster_records
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.batch_io import BatchToWrite, encode_batches, read_log_entries
from kraftsim.protocol.primitives import Uuid
from kraftsim.testing.strategies import messages
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY, rec, replay, uid
from tests.image.strategies import image_groups, mv_record

PR = REGISTRY["PartitionRecord"]
TOPIC_IDS = [uid(1), uid(2), uid(3)]
NAMES = ["a", "b", "c"]
DIRS = [intern.MIGRATING, intern.UNASSIGNED, uid(77, 5), uid(78, 5)]


def reference_registration(r: Any) -> PartitionRegistration:
    """A PartitionRecord read the plain way: every list interned, Kafka's checks in Kafka's order."""
    replicas = intern.ints(r.replicas)
    if r.directories and len(r.directories) != len(replicas):
        raise MetadataReplayError(f"The lengths for replicas and directories do not match in PartitionRecord for "
                                  f"{r.topic_id}:{r.partition_id}")
    if r.leader_recovery_state not in (0, 1):
        raise MetadataReplayError(f"Value {r.leader_recovery_state} is not a valid leader recovery state")
    return PartitionRegistration(
        replicas, intern.uuids(r.directories) if r.directories else intern.migrating(len(replicas)), intern.ints(r.isr),
        intern.ints(r.removing_replicas), intern.ints(r.adding_replicas), r.leader, r.leader_recovery_state,
        r.leader_epoch, r.partition_epoch, intern.ints(r.eligible_leader_replicas), intern.ints(r.last_known_elr))


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except KraftsimError as e:
        return type(e), str(e)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, PR.schema.versions.hi).flatmap(lambda v: messages(PR, v)))
def test_registration_from_record_matches_the_plain_reading(m) -> None:
    assert outcome(registration_from_record, m) == outcome(reference_registration, m)
    if not isinstance(outcome(reference_registration, m), tuple):
        assert registration_from_record(m).replicas is intern.ints(m.replicas)  # interned, hence shared


TUPLE_FIELDS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "elr", "last_known_elr")


@settings(max_examples=300, deadline=None)
@given(st.integers(0, PR.schema.versions.hi).flatmap(lambda v: messages(PR, v))
       | st.builds(lambda p: p.message, st.deferred(lambda: partition_record())), st.booleans())
def test_the_c_reading_equals_the_plain_reading_where_it_answers(m, seen) -> None:
    """bulk.py's `fast_from_record` (C) gives registration_from_record's registration, its
    tuples the same interned objects, or None (bulk then reads the record in Python); once
    the record's tuples are interned, the usual shape is always answered."""
    if fast_from_record is None:
        pytest.skip("the C extension is not built")
    if seen:
        outcome(registration_from_record, m)  # (interns its tuples)
    got = fast_from_record(m)
    want = outcome(reference_registration, m)
    usual = (m.replicas and m.isr and m.leader_recovery_state in (0, 1)
             and not (m.removing_replicas or m.adding_replicas or m.eligible_leader_replicas or m.last_known_elr)
             and (not m.directories or len(m.directories) == len(m.replicas)) and len(m.replicas) < 8)
    if got is None:
        assert not (seen and usual)
        return
    assert type(got) is PartitionRegistration and got == want
    assert all(getattr(got, f) is getattr(want, f) for f in TUPLE_FIELDS)


# ----------------------------------------------------------------------------- random record lists

brokers = st.lists(st.integers(0, 4), max_size=4)


@st.composite
def partition_record(draw: Any) -> Payload:
    replicas = draw(st.lists(st.integers(0, 4), max_size=4, unique=True))
    isr = draw(st.sampled_from([replicas, replicas[:1], []]) | brokers)
    dirs = draw(st.sampled_from([[], None]) | st.lists(st.sampled_from(DIRS), min_size=len(replicas),
                                                       max_size=len(replicas))
                | st.lists(st.sampled_from(DIRS), max_size=4))
    fields: dict[str, Any] = dict(topic_id=draw(st.sampled_from(TOPIC_IDS)), partition_id=draw(st.integers(0, 3)),
                                  replicas=replicas, isr=isr, leader=draw(st.integers(-1, 4)),
                                  leader_epoch=draw(st.integers(0, 3)), partition_epoch=draw(st.integers(0, 3)),
                                  leader_recovery_state=draw(st.sampled_from([0, 0, 0, 1, 2])),
                                  directories=dirs or [])
    for name in ("removing_replicas", "adding_replicas", "eligible_leader_replicas", "last_known_elr"):
        if draw(st.integers(0, 5)) == 0:
            fields[name] = draw(brokers)
    return rec("PartitionRecord", 2, **fields)


def other_record() -> st.SearchStrategy[Payload]:
    tid, name = st.sampled_from(TOPIC_IDS), st.sampled_from(NAMES)
    return st.one_of(
        st.builds(lambda n, t: rec("TopicRecord", name=n, topic_id=t), name, tid),
        st.builds(lambda t, p, isr, leader: rec("PartitionChangeRecord", topic_id=t, partition_id=p, isr=isr,
                                                leader=leader), tid, st.integers(0, 3), st.none() | brokers,
                  st.sampled_from([-2, -1, 0, 1])),
        st.builds(lambda t: rec("RemoveTopicRecord", topic_id=t), tid),
        st.builds(lambda n: rec("ClearElrRecord", topic_name=n), st.sampled_from(NAMES + [""])),
        st.builds(lambda n: rec("ConfigRecord", resource_type=2, resource_name=n, name="x", value="1"), name),
        st.just(rec("NoOpRecord")),
        st.just(rec("BeginTransactionRecord", name="t")),  # refused: Unknown metadata record type
    )


@st.composite
def record_lists(draw: Any) -> list[Payload]:
    """Most topics created up front (else most partition records just fail), then a mix."""
    created = draw(st.lists(st.sampled_from(range(len(TOPIC_IDS))), unique=True))
    out = [rec("TopicRecord", name=NAMES[i], topic_id=TOPIC_IDS[i]) for i in created]
    return out + draw(st.lists(st.one_of(partition_record(), partition_record(), partition_record(), other_record()),
                               max_size=40))


records = record_lists()


def as_entries(payloads: list[Payload]) -> list:
    """The records as the C decoder returns them from a batch (LogEntries, possibly shared Uuids)."""
    if not payloads:
        return []
    data = b"".join(encode_batches([BatchToWrite(0, 1, 0, False, payloads)]))
    entries, torn = read_log_entries(data, REGISTRY)
    assert torn is None and len(entries) == len(payloads)
    return entries


def slow_replay(base: MetadataImage, recs: list, skip_errors: bool) -> tuple[MetadataDelta, list]:
    d = MetadataDelta(base)
    errors = []
    for r in recs:
        try:
            d.replay(r)
        except KraftsimError as e:
            if not skip_errors:
                errors.append((r.message, type(e), str(e)))
                break
            errors.append((r.message, type(e), str(e)))
    return d, errors


def fast_replay(base: MetadataImage, recs: list, skip_errors: bool) -> tuple[MetadataDelta, list]:
    d = MetadataDelta(base)
    errors: list = []
    if skip_errors:
        d.replay_all(recs, on_error=lambda r, e: errors.append((r.message, type(e), str(e))))
    else:
        try:
            d.replay_all(recs)
        except KraftsimError as e:
            errors.append((None, type(e), str(e)))
    assert gc.isenabled()
    return d, errors


def same_result(a: tuple[MetadataDelta, list], b: tuple[MetadataDelta, list], snapshot: bool) -> None:
    (da, ea), (db, eb) = a, b
    assert [e[1:] for e in ea] == [e[1:] for e in eb]
    assert da.records_replayed == db.records_replayed
    if snapshot:
        da.finish_snapshot()
        db.finish_snapshot()
    ia, ib = da.apply(), db.apply()
    assert ia == ib
    assert image_digest(ia) == image_digest(ib)
    assert list(ia.topics.by_id.items()) == list(ib.topics.by_id.items())  # same layout, not just equal


@settings(max_examples=200, deadline=None)
@given(records, st.booleans(), st.booleans(), st.booleans())
def test_replay_all_equals_record_by_record_replay(recs, on_base, skip_errors, snapshot) -> None:
    base = replay([rec("TopicRecord", name="a", topic_id=TOPIC_IDS[0]),
                   rec("PartitionRecord", topic_id=TOPIC_IDS[0], partition_id=0, replicas=[1, 2], isr=[1],
                       leader=1, eligible_leader_replicas=[2])]) if on_base else MetadataImage()
    same_result(fast_replay(base, recs, skip_errors), slow_replay(base, recs, skip_errors), snapshot)
    entries = as_entries(recs)
    same_result(fast_replay(base, entries, skip_errors), slow_replay(base, entries, skip_errors), snapshot)


#: Every topic of TOPIC_IDS with partitions 0..3: change records in a list find most of them.
FULL_BASE = replay([r for i, t in enumerate(TOPIC_IDS) for r in
                    [rec("TopicRecord", name=NAMES[i], topic_id=t)]
                    + [rec("PartitionRecord", topic_id=t, partition_id=p, replicas=[1, 2], isr=[1, 2], leader=1)
                       for p in range(4)]])


any_topic_changes = st.builds(
    lambda t, p, isr, leader: rec("PartitionChangeRecord", topic_id=t, partition_id=p, isr=isr, leader=leader),
    st.sampled_from(TOPIC_IDS), st.integers(0, 4), st.none() | st.just([1]), st.sampled_from([-2, -1, 1, 2]))


@settings(max_examples=300, deadline=None)
@given(records | st.lists(st.one_of(any_topic_changes, any_topic_changes, any_topic_changes, other_record()), max_size=40),
       st.lists(st.integers(1, 12), max_size=6))
def test_replay_all_in_pieces_into_one_delta_equals_record_by_record_replay(recs, cuts) -> None:
    """A loader replays batch after batch into one delta: a topic's delta (and the layout
    its TopicDelta keeps for the C run) is met again in later calls, after topic records,
    removals and ELR clears of other calls may have replaced or removed it."""
    for base in (FULL_BASE, MetadataImage()):
        for rs in (recs, as_entries(recs)):
            d = MetadataDelta(base)
            errors: list = []
            at = 0
            for n in cuts + [len(rs)]:
                d.replay_all(rs[at:at + n], on_error=lambda r, e: errors.append((r.message, type(e), str(e))))
                at += n
            same_result((d, errors), slow_replay(base, rs, True), False)


def test_clear_elr_of_a_stale_created_name_is_refused() -> None:
    """Name `a` given to id t2, t2 re-created as `b`, then removed: `a` names nothing."""
    t1, t2 = TOPIC_IDS[0], TOPIC_IDS[1]
    recs = [rec("TopicRecord", name="a", topic_id=t1), rec("TopicRecord", name="a", topic_id=t2),
            rec("TopicRecord", name="b", topic_id=t2), rec("RemoveTopicRecord", topic_id=t2),
            rec("ClearElrRecord", topic_name="a")]
    with pytest.raises(MetadataReplayError, match="Unable to clear elr for topic with name a: no such topic found."):
        MetadataDelta(MetadataImage()).replay_all(recs)


def test_replay_all_edge_sequences() -> None:
    """Sequences that break a bulk path which caches the wrong thing."""
    t1, t2 = TOPIC_IDS[0], TOPIC_IDS[1]
    p = lambda t, pid=0, **kw: rec("PartitionRecord", 2, topic_id=t, partition_id=pid,  # noqa: E731
                                   **{"replicas": [1, 2], "isr": [1, 2], "leader": 1, **kw})
    topic = lambda t, n="a": rec("TopicRecord", name=n, topic_id=t)  # noqa: E731
    cases = [
        # a removed topic's partitions must not land in its old dict
        [topic(t1), p(t1), rec("RemoveTopicRecord", topic_id=t1), p(t1, 1)],
        [topic(t1), rec("RemoveTopicRecord", topic_id=t1), p(t1)],
        # a re-created topic starts afresh, also between two of its partitions
        [topic(t1), p(t1), topic(t1), p(t1, 1)],
        # interned directories of another length are still refused
        [topic(t1), p(t1, directories=[DIRS[2], DIRS[3]]),
         p(t1, 1, replicas=[1], isr=[1], directories=[DIRS[2], DIRS[3]])],
        # recovery states and rare fields on otherwise common partitions
        [topic(t1), p(t1), p(t1, 1, leader_recovery_state=2)],
        [topic(t1), p(t1), p(t1, 1, leader_recovery_state=1), p(t1, 2, last_known_elr=[3]),
         p(t1, 3, adding_replicas=[3]), p(t1, 4, removing_replicas=[2]), p(t1, 5, eligible_leader_replicas=[2]),
         p(t1, 6, isr=[])],
        # topic switches back and forth
        [topic(t1), topic(t2, "b"), p(t1), p(t2), p(t1, 1), rec("NoOpRecord"), p(t1, 2), p(t2, 1)],
    ]
    warm_up = [topic(TOPIC_IDS[2], "c"), p(TOPIC_IDS[2])]  # record types seen once: the rest takes the fast path
    for case in cases:
        recs = warm_up + case
        for skip in (False, True):
            for base in (MetadataImage(), replay([topic(t2, "b"), p(t2, 5)])):
                same_result(fast_replay(base, recs, skip), slow_replay(base, recs, skip), False)
                entries = as_entries(recs)
                same_result(fast_replay(base, entries, skip), slow_replay(base, entries, skip), False)


@settings(max_examples=40, deadline=None)
@given(image_groups())
def test_replay_all_of_whole_images(groups) -> None:
    recs = as_entries([mv_record(29)] + [r for g in groups for r in g])
    same_result(fast_replay(MetadataImage(), recs, False), slow_replay(MetadataImage(), recs, False), True)


def test_replay_all_of_synthetic_clusters_on_empty_and_full_bases() -> None:
    cat = default_catalog()
    shape = ClusterShape(brokers=7, topics=40, partitions=5, replication_factor=3)
    for mv in ("3.6-IV2", "4.0-IV3"):
        recs = as_entries(list(cluster_records(shape, cat, mv, seed=3)))
        for base in (MetadataImage(), replay(list(cluster_records(shape, cat, mv, seed=4)))):
            same_result(fast_replay(base, recs, False), slow_replay(base, recs, False), True)


def test_bulk_topics_apply_equals_the_general_apply() -> None:
    """On an empty base the topic maps are built in bulk; on a base holding one topic that the
    same delta removes, by the general update. The images must not differ."""
    cat = default_catalog()
    recs = list(cluster_records(ClusterShape(brokers=5, topics=300, partitions=3), cat, "4.0-IV3", seed=1))
    bulk = replay(recs)
    other = uid(999, 9)
    base = replay([rec("TopicRecord", name="zzz", topic_id=other),
                   rec("PartitionRecord", topic_id=other, partition_id=0, replicas=[1], isr=[1], leader=1)])
    general = replay(recs + [rec("RemoveTopicRecord", topic_id=other)], base=base)
    assert bulk.same_content(general)
    assert image_digest(bulk) == image_digest(general)


# ----------------------------------------------------------------------------- structure


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(0, 10**6), st.integers(), max_size=3000))
def test_bulk_map_construction_is_the_one_key_at_a_time_map(d) -> None:
    bulk = PMap(hash_int).update(d)
    one_by_one = reduce(lambda m, kv: m.set(*kv), d.items(), PMap(hash_int))
    assert list(bulk.items()) == list(one_by_one.items())  # same nodes, same leaf order
    assert len(bulk) == len(d) and bulk == one_by_one


def test_bulk_map_construction_with_colliding_hashes_and_real_key_types() -> None:
    d = {i: i for i in range(200)}
    assert list(PMap(lambda k: 7).update(d).items()) == list(d.items())
    ids = {Uuid.from_longs(i, i * 31): i for i in range(5000)}
    names = {f"topic-{i}": i for i in range(5000)}
    for items, h in ((ids, hash_uuid), (names, hash_str)):
        bulk = PMap(h).update(items)
        assert list(bulk.items()) == list(reduce(lambda m, kv: m.set(*kv), items.items(), PMap(h)).items())
        assert all(bulk[k] == v for k, v in items.items())


def test_an_applied_image_does_not_change_when_its_delta_goes_on() -> None:
    """A new topic's partition dict is lent to the image; later changes copy it first."""
    t = TOPIC_IDS[0]
    p0 = rec("PartitionRecord", topic_id=t, partition_id=0, replicas=[1], isr=[1], leader=1)
    d = MetadataDelta(MetadataImage())
    d.replay_all([rec("TopicRecord", name="a", topic_id=t), p0])
    first = d.apply()
    d.replay_all([rec("PartitionRecord", topic_id=t, partition_id=1, replicas=[2], isr=[2], leader=2),
                  rec("PartitionChangeRecord", topic_id=t, partition_id=0, isr=[], leader=-1)])
    second = d.apply()
    d.replay(rec("ClearElrRecord", topic_name="a"))
    assert dict(first.topics.get_topic(t).partitions) == {0: reference_registration(p0.message)}
    assert sorted(second.topics.get_topic(t).partitions) == [0, 1]
    assert second.topics.get_topic(t).partitions[0].leader == -1


def test_replay_all_restores_the_collector_and_counts_like_replay() -> None:
    assert gc.isenabled()
    d = MetadataDelta(MetadataImage())
    with pytest.raises(MetadataReplayError, match="Unable to find topic"):
        d.replay_all([rec("TopicRecord", name="a", topic_id=TOPIC_IDS[0]),
                      rec("PartitionRecord", topic_id=TOPIC_IDS[1], partition_id=0, replicas=[1], isr=[1])])
    assert gc.isenabled() and d.records_replayed == 1
    gc.disable()
    try:
        MetadataDelta(MetadataImage()).replay_all([rec("NoOpRecord")])
        assert not gc.isenabled()  # a collector the caller turned off stays off
    finally:
        gc.enable()


def test_errors_from_the_record_source_are_not_handed_to_on_error() -> None:
    def source():
        yield rec("NoOpRecord")
        raise KraftsimError("cannot read the next batch")

    seen: list = []
    with pytest.raises(KraftsimError, match="cannot read"):
        MetadataDelta(MetadataImage()).replay_all(source(), on_error=lambda r, e: seen.append(e))
    assert seen == []
