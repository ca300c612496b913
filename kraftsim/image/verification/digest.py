"""Order-independent digests of images.

Each entity (a feature, a broker, a topic with its partitions, a config key, ...) has canonical
bytes (canonical.py) that do not depend on how it was built: listener and feature lists
inside a registration are sorted by name, dict contents by key. The digest of a
component is the sum, modulo 2**256, of BLAKE2b-256 of `component name, NUL, entity bytes`
over its entities; the image digest is BLAKE2b-256 over the component names and their
sums, in a fixed order. A sum does not care about the order entities are visited in, so
the digest depends neither on replay order nor on dict or trie layout; equal images give
equal digests, and different ones differ except with negligible probability (a collision
of the sum needs a BLAKE2b collision-like event).

Provenance is excluded from `image_digest` (two nodes at different offsets with the same
metadata agree); `image_digest_with_provenance` includes it.

Cost is linear in the image (about 0.9 us per partition at 1,000,000 partitions, one
hash per topic). A caller that digests many images of one history (the simulator's
invariants after every operation) passes a `DigestCache`: images are immutable persistent
structures whose unchanged components and topics are the very same objects from one image
to the next, so a component's sum and a topic's hash are remembered by the identity of the
object they were computed from (kept alive by the cache, so the identity cannot be reused)
and only what changed is hashed again.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any, Callable, Iterable

from kraftsim.image.canonical import canon
from kraftsim.image.components.cluster import canonical_lists
from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.image.components.topics import TopicImage
from kraftsim.image.image import COMPONENTS, MetadataImage
from kraftsim.image.pmap import CHUNK, CHUNK_BITS, ChunkMap, PMap
from kraftsim.protocol.fastpath import try_partition_chunk_canon, try_partition_chunks_canon
from kraftsim.protocol.primitives import Uuid

MOD = 1 << 256


def _entity_hash(prefix: bytes, entity: object) -> int:
    return int.from_bytes(blake2b(prefix + canon(entity), digest_size=32).digest(), "big")


def _sum(name: str, entities: Iterable[object]) -> int:
    prefix = name.encode() + b"\x00"
    total = 0
    for e in entities:
        total += _entity_hash(prefix, e)
    return total % MOD


def _features(img: MetadataImage) -> Iterable[object]:
    f = img.features
    if f.metadata_version is not None:
        yield ("metadata.version", f.metadata_version)
    yield from f.finalized


def _cluster(img: MetadataImage) -> Iterable[object]:
    # listener and feature lists as sets, as registrations compare them
    for bid, b in img.cluster.brokers.items():
        # cordoned directories only when some are cordoned: none reported and none cordoned are one state
        yield ("broker", bid, b.epoch, b.incarnation_id, *canonical_lists(b), b.rack, b.fenced,
               b.in_controlled_shutdown, b.is_migrating_zk_broker, b.directories,
               *((b.cordoned_directories,) if b.cordoned_directories else ()))
    for cid, c in img.cluster.controllers.items():
        yield ("controller", cid, c.incarnation_id, c.zk_migration_ready, *canonical_lists(c))


_dir_bytes: dict[tuple[bytes, ...], bytes] = {}


def _dirs(dirs: tuple[bytes, ...]) -> bytes:
    """Directory ids as one bytes value (cached: directory tuples are interned and few)."""
    b = _dir_bytes.get(dirs)
    if b is None:
        if len(_dir_bytes) > 100_000:
            _dir_bytes.clear()
        b = _dir_bytes[dirs] = b"".join(dirs)
    return b


def partition_entity(pid: int, p: PartitionRegistration) -> tuple[object, ...]:
    return (pid, p.replicas, _dirs(p.directories), p.isr, p.removing_replicas, p.adding_replicas, p.leader,
            p.leader_recovery_state, p.leader_epoch, p.partition_epoch, p.elr, p.last_known_elr)


def _chunk_canon(chunk: tuple[PartitionRegistration, ...], first: int) -> bytes:
    """The canonical bytes of a chunk's partitions (ids first, first + 1, ...) behind the
    array header; fastpath.try_partition_chunk_canon writes the same bytes in C."""
    # (partition_entity, inlined: every partition of every changed chunk)
    dirs = _dir_bytes
    return canon(tuple(
        (first + j, p.replicas, dirs.get(p.directories) or _dirs(p.directories), p.isr,
         p.removing_replicas, p.adding_replicas, p.leader, p.leader_recovery_state, p.leader_epoch,
         p.partition_epoch, p.elr, p.last_known_elr) for j, p in enumerate(chunk)))[1:]


def _topic_entity(tid: Uuid, t: TopicImage) -> tuple[object, ...]:
    return (bytes(tid), t.name, tuple(partition_entity(pid, p) for pid, p in sorted(t.partitions.items())))


def _array_header(n: int) -> bytes:
    """MessagePack's header of an array of `n` items (canon writes a tuple as one)."""
    if n < 16:
        return bytes((0x90 | n,))
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


