"""A changed topic rewritten in one C call (fastpath.try_changed_topic, from
topics.write_values) against the Python path: over random topics images and successive
writes (topics kept, changed, copied as another node's, renamed, re-laid out, grown, written
back and forth between two nodes' images), the same values, the same losses, the same
counts of partitions encoded and reused; and a registration equal to the kept one but
another object is reused, one that differs is encoded."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings, strategies as st
from msgspec.structs import replace

from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage, TopicsImage
from kraftsim.image.pmap import ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.image.writer.components import topics as topics_writer
from kraftsim.image.writer.loss import LossReport
from kraftsim.protocol import fastpath

from tests.image.helpers import uid
from tests.image.test_partition_values import MV_BY_VERSION, registration, target

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
    """try_changed_topic, counting its answers (and whether the kept topic had as many partitions)."""

    def __init__(self) -> None:
        self.answers: list[bool] = []
        self.same_size: list[bool] = []

    def __call__(self, *args: Any) -> Any:
        got = fastpath.try_changed_topic(*args)
        self.answers.append(got is not None)
        self.same_size.append(list(map(len, args[2])) == list(map(len, args[3])))
        return got


@settings(max_examples=30, deadline=None)
@given(data=st.data(), usual=st.booleans(), version=st.sampled_from(sorted(MV_BY_VERSION)), elr_on=st.booleans(),
       sizes=st.lists(st.integers(1, 20), min_size=1, max_size=3))
def test_changed_topics_in_c_are_the_python_paths(data: Any, usual: bool, version: int, elr_on: bool,
                                                  sizes: list[int]) -> None:
    mv = MV_BY_VERSION[version]
    topics: Topics = {n: (f"t{n}", ChunkMap.of({i: data.draw(registration(usual)) for i in range(size)}))
                      for n, size in enumerate(sizes)}
    images = [topics]
    for _ in range(data.draw(st.integers(1, 6))):
        # a step from the last image, or from an earlier one (two nodes writing in turn)
        images.append(data.draw(step(data.draw(st.sampled_from(images[-2:])), usual)))
    fast_cache, plain_cache = topics_writer.TopicValues(), topics_writer.TopicValues()
    spy = Spy()
    for topics in images:
        now = image(topics)
        fast_losses, plain_losses = LossReport(), LossReport()
        with mock.patch.object(topics_writer, "try_changed_topic", spy):
            fast = write(now, target(mv, elr_on, fast_losses), fast_cache)
        with fastpath.pure_python():
            plain = write(now, target(mv, elr_on, plain_losses), plain_cache)
            fresh = write(now, target(mv, elr_on, LossReport()), topics_writer.TopicValues())
        assert fast == plain == fresh
        assert fast_losses.items == plain_losses.items
        assert (fast_cache.encoded, fast_cache.reused) == (plain_cache.encoded, plain_cache.reused)
    if usual and version >= 1:  # (every changed topic of the usual kind, as many partitions, was the C path's)
        assert spy.answers == spy.same_size


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
    with mock.patch.object(topics_writer, "try_changed_topic", spy):
        write(image({0: ("t", equal)}), t, cache)
    assert spy.answers == [True] and (cache.encoded, cache.reused) == (20, 20)
    kept = cache.topics[uid(0)]
    twins, kept_regs = [p for c in kept.twins for p in c], [p for c in kept.registrations for p in c]
    assert twins[3] is regs[3] and kept_regs[3] is equal[3]  # (its twin: the one kept)
    differs = equal.updated({9: replace(regs[9], leader_epoch=99), 3: regs[3]})
    with mock.patch.object(topics_writer, "try_changed_topic", spy):
        values = write(image({0: ("t", differs)}), t, cache)
    assert spy.answers == [True, True] and (cache.encoded, cache.reused) == (21, 39)
    with fastpath.pure_python():
        assert values == write(image({0: ("t", differs)}), t, topics_writer.TopicValues())


def test_pure_python_mode_skips_the_c_path() -> None:
    regs = {i: PartitionRegistration((1, 2), (uid(1), uid(2)), (1, 2), leader=1) for i in range(10)}
    parts = ChunkMap.of(regs)
    t = target(MV_BY_VERSION[1], False, LossReport())
    cache = topics_writer.TopicValues()
    write(image({0: ("t", parts)}), t, cache)
    spy = Spy()
    with fastpath.pure_python(), mock.patch.object(topics_writer, "try_changed_topic", spy):
        write(image({0: ("t", parts.updated({1: replace(regs[1], leader=2)}))}), t, cache)
    assert spy.answers == [False] and cache.encoded == 11
