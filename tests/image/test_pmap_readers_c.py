"""The C readers of image/pmap.py's maps (_speedups.c "map readers": what ri_follow,
ri_records and tw_write_topics read per topic) against the Python methods they stand for:
`dense_chunks_of(parts)` is `parts.dense_chunks()`, `pmap_get(m, key, default)` is PMap.get's
Python body (or NotImplemented, sending it there), `map_getitem(m, key)` is `m[key]`; over
random maps, colliding and odd hash functions, missing keys, subclasses, other mappings and
replaced methods. Pure-Python mode has no C path to compare and skips."""

from __future__ import annotations

import os
from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import pmap
from kraftsim.image.pmap import ChunkMap, PMap, hash_int, hash_uuid, hash_uuid_py, stable_hash
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid

from ._trie_hashes import colliding, low_bits, negative, past_64_bits


needs_c = pytest.mark.skipif(not fastpath.ENABLED or fastpath.pmap_get is None, reason="the C fast path is off")
_c: Any = fastpath._c


def _deep_negative(k: int) -> int:
    """Negative hashes equal in their low 60 bits: the trie reaches its last level, whose
    slots come from the sign (Python's >> floors: slots 24-31, not 8-15)."""
    return -1 - ((k % 8) << 60)


def _bool_hash(k: int) -> int:
    """A bool is an int to Python's walk, but not an exact int: the C walk declines it."""
    return k % 3 == 0


#: (hash function, whether the C walk answers itself for int keys)
INT_HASHES: list[tuple[Callable[[int], int], bool]] = [
    (hash_int, True), (colliding, True), (low_bits, True), (negative, True), (_deep_negative, True),
    (stable_hash, True),
    (past_64_bits, False), (_bool_hash, False)]


class SubPMap(PMap[Any, Any]):
    """A subclass: PMap.get's walk still applies, but a C loop's `m[key]` goes to its methods."""

    __slots__ = ()


class LoudPMap(PMap[Any, Any]):
    """A subclass with its own __getitem__, which a C loop must call."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        return ("loud", super().__getitem__(key))


class ShadowedPMap(PMap[Any, Any]):
    """A subclass whose `_hash` is not the slot: PMap.get hashes with the property's function."""

    __slots__ = ()

    @property  # type: ignore[misc]
    def _hash(self) -> Callable[[Any], int]:
        return low_bits


class SubChunkMap(ChunkMap[Any, Any]):
    """A ChunkMap subclass whose dense_chunks says something else: the reader must ask it."""

    __slots__ = ()

    def dense_chunks(self) -> Any:
        return ("sub", super().dense_chunks())


def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """What calling fn gives: the value, or the exception's type and text."""
    try:
        return ("value", fn())
    except Exception as e:  # (both paths must raise the same)
        return ("raised", type(e), str(e))


def _python_get(m: PMap[Any, Any], key: Any, default: Any) -> Any:
    with fastpath.pure_python():
        return m.get(key, default)


def _same(c: tuple[Any, ...], py: tuple[Any, ...]) -> None:
    assert c[0] == py[0]
    if c[0] == "value":
        assert c[1] is py[1] or (type(c[1]) is tuple and c[1] == py[1])
    else:
        assert c[1:] == py[1:]


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(INT_HASHES), st.integers(0, 1500), st.lists(st.integers(-5, 1600), max_size=60),
       st.sampled_from([PMap, SubPMap, LoudPMap]))
def test_pmap_get_walks_as_python(hashed: tuple[Callable[[int], int], bool], size: int, probes: list[int],
                                  cls: type[PMap[Any, Any]]) -> None:
    hash_fn, in_c = hashed
    m: PMap[Any, Any] = cls(hash_fn).update({k: [k] for k in range(size)})
    default = object()
    for k in probes + list(range(0, size, 97)):
        py = _python_get(m, k, default)
        c = _c.pmap_get(m, k, default)
        if in_c or type(m._root) is dict:  # (a one-leaf map needs no hash)
            assert c is py, (k, c, py)
        else:
            assert c is NotImplemented
        assert m.get(k, default) is py  # (PMap.get, whichever way it went)
        _same(_outcome(lambda: _c.map_getitem(m, k)), _outcome(lambda: m[k]))


def _key_of(kind: str, raw: bytes) -> Any:
    if kind == "uuid":
        return Uuid(raw)
    if kind == "bytes":
        return raw
    return raw[:15]  # (not 16 bytes: uuid_hash's int.from_bytes way)


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.sampled_from([hash_uuid, hash_uuid_py]), st.integers(0, 3000),
       st.lists(st.tuples(st.sampled_from(["uuid", "bytes", "short"]), st.binary(min_size=16, max_size=16)),
                max_size=40), st.randoms(use_true_random=False))
def test_pmap_get_of_uuid_keys(hash_fn: Callable[[bytes], int], size: int, probes: list[tuple[str, bytes]],
                               rnd: Any) -> None:
    kinds = ("uuid", "bytes", "short")
    keys = [_key_of(kinds[i % 3], rnd.randbytes(16)) for i in range(size)]
    m: PMap[Any, Any] = PMap(hash_fn).update({k: i for i, k in enumerate(keys)})
    for k in keys[::53] + [_key_of(kind, raw) for kind, raw in probes]:
        py = _python_get(m, k, None)
        c = _c.pmap_get(m, k, None)
        assert c is py
        _same(_outcome(lambda: _c.map_getitem(m, k)), _outcome(lambda: m[k]))


