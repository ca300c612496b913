"""Digests through a DigestCache, which takes a changed topic's unchanged partition chunks
from what it remembers, equal digests computed from scratch, over random histories of
persistent images (partitions changed a few at a time, added, renumbered, topics added
and removed), and see every change."""

from __future__ import annotations

import random

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image import DigestCache, MetadataImage, TopicsImage, image_digest, image_digests
from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage
from kraftsim.image.pmap import DELETE, ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.protocol.primitives import Uuid

DIRS = (Uuid(bytes(16)), Uuid(bytes([1] * 16)), Uuid(bytes([2] * 16)))


def registration(rng: random.Random) -> PartitionRegistration:
    replicas = tuple(rng.sample(range(6), rng.randint(1, 3)))
    return PartitionRegistration(replicas, tuple(rng.choice(DIRS) for _ in replicas), replicas[:rng.randint(0, 3)],
                                 leader=rng.choice(replicas), leader_epoch=rng.randint(0, 9),
                                 partition_epoch=rng.randint(0, 9), elr=() if rng.random() < .8 else replicas[:1])


def topic_id(n: int) -> Uuid:
    return Uuid(n.to_bytes(16, "big"))


def with_topics(image: MetadataImage, topics: dict[Uuid, object]) -> MetadataImage:
    by_id = image.topics.by_id.update(topics)
    by_name = image.topics.by_name.update({t.name: t.id for t in topics.values() if t is not DELETE})
    return msgspec.structs.replace(image, topics=TopicsImage(by_id=by_id, by_name=by_name))


def step(image: MetadataImage, rng: random.Random, next_id: list[int]) -> MetadataImage:
    """One random change: a few partitions of some topics, a new topic (partitions in
    order, in another order, or sparse), a topic removed, partitions added."""
    topics = list(image.topics.by_id.values())
    changes: dict[Uuid, object] = {}
    kind = rng.random()
    if not topics or kind < .2:
        next_id[0] += 1
        n = rng.choice([1, 7, 8, 9, 17, 50])
        pids = list(range(n))
        if rng.random() < .2:
            rng.shuffle(pids)  # (keys not in order: not dense)
        elif rng.random() < .2:
            pids = [p * 2 for p in pids]  # (gaps: not dense)
        tid = topic_id(next_id[0])
        changes[tid] = TopicImage(f"t{next_id[0]}", tid, ChunkMap.of({p: registration(rng) for p in pids}))
    elif kind < .3:
        changes[rng.choice(topics).id] = DELETE
    else:
        for t in rng.sample(topics, rng.randint(1, len(topics))):
            parts = t.partitions
            assert isinstance(parts, ChunkMap)
            keys = list(parts)
            edit = {k: registration(rng) for k in rng.sample(keys, rng.randint(1, min(3, len(keys))))}
            if rng.random() < .1:
                edit[max(keys) + 1] = registration(rng)  # (a partition added)
            changes[t.id] = TopicImage(t.name, t.id, parts.updated(edit))
    return with_topics(image, changes)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 6))
def test_cached_digests_equal_fresh_ones_over_random_histories(seed: int, limit: int) -> None:
    rng = random.Random(seed)
    cache = DigestCache(limit=limit)
    image = MetadataImage(topics=TopicsImage(by_id=PMap(hash_uuid), by_name=PMap(hash_str)))
    history = [image]
    next_id = [0]
    seen: dict[str, MetadataImage] = {}
    for _ in range(25):
        image = step(image, rng, next_id)
        history.append(image)
        digest = image_digest(image, cache)
        assert digest == image_digest(image)
        if digest in seen:  # (equal digests only for equal images)
            assert seen[digest].topics.by_id == image.topics.by_id
        seen[digest] = image
    for old in rng.sample(history, 5):  # (older images again, after the cache moved on)
        assert image_digest(old, cache) == image_digest(old)
    assert image_digests([history[-1], None, history[-1], history[0]]) == [
        image_digest(history[-1]), None, image_digest(history[-1]), image_digest(history[0])]


def test_one_changed_partition_changes_the_digest_and_reuses_the_other_chunks() -> None:
    rng = random.Random(7)
    tid = topic_id(1)
    parts = ChunkMap.of({p: registration(rng) for p in range(50)})
    image = with_topics(MetadataImage(), {tid: TopicImage("t", tid, parts)})
    cache = DigestCache()
    before = image_digest(image, cache)
    p = parts[33]
    bumped = msgspec.structs.replace(p, leader_epoch=p.leader_epoch + 1)
    after = with_topics(image, {tid: TopicImage("t", tid, parts.updated({33: bumped}))})
    assert image_digest(after, cache) == image_digest(after) != before
    assert image_digest(image, cache) == before


def test_topics_of_several_histories_digested_in_turn_are_hashed_once() -> None:
    """Images of three histories with equal content and no shared objects (a node's, its
    shadow's, a replay's), digested in turn through one cache, hold three times the topics of
    one image: the topic hashes start a new generation, and the older one still gives each
    topic's hash (by the very object, kept alive with it) instead of hashing it again."""
    rng = random.Random(3)
    regs = {(t, p): registration(rng) for t in range(40) for p in range(9)}
    empty = MetadataImage(topics=TopicsImage(by_id=PMap(hash_uuid), by_name=PMap(hash_str)))
    histories = [{topic_id(t): TopicImage(f"t{t}", topic_id(t), ChunkMap.of({p: regs[(t, p)] for p in range(9)}))
                  for t in range(40)} for _ in range(3)]
    cache = DigestCache(limit=2)
    hashed = [0]
    topic_hash = cache._topic_hash

    def counted(*args):  # type: ignore[no-untyped-def]
        hashed[0] += 1
        return topic_hash(*args)

    cache._topic_hash = counted  # type: ignore[method-assign]
    first = [image_digest(with_topics(empty, topics), cache) for topics in histories]
    assert hashed[0] == 3 * 40 and len(set(first)) == 1
    assert first[0] == image_digest(with_topics(empty, histories[0]))
    # (the next image of each history: new maps holding the same topic objects)
    again = [image_digest(with_topics(empty, topics), cache) for topics in histories]
    assert again == first and hashed[0] == 3 * 40  # (nothing hashed twice)
    changed = with_topics(empty, {**histories[0], topic_id(0): TopicImage("t0", topic_id(0),
                                                                          ChunkMap.of({0: regs[(1, 0)]}))})
    assert image_digest(changed, cache) == image_digest(changed) != first[0] and hashed[0] == 3 * 40 + 1