assert CHUNK < 16  # (a chunk's entities encode behind a one-byte array header)


def _topics(img: MetadataImage) -> Iterable[object]:
    # one entity per topic, its partitions in id order: one hash per topic instead of per partition
    for tid, t in img.topics.by_id.items():
        yield _topic_entity(tid, t)


def _topic_head(prefix: bytes, tid: Uuid, t: TopicImage) -> list[bytes]:
    """The bytes hashed for a topic up to its partitions' entities: the prefix, the topic's
    id and name, and the header of its partitions' array."""
    head = canon((bytes(tid), t.name, ()))  # (ends with the empty tuple's header)
    return [prefix, head[:-1], _array_header(len(t.partitions))]


def _chunk_bytes(chunk: tuple[PartitionRegistration, ...], first: int) -> bytes:
    """A chunk's partitions' bytes: written in C where the fast path is on (every partition
    of every changed chunk: the bulk of a deep check at a million partitions), else by
    `_chunk_canon`."""
    body = try_partition_chunk_canon(chunk, first)
    return _chunk_canon(chunk, first) if body is None else body


#: Chunks' canonical bytes by the identity of the chunk: id(chunk) -> (chunk, its first
#: partition id, its bytes) (DigestCache's; the C loop reads and fills it alike).
ChunkBytesCache = dict[int, tuple[tuple[PartitionRegistration, ...], int, bytes]]


def _topic_hash(prefix: bytes, tid: Uuid, t: TopicImage,
                chunk_bytes: Callable[[tuple[PartitionRegistration, ...], int], bytes] = _chunk_bytes,
                chunk_cache: ChunkBytesCache | None = None) -> int:
    """`_entity_hash(prefix, _topic_entity(tid, t))`, from the canonical bytes of the
    partitions' chunks where the partitions are a dense ChunkMap (MessagePack is a
    concatenation: a tuple is a header and its items' bytes). `chunk_bytes(chunk, first)`
    gives the bytes of a chunk whose first partition id is `first` (a cache passes one that
    remembers them in `chunk_cache`). Where the fast path is on, the chunk loop runs in C
    (fastpath.try_partition_chunks_canon, through `chunk_cache` as `chunk_bytes` would):
    every changed topic of every deep check at a million partitions."""
    parts = t.partitions
    chunks = parts.dense_chunks() if type(parts) is ChunkMap else None
    if chunks is None:
        return _entity_hash(prefix, _topic_entity(tid, t))
    out = _topic_head(prefix, tid, t)
    body = try_partition_chunks_canon(chunks, CHUNK_BITS, chunk_cache)
    if body is None:
        for c, chunk in enumerate(chunks):
            out.append(chunk_bytes(chunk, c << CHUNK_BITS))
    else:
        out.append(body)
    return int.from_bytes(blake2b(b"".join(out), digest_size=32).digest(), "big")


def _topics_sum(img: MetadataImage) -> int:
    """`_sum("topics", _topics(img))`, each topic hashed by `_topic_hash`."""
    prefix = b"topics\x00"
    return sum(_topic_hash(prefix, tid, t) for tid, t in img.topics.by_id.items()) % MOD


