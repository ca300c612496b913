"""The C loop over a dense topic's chunks (fastpath.try_partition_chunks_canon, what
digest._topic_hash runs for every changed topic) gives the bytes of the Python loop, the
chunks' bytes joined, and reads and fills DigestCache's chunk cache as
DigestCache._chunk_bytes does: a chunk taken from the cache only as that very object at
that position; a chunk it declines hands the whole topic to the Python loop."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage
from kraftsim.image.intern import MIGRATING
from kraftsim.image.pmap import CHUNK, CHUNK_BITS, ChunkMap
from kraftsim.image.verification import digest
from kraftsim.image.verification.digest import ChunkBytesCache, DigestCache
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid

needs_c = pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")

registrations = st.builds(
    PartitionRegistration, st.lists(st.integers(0, 9), max_size=4).map(tuple),
    st.integers(0, 3).map(lambda n: (MIGRATING,) * n), st.lists(st.integers(0, 9), max_size=4).map(tuple),
    leader=st.integers(-1, 300), leader_epoch=st.integers(0, 2**40), elr=st.lists(st.integers(0, 9), max_size=2).map(tuple))
TID = Uuid(bytes(range(16)))


def chunks_of(regs: list[PartitionRegistration]) -> tuple[tuple[PartitionRegistration, ...], ...]:
    chunks = ChunkMap.of(dict(enumerate(regs))).dense_chunks()
    assert chunks is not None
    return chunks


def python_loop(chunks: tuple[tuple[PartitionRegistration, ...], ...]) -> bytes:
    return b"".join(digest._chunk_canon(c, i << CHUNK_BITS) for i, c in enumerate(chunks))


@needs_c
@settings(max_examples=200, deadline=None)
@given(st.lists(registrations, min_size=1, max_size=6 * CHUNK), st.booleans())
def test_c_loop_equals_the_python_loop_and_fills_the_cache_alike(regs: list[PartitionRegistration],
                                                                 cached: bool) -> None:
    chunks = chunks_of(regs)
    cache: ChunkBytesCache | None = {} if cached else None
    assert fastpath.try_partition_chunks_canon(chunks, CHUNK_BITS, cache) == python_loop(chunks)
    if cache is not None:
        assert cache == {id(c): (c, i << CHUNK_BITS, digest._chunk_canon(c, i << CHUNK_BITS))
                         for i, c in enumerate(chunks)}
        # (a second pass takes every chunk from the cache and gives the same bytes)
        assert fastpath.try_partition_chunks_canon(chunks, CHUNK_BITS, cache) == python_loop(chunks)


@needs_c
def test_a_cached_chunk_is_taken_only_as_that_object_at_that_position() -> None:
    p = PartitionRegistration((1, 2), (MIGRATING, MIGRATING), (1, 2), leader=1)
    q = PartitionRegistration((3,), (MIGRATING,), (3,), leader=3)
    chunks = chunks_of([p] * CHUNK + [q] * CHUNK)
    stale = b"stale bytes"
    # the first chunk's entry stands at another position, the second's for another (equal) object
    other = tuple(list(chunks[1]))
    assert other is not chunks[1]
    cache: ChunkBytesCache = {id(chunks[0]): (chunks[0], CHUNK, stale), id(chunks[1]): (other, CHUNK, stale)}
    assert fastpath.try_partition_chunks_canon(chunks, CHUNK_BITS, cache) == python_loop(chunks)
    assert cache[id(chunks[0])] == (chunks[0], 0, digest._chunk_canon(chunks[0], 0))
    # and an entry that is that object at that position is taken as it stands
    cache[id(chunks[1])] = (chunks[1], CHUNK, stale)
    assert fastpath.try_partition_chunks_canon(chunks, CHUNK_BITS, cache) == \
        digest._chunk_canon(chunks[0], 0) + stale


@needs_c
def test_a_chunk_the_c_declines_hands_the_topic_to_the_python_loop() -> None:
    ok = PartitionRegistration((1,), (MIGRATING,), (1,))
    odd = PartitionRegistration((1,), (MIGRATING,), (1,), leader=True)  # (a bool: partition_chunk_canon declines)
    chunks = chunks_of([ok] * CHUNK + [odd])
    assert fastpath.try_partition_chunks_canon(chunks, CHUNK_BITS, {}) is None
    t = TopicImage(name="t", id=TID, partitions=ChunkMap.of(dict(enumerate([ok] * CHUNK + [odd]))))
    expected = digest._entity_hash(b"topics\x00", digest._topic_entity(TID, t))
    assert digest._topic_hash(b"topics\x00", TID, t) == expected
    assert DigestCache()._topic_hash(b"topics\x00", TID, t) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(registrations, min_size=1, max_size=4 * CHUNK), st.lists(registrations, min_size=1, max_size=4 * CHUNK))
def test_topic_hashes_through_a_cache_equal_the_plain_entity_hash(a: list[PartitionRegistration],
                                                                  b: list[PartitionRegistration]) -> None:
    """One cache across two versions of a topic (the second sharing the first's leading
    chunks), as a deep check digests an image after another."""
    cache = DigestCache()
    first = TopicImage(name="t", id=TID, partitions=ChunkMap.of(dict(enumerate(a))))
    parts = first.partitions
    assert isinstance(parts, ChunkMap)
    second = TopicImage(name="t", id=TID, partitions=parts.updated(dict(enumerate(b, start=len(a) // 2))))
    for t in (first, second, first):
        expected = digest._entity_hash(b"topics\x00", digest._topic_entity(TID, t))
        assert cache._topic_hash(b"topics\x00", TID, t) == expected
