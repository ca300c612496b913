"""The C loop of leader_and_isr_updates (fastpath.try_leader_isr_records): given an index
answer, the partitions whose shape is already worked out are written in C, topic by topic.

Property: over random images (several topics, shapes shared by many partitions or not,
partition ids dense or with gaps, topics past 64 partitions), broker states, broker events
(fence, unclean shutdown, unfence) and metadata.versions, the records equal, in value,
type and order, those of the reference (every partition through the builder) and those of
the Python loop (fast path off). And the C builder itself, record by record."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kraftsim.controller.replica_index import IndexedPartitions, ReplicaIndex
from kraftsim.controller.replication import elr_partitions, isr_partitions, leader_and_isr_updates, leaderless
from kraftsim.image.components.topics import TopicsDelta
from kraftsim.image.pmap import CHUNK_BITS
from kraftsim.protocol import fastpath
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from tests.controller.cluster_support import CATALOG, RuleCluster, replay
from tests.controller.conftest import broker, config, payload
from tests.controller.test_leader_isr_fast_path import (
    BROKERS, broker_records, brokers, nearly_usual_partition, odd_partition, own_dir, partition_record, usual_partition,
)

pytestmark = pytest.mark.skipif(fastpath.try_leader_isr_records() is None, reason="no C extension")

TOPICS = (Uuid(b"\x07" * 16), Uuid(b"\x05" * 16), Uuid(b"\x06" * 16))


def same_records(got: list[Payload], want: list[Payload]) -> None:
    """Equal records of the same classes, each message holding its own lists."""
    assert [(p.record_type, p.version, type(p.message), p.message) for p in got] == [
        (p.record_type, p.version, type(p.message), p.message) for p in want]
    assert all(type(p) is Payload for p in got)
    for p, q in zip(got, want):
        assert type(p.message.isr) is type(q.message.isr)
    lists = [id(p.message.isr) for p in got if p.message.isr is not None]
    assert len(set(lists)) == len(lists)




@st.composite
def twin(draw: st.DrawFn, shape: dict) -> dict:
    """`shape` with one thing that sends it to the builder (replicas, directories, ISR and
    leader kept: the same key in the loop's memo)."""
    odd = draw(st.sampled_from(("elr", "last_known_elr", "removing", "adding")))
    return {**shape, odd: draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=2))}


_USUAL = {"replicas": [0, 1, 2], "isr": [0, 1, 2], "elr": [], "last_known_elr": [], "removing": [], "adding": [],
          "leader": 0, "dirs": ["own"] * 3}
usual_shapes = st.lists(usual_partition(), min_size=1, max_size=3)
with_twins = usual_shapes.flatmap(lambda pool: st.lists(twin(pool[0]), min_size=1, max_size=2).map(
    lambda twins: pool + twins))
shapes = st.one_of(with_twins, with_twins, usual_shapes,
                   st.lists(st.one_of(usual_partition(), nearly_usual_partition(), odd_partition), min_size=1,
                            max_size=4))
topic_layout = st.tuples(st.integers(1, 80), st.booleans(), st.lists(st.integers(0, 3), min_size=1, max_size=80))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mv=st.sampled_from(("3.5-IV2", "3.7-IV2", "3.9-IV0", "4.0-IV3", "4.0-IV3", "4.1-IV1", "4.1-IV1")),
       elr=st.sampled_from((True, True, False)), cluster_min_isr=st.integers(1, 3),
       topic_min_isr=st.none() | st.integers(1, 4), unclean=st.booleans(), states=brokers, pool=shapes,
       layouts=st.lists(topic_layout, min_size=1, max_size=3),
       event=st.sampled_from(("fence", "unclean", "unfence")), who=st.sampled_from(BROKERS))
@example(mv="4.0-IV3", elr=True, cluster_min_isr=1, topic_min_isr=None, unclean=False,
         states=dict.fromkeys(BROKERS, "active"), pool=[_USUAL, {**_USUAL, "last_known_elr": [1]}],
         layouts=[(2, False, [0, 1])], event="fence", who=2)  # (a shape seen, then its twin with a last known leader)
