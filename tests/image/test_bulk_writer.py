"""The writer's fast construction of TopicRecords and PartitionRecords gives the records the
plain keyword construction gives, at every writer gate."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings, strategies as st

from kraftsim.image import LossReport, image_from_records, iter_image_records
from kraftsim.image.intern import MIGRATING, UNASSIGNED, migrating
from kraftsim.image.writer.components.topics import PARTITION_RECORD_FIELDS, all_migrating as _all_migrating, positional_constructor
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY
from tests.image.strategies import image_groups, mv_record

CAT = default_catalog()
PR = REGISTRY["PartitionRecord"]


def reference_partition_record(pid: int, tid: Any, p: Any, *, dirs_ok: bool, elr_written: bool) -> Any:
    """The PartitionRecord of a registration built by keywords, ELR only when written and non-empty."""
    fields: dict[str, Any] = dict(partition_id=pid, topic_id=tid, replicas=list(p.replicas), isr=list(p.isr),
                                  removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas),
                                  leader=p.leader, leader_recovery_state=p.leader_recovery_state,
                                  leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch)
    if dirs_ok:
        fields["directories"] = list(p.directories)
    if elr_written and p.elr:
        fields["eligible_leader_replicas"] = list(p.elr)
    if elr_written and p.last_known_elr:
        fields["last_known_elr"] = list(p.last_known_elr)
    return PR.cls(**fields)


@settings(max_examples=40, deadline=None)
@given(image_groups(), st.sampled_from(["3.6-IV2", "3.9-IV0", "4.0-IV1", "4.2-IV1"]))
def test_partition_records_equal_the_keyword_construction(groups, mv) -> None:
    img = image_from_records([mv_record(29)] + [r for g in groups for r in g], catalog=CAT)
    level = CAT.metadata_version(mv)
    dirs_ok, elr_on = CAT.supports("directory_assignment", level), img.features.is_elr_enabled()
    elr_written = elr_on and CAT.supports("elr", level)
    records = list(iter_image_records(img, mv, CAT, loss_handler=LossReport()))
    written = [p for p in records if p.record_type.name == "PartitionRecord"]
    topics = [img.topics.get_topic(p.message.topic_id) for p in records if p.record_type.name == "TopicRecord"]
    assert sorted(t.id for t in topics) == sorted(img.topics.by_id.keys())  # every topic, once (in Kafka's order)
    expected = [reference_partition_record(pid, t.id, p, dirs_ok=dirs_ok, elr_written=elr_written)
                for t in topics for pid, p in t.sorted_partitions()]
    assert [p.message for p in written] == expected
    assert all(type(p).__name__ == "Payload" and p.version == CAT.record_version("PartitionRecord", level)
               for p in written)


@settings(max_examples=30, deadline=None)
@given(image_groups(), st.sampled_from(["3.6-IV2", "4.2-IV1"]))
def test_read_only_records_equal_the_default_ones(groups, mv) -> None:
    img = image_from_records([mv_record(29)] + [r for g in groups for r in g], catalog=CAT)
    fresh = list(iter_image_records(img, mv, CAT, loss_handler=LossReport()))
    shared = list(iter_image_records(img, mv, CAT, loss_handler=LossReport(), read_only=True))
    assert [(p.record_type, p.version, p.message) for p in shared] == [(p.record_type, p.version, p.message)
                                                                       for p in fresh]


def test_read_only_records_share_their_lists_and_default_ones_do_not() -> None:
    from tests.image.helpers import rec, uid
    t = uid(1)
    img = image_from_records([rec("TopicRecord", name="a", topic_id=t)] + [
        rec("PartitionRecord", topic_id=t, partition_id=i, replicas=[1, 2], isr=[1, 2], leader=1) for i in range(3)],
        catalog=CAT)
    for read_only in (False, True):
        parts = [p.message for p in iter_image_records(img, "4.0-IV3", CAT, read_only=read_only)
                 if p.record_type.name == "PartitionRecord"]
        assert [m.replicas for m in parts] == [[1, 2]] * 3
        assert (parts[0].replicas is parts[1].replicas) is read_only
        assert (parts[0].directories is parts[2].directories) is read_only


def test_positional_constructor_falls_back_to_keywords_for_other_layouts() -> None:
    assert positional_constructor(PR.cls, PARTITION_RECORD_FIELDS) is PR.cls
    shuffled = msgspec.defstruct("PartitionRecord", [(n, Any, None) for n in reversed(PARTITION_RECORD_FIELDS)])
    make = positional_constructor(shuffled, PARTITION_RECORD_FIELDS)
    assert make is not shuffled
    values = tuple(range(len(PARTITION_RECORD_FIELDS)))
    built = make(*values)
    assert {n: getattr(built, n) for n in PARTITION_RECORD_FIELDS} == dict(zip(PARTITION_RECORD_FIELDS, values))


def test_all_migrating_by_identity_and_by_value() -> None:
    assert _all_migrating(migrating(3)) and _all_migrating(()) and _all_migrating(migrating(9))
    assert _all_migrating(tuple([MIGRATING, MIGRATING]))  # equal but not the interned tuple
    assert not _all_migrating((MIGRATING, UNASSIGNED))


def test_sorted_topics_orders_by_name_then_id_also_with_duplicate_names() -> None:
    from tests.image.helpers import rec, uid
    recs = [rec("TopicRecord", name=n, topic_id=uid(i, hi=h)) for i, (n, h) in enumerate(
        [("b", 9), ("a", 9), ("c", 1), ("a", 1), ("a", 5)])]
    img = image_from_records(recs, catalog=CAT)  # three topics named "a": the by-name map keeps one
    got = [(t.name, bytes(t.id)) for t in img.topics.sorted_topics()]
    assert got == sorted((t.name, bytes(t.id)) for t in img.topics.by_id.values()) and len(got) == 5
    unique = image_from_records(recs[:3], catalog=CAT)
    assert [t.name for t in unique.topics.sorted_topics()] == ["a", "b", "c"]
