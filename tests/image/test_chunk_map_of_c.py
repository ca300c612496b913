"""`ChunkMap.of` made in C (_speedups.c `dense_chunk_map`: a dict keyed 0..n-1 in order, once
pmap holds the shared positions for n) against the Python body it stands for: the same class,
the same shared index object, the same values in the same chunks, and the same standing with
the cycle collector; every other argument goes to the Python body. Pure-Python mode has no C
path to compare and skips."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.gcpause import collector_paused
from kraftsim.image import pmap
from kraftsim.image.pmap import CHUNK, ChunkMap
from kraftsim.protocol import fastpath

needs_c = pytest.mark.skipif(fastpath.dense_chunk_map is None, reason="the C fast path is off")


class _Tracked:
    """A value the cycle collector tracks: its chunk must stay tracked."""


def _python_of(items: Any) -> ChunkMap[Any, Any]:
    saved = pmap.dense_chunk_map
    pmap.dense_chunk_map = None
    try:
        return ChunkMap.of(items)
    finally:
        pmap.dense_chunk_map = saved


def _same(made: ChunkMap[Any, Any], expected: ChunkMap[Any, Any]) -> None:
    assert type(made) is type(expected)
    index, chunks = made.layout()
    want_index, want_chunks = expected.layout()
    shared = pmap._DENSE_INDEX.get(len(want_index))
    assert index is want_index if want_index is shared else (index == want_index and index is not shared)
    assert len(chunks) == len(want_chunks)
    for chunk, want in zip(chunks, want_chunks):
        assert type(chunk) is tuple and len(chunk) == len(want)
        assert all(a is b for a, b in zip(chunk, want))
        assert gc.is_tracked(chunk) == gc.is_tracked(want)
    assert gc.is_tracked(chunks) == gc.is_tracked(want_chunks)
    assert list(made.items()) == list(expected.items())


_values = st.one_of(st.integers(), st.none(), st.text(max_size=3), st.builds(_Tracked),
                    st.tuples(st.integers()))


@needs_c
@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 5 * CHUNK + 3), values=st.data())
def test_a_dense_dict_gives_the_python_body_s_map(n: int, values: st.DataObject) -> None:
    items = {i: values.draw(_values) for i in range(n)}
    with collector_paused():  # (a collection may untrack a value tuple between two builds)
        expected = _python_of(items)  # (also leaves the shared positions for n, as a first build does)
        made = fastpath.dense_chunk_map(items, pmap.CHUNK_BITS)
        assert made is not None
        _same(made, expected)
        _same(ChunkMap.of(items), expected)


@needs_c
@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.one_of(st.integers(-2, 12), st.booleans(), st.sampled_from(["a", 1.0])),
                     min_size=1, max_size=12, unique_by=lambda k: (type(k) is not bool, k)))
def test_any_other_dict_is_left_to_the_python_body(keys: list[Any]) -> None:
    items = dict.fromkeys(keys, 7)
    _python_of({i: 0 for i in range(len(items))})  # (the shared positions for this size exist)
    dense = list(items) == list(range(len(items))) and all(type(k) is int for k in items)
    made = fastpath.dense_chunk_map(items, pmap.CHUNK_BITS)
    assert (made is not None) == dense
    _same(ChunkMap.of(items), _python_of(items))


@needs_c
def test_without_shared_positions_for_the_size_the_python_body_runs() -> None:
    n = 10_007  # (no topic has this many partitions here)
    pmap._DENSE_INDEX.pop(n, None)
    items = {i: i for i in range(n)}
    assert fastpath.dense_chunk_map(items, pmap.CHUNK_BITS) is None
    first = ChunkMap.of(items)  # (the Python body, which keeps the positions)
    assert pmap._DENSE_INDEX[n] is first.layout()[0]
    _same(fastpath.dense_chunk_map(items, pmap.CHUNK_BITS), first)


@needs_c
def test_a_subclass_or_another_mapping_is_not_made_in_c() -> None:
    class Mine(ChunkMap[int, int]):
        pass

    items = {0: 1, 1: 2}
    ChunkMap.of(items)
    assert type(Mine.of(items)) is Mine
    assert fastpath.dense_chunk_map(ChunkMap.of(items), pmap.CHUNK_BITS) is None