@needs_c
def test_pmap_get_declines_where_python_must_run() -> None:
    m: PMap[Any, Any] = PMap(hash_int).update({k: k for k in range(500)})
    with fastpath.pure_python():  # (the fast path off: the Python body)
        assert _c.pmap_get(m, 3, None) is NotImplemented
    assert _c.pmap_get({}, 3, None) is NotImplemented  # (not a PMap)
    bare = PMap.__new__(PMap)  # (slots never set: PMap.get raises its AttributeError)
    assert _c.pmap_get(bare, 3, None) is NotImplemented
    odd = PMap(hash_int, (({},) * 5), 0)  # (a node narrower than 32: Python's IndexError, or not)
    assert _c.pmap_get(odd, 31, None) is NotImplemented
    _same(_outcome(lambda: _c.map_getitem(odd, 31)), _outcome(lambda: odd[31]))
    unhashable: PMap[Any, Any] = PMap(hash_int).update({1: 1})  # (one leaf: dict.get's TypeError either way)
    _same(_outcome(lambda: _c.pmap_get(unhashable, [1], None)), _outcome(lambda: _python_get(unhashable, [1], None)))

    shadowed = ShadowedPMap.__new__(ShadowedPMap)  # (its slot holds hash_int, its property low_bits)
    PMap.__dict__["_root"].__set__(shadowed, m._root)
    PMap.__dict__["_hash"].__set__(shadowed, hash_int)
    assert _c.pmap_get(shadowed, 3, None) is NotImplemented
    assert shadowed.get(3, "missing") == _python_get(shadowed, 3, "missing")

    def failing(key: Any) -> int:
        raise ValueError(f"no hash for {key!r}")
    broken = PMap(failing, m._root, len(m))  # (the hash function's own error, from both)
    _same(_outcome(lambda: _c.pmap_get(broken, 7, None)), _outcome(lambda: _python_get(broken, 7, None)))


@needs_c
def test_map_getitem_calls_replaced_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    m: PMap[Any, Any] = PMap(hash_int).update({k: k for k in range(500)})
    assert _c.map_getitem(LoudPMap(hash_int, m._root, len(m)), 7) == ("loud", 7)
    assert _c.map_getitem({7: "dict"}, 7) == "dict"
    monkeypatch.setattr(PMap, "__getitem__", lambda self, key: ("patched", key))
    assert _c.map_getitem(m, 7) == ("patched", 7)
    monkeypatch.undo()
    monkeypatch.setattr(PMap, "get", lambda self, key, default=None: "patched get")
    assert _c.map_getitem(m, 7) == "patched get"  # (PMap.__getitem__ asks get)


def _chunk_maps(draw: Any) -> Any:
    """A ChunkMap (or subclass, or dict) in one of the shapes dense_chunks tells apart."""
    n = draw(st.integers(0, 70))
    shape = draw(st.sampled_from(["dense", "updated", "own index", "gaps", "shuffled", "subclass", "dict", "grown"]))
    items = {k: (k, "v") for k in range(n)}
    if shape == "dense":
        return ChunkMap.of(items)
    if shape == "updated":
        return ChunkMap.of(items).updated({k: (k, "w") for k in range(0, n, 3)})
    if shape == "own index":  # (equal to the shared index, but not it: not dense)
        dense = ChunkMap.of(items)
        index, chunks = dense.layout()
        return ChunkMap(dict(index), chunks)
    if shape == "gaps":
        return ChunkMap.of({k * 2: v for k, v in items.items()})
    if shape == "shuffled":
        keys = draw(st.permutations(list(items)))
        return ChunkMap.of({k: items[k] for k in keys})
    if shape == "subclass":
        return SubChunkMap.of(items)
    if shape == "dict":
        return items
    return ChunkMap.of(items).updated({n + 1: (n + 1, "new")})  # (a new key past a gap)


chunk_maps = st.composite(_chunk_maps)()


@needs_c
@settings(max_examples=300, deadline=None)
@given(chunk_maps)
def test_dense_chunks_of_reads_as_the_method(parts: Any) -> None:
    _same(_outcome(lambda: _c.dense_chunks_of(parts)), _outcome(lambda: parts.dense_chunks()))
    if type(parts) is ChunkMap and parts.dense_chunks() is not None:  # (the very chunks, not a copy)
        assert _c.dense_chunks_of(parts) is parts.layout()[1]


@needs_c
def test_dense_chunks_of_follows_the_module_and_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    parts = ChunkMap.of({k: k for k in range(12)})
    assert _c.dense_chunks_of(parts) is parts.layout()[1]
    monkeypatch.setattr(pmap, "_DENSE_INDEX", {})  # (a new memo: the same positions are no longer the shared ones)
    assert parts.dense_chunks() is None and _c.dense_chunks_of(parts) is None
    monkeypatch.undo()
    monkeypatch.setattr(ChunkMap, "dense_chunks", lambda self: "patched")
    assert _c.dense_chunks_of(parts) == "patched"
    monkeypatch.undo()
    bare = ChunkMap.__new__(ChunkMap)  # (slots never set: the method's AttributeError)
    _same(_outcome(lambda: _c.dense_chunks_of(bare)), _outcome(lambda: bare.dense_chunks()))
    assert _c.dense_chunks_of(ChunkMap({}, ())) is None


def test_pmap_get_without_the_c_walk() -> None:
    """PMap.get's Python body answers alone (pure-Python mode, or the fast path off)."""
    m: PMap[Any, Any] = PMap(hash_uuid).update({Uuid(os.urandom(16)): i for i in range(2000)})
    with fastpath.pure_python():
        assert all(m.get(k) == v for k, v in m.items())
        assert m.get(Uuid(bytes(16)), "none") == "none"
