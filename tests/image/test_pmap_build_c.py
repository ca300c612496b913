"""PMap.update on the empty map made in C (_speedups.c `pm_build`) against the Python
`_build` it stands for: the same trie, node for node (leaf dicts in the same order, the same
empty leaf object), and the same size, over random maps, deleted values and hash functions
that collide, differ only in high bits, or reach the last level; a hash that is negative,
wider than 64 bits or not exactly an int, and any mapping but a dict, go to the Python code. Pure-Python
mode has no C path to compare and skips."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import pmap
from kraftsim.image.pmap import DELETE, PMap, hash_int, hash_str, hash_uuid, stable_hash
from kraftsim.protocol import fastpath
from kraftsim.protocol.primitives import Uuid

from ._trie_hashes import colliding, low_bits, negative, past_64_bits


needs_c = pytest.mark.skipif(fastpath.pmap_build is None, reason="the C fast path is off")


def _last_level(k: int) -> int:
    return (k % 8) << 61


class _Hash(int):
    """An int subclass: a hash the C code declines (it takes exact ints), which Python walks as any int."""


def _not_an_int(k: int) -> Any:
    return _Hash(hash_int(k))


#: (hash function, whether the C code builds the map itself)
HASHES: list[tuple[Callable[[Any], Any], bool]] = [
    (hash_int, True), (colliding, True), (low_bits, True), (_last_level, True), (stable_hash, True),
    (negative, False), (past_64_bits, False), (_not_an_int, False)]


def _python_update(h: Callable[[Any], int], changes: Any) -> PMap[Any, Any]:
    saved = pmap.pmap_build
    pmap.pmap_build = None
    try:
        return PMap(h).update(changes)
    finally:
        pmap.pmap_build = saved


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    if type(a) is dict:
        return a is b if not a else list(a.items()) == list(b.items())  # type: ignore[attr-defined]
    return a is b


@needs_c
@settings(max_examples=200, deadline=None)
@given(hashing=st.sampled_from(HASHES), keys=st.lists(st.integers(0, 5000), unique=True, max_size=1500),
       deleted=st.sets(st.integers(0, 5000), max_size=50))
def test_the_empty_map_s_update_builds_python_s_trie(hashing: tuple[Callable[[Any], Any], bool], keys: list[int],
                                                     deleted: set[int]) -> None:
    h, in_c = hashing
    changes = {k: (DELETE if k in deleted else object()) for k in keys}
    built = fastpath.pmap_build(changes, DELETE, pmap._EMPTY, h)
    live = any(v is not DELETE for v in changes.values())
    assert (built is not None) == (in_c or not live)  # (no hash asked: nothing to decline)
    expected = _python_update(h, changes)
    made = PMap(h).update(changes)
    assert _same(made._root, expected._root)
    assert len(made) == len(expected) == sum(v is not DELETE for v in changes.values())
    assert list(made.items()) == list(expected.items())


@needs_c
def test_the_image_s_hashes_build_in_c() -> None:
    ids = {Uuid.from_longs(t, t * 7919): t for t in range(3000)}
    names = {f"topic-{t}": t for t in range(3000)}
    for h, changes in ((hash_uuid, ids), (hash_str, names)):
        assert fastpath.pmap_build(changes, DELETE, pmap._EMPTY, h) is not None
        assert _same(PMap(h).update(changes)._root, _python_update(h, changes)._root)


@needs_c
def test_a_hash_that_raises_raises_and_another_mapping_goes_to_python() -> None:
    def boom(k: Any) -> int:
        raise ValueError("no hash")

    with pytest.raises(ValueError, match="no hash"):
        PMap(boom).update({1: 2})
    items = PMap(hash_int).update({1: 2})
    assert fastpath.pmap_build(items, DELETE, pmap._EMPTY, hash_int) is None
    assert PMap(hash_int).update(items) == items
    assert PMap(hash_int).update({1: DELETE})._root is pmap._EMPTY
