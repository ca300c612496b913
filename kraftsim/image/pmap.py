"""A persistent (immutable, structure-sharing) hash map for image components.

Why: applying a delta must cost in proportion to what it changes, not to the size of the
image (DESIGN.md; Kafka moved its images to persistent maps for the same reason,
KAFKA-14735). Copying a 100,000-entry dict for every one-record delta would make a
simulated controller quadratic.

Shape: a hash trie of fan-out 32 whose leaves are small plain dicts (at most LEAF_MAX
entries, except once the 61-64 bits of a stable hash are used up, where they may grow). A
lookup walks about log32(n / LEAF_MAX) + 1 tuples and ends in one dict lookup (well under
a microsecond at 10^6 keys, several times a flat dict's). An update copies one leaf
(<= 32 entries) and the 32-slot tuples on its path. `update()` applies a whole batch of changes at once and rebuilds each touched
node exactly once, so a delta touching k keys costs O(k + touched nodes), and building a
map from nothing is one bulk update.

Measured (benchmarks/bench_image.py, CPython 3.11; one update = copy + set of one key;
full table in benchmarks/results/image.md):

    keys        structure                         one update    one lookup
    100,000     copy-on-write dict                0.7 ms        ~80 ns
                two-level chunked dict (256)      2.7 us        ~300 ns
                this trie (depth 3)               2.7 us        ~0.6 us
    1,000,000   copy-on-write dict                37 ms         ~150 ns
                two-level chunked dict (256)      99 us         ~370 ns
                this trie (depth 4)               4.5 us        ~0.8 us

The chunked dict is as good at 100,000 keys but its update cost grows as n/chunks; the
trie's stays flat, and lookups stay under a microsecond. Lookups are rarer than they look:
a delta looks a topic up once, then works on its own TopicDelta.

Determinism: the hash functions here are *stable* (no PYTHONHASHSEED dependence), so the
internal layout, and hence `items()` order, is the same on every run for the same history.
Callers that write output still sort (`sorted_items`), because two equal maps built by
different histories may iterate in different orders.

Nodes are never mutated after they are built; a PMap is a value. Maps built with the same
hash function can be compared and diffed structurally: shared subtrees are skipped by
identity, so diffing an image against its successor costs in proportion to the change.
"""

from __future__ import annotations

import zlib
import builtins
from itertools import chain
from struct import pack
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar, overload

from kraftsim.protocol.fastpath import (chunks_updated, dense_chunk_map, pmap_build, pmap_get, provide_maps,
                                         str_hash, try_pmap_update, untracked_tuple, uuid_hash)

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

BITS = 5
WIDTH = 1 << BITS
SLOT = WIDTH - 1
LEAF_MAX = 32
MAX_SHIFT = 60  # past this the 64-bit hash is used up; leaves then just grow
M64 = (1 << 64) - 1


