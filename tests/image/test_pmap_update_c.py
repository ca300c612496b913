"""pm_update (PMap.update's trie recursion in C) against the Python recursion `_update`:
the same nodes, built the same way, and the same nodes shared with the map updated."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import pmap
from kraftsim.image.pmap import DELETE, PMap, hash_int
from kraftsim.protocol import fastpath

from ._trie_hashes import colliding, low_bits

needs_c = pytest.mark.skipif(not fastpath.ENABLED, reason="the C fast path is off")


HASHES: list[Callable[[int], int]] = [hash_int, colliding, low_bits]
keys = st.integers(0, 1500)
values = st.one_of(st.just(DELETE), st.integers(0, 3))  # (small ints: the same objects, "no change" updates)
batches = st.lists(st.dictionaries(keys, values, max_size=400), min_size=1, max_size=5)


def _nodes(node: Any) -> set[int]:
    ids = {id(node)}
    if type(node) is tuple:
        for child in node:
            ids |= _nodes(child)
    return ids


def _assert_same(c: Any, py: Any, base_ids: set[int]) -> None:
    """`c` and `py` are the same trie: the same types and leaf items in order (values by
    identity), the very same object where one shares a node of the base map."""
    if c is py:
        return
    assert id(c) not in base_ids and id(py) not in base_ids, "one shares a base node the other copied"
    assert type(c) is type(py)
    assert c is not pmap._EMPTY and py is not pmap._EMPTY, "one empty leaf is not the shared one"
    if type(c) is dict:
        assert list(c) == list(py)
        assert all(c[k] is py[k] for k in c)
        return
    assert len(c) == len(py)
    for a, b in zip(c, py):
        _assert_same(a, b, base_ids)


@needs_c
@settings(max_examples=200, deadline=None)
@given(st.sampled_from(HASHES), st.integers(0, 1500), batches, st.dictionaries(keys, values, max_size=600),
       st.none() | st.integers(0, 40))
def test_pm_update_builds_what_update_builds(hash_fn: Callable[[int], int], size: int, history: list[dict[int, Any]],
                                             changes: dict[int, Any], keep: int | None) -> None:
    m: PMap[int, int] = PMap(hash_fn).update({k: k & 3 for k in range(size)})
    for batch in history:  # (the map itself is built through whichever path PMap.update takes)
        m = m.update(batch)
    if keep is not None:  # most keys deleted (and a few changes): interior nodes shrink back into leaves
        changes = {**{k: DELETE for k in list(m)[keep:]}, **dict(list(changes.items())[:3])}
    _check(m, changes, hash_fn)


@needs_c
@pytest.mark.parametrize("hash_fn", HASHES)
@pytest.mark.parametrize("size", [0, 20, 31, 300])
@pytest.mark.parametrize("added", [40, 700])
def test_pm_update_splits_a_grown_leaf(hash_fn: Callable[[int], int], size: int, added: int) -> None:
    """Many keys added at once: leaves past LEAF_MAX become nodes (by pmap._split)."""
    m: PMap[int, int] = PMap(hash_fn).update({k: 1 for k in range(size)})
    _check(m, {k: 2 for k in range(size, size + added)}, hash_fn)


def _check(m: PMap[int, int], changes: dict[int, Any], hash_fn: Callable[[int], int]) -> None:
    """try_pmap_update and _update give the same trie for `changes` to `m`."""
    root = m._root
    triples = [(hash_fn(k), k, v) for k, v in changes.items()]
    fast = fastpath.try_pmap_update(root, triples, DELETE, pmap._EMPTY, pmap._split, hash_fn)
    assert fast is not None
    expected = pmap._update(root, 0, triples, hash_fn)
    assert fast[1] == expected[1]
    _assert_same(fast[0], expected[0], _nodes(root) - {id(pmap._EMPTY)})
    assert (fast[0] is root) == (expected[0] is root)


@needs_c
def test_pm_update_declines_an_unusual_trie() -> None:
    """A node that is neither a leaf dict nor a 32-tuple: the Python recursion's to handle."""
    assert fastpath.try_pmap_update((1, 2), [(0, 1, 1)], DELETE, pmap._EMPTY, pmap._split, hash_int) is None
    assert fastpath.try_pmap_update({}, [(-1, 1, 1)], DELETE, pmap._EMPTY, pmap._split, hash_int) is None