def _configs(img: MetadataImage) -> Iterable[object]:
    for (rtype, rname), data in img.configs.resources.items():
        for k, v in data.items():
            yield (rtype, rname, k, v)


def _quotas(img: MetadataImage) -> Iterable[object]:
    for entity, data in img.client_quotas.entities.items():
        for k, v in data.items():
            yield (entity, k, v)


def _producer_ids(img: MetadataImage) -> Iterable[object]:
    if img.producer_ids.next_producer_id != -1:
        yield img.producer_ids.next_producer_id


def _acls(img: MetadataImage) -> Iterable[object]:
    for aid, a in img.acls.acls.items():
        yield (aid, a)


def _scram(img: MetadataImage) -> Iterable[object]:
    for key, c in img.scram.credentials.items():
        yield (key, c)


def _tokens(img: MetadataImage) -> Iterable[object]:
    for tid, t in img.delegation_tokens.tokens.items():
        yield (tid, t)


def _opaque(img: MetadataImage) -> Iterable[object]:
    for (name, _), rec in img.opaque.records.items():
        yield (name, rec.canonical())


_ENTITIES: dict[str, Callable[[MetadataImage], Iterable[object]]] = {
    "features": _features,
    "cluster": _cluster,
    "topics": _topics,
    "configs": _configs,
    "client_quotas": _quotas,
    "producer_ids": _producer_ids,
    "acls": _acls,
    "scram": _scram,
    "delegation_tokens": _tokens,
    "opaque": _opaque,
}
assert tuple(_ENTITIES) == COMPONENTS


class DigestCache:
    """Component sums and topic hashes of images already digested, by the identity of the
    immutable object each came from (see the module docstring). Bounded, so that it holds
    on to few old objects: the component sums are emptied past `limit` entries; the topic
    hashes start a new generation past twice the topics of the image being digested (plus
    `limit`), the one before kept until the next."""

    def __init__(self, limit: int = 256):
        self.limit = limit
        self._components: dict[int, tuple[object, int]] = {}
        self._topics: dict[int, tuple[object, object, int]] = {}
        #: The topic hashes of the generation before `_topics` filled up: one found here is
        #: taken over into `_topics` (the images of several histories digested in turn, nodes'
        #: and replays', hold more topics than one generation keeps).
        self._topics_before: dict[int, tuple[object, object, int]] = {}
        #: Sums (not reduced) of topics-by-id subtrees, by the identity of the node.
        self._subtrees: dict[int, tuple[object, int]] = {}
        #: Canonical bytes of chunks of a topic's partitions (kraftsim.image.pmap.ChunkMap),
        #: by the identity of the chunk, with its position: what a changed topic's hash
        #: takes from the chunks its change did not touch. Emptied past twice the most
        #: chunks one digest hashed (plus `limit`).
        self._chunks: ChunkBytesCache = {}
        self._chunks_cap = limit
        self._chunks_seen = 0
        self.hits = 0
        self.misses = 0

    def component(self, name: str, image: MetadataImage) -> int:
        comp = getattr(image, name)
        known = self._components.get(id(comp))
        if known is not None and known[0] is comp:
            self.hits += 1
            return known[1]
        self.misses += 1
        total = self._topics_sum(image) if name == "topics" else _sum(name, _ENTITIES[name](image))
        if len(self._components) >= self.limit:
            self._components.clear()
        self._components[id(comp)] = (comp, total)
        return total

    def _topics_sum(self, image: MetadataImage) -> int:
        """The topics component's sum, hashing only topics not seen before (by identity).
        Topics by id are a persistent map (kraftsim.image.pmap): a new image shares every
        subtree its changes did not touch, so the sums of subtrees are remembered too (by
        the identity of the immutable node, kept alive with its sum) and only the paths to
        what changed are added up again."""
        by_id = image.topics.by_id
        if len(self._topics) > 2 * len(by_id) + self.limit:
            self._topics_before, self._topics = self._topics, {}
        if len(self._subtrees) > 4 * len(by_id) + self.limit:
            self._subtrees.clear()
        if len(self._chunks) > self._chunks_cap:
            self._chunks.clear()
        self._chunks_seen = 0
        if type(by_id) is PMap:
            total = self._subtree_sum(by_id._root) % MOD
        else:
            total = self._leaf_sum(by_id.items()) % MOD
        self._chunks_cap = max(self._chunks_cap, 2 * self._chunks_seen + self.limit)
        return total

    def _subtree_sum(self, node: Any) -> int:
        if not node:
            return 0
        known = self._subtrees.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        if type(node) is dict:
            total = self._leaf_sum(node.items())
        else:
            total = 0
            for child in node:
                total += self._subtree_sum(child)
        self._subtrees[id(node)] = (node, total)
        return total

    def _leaf_sum(self, items: Iterable[tuple[Uuid, TopicImage]]) -> int:
        prefix = b"topics\x00"
        cache = self._topics
        total = 0
        for tid, t in items:
            known = cache.get(id(t))
            if known is None or known[0] is not t or known[1] != tid:
                known = self._topics_before.get(id(t))
                if known is None or known[0] is not t or known[1] != tid:
                    known = (t, tid, self._topic_hash(prefix, tid, t))
                cache[id(t)] = known
            total += known[2]
        return total

    def _topic_hash(self, prefix: bytes, tid: Uuid, t: TopicImage) -> int:
        """`_topic_hash` (the module's), the partitions' chunks remembered by identity."""
        parts = t.partitions
        chunks = parts.dense_chunks() if type(parts) is ChunkMap else None
        if chunks is not None:
            self._chunks_seen += len(chunks)
        return _topic_hash(prefix, tid, t, self._chunk_bytes, self._chunks)

    def _chunk_bytes(self, chunk: tuple[PartitionRegistration, ...], first: int) -> bytes:
        """`_chunk_bytes`, remembered by the chunk's identity (and where it starts)."""
        known = self._chunks.get(id(chunk))
        if known is None or known[0] is not chunk or known[1] != first:
            known = self._chunks[id(chunk)] = (chunk, first, _chunk_bytes(chunk, first))
        return known[2]