class _Delete:
    """Marker value in `update()` changes: remove the key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()
MISSING: Any = object()

#: A leaf of the trie (keys to values, in insertion order) and a (hash, key, value) change.
Leaf = dict[object, object]
Triple = tuple[int, object, object]

_EMPTY: Leaf = {}


# --------------------------------------------------------------------- stable hashes


def hash_int(value: int) -> int:
    """Fibonacci hashing: an odd multiplier permutes the low bits, so dense ids spread."""
    return (value * 0x9E3779B97F4A7C15) & M64


def hash_uuid_py(value: bytes, _from_bytes: Callable[..., int] = int.from_bytes) -> int:
    """A 16-byte Uuid reduced modulo 2**61 - 1 (CPython's int hash: fixed, not seeded).

    Every bit of both halves counts, so sequential ids in either half spread out.
    """
    return hash(_from_bytes(value, "big"))


#: hash_uuid_py, in C where the extension is built (fastpath.uuid_hash: the same numbers,
#: without a 128-bit int per call; the topics by id hash on every look-up).
hash_uuid: Callable[[bytes], int] = uuid_hash if uuid_hash is not None else hash_uuid_py


def hash_str_py(value: str) -> int:
    """CRC-32 of the UTF-8 bytes, spread to 64 bits; stable across processes."""
    return hash_int(zlib.crc32(value.encode("utf-8", "surrogatepass")) + 1)


#: hash_str_py, in C where the extension is built (fastpath.str_hash: the same numbers).
hash_str: Callable[[str], int] = str_hash if str_hash is not None else hash_str_py


def stable_hash(value: Any) -> int:
    """A process-independent hash of ints, strings, bytes, floats, None and tuples of those."""
    t = type(value)
    if t is int or t is bool:
        return hash_int(int(value))
    if t is str:
        return hash_str(value)
    if isinstance(value, bytes):
        if len(value) == 16:
            return hash_uuid(value)
        return hash_int(zlib.crc32(value) + 1)
    if t is tuple:
        h = 0x345678
        for item in value:
            h = ((h ^ stable_hash(item)) * 1000003) & M64
        return hash_int(h ^ len(value))
    if value is None:
        return 0x2545F4914F6CDD1D
    if t is float:
        return hash_int(int.from_bytes(pack(">d", value), "big"))
    raise TypeError(f"no stable hash for {t.__name__}")


# --------------------------------------------------------------------- node helpers


def _iter_items(node: Any) -> Iterator[tuple[Any, Any]]:
    if type(node) is dict:
        yield from node.items()
    else:
        for child in node:
            if child:
                yield from _iter_items(child)


def _count(node: Any) -> int:
    if type(node) is dict:
        return len(node)
    return sum(_count(c) for c in node)


def _split(leaf: Leaf, shift: int, hash_fn: Callable[[object], int]) -> object:
    """Turn an overfull leaf into a 32-slot node (recursively)."""
    return _build([(hash_fn(k), k, v) for k, v in leaf.items()], shift)


def _build(triples: list[Triple], shift: int) -> object:
    """The node holding (hash, key, value) triples (distinct keys) below `shift`.

    Each key is hashed once, by the caller; the result is exactly the node that inserting
    the keys one by one, in this order, would give (same shape, same leaf-dict order).
    """
    n = len(triples)
    if n <= LEAF_MAX or shift > MAX_SHIFT:
        return {k: v for _, k, v in triples} if triples else _EMPTY
    nxt = shift + BITS
    if n <= WIDTH * LEAF_MAX // 4:  # the children are leaves (but for a rare overfull one): fill them directly
        leaves: list[Leaf] = [{} for _ in range(WIDTH)]
        for h, k, v in triples:
            leaves[(h >> shift) & SLOT][k] = v
        children: list[object] = []
        for i, leaf in enumerate(leaves):
            if not leaf:
                children.append(_EMPTY)
            elif len(leaf) > LEAF_MAX and nxt <= MAX_SHIFT:
                children.append(_build([t for t in triples if (t[0] >> shift) & SLOT == i], nxt))
            else:
                children.append(leaf)
        return tuple(children)
    buckets: list[list[Triple]] = [[] for _ in range(WIDTH)]
    for t in triples:
        buckets[(t[0] >> shift) & SLOT].append(t)
    return tuple(_build(b, nxt) if b else _EMPTY for b in buckets)


def _update(node: Any, shift: int, changes: list[Triple], hash_fn: Callable[[Any], int]) -> tuple[Any, int]:
    """Apply (hash, key, value|DELETE) changes below `node`; return (node, size delta).

    Returns the very same node when nothing changes, so unchanged subtrees stay shared.
    """
    if type(node) is dict:
        new = None
        delta = 0
        for _, k, v in changes:
            cur = (new if new is not None else node).get(k, MISSING)
            if v is DELETE:
                if cur is MISSING:
                    continue
                if new is None:
                    new = dict(node)
                del new[k]
                delta -= 1
            else:
                if cur is v:
                    continue
                if new is None:
                    new = dict(node)
                if cur is MISSING:
                    delta += 1
                new[k] = v
        if new is None:
            return node, 0
        if not new:
            return _EMPTY, delta
        if len(new) > LEAF_MAX and shift <= MAX_SHIFT:
            return _split(new, shift, hash_fn), delta
        return new, delta
    # interior node: route each change to its slot, rebuild touched children once
    if len(changes) == 1:
        h = changes[0][0]
        i = (h >> shift) & SLOT
        child, delta = _update(node[i], shift + BITS, changes, hash_fn)
        if child is node[i]:
            return node, 0
        children = list(node)
        children[i] = child
    else:
        routed: dict[int, list[Triple]] = {}
        for ch in changes:
            i = (ch[0] >> shift) & SLOT
            lst = routed.get(i)
            if lst is None:
                routed[i] = [ch]
            else:
                lst.append(ch)
        rebuilt: list[object] | None = None
        delta = 0
        for i, lst in routed.items():
            child, d = _update(node[i], shift + BITS, lst, hash_fn)
            if child is not node[i]:
                if rebuilt is None:
                    rebuilt = list(node)
                rebuilt[i] = child
                delta += d
        if rebuilt is None:
            return node, 0
        children = rebuilt
    if delta < 0:  # collapse sparse interior nodes back into one leaf
        if all(type(c) is dict for c in children) and sum(len(c) for c in children) <= LEAF_MAX // 2:
            merged: Leaf = {}
            for c in children:
                merged.update(c)
            return (merged if merged else _EMPTY), delta
    return tuple(children), delta


def _diff(a: Any, b: Any) -> Iterator[tuple[Any, Any, Any]]:
    if a is b:
        return
    if type(a) is tuple and type(b) is tuple:
        for x, y in zip(a, b):
            if x is not y:
                yield from _diff(x, y)
        return
    da = a if type(a) is dict else dict(_iter_items(a))
    db = b if type(b) is dict else dict(_iter_items(b))
    for k, v in da.items():
        w = db.get(k, MISSING)
        if w is MISSING:
            yield k, v, MISSING
        elif w is not v and w != v:
            yield k, v, w
    for k, w in db.items():
        if k not in da:
            yield k, MISSING, w


def _nodes(node: object) -> Iterator[object]:
    yield node
    if type(node) is tuple:
        for c in node:
            yield from _nodes(c)


# --------------------------------------------------------------------- the map


class PMap(Generic[K, V]):
    """An immutable hash map with cheap batched updates; see the module docstring."""

    __slots__ = ("_root", "_len", "_hash")

    def __init__(self, hash_fn: Callable[[K], int] = stable_hash, _root: Any = _EMPTY, _len: int = 0):
        self._root = _root
        self._len = _len
        self._hash = hash_fn

    # --- reading

    @overload
    def get(self, key: K) -> V | None: ...

    @overload
    def get(self, key: K, default: T) -> V | T: ...

    def get(self, key: K, default: object = None) -> object:
        if pmap_get is not None:  # (C: this walk, or NotImplemented where the code below must run)
            found = pmap_get(self, key, default)
            if found is not NotImplemented:
                return found
        node = self._root
        if type(node) is tuple:
            h = self._hash(key)
            node = node[h & SLOT]
            while type(node) is tuple:
                h >>= BITS
                node = node[h & SLOT]
        return node.get(key, default)

    def __getitem__(self, key: K) -> V:
        v = self.get(key, MISSING)
        if v is MISSING:
            raise KeyError(key)
        return v

    def __contains__(self, key: object) -> bool:
        return self.get(key, MISSING) is not MISSING  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[K]:
        for k, _ in _iter_items(self._root):
            yield k

    def keys(self) -> Iterator[K]:
        return iter(self)

    def values(self) -> Iterator[V]:
        for _, v in _iter_items(self._root):
            yield v

    def items(self) -> Iterator[tuple[K, V]]:
        """Items in layout order (stable for a given history; sort for output)."""
        return _iter_items(self._root)

    def sorted_items(self, key: Callable[[tuple[K, V]], Any] | None = None) -> list[tuple[K, V]]:
        """Items sorted by key (or by `key`), for deterministic output."""
        items = list(_iter_items(self._root))
        items.sort(key=key if key is not None else (lambda kv: kv[0]))
        return items

    # --- writing

    def update(self, changes: Mapping[K, Any]) -> "PMap[K, V]":
        """A new map with `changes` applied (value DELETE removes); self if nothing changes."""
        if not changes:
            return self
        h = self._hash
        if self._root is _EMPTY:  # bulk construction: every key hashed once, every node built once
            built = pmap_build(changes, DELETE, _EMPTY, h) if pmap_build is not None and type(changes) is dict else None
            if built is not None:  # (C: `_build`'s nodes; None where the code below must run)
                root, size = built
                return PMap(h, root, size) if size else self
            batch: list[Triple] = [(h(k), k, v) for k, v in changes.items() if v is not DELETE]
            return PMap(h, _build(batch, 0), len(batch)) if batch else self
        batch = [(h(k), k, v) for k, v in changes.items()]
        fast = try_pmap_update(self._root, batch, DELETE, _EMPTY, _split, h)  # (C: the same nodes)
        root, delta = _update(self._root, 0, batch, h) if fast is None else fast
        if root is self._root:
            return self
        return PMap(h, root, self._len + delta)

    def set(self, key: K, value: V) -> "PMap[K, V]":
        return self.update({key: value})

    def delete(self, key: K) -> "PMap[K, V]":
        return self.update({key: DELETE})

    # --- comparing

    def diff(self, other: "PMap[K, V]") -> Iterator[tuple[K, Any, Any]]:
        """(key, value here or MISSING, value in other or MISSING) for every difference.

        Shared subtrees are skipped by identity, so the cost follows the change.
        """
        if self._hash is not other._hash:
            return _diff(dict(self.items()), dict(other.items()))
        return _diff(self._root, other._root)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PMap):
            return NotImplemented
        if self._root is other._root:
            return True
        if self._len != other._len:
            return False
        return next(iter(self.diff(other)), None) is None

    def __hash__(self) -> int:  # values are compared, not hashed
        raise TypeError("unhashable type: 'PMap'")

    def __repr__(self) -> str:
        return f"PMap({self._len} entries)"

    # --- introspection (tests, benchmarks)

    def node_ids(self) -> builtins.set[int]:
        """ids of every internal node and leaf, to measure structure sharing."""
        return {id(n) for n in _nodes(self._root) if n is not _EMPTY}

    def depth(self) -> int:
        d, node = 0, self._root
        while type(node) is tuple:
            node = max(node, key=_count)
            d += 1
        return d


CHUNK_BITS = 3
CHUNK = 1 << CHUNK_BITS
CHUNK_MASK = CHUNK - 1
#: The key positions of the maps whose keys are 0..n-1 in order, by n: shared by all of them.
_DENSE_INDEX: dict[int, dict[Any, int]] = {}


class ChunkMap(Mapping[K, V]):
    """A small persistent map that keeps a dict's order (a topic's partitions by id).

    Why: every commit that changes a partition gives its topic a new image; copying the
    topic's whole partition dict for it made those copies the largest part of a rolled
    cluster's memory (the kept commits hold every image). Here the keys' positions (a
    dict, insertion order) are shared by every version with the same keys, and the values
    sit in tuples of CHUNK: changing k values copies the chunk tuple's spine and the
    chunks they fall in, not the map. Iteration, `==` and `get` behave as the dict's
    (`dict(m)` then `update(changes)`), so outputs built from it do not change.

    The value tuples are made with fastpath.untracked_tuple: a commit makes thousands of
    them and the images keep them; left tracked, each cost the next young collection a
    visit of every value before CPython untracked it anyway.
    """

    __slots__ = ("_index", "_chunks")

    def __init__(self, index: dict[K, int], chunks: tuple[tuple[V, ...], ...]) -> None:
        self._index = index  # key -> position; never changed once built (shared between versions)
        self._chunks = chunks

    @classmethod
    def of(cls, items: Mapping[K, V]) -> "ChunkMap[K, V]":
        """A map of `items` in their order."""
        if dense_chunk_map is not None and cls is ChunkMap:  # (C: a dict keyed 0..n-1 in order; None: below)
            made: ChunkMap[K, V] | None = dense_chunk_map(items, CHUNK_BITS)
            if made is not None:
                return made
        keys = list(items)
        n = len(keys)
        index = _DENSE_INDEX.get(n) if n and keys[0] == 0 and keys[-1] == n - 1 else None
        if index is None or keys != list(index):
            index = {k: i for i, k in enumerate(keys)}
            if n and keys == list(range(n)):  # (every topic's usual partitions: one index for all)
                _DENSE_INDEX[n] = index
        values = list(items.values())
        return cls(index, untracked_tuple([untracked_tuple(values[i:i + CHUNK]) for i in range(0, len(values), CHUNK)]))

    def updated(self, changes: Mapping[K, V]) -> "ChunkMap[K, V]":
        """This map with `changes` set (new keys after the old ones, in their order).

        A run of changes that fall in one chunk (a commit's come in partition order) copies
        that chunk once; a chunk met again after another is copied from its updated version,
        so any order gives the same map."""
        index = self._index
        if chunks_updated is not None:  # (C: the same chunks; None where the code below must run)
            fast = chunks_updated(index, self._chunks, changes, CHUNK_BITS)
            if fast is not None:
                return ChunkMap(index, fast)
        chunks = list(self._chunks)
        last = -1
        chunk: list[V] = []
        try:
            for k, v in changes.items():
                i = index[k]
                c = i >> CHUNK_BITS
                if c != last:
                    if last >= 0:
                        chunks[last] = untracked_tuple(chunk)
                    chunk = list(chunks[c])
                    last = c
                chunk[i & CHUNK_MASK] = v
        except KeyError:  # a new key: the positions change, so build afresh
            merged = dict(self.items())
            merged.update(changes)
            return ChunkMap.of(merged)
        if last >= 0:
            chunks[last] = untracked_tuple(chunk)
        return ChunkMap(index, untracked_tuple(chunks))

    def layout(self) -> tuple[dict[K, int], tuple[tuple[V, ...], ...]]:
        """The key positions and the value chunks (neither ever changes: versions share them):
        key k holds `chunks[i >> CHUNK_BITS][i & CHUNK_MASK]` for `i = positions[k]`. For
        loops that look many keys up (bulk replay) without a call per key."""
        return self._index, self._chunks

    @staticmethod
    def layout_of(items: Mapping[K, V]) -> tuple[dict[K, int], tuple[tuple[V, ...], ...]]:
        """`layout()` of `items`, a ChunkMap or any mapping (which is copied)."""
        if isinstance(items, ChunkMap):
            return items._index, items._chunks
        return ChunkMap.of(items).layout()

    def is_ascending(self) -> bool:
        """Whether the keys iterate in ascending order (known without a look for the usual 0..n-1)."""
        index = self._index
        if index is _DENSE_INDEX.get(len(index)):
            return True
        keys: list[Any] = list(index)
        return all(a < b for a, b in zip(keys, keys[1:]))

    def sorted_items(self) -> list[tuple[K, V]]:
        """Items by key: `sorted(self.items())` (keys are distinct), without the sort when the
        keys are already in order."""
        if self.is_ascending():
            return list(zip(self._index, chain.from_iterable(self._chunks)))
        return sorted(self.items())

    def get(self, key: K, default: Any = None) -> Any:
        i = self._index.get(key)
        return default if i is None else self._chunks[i >> CHUNK_BITS][i & CHUNK_MASK]

    def __getitem__(self, key: K) -> V:
        i = self._index[key]
        return self._chunks[i >> CHUNK_BITS][i & CHUNK_MASK]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._index)

    def __bool__(self) -> bool:
        return bool(self._index)

    def __iter__(self) -> Iterator[K]:
        return iter(self._index)

    def values(self) -> Iterator[V]:  # type: ignore[override]
        return chain.from_iterable(self._chunks)

    def items(self) -> Iterator[tuple[K, V]]:  # type: ignore[override]
        return zip(self._index, chain.from_iterable(self._chunks))

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, ChunkMap):
            if other._index is self._index or other._index == self._index:
                return other._chunks == self._chunks  # (tuples skip identical entries)
            return dict(self.items()) == dict(other.items())
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def dense_chunks(self) -> tuple[tuple[V, ...], ...] | None:
        """The value chunks (immutable, shared between versions) when the keys are 0..n-1 in
        order, chunk c holding keys c*CHUNK.. (every topic's usual partitions); else None.
        For callers that remember what they computed per chunk (digests)."""
        index = self._index
        return self._chunks if index and _DENSE_INDEX.get(len(index)) is index else None

    def chunk_ids(self) -> builtins.set[int]:
        """Identities of the value chunks (and of the key positions), to measure sharing."""
        return {id(self._index)} | {id(c) for c in self._chunks}

    def __repr__(self) -> str:
        return f"ChunkMap({dict(self.items())!r})"


#: The C loops (replica index, snapshot writer) read these two classes' slots directly.
provide_maps(PMap, ChunkMap)
