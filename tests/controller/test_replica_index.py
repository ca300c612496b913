"""Property: the controller's index of partitions by replica role (replica_index.py) answers
exactly what scanning the image answers (the scans in replication.py), in the same order,
after any sequence of topic creations, partition records and changes, ELR clears, topic
deletions and re-creations, transactions (committed or aborted), snapshot loads and state
copies, whether the index was built before or after the changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller.context import ControllerContext, replica_index
from kraftsim.controller.partition_change import PartitionAt, has_leaderships
from kraftsim.controller.quorum_controller import ReplayState
from kraftsim.controller.replication import (
    elr_partitions, isr_partitions, leaderless, leaderless_partitions, leads_partitions, partitions_with_elr_member,
    partitions_with_isr_member,
)
from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import default_catalog
from tests.controller.conftest import payload

BROKERS = range(-1, 5)
NAMES = ("b", "a", "c")


def tid(n: int) -> Uuid:
    return Uuid((0xA0 + n).to_bytes(16, "big"))


brokers = st.lists(st.integers(0, 4), max_size=4, unique=True)
record = st.one_of(
    st.builds(lambda t, n: payload("TopicRecord", name=NAMES[n], topic_id=tid(t)), st.integers(0, 3), st.integers(0, 2)),
    st.builds(lambda t, pid, reps, isr, elr, leader: payload(
        "PartitionRecord", 2, topic_id=tid(t), partition_id=pid, replicas=reps, isr=isr, leader=leader,
        eligible_leader_replicas=elr, leader_epoch=0, partition_epoch=0),
        st.integers(0, 3), st.integers(0, 5), brokers, brokers, brokers, st.integers(-1, 4)),
    st.builds(lambda t, pid, isr, elr, leader: payload(
        "PartitionChangeRecord", 2, topic_id=tid(t), partition_id=pid, isr=isr, eligible_leader_replicas=elr,
        leader=leader),
        st.integers(0, 3), st.integers(0, 5), st.none() | brokers, st.none() | brokers, st.integers(-2, 4)),
    st.builds(lambda t: payload("RemoveTopicRecord", topic_id=tid(t)), st.integers(0, 3)),
    st.builds(lambda n: payload("ClearElrRecord", topic_name=n), st.sampled_from(("", *NAMES))),
    st.sampled_from(("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")).map(
        lambda n: payload(n, name="t") if n == "BeginTransactionRecord" else payload(n)),
)
step = st.one_of(
    st.tuples(st.just("batch"), st.lists(record, min_size=1, max_size=3)),
    st.tuples(st.just("batch"), st.lists(record, min_size=1, max_size=8)),
    st.tuples(st.just("query"), st.none()),
    st.tuples(st.just("snapshot"), st.lists(record.filter(
        lambda p: p.record_type.name in ("TopicRecord", "PartitionRecord")), max_size=10)),
    st.tuples(st.just("copy"), st.none()),
)


def scan_answers(image: MetadataImage) -> Any:
    def ids(parts: list) -> list:
        return [(t.id, pid, p) for t, pid, p in parts]
    return ([ids(partitions_with_isr_member(image, b)) for b in BROKERS],
            [ids(partitions_with_elr_member(image, b)) for b in BROKERS],
            ids(leaderless_partitions(image)), [has_leaderships(image, b) for b in BROKERS])


def index_answers(ctx: ControllerContext) -> Any:
    def ids(found: Iterable[PartitionAt]) -> list:
        parts = list(found)  # (the index gives them one at a time)
        by_id = ctx.image.topics.by_id
        assert all(t is by_id[t.id] for t, _, _ in parts)  # the image's own topics
        return [(t.id, pid, p) for t, pid, p in parts]
    return ([ids(isr_partitions(ctx, b)) for b in BROKERS], [ids(elr_partitions(ctx, b)) for b in BROKERS],
            ids(leaderless(ctx)), [leads_partitions(ctx, b) for b in BROKERS])


def snapshot_log(records: list) -> Any:
    """The little of a MetadataLog that ReplayState.replay_log reads: one snapshot, no batches."""
    entries = [SimpleNamespace(control=False, record_type=p.record_type, message=p.message, version=p.version)
               for p in records]
    snap = SimpleNamespace(snapshot_id=SimpleNamespace(end_offset=1000, epoch=1), last_contained_log_timestamp=0,
                           entries=lambda: entries)
    return SimpleNamespace(log_start_offset=0, read_latest_snapshot=lambda registry: snap,
                           batches=lambda start: iter(()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=40))
def test_index_answers_as_the_scan(steps: list) -> None:
    state = ReplayState(default_catalog())
    offset = 0
    for kind, arg in steps:
        if kind == "batch":
            try:
                state.replay_batch(arg, base_offset=offset, epoch=1, timestamp=0)
            except KraftsimError:
                pass  # a batch the image refuses leaves the image as it was
            offset += len(arg)
        elif kind == "snapshot":
            try:
                state.replay_log(snapshot_log(arg))  # type: ignore[arg-type]
            except KraftsimError:
                pass
        elif kind == "copy":
            state = state.copy()
        ctx = ControllerContext(node_id=1, supported={}, image=state.image, replicas=state.replicas)
        if kind == "query":
            assert replica_index(ctx) is state.replicas
        if state.replicas.describes(state.image.topics) or kind == "query":
            assert index_answers(ctx) == scan_answers(state.image)


def test_an_index_of_another_image_is_not_used() -> None:
    state = ReplayState(default_catalog())
    state.replay_batch([payload("TopicRecord", name="a", topic_id=tid(1)),
                        payload("PartitionRecord", topic_id=tid(1), partition_id=0, replicas=[1], isr=[1], leader=1)],
                       base_offset=0, epoch=1, timestamp=0)
    first = state.image
    assert state.replicas.ensure(first.topics)
    state.replay_batch([payload("PartitionChangeRecord", topic_id=tid(1), partition_id=0, isr=[], leader=-1)],
                       base_offset=2, epoch=1, timestamp=0)
    stale = ControllerContext(node_id=1, supported={}, image=first, replicas=state.replicas)
    assert replica_index(stale) is None
    assert [pid for _, pid, _ in isr_partitions(stale, 1)] == [0]  # the scan of `first`
    now = ControllerContext(node_id=1, supported={}, image=state.image, replicas=state.replicas)
    assert list(isr_partitions(now, 1)) == [] and [pid for _, pid, _ in leaderless(now)] == [0]


def test_a_topic_made_after_the_index_was_asked_takes_its_place_by_name() -> None:
    state = ReplayState(default_catalog())
    for n, (name, offset) in enumerate((("b", 0), ("a", 2), ("c", 4))):
        state.replay_batch([payload("TopicRecord", name=name, topic_id=tid(n)),
                            payload("PartitionRecord", topic_id=tid(n), partition_id=0, replicas=[1], isr=[1],
                                    leader=1)], base_offset=offset, epoch=1, timestamp=0)
        ctx = ControllerContext(node_id=1, supported={}, image=state.image, replicas=state.replicas)
        assert [t.name for t, _, _ in isr_partitions(ctx, 1)] == sorted("bac"[:n + 1])


change = st.builds(lambda pid, isr, elr, leader: payload(
    "PartitionChangeRecord", 2, topic_id=tid(0), partition_id=pid, isr=isr, eligible_leader_replicas=elr, leader=leader),
    st.integers(0, 3), st.none() | brokers, st.none() | brokers, st.integers(-2, 4))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaders=st.lists(st.integers(-1, 4), min_size=4, max_size=4), isrs=st.lists(brokers, min_size=4, max_size=4),
       elrs=st.lists(brokers, min_size=4, max_size=4), built_first=st.booleans(),
       batches=st.lists(st.lists(change, min_size=1, max_size=6), min_size=1, max_size=6))
def test_the_index_follows_changes_to_the_partitions_it_holds(leaders, isrs, elrs, built_first, batches) -> None:
    """A topic made while the index follows (`built_first`) or before it is built, then
    batches that change partitions the index holds (leaders moving between brokers and to
    none, ISRs and ELRs growing and shrinking, several changes of a partition in a batch)."""
    state = ReplayState(default_catalog())
    if built_first:
        assert state.replicas.ensure(state.image.topics)
    state.replay_batch([payload("TopicRecord", name="a", topic_id=tid(0))] + [
        payload("PartitionRecord", 2, topic_id=tid(0), partition_id=pid, replicas=[0, 1, 2, 3, 4], isr=isr,
                eligible_leader_replicas=elr, leader=leader, leader_epoch=0, partition_epoch=0)
        for pid, (leader, isr, elr) in enumerate(zip(leaders, isrs, elrs))],
        base_offset=0, epoch=1, timestamp=0)
    offset = 5
    for batch in batches:
        ctx = ControllerContext(node_id=1, supported={}, image=state.image, replicas=state.replicas)
        assert index_answers(ctx) == scan_answers(state.image)
        state.replay_batch(batch, base_offset=offset, epoch=1, timestamp=0)
        offset += len(batch)
    assert state.replicas.describes(state.image.topics)
    ctx = ControllerContext(node_id=1, supported={}, image=state.image, replicas=state.replicas)
    assert index_answers(ctx) == scan_answers(state.image)
