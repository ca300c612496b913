"""Property: the C loop of ReplicaIndex.follow (_speedups.ri_follow, through
fastpath.try_ri_follow) leaves the index exactly as the Python loop (_follow_topic) does, and
as an index built afresh from the same image (the partitions lacking each replica, and those
not led by their first replica, as a scan finds them), and both report the partitions each
batch changed and the topics it reshaped, over random batches of partition changes (ISR,
ELR, leader and replica changes), new partitions, topics created, deleted and re-created, and
topics past 64 partitions (which the C loop leaves to Python). Pure-Python mode has no C path
to compare and skips."""

from __future__ import annotations

from random import Random
from typing import Any, Callable, Iterator
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller import replica_index as ri_module
from kraftsim.controller.context import ControllerContext
from kraftsim.controller.quorum_controller import ReplayState
from kraftsim.controller.replica_index import ReplicaIndex
from kraftsim.errors import KraftsimError
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import default_catalog
from tests.controller.conftest import payload
from tests.controller.test_replica_index import index_answers, scan_answers

pytestmark = pytest.mark.skipif(fastpath.try_ri_follow() is None, reason="no C fast path (pure-Python mode)")

SIZES = (3, 8, 50, 70)  # partitions per topic; 70: masks past 64 bits
NAMES = ("d", "b", "a", "c")


def tid(n: int) -> Uuid:
    return Uuid((0xC0 + n).to_bytes(16, "big"))


broker_ids = st.sampled_from((0, 1, 2, 3, 4, 40))
brokers = st.lists(broker_ids, max_size=4, unique=True)
topic_no = st.integers(0, len(SIZES) - 1)
#: A topic and one of its partition ids (a change naming another is refused, with its whole batch).
partition = topic_no.flatmap(lambda t: st.tuples(st.just(t), st.integers(0, SIZES[t] - 1)))
#: A topic and an id for a PartitionRecord: mostly one it has, sometimes a new one (next, or past a gap).
new_partition = topic_no.flatmap(lambda t: st.tuples(st.just(t), st.integers(0, SIZES[t] + 2)))


def creation(t: int) -> list[Any]:
    return [payload("TopicRecord", name=NAMES[t], topic_id=tid(t))] + [
        payload("PartitionRecord", 2, topic_id=tid(t), partition_id=pid, replicas=[0, 1, 2, 40],
                isr=[(pid + k) % 3 for k in range(2)], leader=pid % 3, leader_epoch=0, partition_epoch=0)
        for pid in range(SIZES[t])]


record = st.one_of(
    st.builds(lambda at, isr, elr, leader: payload(
        "PartitionChangeRecord", 2, topic_id=tid(at[0]), partition_id=at[1], isr=isr, eligible_leader_replicas=elr,
        leader=leader), partition, st.none() | brokers, st.none() | brokers, st.integers(-2, 4)),
    st.builds(lambda at, elr: payload(
        "PartitionChangeRecord", 2, topic_id=tid(at[0]), partition_id=at[1], eligible_leader_replicas=elr),
        partition, brokers),
    st.builds(lambda at, reps: payload(
        "PartitionChangeRecord", 2, topic_id=tid(at[0]), partition_id=at[1], replicas=reps, isr=reps[:2],
        leader=reps[0]), partition, st.lists(broker_ids, min_size=1, max_size=4, unique=True)),
    st.builds(lambda at, isr, leader: payload(
        "PartitionRecord", 2, topic_id=tid(at[0]), partition_id=at[1], replicas=[0, 1, 2, 3, 4, 40], isr=isr,
        leader=leader, leader_epoch=0, partition_epoch=0), new_partition, brokers, st.integers(-1, 4)),
    st.builds(lambda t: payload("RemoveTopicRecord", topic_id=tid(t)), topic_no),
    st.builds(lambda t: creation(t)[0], topic_no),
    st.builds(lambda n: payload("ClearElrRecord", topic_name=n), st.sampled_from(("", *NAMES))),
)


def fence(broker: int) -> list[Any]:
    """A broker event: every partition of every topic loses `broker` from its ISR, and a new leader where it led."""
    out = []
    for t, size in enumerate(SIZES):
        for pid in range(size):
            isr = [r for r in ((pid + k) % 3 for k in range(2)) if r != broker]
            out.append(payload("PartitionChangeRecord", 2, topic_id=tid(t), partition_id=pid, isr=isr,
                               leader=isr[0] if isr else -1))
    return out