def test_the_c_loop_writes_what_the_builder_and_the_python_loop_write(mv, elr, cluster_min_isr, topic_min_isr, unclean,
                                                                      states, pool, layouts, event, who) -> None:
    c = RuleCluster(mv, elr=elr if mv >= "4.0" else None, min_insync_replicas=cluster_min_isr)
    records = broker_records(states)
    for n, (count, gaps, picks) in enumerate(layouts):
        tid, name = TOPICS[n], f"t{n}"
        records.append(payload("TopicRecord", name=name, topic_id=tid))
        for pid in range(count):
            if gaps and pid % 3 == 1:
                continue  # (ids with gaps: no dense chunks, the C loop reads the map)
            p = partition_record(pid, pool[picks[pid % len(picks)] % len(pool)]).message
            records.append(payload("PartitionRecord", 2, **{**msgspec.structs.asdict(p), "topic_id": tid}))
        if topic_min_isr is not None and n == 0:
            records.append(config(name, "min.insync.replicas", str(topic_min_isr), resource_type=2))
        if unclean and n == 1:
            records.append(config(name, "unclean.leader.election.enable", "true", resource_type=2))
    c.image = replay(c.image, records, next_offset=100)
    ctx = c.ctx(replicas=ReplicaIndex())

    def event_updates(quick: bool = True, listed: bool = False) -> list[Payload]:
        def given(answer: Any) -> Any:
            return list(answer) if listed else answer
        if event == "fence":
            return leader_and_isr_updates(ctx, c.mv, given(isr_partitions(ctx, who)), broker_to_remove=who,
                                          quick=quick)
        if event == "unclean":
            return (leader_and_isr_updates(ctx, c.mv, given(isr_partitions(ctx, who)), unclean_shutdown_broker=who,
                                           quick=quick)
                    + leader_and_isr_updates(ctx, c.mv, given(elr_partitions(ctx, who)),
                                             unclean_shutdown_broker=who, quick=quick))
        return leader_and_isr_updates(ctx, c.mv, given(leaderless(ctx)), broker_to_add=who, quick=quick)

    fast = event_updates()
    same_records(fast, event_updates(quick=False, listed=True))
    with fastpath.pure_python():
        same_records(fast, event_updates())
    same_records(fast, event_updates(listed=True))


def c_loop() -> Any:
    fill = fastpath.try_leader_isr_records()
    assert fill is not None
    return fill


def test_the_c_builder_writes_each_record_as_the_class_does() -> None:
    """Three partitions of one shape, one of another: the memo's changes become one record
    each (partition id, topic id, leader, a new ISR list; the rest the class's defaults);
    a shape without change writes nothing; an unknown shape or a partition with ELR stops
    the loop there, and it resumes after it."""
    c = RuleCluster("4.0-IV3", elr=True)
    records: list = [payload("TopicRecord", name="t", topic_id=TOPICS[0])]
    specs = [([1, 2, 3], [1, 2, 3], 1, []), ([1, 2, 3], [1, 2, 3], 1, []), ([2, 3, 1], [2, 3], 2, []),
             ([1, 2, 3], [1, 2, 3], 1, []), ([3, 1, 2], [3], 3, [1]), ([1, 2, 3], [1, 2, 3], 1, []),
             ([4, 5, 6], [4, 5], 4, [])]
    for pid, (reps, isr, leader, elr) in enumerate(specs):
        records.append(payload("PartitionRecord", 2, topic_id=TOPICS[0], partition_id=pid, replicas=reps, isr=isr,
                               leader=leader, eligible_leader_replicas=elr))
    c.image = replay(c.image, records, next_offset=100)
    topic = c.image.topics.get_topic(TOPICS[0])
    parts = topic.partitions
    rt = CATALOG.record_registry()["PartitionChangeRecord"]
    blank = rt.cls(partition_id=0, topic_id=Uuid.ZERO)

    def shape(pid: int) -> tuple:
        p = parts[pid]
        return (p.replicas, p.directories, p.isr, p.leader)

    made: dict = {shape(0): (2, (2, 3)), shape(2): ()}  # (pid 6's shape not worked out yet; pid 4 has ELR)
    fixed = (blank, rt, 1, Payload, CHUNK_BITS)
    out: list = []
    mask = sum(1 << pid for pid in range(len(specs)))
    for chunks in (parts.dense_chunks(), None):  # (from the chunks, and from the map)
        assert chunks is not None or parts.dense_chunks() is not None
        out.clear()
        assert c_loop()(out, fixed, topic.id, made, chunks, parts, mask, 0) == 4
        assert c_loop()(out, fixed, topic.id, made, chunks, parts, mask, 5) == 6
        assert c_loop()(out, fixed, topic.id, made, chunks, parts, mask, 7) == -1
        want = [Payload(rt, 1, rt.cls(partition_id=pid, topic_id=topic.id, leader=2, isr=[2, 3]))
                for pid in (0, 1, 3, 5)]
        same_records(out, want)
    assert out[0].message.replicas is None and out[0].message.leader_recovery_state == -1