def component_digests(image: MetadataImage, cache: DigestCache | None = None) -> dict[str, int]:
    """The order-independent sum of each component (0 for an empty component)."""
    if cache is not None:
        return {name: cache.component(name, image) for name in _ENTITIES}
    return {name: _topics_sum(image) if name == "topics" else _sum(name, fn(image)) for name, fn in _ENTITIES.items()}


def _combine(sums: dict[str, int], extra: bytes = b"") -> str:
    h = blake2b(digest_size=32)
    for name in COMPONENTS:
        h.update(name.encode() + b"\x00" + sums[name].to_bytes(32, "big"))
    h.update(extra)
    return h.hexdigest()


def image_digest(image: MetadataImage, cache: DigestCache | None = None) -> str:
    """Hex digest of the image's metadata (provenance excluded); `cache` remembers the parts
    of images digested before (the same result, computed from what changed)."""
    return _combine(component_digests(image, cache))


def image_digests(images: Iterable[MetadataImage | None]) -> list[str | None]:
    """`image_digest` of each image (None for None): an image object held several times
    (nodes sharing one image) is digested once, and the parts images share once."""
    cache = DigestCache()
    done: dict[int, tuple[MetadataImage, str]] = {}
    out: list[str | None] = []
    for image in images:
        if image is None:
            out.append(None)
            continue
        known = done.get(id(image))
        if known is None or known[0] is not image:
            known = done[id(image)] = (image, image_digest(image, cache))
        out.append(known[1])
    return out


def image_digest_with_provenance(image: MetadataImage) -> str:
    """Hex digest of the metadata and the provenance."""
    p = image.provenance
    return _combine(component_digests(image), b"provenance\x00" + canon(
        (p.last_contained_offset, p.last_contained_epoch, p.last_contained_log_time_ms, p.is_offset_batch_aligned)))