def sweep(seed: int) -> list[Any]:
    """A change of every partition of every topic, drawn from `seed`: ISR, ELR and leader
    each kept or set (so every bit of every mask may move)."""
    rnd = Random(seed)
    ids = (0, 1, 2, 3, 4, 40)

    def some() -> list[int] | None:
        return None if rnd.random() < 0.3 else rnd.sample(ids, rnd.randint(0, 3))
    return [payload("PartitionChangeRecord", 2, topic_id=tid(t), partition_id=pid, isr=some(),
                    eligible_leader_replicas=some(), leader=rnd.choice((-2, -2, -1, 0, 1, 2, 40)))
            for t, size in enumerate(SIZES) for pid in range(size)]


batch = st.one_of(st.builds(sweep, st.integers(0, 2**32)), st.lists(record, min_size=1, max_size=3), st.lists(record, min_size=1, max_size=12),
                  st.builds(fence, st.integers(0, 2)))


def contents(index: ReplicaIndex) -> Any:
    return index.isr, index.elr, index.leaderless, index.leads, index.lacking, index.imbalanced


def imbalanced_scan(image: Any) -> set[tuple[Uuid, int]]:
    """The partitions led by another than their first replica, by looking at every partition."""
    return {(t.id, pid) for t in image.topics.by_id.values() for pid, p in t.partitions.items()
            if p.replicas and p.leader != p.replicas[0]}


def lacking_scan(image: Any) -> dict[int, set[tuple[Uuid, int]]]:
    """broker -> the partitions whose ISR lacks it, by looking at every partition."""
    out: dict[int, set[tuple[Uuid, int]]] = {}
    for t in image.topics.by_id.values():
        for pid, p in t.partitions.items():
            for r in set(p.replicas) - set(p.isr):
                out.setdefault(r, set()).add((t.id, pid))
    return out


def as_keys(masks: dict[Uuid, int]) -> set[tuple[Uuid, int]]:
    return {(t, pid) for t, m in masks.items() for pid in range(m.bit_length()) if m >> pid & 1}


def changed_partitions(before: Any, after: Any, records: list[Any]) -> tuple[set[tuple[Uuid, int]], set[Uuid]]:
    """The partitions of `after` that a batch changed (named by a partition record, or another
    registration than in `before`: a ClearElrRecord names none), and the topics among them
    that are new, gained partitions, or hold a partition whose replicas are another tuple."""
    named = {(r.message.topic_id, r.message.partition_id) for r in records
             if r.record_type.name in ("PartitionRecord", "PartitionChangeRecord")}
    out, reshaped = set(), set()
    for t in after.topics.by_id.values():
        old = before.topics.get_topic(t.id)
        fresh = old is None or any(r.record_type.name == "TopicRecord" and r.message.topic_id == t.id for r in records)
        for pid, p in t.partitions.items():
            o = None if fresh else old.partitions.get(pid)
            if (t.id, pid) in named or o is not p:
                out.add((t.id, pid))
                if o is None or o.replicas is not p.replicas:
                    reshaped.add(t.id)
        if fresh:
            reshaped.add(t.id)
    return out, reshaped


class Counted:
    """try_ri_follow, counting the topics the C loop followed itself."""

    def __init__(self) -> None:
        self.done = 0

    def __call__(self) -> Callable[..., Any] | None:
        fast = fastpath.try_ri_follow()
        if fast is None:
            return None

        def counted(*args: Any) -> Any:
            left = fast(*args)
            if left is not None:
                self.done += len(args[4]) - len(left)
            return left
        return counted


def replay(state: ReplayState, records: list[Any], offset: int) -> None:
    try:
        state.replay_batch(records, base_offset=offset, epoch=1, timestamp=0)
    except KraftsimError:
        pass  # (refused by both states alike: the image stays)


def follow_both(batches: list[list[Any]],
                touched: list[tuple[Any, Any, Any]] | None = None) -> Iterator[tuple[ReplayState, ReplayState]]:
    """The same batches replayed by a state whose index follows in C and one in Python. With
    `touched`, each batch adds (what changed by the images, the C index's touched partitions,
    the Python index's)."""
    c_state, py_state = ReplayState(default_catalog()), ReplayState(default_catalog())
    for s in (c_state, py_state):
        assert s.replicas.ensure(s.image.topics)
        assert s.replicas.take_changes() is None  # (built: what came before is not known)
    offset = 0
    for records in [[r for t in range(len(SIZES)) for r in creation(t)], *batches]:
        before = c_state.image
        replay(c_state, records, offset)
        with fastpath.pure_python():
            replay(py_state, records, offset)
        offset += len(records)
        if touched is not None:
            taken = [s.replicas.take_changes() for s in (c_state, py_state)]
            expected = (changed_partitions(before, c_state.image, records) if c_state.image is not before
                        else (set(), set()))
            touched.append((expected, *[None if t is None else (as_keys(t.touched), t.reshaped) for t in taken]))
        yield c_state, py_state


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batch, min_size=1, max_size=8))
def test_the_c_follow_leaves_the_index_as_the_python_follow(batches: list[list[Any]]) -> None:
    counted = Counted()
    touched: list[tuple[Any, Any, Any]] = []
    with patch.object(ri_module, "try_ri_follow", counted):
        for c_state, py_state in follow_both(batches, touched):
            assert c_state.image == py_state.image
            assert c_state.replicas.describes(c_state.image.topics)
            assert contents(c_state.replicas) == contents(py_state.replicas)
            fresh = ReplicaIndex()
            assert fresh.ensure(c_state.image.topics)
            assert contents(c_state.replicas) == contents(fresh)
            assert {b: as_keys(m) for b, m in c_state.replicas.lacking.items()} == lacking_scan(c_state.image)
            assert as_keys(c_state.replicas.imbalanced) == imbalanced_scan(c_state.image)
            expected, in_c, in_python = touched[-1]
            assert in_c == in_python == expected
            ctx = ControllerContext(node_id=1, supported={}, image=c_state.image, replicas=c_state.replicas)
            assert index_answers(ctx) == scan_answers(c_state.image)  # (and the topics are the image's own)