def test_the_c_loop_reads_masks_past_64_partitions_and_leaves_what_it_cannot_build() -> None:
    c = RuleCluster("3.9-IV0")
    records: list = [payload("TopicRecord", name="t", topic_id=TOPICS[0])]
    records += [payload("PartitionRecord", 1, topic_id=TOPICS[0], partition_id=pid, replicas=[1, 2], isr=[1, 2],
                        leader=1) for pid in range(150)]
    c.image = replay(c.image, records, next_offset=100)
    topic = c.image.topics.get_topic(TOPICS[0])
    parts = topic.partitions
    p = parts[0]
    rt = CATALOG.record_registry()["PartitionChangeRecord"]
    made: dict = {(p.replicas, p.directories, p.isr, p.leader): (-2, (1,))}
    fixed = (rt.cls(partition_id=0, topic_id=Uuid.ZERO), rt, 0, Payload, CHUNK_BITS)
    pids = [3, 64, 65, 100, 149]
    out: list = []
    assert c_loop()(out, fixed, topic.id, made, parts.dense_chunks(), parts, sum(1 << i for i in pids), 64) == -1
    assert [r.message.partition_id for r in out] == pids[1:]
    # A record class the loop cannot build by filling slots (a Python-level constructor): None, nothing written.
    fixed = ((1, 2), rt, 0, Payload, CHUNK_BITS)
    assert c_loop()(out, fixed, topic.id, made, parts.dense_chunks(), parts, 1, 0) is None
    assert len(out) == 4


def fenced_cluster() -> tuple[Any, Any]:
    """Brokers 1-3 active; topics t0 (10 partitions), t1 (ids with gaps) and t2 (150 partitions),
    every partition replicas and ISR [1, 2, 3] led by 1 but t1's first (led by 2) and t2's
    partition 70 (led by 3): shapes first met there; a context with a replica index."""
    c = RuleCluster("3.9-IV0")
    supported = CATALOG.supported_features()
    records: list = [broker(b, supported, fenced=False) for b in (1, 2, 3)]
    for n, pids in enumerate((range(10), range(0, 30, 3), range(150))):
        records.append(payload("TopicRecord", name=f"t{n}", topic_id=TOPICS[n]))
        records += [payload("PartitionRecord", 2, topic_id=TOPICS[n], partition_id=pid, replicas=[1, 2, 3],
                            isr=[1, 2, 3], leader={(1, 0): 2, (2, 70): 3}.get((n, pid), 1),
                            directories=[own_dir(r) for r in (1, 2, 3)]) for pid in pids]
    c.image = replay(c.image, records, next_offset=100)
    return c, c.ctx(replicas=ReplicaIndex())


