"""The topics writer's PartitionRecord values made in C (fastpath.try_partition_values, one
call per topic) against the writer's Python loop: the same bytes and the same losses for any
registrations, at every PartitionRecord version the catalog writes, with and without ELR
fields; the C path answers for every usual topic and gives every unusual one (a loss to
report) to the loop; and each field lands where the record's schema says."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import intern
from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.pmap import ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.image.writer.components import topics as topics_writer
from kraftsim.image.writer.loss import REPLICA_DIRECTORIES, LossReport
from kraftsim.image.writer.target import WriteTarget, resolve_writer_line
from kraftsim.protocol import fastpath
from kraftsim.protocol.batch_io import encode_values
from kraftsim.protocol.framing import decode_metadata_record
from kraftsim.protocol.primitives import Uuid

from tests.image.helpers import uid
from kraftsim.versions import default_catalog

CAT = default_catalog()
REG = CAT.record_registry()
#: A metadata.version per PartitionRecord version: 0 (no directories), 1, 2 (ELR fields).
MV_BY_VERSION = {CAT.record_version("PartitionRecord", mv): mv for mv in ("3.3-IV3", "3.7-IV2", "4.0-IV1")}
TOPIC = "orders"
TID = uid(7)


def target(mv: str, elr_on: bool, losses: LossReport) -> WriteTarget:
    return WriteTarget(catalog=CAT, mv=CAT.metadata_version(mv), line=resolve_writer_line(None, CAT), registry=REG,
                       handle=losses, elr_on=elr_on, read_only=True)


def topics_image(partitions: dict[int, PartitionRegistration]) -> TopicsImage:
    topic = TopicImage(TOPIC, TID, ChunkMap.of(partitions))
    return TopicsImage(by_id=PMap(hash_uuid).set(TID, topic), by_name=PMap(hash_str).set(TOPIC, TID))


int32 = st.integers(-2**31, 2**31 - 1)
broker = st.integers(0, 2**31 - 1)
brokers = st.lists(broker, max_size=5).map(tuple)
uuid = st.binary(min_size=16, max_size=16).map(Uuid)


@st.composite
def registration(draw: Any, usual: bool = False) -> PartitionRegistration:
    """Any registration (`usual`: no ELR, directories MIGRATING or as many as the replicas)."""
    replicas = draw(st.lists(broker, min_size=1, max_size=5).map(tuple))
    n = len(replicas)
    dirs = draw(st.one_of(st.just(intern.migrating(n)), st.lists(uuid, min_size=n, max_size=n).map(tuple),
                          *([] if usual else [st.lists(uuid, max_size=4).map(tuple),
                                              st.integers(0, 4).map(intern.migrating)])))
    no_elr = st.just(())
    return PartitionRegistration(
        replicas, dirs, draw(brokers), draw(brokers), draw(brokers), leader=draw(int32),
        leader_recovery_state=draw(st.integers(-128, 127)), leader_epoch=draw(int32), partition_epoch=draw(int32),
        elr=draw(no_elr if usual else st.one_of(no_elr, brokers)),
        last_known_elr=draw(no_elr if usual else st.one_of(no_elr, brokers)))


#: Partition ids: 0..n-1 (the usual dense topic), or any distinct ids in any order.
partition_ids = st.one_of(st.integers(1, 12).map(lambda n: list(range(n))),
                          st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=12, unique=True))


def usual_for(p: PartitionRegistration, t: WriteTarget) -> bool:
    """What the C path must answer for: nothing to lose, nothing but the record's fields."""
    return not p.elr and not p.last_known_elr and (
        t.holds(REPLICA_DIRECTORIES) or p.directories is intern.migrating(len(p.directories)))


class Spy:
    """try_partition_values, counting its answers."""

    def __init__(self) -> None:
        self.answers: list[bool] = []

    def __call__(self, *args: Any) -> list[bytes] | None:
        got = fastpath.try_partition_values(*args)
        self.answers.append(got is not None)
        return got


def written(topics: TopicsImage, t: WriteTarget, cache: topics_writer.TopicValues | None = None) -> list[bytes]:
    return [v for run in topics_writer.write_values(topics, t, cache) for v in run]


@pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")
@settings(max_examples=60, deadline=None)
@given(pids=partition_ids, data=st.data(), usual=st.booleans(), elr_on=st.booleans())
def test_c_values_are_the_python_loops(pids: list[int], data: Any, usual: bool, elr_on: bool) -> None:
    """A write from nothing, then one after some partitions changed (only those encoded)."""
    regs = [data.draw(registration(usual)) for _ in pids]
    changed = data.draw(st.lists(st.sampled_from(range(len(pids))), unique=True))
    regs_after = list(regs)
    for i in changed:
        regs_after[i] = data.draw(registration(usual))
    for version, mv in MV_BY_VERSION.items():
        cache = topics_writer.TopicValues()
        kept = False  # (the first write's values are kept when it lost nothing)
        for now, was in ((regs, None), (regs_after, regs)):
            topics = topics_image(dict(zip(pids, now)))
            fast_losses, plain_losses = LossReport(), LossReport()
            fast_target, plain_target = target(mv, elr_on, fast_losses), target(mv, elr_on, plain_losses)
            spy = Spy()
            with mock.patch.object(topics_writer, "try_partition_values", spy), \
                    mock.patch.object(topics_writer, "try_write_topics", lambda *_: None):  # (its own test)
                fast = written(topics, fast_target, cache)
            with fastpath.pure_python():  # the records the loop builds, encoded in Python
                plain = encode_values(list(topics_writer.write(topics, plain_target)))
            assert fast == plain, f"PartitionRecord v{version}"
            assert fast_losses.items == plain_losses.items
            # (a kept topic is encoded again where a partition changed: maybe nowhere)
            asked = [p for i, p in enumerate(now) if was is None or not kept or p != was[i]]
            assert spy.answers == ([all(usual_for(p, fast_target) for p in asked)] if asked else []), f"v{version}"
            kept = not fast_losses.items


@pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")
def test_each_field_is_written_where_the_schema_says() -> None:
    """Every field distinct, read back by the decoder: a field written in another's place,
    or with another value, fails here."""
    for version, mv in MV_BY_VERSION.items():
        t = target(mv, True, LossReport())
        regs = {pid: PartitionRegistration((11 + pid, 12, 13),
                                           (uid(100 + pid), uid(200), uid(300)) if version else intern.migrating(3),
                                           (12, 11 + pid), (13,), (14, 15), leader=12, leader_recovery_state=1,
                                           leader_epoch=40 + pid, partition_epoch=50 + pid)
                for pid in (3, 5)}
        spy = Spy()
        with mock.patch.object(topics_writer, "try_partition_values", spy):
            values = written(topics_image(regs), t)
        assert spy.answers == [True]
        assert decode_metadata_record(REG, values[0]).message.name == TOPIC
        for (pid, p), value in zip(regs.items(), values[1:]):
            record = decode_metadata_record(REG, value)
            m = record.message
            assert (record.record_type.name, record.version) == ("PartitionRecord", version)
            assert (m.partition_id, m.topic_id, m.replicas, m.isr, m.removing_replicas, m.adding_replicas) == (
                pid, TID, list(p.replicas), list(p.isr), [13], [14, 15])
            assert (m.leader, m.leader_recovery_state, m.leader_epoch, m.partition_epoch) == (12, 1, 40 + pid,
                                                                                              50 + pid)
            assert m.directories == (list(p.directories) if version >= 1 else [])
            if version >= 2:
                assert m.eligible_leader_replicas is None and m.last_known_elr is None


def test_pure_python_mode_skips_the_c_path() -> None:
    regs = {pid: PartitionRegistration((1, 2), intern.migrating(2), (1,), leader=1) for pid in range(10)}
    t = target("3.7-IV2", False, LossReport())
    with_c = written(topics_image(regs), t)
    spy = Spy()
    with fastpath.pure_python(), mock.patch.object(topics_writer, "try_partition_values", spy):
        assert fastpath.try_partition_values(None, TID, None, [], None, True) is None
        assert written(topics_image(regs), t) == with_c
    assert spy.answers == [False]