def test_a_broker_event_is_followed_in_c_topic_by_topic() -> None:
    """The usual batch: the C loop follows every topic of at most 64 partitions, leaves the
    one past 64 to Python, and the index is the one built afresh."""
    counted = Counted()
    with patch.object(ri_module, "try_ri_follow", counted):
        *_, (c_state, py_state) = follow_both([fence(1)])
    assert counted.done == len([s for s in SIZES if s <= 64])
    fresh = ReplicaIndex()
    assert fresh.ensure(c_state.image.topics)
    assert contents(c_state.replicas) == contents(fresh) == contents(py_state.replicas)
    assert 1 not in c_state.replicas.isr


def test_one_wrong_bit_is_seen() -> None:
    """The comparison the property makes tells apart indexes that differ by one partition's bit."""
    c_state, _ = list(follow_both([fence(2)]))[-1]
    index = c_state.replicas
    fresh = ReplicaIndex()
    assert fresh.ensure(c_state.image.topics)
    assert contents(index) == contents(fresh)
    masks = index.isr[0]
    some = next(iter(masks))
    masks[some] ^= 1 << 2
    assert contents(index) != contents(fresh)


def ordered(index: ReplicaIndex) -> Any:
    """`contents`, with the order of every dict's keys (the Python build's insertion order)."""
    def items(d: dict[Any, Any]) -> list[Any]:
        return [(k, items(v) if isinstance(v, dict) else v) for k, v in d.items()]
    return [items(d) for d in contents(index)]


class CountedBuild:
    """try_ri_add_topics, counting the topics the C loop added itself."""

    def __init__(self) -> None:
        self.done = 0

    def __call__(self) -> Callable[..., Any] | None:
        fast = fastpath.try_ri_add_topics()
        if fast is None:
            return None

        def counted(*args: Any) -> Any:
            at = fast(*args)
            if at is not None:
                self.done += at - args[3]
            return at
        return counted


def built(state: ReplayState) -> tuple[ReplicaIndex, ReplicaIndex]:
    """An index built afresh from the state's topics by the C loop, and one by the Python loop."""
    topics = state.image.topics
    c_index, py_index = ReplicaIndex(), ReplicaIndex()
    assert c_index.ensure(topics)
    with fastpath.pure_python():
        assert py_index.ensure(topics)
    return c_index, py_index


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batch, min_size=1, max_size=6))
def test_the_c_build_makes_the_python_build(batches: list[list[Any]]) -> None:
    """Over images with ISR, ELR, leaderless partitions, gaps in partition ids and topics past
    64 partitions: the same dicts, with the same keys in the same order, and the same answers."""
    for c_state, _ in follow_both(batches):
        c_index, py_index = built(c_state)
        assert ordered(c_index) == ordered(py_index)
        ctx = ControllerContext(node_id=1, supported={}, image=c_state.image, replicas=c_index)
        assert index_answers(ctx) == scan_answers(c_state.image)


def test_the_usual_topics_are_built_in_c() -> None:
    """After a broker event: every topic of at most 64 partitions is added in C, the one past 64
    in Python, and leaderless partitions, ELR and leader counts are all there."""
    *_, (state, _) = follow_both([fence(1), fence(2), sweep(7)])
    counted = CountedBuild()
    with patch.object(ri_module, "try_ri_add_topics", counted):
        c_index, py_index = built(state)
    assert counted.done == len([s for s in SIZES if s <= 64])
    assert c_index.leaderless and c_index.elr and c_index.leads and c_index.lacking and c_index.imbalanced
    assert ordered(c_index) == ordered(py_index)
