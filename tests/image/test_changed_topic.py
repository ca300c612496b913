"""The snapshot topic writer's loop over its usual topics in one C call
(fastpath.try_write_topics, from topics.write_values: kept topics taken whole, changed dense
topics compared chunk by chunk and re-encoded where they changed) against the Python path:
over random topics images and successive writes (topics kept, changed, copied as another
node's, renamed, re-laid out, grown, created, written back and forth between two nodes'
images), the same values, the same losses, the same counts of partitions encoded and
reused, and the loop stops only at a topic it may not take (the Python path takes that one
and hands the rest back); a registration equal to the kept one but another object is
reused, one that differs is encoded."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st
from msgspec.structs import replace

from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.pmap import ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.image.writer.components import topics as topics_writer
from kraftsim.image.writer.loss import LossReport
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid

from tests.image.helpers import uid
from tests.image.test_partition_values import MV_BY_VERSION, registration, target

pytestmark = pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")

#: name, partitions: what a topic of the test holds
Topics = dict[int, tuple[str, Any]]


def image(topics: Topics) -> TopicsImage:
    by_id, by_name = PMap(hash_uuid), PMap(hash_str)
    for n, (name, parts) in topics.items():
        by_id = by_id.set(uid(n), TopicImage(name, uid(n), parts))
        by_name = by_name.set(name, uid(n))
    return TopicsImage(by_id=by_id, by_name=by_name)


def copied(parts: Any) -> ChunkMap[int, PartitionRegistration]:
    """Equal registrations in new objects (another node's image of the same partitions)."""
    return ChunkMap.of({pid: replace(p) for pid, p in parts.items()})


@st.composite
def step(draw: Any, topics: Topics, usual: bool) -> Topics:
    out = dict(topics)
    n = draw(st.sampled_from(sorted(out)))
    name, parts = out[n]
    kind = draw(st.sampled_from(["change", "change", "copy", "rename", "relayout", "grow", "new"]))
    if kind == "change":  # some partitions changed, some given an equal copy
        changes = {pid: draw(st.one_of(registration(usual), st.just(replace(parts[pid]))))
                   for pid in draw(st.lists(st.sampled_from(sorted(parts)), max_size=6, unique=True))}
        out[n] = (name, parts.updated(changes) if isinstance(parts, ChunkMap) else {**parts, **changes})
    elif kind == "copy":
        out[n] = (name, copied(parts))
    elif kind == "rename":
        out[n] = (name + "x", parts)
    elif kind == "relayout":  # not 0..n-1 in order: the ids listed apart (a dict, or a ChunkMap in reverse)
        items = dict(reversed(list(parts.items())))
        out[n] = (name, draw(st.sampled_from([items, ChunkMap.of(items)])))
    elif kind == "grow":
        out[n] = (name, ChunkMap.of({**dict(parts.items()), len(parts): draw(registration(usual))}))
    else:
        out[max(out) + 1] = (f"t{max(out) + 1}", ChunkMap.of({i: draw(registration(usual)) for i in range(3)}))
    return out


def write(topics: TopicsImage, t: Any, cache: topics_writer.TopicValues) -> list[bytes]:
    return [v for run in topics_writer.write_values(topics, t, cache) for v in run]


class Spy:
    """try_write_topics, recording what it answered: (start, where it stopped), or None; and
    whether a topic it stopped at was one it must take in the usual case (see takeable)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int] | None] = []
        self.stopped_at_takeable = False

    def __call__(self, topics: list[TopicImage], start: int, kept: dict[Uuid, Any], *args: Any) -> Any:
        got = fastpath.try_write_topics(topics, start, kept, *args)
        self.runs.append(None if got is None else (start, got[0]))
        if got is not None and got[0] < len(topics) and takeable(topics[got[0]], kept):
            self.stopped_at_takeable = True
        return got


def takeable(t: TopicImage, kept: dict[Uuid, Any]) -> bool:
    """Whether the loop must take `t` when none of its changed partitions has a loss to
    report: kept under its name, whole or as a dense ChunkMap's chunks of the same lengths."""
    old = kept.get(t.id)
    if old is None or old.name != t.name:
        return False
    if old.partitions is t.partitions:
        return True
    chunks = t.partitions.dense_chunks() if isinstance(t.partitions, ChunkMap) else None
    return (chunks is not None and old.pids is None
            and list(map(len, chunks)) == list(map(len, old.registrations)))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), usual=st.booleans(), version=st.sampled_from(sorted(MV_BY_VERSION)), elr_on=st.booleans(),
       sizes=st.lists(st.integers(1, 20), min_size=1, max_size=6))
def test_the_c_loop_writes_what_the_python_path_writes(data: Any, usual: bool, version: int, elr_on: bool,
                                                       sizes: list[int]) -> None:
    mv = MV_BY_VERSION[version]
    topics: Topics = {n: (f"t{n}", ChunkMap.of({i: data.draw(registration(usual)) for i in range(size)}))
                      for n, size in enumerate(sizes)}
    images = [topics]
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.sampled_from(images[-2:]))  # (from the last image or the one before: two nodes in turn)
        for _ in range(data.draw(st.integers(1, 3))):
            at = data.draw(step(at, usual))
        images.append(at)
    fast_cache, plain_cache = topics_writer.TopicValues(), topics_writer.TopicValues()
    spy = Spy()
    for topics in images:
        now = image(topics)
        fast_losses, plain_losses = LossReport(), LossReport()
        with mock.patch.object(topics_writer, "try_write_topics", spy):
            fast = write(now, target(mv, elr_on, fast_losses), fast_cache)
        with fastpath.pure_python():
            plain = write(now, target(mv, elr_on, plain_losses), plain_cache)
            fresh = write(now, target(mv, elr_on, LossReport()), topics_writer.TopicValues())
        assert fast == plain == fresh
        assert fast_losses.items == plain_losses.items
        assert (fast_cache.encoded, fast_cache.reused) == (plain_cache.encoded, plain_cache.reused)
        assert fast_cache.topics.keys() == plain_cache.topics.keys()
    assert None not in spy.runs and all(start <= stop for start, stop in filter(None, spy.runs))
    if usual and version >= 1:  # (no changed partition with a loss: the loop took every topic it may take)
        assert not spy.stopped_at_takeable


