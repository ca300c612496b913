"""The C builder of a partition chunk's canonical bytes (fastpath.try_partition_chunk_canon,
used by DigestCache for every changed ChunkMap chunk) gives exactly the bytes of the one
Python definition, `canon` of the chunk's `partition_entity` tuples behind the array
header, or declines (None) where canon would not encode or the C does not handle it."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.image import DigestCache, MetadataImage, TopicsImage, image_digest
from kraftsim.image.canonical import canon
from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage
from kraftsim.image.intern import LOST, MIGRATING, UNASSIGNED, migrating
from kraftsim.image.pmap import CHUNK, ChunkMap, PMap, hash_str, hash_uuid
from kraftsim.image.verification import digest
from kraftsim.image.verification.digest import partition_entity
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid
from tests.paths import REPO

pytestmark = pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")

#: msgspec's range of ints: canon raises outside it, so the C declines there.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def python_body(chunk: tuple[PartitionRegistration, ...] | list[PartitionRegistration], first: int) -> bytes:
    """The Python definition: the chunk's entities as one tuple, without its array header."""
    return canon(tuple(partition_entity(first + j, p) for j, p in enumerate(chunk)))[1:]


def c_body(chunk: tuple[PartitionRegistration, ...] | list[PartitionRegistration], first: int) -> bytes | None:
    return fastpath.try_partition_chunk_canon(chunk, first)


# every width of MessagePack int, both signs, and the edges between them
edges = st.sampled_from([0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, INT_MAX,
                         -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, INT_MIN])
ints = st.one_of(st.integers(-3, 40), edges, st.integers(INT_MIN, INT_MAX))
int_tuples = st.one_of(st.lists(st.integers(0, 40), max_size=4), st.lists(ints, max_size=20)).map(tuple)
other_dirs = st.binary(min_size=16, max_size=16).map(Uuid)
dir_tuples = st.one_of(
    st.integers(0, 5).map(migrating),
    st.lists(st.sampled_from([MIGRATING, UNASSIGNED, LOST]), max_size=4),
    st.lists(other_dirs, max_size=20),  # (16 or more: a bin of 256 bytes or more)
).map(tuple)
registrations = st.builds(
    PartitionRegistration, int_tuples, dir_tuples, int_tuples, removing_replicas=int_tuples,
    adding_replicas=int_tuples, leader=ints, leader_recovery_state=ints, leader_epoch=ints,
    partition_epoch=ints, elr=int_tuples, last_known_elr=int_tuples)


@settings(max_examples=400, deadline=None)
@given(st.lists(registrations, max_size=CHUNK), st.integers(0, 2**40), st.booleans())
def test_c_bytes_equal_the_python_definition(regs: list[PartitionRegistration], chunk_no: int,
                                             as_list: bool) -> None:
    chunk = regs if as_list else tuple(regs)
    first = chunk_no * CHUNK
    got = c_body(chunk, first)
    assert got is not None  # (every value is in msgspec's range: the C answers)
    assert got == python_body(chunk, first)


@settings(max_examples=100, deadline=None)
@given(st.lists(registrations, min_size=1, max_size=CHUNK), st.data())
def test_values_canon_cannot_encode_or_the_c_does_not_handle_are_declined(
        regs: list[PartitionRegistration], data: st.DataObject) -> None:
    j = data.draw(st.integers(0, len(regs) - 1))
    field = data.draw(st.sampled_from(["leader", "leader_epoch", "isr", "elr"]))
    value = data.draw(st.one_of(st.integers(INT_MAX + 1, 2**70), st.integers(-(2**70), INT_MIN - 1)))
    if field in ("isr", "elr"):
        value = (1, value)
    regs[j] = msgspec.structs.replace(regs[j], **{field: value})
    assert c_body(regs, 0) is None
    with pytest.raises(OverflowError):
        python_body(regs, 0)


def test_each_field_is_written_in_its_place() -> None:
    """Every field of each registration holds a value no other field holds: the entities
    decoded back from the C bytes are the Python entities, field for field (two fields
    swapped, or one written in another width, would not decode so)."""
    regs = [PartitionRegistration((1, 2, 3), (UNASSIGNED, LOST, MIGRATING), (2, 3), removing_replicas=(4,),
                                  adding_replicas=(5, 6), leader=300 + j, leader_recovery_state=1,
                                  leader_epoch=70_000 + j, partition_epoch=-(2**40) - j, elr=(7,),
                                  last_known_elr=(8, 9, -10)) for j in range(CHUNK)]
    first = 3 * CHUNK
    body = c_body(tuple(regs), first)
    assert body is not None
    decoded = msgspec.msgpack.decode(bytes((0x90 | CHUNK,)) + body)
    expected = [partition_entity(first + j, p) for j, p in enumerate(regs)]
    assert [tuple(tuple(x) if isinstance(x, list) else x for x in e) for e in decoded] == expected
    assert body == python_body(regs, first)