def test_the_c_walk_writes_a_whole_answer_and_hands_back_what_it_cannot_write() -> None:
    """One call writes every topic of an index answer in order (dense, gapped, past 64
    partitions); it stops at a shape its memo lacks (to resume after it), and hands back
    the rest when it cannot build the record class, having written nothing of it."""
    c, ctx = fenced_cluster()
    answer = isr_partitions(ctx, 1)
    assert isinstance(answer, IndexedPartitions)
    walk = answer.records_walk()
    assert walk is not None
    listed = [(t.id, pid) for t, pid, _ in answer]
    made: dict = {(p.replicas, p.directories, p.isr, p.leader): (2 if p.leader == 1 else -2, (2, 3))
                  for _, _, p in answer}
    assert len(made) == 3
    want = leader_and_isr_updates(ctx, c.mv, list(answer), broker_to_remove=1, quick=False)
    rt = CATALOG.record_registry()["PartitionChangeRecord"]
    fixed = (rt.cls(partition_id=0, topic_id=Uuid.ZERO), rt, want[0].version, Payload, CHUNK_BITS)
    entered: list = []

    def enter(t: Any) -> dict:
        entered.append(t.name)
        return made

    out: list = []
    assert walk(out, fixed, enter, 0, 0) is None
    assert [(r.message.topic_id, r.message.partition_id) for r in out] == listed
    assert entered == ["t0", "t1", "t2"]
    same_records(out, want)
    # (with the memo of the topics without configs of their own given: only the others are entered)
    out.clear()
    entered.clear()
    plain_walk = answer.records_walk((made, frozenset({"t1", "other"})))
    assert plain_walk is not None
    assert plain_walk(out, fixed, lambda t: {} if t.name != "t1" else enter(t), 0, 0) is None
    assert entered == ["t1"]
    same_records(out, want)
    # (a memo without the shape: a stop at the first partition, in C's hands again after it)
    out.clear()
    stop = walk(out, fixed, lambda t: {}, 1, 3)
    assert stop is not None and stop[0] == 1 and stop[1].name == "t1" and stop[4:] == (3, True) and out == []
    # (a record class it cannot build: nothing written, the rest handed back from where it was asked)
    stop = walk(out, ((1, 2), rt, 0, Payload, CHUNK_BITS), enter, 2, 70)
    assert stop is not None and stop[0] == 2 and stop[4:] == (70, False) and out == []


def test_the_python_loop_takes_over_where_the_c_walk_cannot_write() -> None:
    """leader_and_isr_updates writes the same records when the C walk hands the rest back
    at its first call or at any later one (it resumes after each shape first met: t0's
    first partition, t1's first, t2's partition 70), as it does for a record class it
    cannot build."""
    c, ctx = fenced_cluster()
    want = leader_and_isr_updates(ctx, c.mv, list(isr_partitions(ctx, 1)), broker_to_remove=1, quick=False)
    real = IndexedPartitions.records_walk
    for give_up in range(5):
        calls: list = []

        def walk_until(answer: IndexedPartitions, plain: Any = None, last: int = give_up) -> Any:
            inner = real(answer, plain)
            assert inner is not None
            tm = list(answer.by_topic())

            def walk(out: list, fixed: tuple, enter: Any, i: int, start: int) -> Any:
                calls.append((i, start))
                if len(calls) > last:
                    t, chunks, mask = tm[i]
                    return (i, t, chunks, mask, start, False)
                return inner(out, fixed, enter, i, start)
            return walk
        with patch.object(IndexedPartitions, "records_walk", walk_until):
            same_records(leader_and_isr_updates(ctx, c.mv, isr_partitions(ctx, 1), broker_to_remove=1), want)
        assert calls == [(0, 0), (0, 1), (1, 1), (2, 71)][:give_up + 1]


def test_the_walk_reads_a_topic_anew_once_its_partitions_changed() -> None:
    """The index keeps each topic's dense chunks from one answer to the next while the topic's
    partitions are the same object: once a batch changed t0's partition 3 (its leader 1 -> 2),
    the next walk writes that partition from its new registration."""
    c, ctx = fenced_cluster()
    index = ctx.replicas
    rt = CATALOG.record_registry()["PartitionChangeRecord"]
    fixed = (rt.cls(partition_id=0, topic_id=Uuid.ZERO), rt, 0, Payload, CHUNK_BITS)
    made: dict = {(p.replicas, p.directories, p.isr, p.leader): (2 if p.leader == 1 else -2, (2, 3))
                  for _, _, p in isr_partitions(ctx, 1)}

    def leaders(answer: IndexedPartitions) -> dict:
        walk = answer.records_walk()
        assert walk is not None
        out: list = []
        assert walk(out, fixed, lambda t: made, 0, 0) is None
        return {(r.message.topic_id, r.message.partition_id): r.message.leader for r in out}

    before = leaders(index.iter_isr_member(1))
    assert before[(TOPICS[0], 3)] == 2
    delta = TopicsDelta(index.topics)
    delta.replay_partition_change(rt.cls(partition_id=3, topic_id=TOPICS[0], leader=2))
    index.follow(delta, delta.apply())
    after = leaders(index.iter_isr_member(1))
    assert after[(TOPICS[0], 3)] == -2
    assert {k: v for k, v in after.items() if k != (TOPICS[0], 3)} == {
        k: v for k, v in before.items() if k != (TOPICS[0], 3)}