def test_an_equal_registration_is_reused_and_a_different_one_encoded() -> None:
    """Fails when the C code tells registrations apart by identity alone (an equal copy
    encoded again) or takes one that differs for the kept one (its old bytes written)."""
    regs = {i: PartitionRegistration((1, 2), (uid(1), uid(2)), (1, 2), leader=1, leader_epoch=i) for i in range(20)}
    parts = ChunkMap.of(regs)
    t = target(MV_BY_VERSION[1], False, LossReport())
    cache = topics_writer.TopicValues()
    write(image({0: ("t", parts)}), t, cache)
    spy = Spy()
    equal = parts.updated({3: replace(regs[3]), 9: replace(regs[9])})
    with mock.patch.object(topics_writer, "try_write_topics", spy):
        write(image({0: ("t", equal)}), t, cache)
    assert spy.runs == [(0, 1)] and (cache.encoded, cache.reused) == (20, 20)
    kept = cache.topics[uid(0)]
    twins, kept_regs = [p for c in kept.twins for p in c], [p for c in kept.registrations for p in c]
    assert twins[3] is regs[3] and kept_regs[3] is equal[3]  # (its twin: the one kept)
    differs = equal.updated({9: replace(regs[9], leader_epoch=99), 3: regs[3]})
    with mock.patch.object(topics_writer, "try_write_topics", spy):
        values = write(image({0: ("t", differs)}), t, cache)
    assert spy.runs == [(0, 1), (0, 1)] and (cache.encoded, cache.reused) == (21, 39)
    with fastpath.pure_python():
        assert values == write(image({0: ("t", differs)}), t, topics_writer.TopicValues())


def test_a_topic_the_loop_cannot_take_is_the_python_paths_and_the_rest_the_loops() -> None:
    """Kept whole, changed, renamed, changed: the loop stops at the renamed topic (no kept
    topic of its name), the Python path writes it afresh, and the loop takes the rest.
    Fails when the loop skips a topic, takes the renamed one, or miscounts."""
    regs = {i: PartitionRegistration((1, 2), (uid(1), uid(2)), (1, 2), leader=1, leader_epoch=i) for i in range(20)}
    parts = [ChunkMap.of(regs) for _ in range(4)]
    t = target(MV_BY_VERSION[1], False, LossReport())
    cache = topics_writer.TopicValues()
    write(image({n: (f"t{n}", parts[n]) for n in range(4)}), t, cache)
    assert (cache.encoded, cache.reused) == (80, 0)
    changed = {n: parts[n].updated({5: replace(regs[5], leader=2)}) for n in (1, 3)}
    now = image({0: ("t0", parts[0]), 1: ("t1", changed[1]), 2: ("t2x", parts[2]), 3: ("t3", changed[3])})
    renamed = [tp.id for tp in topics_writer._ordered(now, t)].index(uid(2))
    spy = Spy()
    with mock.patch.object(topics_writer, "try_write_topics", spy):
        values = write(now, t, cache)
    assert spy.runs == [(0, renamed)] + ([(renamed + 1, 4)] if renamed < 3 else [])
    assert (cache.encoded, cache.reused) == (80 + 1 + 20 + 1, 20 + 19 + 19)
    with fastpath.pure_python():
        assert values == write(now, t, topics_writer.TopicValues())
    assert cache.topics[uid(1)].registrations == changed[1].dense_chunks()
    assert cache.topics[uid(0)].partitions is parts[0]


def test_a_partition_with_a_loss_stops_the_loop_for_the_python_path_to_report() -> None:
    """A changed partition whose ELR the target cannot hold: the loop stops at its topic and
    the Python path reports the loss (the C code never reports one)."""
    regs = {i: PartitionRegistration((1, 2), (uid(1), uid(2)), (1, 2), leader=1) for i in range(10)}
    parts = ChunkMap.of(regs)
    losses = LossReport()
    t = target(MV_BY_VERSION[1], False, losses)
    cache = topics_writer.TopicValues()
    write(image({0: ("t0", parts)}), t, cache)
    lossy = image({0: ("t0", parts.updated({3: replace(regs[3], elr=(2,))}))})
    spy = Spy()
    with mock.patch.object(topics_writer, "try_write_topics", spy):
        values = write(lossy, t, cache)
    assert spy.runs == [(0, 0)] and len(losses.items) == 1
    with fastpath.pure_python():
        assert values == write(lossy, t, topics_writer.TopicValues())


def test_pure_python_mode_skips_the_c_path() -> None:
    regs = {i: PartitionRegistration((1, 2), (uid(1), uid(2)), (1, 2), leader=1) for i in range(10)}
    parts = ChunkMap.of(regs)
    t = target(MV_BY_VERSION[1], False, LossReport())
    cache = topics_writer.TopicValues()
    write(image({0: ("t", parts)}), t, cache)
    spy = Spy()
    with fastpath.pure_python(), mock.patch.object(topics_writer, "try_write_topics", spy):
        write(image({0: ("t", parts.updated({1: replace(regs[1], leader=2)}))}), t, cache)
    assert spy.runs == [None] and cache.encoded == 11