def test_long_tuples_take_the_longer_headers() -> None:
    """An array of 65,536 ints or more (array32) and a bin of 65,536 bytes or more (bin32)."""
    many = tuple(range(70_000))
    dirs = tuple(Uuid(i.to_bytes(16, "big")) for i in range(5000))
    p = PartitionRegistration(many, dirs, many[:300])
    assert c_body((p,), 0) == python_body((p,), 0)


@pytest.mark.parametrize("chunk", [
    (PartitionRegistration((1,), (MIGRATING,), (1,), leader=True),),  # (a bool: canon writes true)
    (PartitionRegistration((1,), [MIGRATING], (1,)),),  # (a list of directories: canon raises)
    (PartitionRegistration((1,), ("not bytes",), (1,)),),
    (PartitionRegistration([1], (MIGRATING,), (1,)),),  # (not a tuple)
    (PartitionRegistration((1,), (MIGRATING,), (1,)), ("not", "a", "registration")),
    tuple(PartitionRegistration((1,), (MIGRATING,), (1,)) for _ in range(16)),  # (array16: not a 1-byte header)
])
def test_shapes_the_c_does_not_handle_are_declined(chunk: tuple[object, ...]) -> None:
    assert fastpath.try_partition_chunk_canon(chunk, 0) is None


def test_an_empty_chunk_and_ids_past_one_byte() -> None:
    p = PartitionRegistration((1,), (MIGRATING,), (1,), leader=1)
    assert c_body((), 0) == python_body((), 0) == b""
    for first in (120, 128, 256, 65_536, 2**32, 2**40):
        assert c_body((p, p), first) == python_body((p, p), first)


def sample_image() -> MetadataImage:
    """One topic of 50 partitions (7 chunks) with distinct directories and epochs."""
    rng = random.Random(5)
    tid = Uuid(bytes(range(16)))
    parts = ChunkMap.of({n: PartitionRegistration((1, 2), (UNASSIGNED, Uuid(bytes([n]) * 16)), (2,), leader=2,
                                                  leader_epoch=rng.randint(0, 10**6)) for n in range(50)})
    topics = TopicsImage(by_id=PMap(hash_uuid).update({tid: TopicImage("t", tid, parts)}),
                         by_name=PMap(hash_str).update({"t": tid}))
    return msgspec.structs.replace(MetadataImage(), topics=topics)


def test_pure_python_mode_skips_the_c_path_and_digests_alike() -> None:
    image = sample_image()
    fast = image_digest(image, DigestCache())
    with fastpath.pure_python():
        assert fastpath.try_partition_chunk_canon((), 0) is None
        assert image_digest(image, DigestCache()) == fast
    assert image_digest(image) == fast  # (no cache: the plain per-topic entity)
    # (the fast path off at import: the extension's function is never called)
    code = ("from kraftsim.image import DigestCache, image_digest; from kraftsim.protocol import fastpath; "
            "from tests.image.test_digest_chunk_canon import sample_image; "
            "assert not fastpath.ENABLED and fastpath.try_partition_chunk_canon((), 0) is None; "
            "print(image_digest(sample_image(), DigestCache()))")
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "KRAFTSIM_PURE_PYTHON": "1"},
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == fast


@settings(max_examples=60, deadline=None)
@given(st.lists(registrations, min_size=1, max_size=4), st.integers(0, 3 * CHUNK + 1),
       st.sampled_from(["dense", "gaps", "shuffled"]), st.booleans())
def test_topic_hashes_from_chunks_equal_the_topic_entity_hash(pool: list[PartitionRegistration], count: int,
                                                              layout: str, fast: bool) -> None:
    """A topic's hash from its chunks' bytes (digests with or without a DigestCache) is the
    hash of its whole entity, whatever the partitions' layout, on either path."""
    regs = [pool[n % len(pool)] for n in range(count)]
    pids = list(range(count))
    if layout == "gaps":
        pids = [2 * p for p in pids]
    elif layout == "shuffled":
        random.Random(len(regs)).shuffle(pids)
    tid = Uuid(bytes(range(16)))
    t = TopicImage("topic-name", tid, ChunkMap.of(dict(zip(pids, regs))))
    prefix = b"topics\x00"
    image = msgspec.structs.replace(MetadataImage(), topics=TopicsImage(
        by_id=PMap(hash_uuid).update({tid: t}), by_name=PMap(hash_str).update({t.name: tid})))
    with contextlib.nullcontext() if fast else fastpath.pure_python():
        expected = digest._entity_hash(prefix, digest._topic_entity(tid, t))
        assert digest._topic_hash(prefix, tid, t) == expected
        assert DigestCache()._topic_hash(prefix, tid, t) == expected
        assert digest._topics_sum(image) == digest._sum("topics", digest._topics(image)) == expected
