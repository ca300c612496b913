"""The persistent map against a dict model, and its structure sharing."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import pmap
from kraftsim.image import intern
from kraftsim.image.components.partition import PartitionRegistration
from kraftsim.protocol.fastpath import str_hash, untracked_tuple, uuid_hash
from kraftsim.protocol.primitives import Uuid
from kraftsim.image.pmap import (
    DELETE, LEAF_MAX, MISSING, ChunkMap, PMap, hash_int, hash_str, hash_str_py, hash_uuid, hash_uuid_py, stable_hash,
)

ops = st.lists(st.tuples(st.integers(0, 400), st.one_of(st.none(), st.integers(0, 5))), max_size=300)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=6))
def test_matches_a_dict(batches) -> None:
    model: dict[int, int] = {}
    m: PMap = PMap(hash_int)
    history = [(m, dict(model))]
    for batch in batches:
        changes = {}
        for k, v in batch:
            changes[k] = DELETE if v is None else v
        for k, v in changes.items():
            if v is DELETE:
                model.pop(k, None)
            else:
                model[k] = v
        m = m.update(changes)
        history.append((m, dict(model)))
        assert len(m) == len(model) and dict(m.items()) == model
        assert all(m.get(k) == v for k, v in model.items())
        assert all(k not in m for k in range(401, 420))
    # older versions are untouched (persistence), and diff/eq agree with the models
    for pm, snapshot in history:
        assert dict(pm.items()) == snapshot
    for (pa, da), (pb, db) in zip(history, history[1:]):
        expected = {k: (da.get(k, MISSING), db.get(k, MISSING)) for k in set(da) | set(db) if da.get(k) != db.get(k)}
        assert {k: (o, n) for k, o, n in pa.diff(pb)} == expected
        assert (pa == pb) == (da == db)


def test_colliding_hashes_still_work() -> None:
    m: PMap = PMap(lambda k: 7)
    m = m.update({i: i for i in range(3 * LEAF_MAX)})
    assert len(m) == 3 * LEAF_MAX and all(m[i] == i for i in range(3 * LEAF_MAX))
    m = m.update({i: DELETE for i in range(0, 3 * LEAF_MAX, 2)})
    assert sorted(m) == list(range(1, 3 * LEAF_MAX, 2))


def test_updates_share_structure() -> None:
    m: PMap = PMap(hash_int).update({i: str(i) for i in range(50_000)})
    assert m.depth() >= 2
    m2 = m.set(12345, "x")
    new_nodes = m2.node_ids() - m.node_ids()
    assert len(new_nodes) <= m.depth() + 1
    assert m2.update({12345: m2[12345]}) is m2  # identical value: no copy at all
    assert m2.delete(10**9) is m2
    assert m[12345] == "12345" and m2[12345] == "x"
    diff = list(m.diff(m2))
    assert diff == [(12345, "12345", "x")]
    shrunk = m.update({i: DELETE for i in range(50_000) if i % 1000})
    assert len(shrunk) == 50 and sorted(shrunk) == list(range(0, 50_000, 1000))
    assert shrunk.depth() <= 1


def test_stable_hashes_do_not_depend_on_the_process() -> None:
    # pmap.py imports nothing from kraftsim, so the child loads just that file
    path = os.path.join(os.path.dirname(pmap.__file__), "pmap.py")
    code = ("import importlib.util as u, sys;"
            f"s = u.spec_from_file_location('pmap', {path!r}); m = u.module_from_spec(s);"
            "sys.modules['pmap'] = m; s.loader.exec_module(m);"
            "p = m.PMap(m.stable_hash).update({('t', str(i)): i for i in range(300)});"
            "print([v for _, v in p.items()][:50])")
    outs = set()
    for seed in (1, 2):
        proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout)
    assert len(outs) == 1
    assert hash_str("abc") == hash_str("abc") and stable_hash(("a", 1, None, 1.5, b"x")) > 0
    assert hash_uuid(bytes(16)) == 0


@pytest.mark.skipif(uuid_hash is None, reason="the C fast path is off or not built")
@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(min_size=16, max_size=16), st.binary(max_size=40),
                 st.sampled_from([bytes(16), b"\xff" * 16, (2**61 - 1).to_bytes(16, "big"),
                                  (2**61).to_bytes(16, "big"), (2**64 - 1).to_bytes(16, "big"),
                                  (2**125 - 1).to_bytes(16, "big")])))
def test_uuid_hash_in_c_is_the_python_hash(value: bytes) -> None:
    """The C uuid hash is the Python one for every value (16 bytes or not, a Uuid or plain
    bytes): a PMap built with one must find its keys with the other, and layouts (hence
    snapshot order) must not depend on the extension."""
    assert hash_uuid is uuid_hash
    assert uuid_hash(value) == hash_uuid_py(value)
    if len(value) == 16:
        assert uuid_hash(Uuid(value)) == hash_uuid_py(Uuid(value))
    assert uuid_hash(bytearray(value)) == hash_uuid_py(bytearray(value))


@pytest.mark.skipif(str_hash is None, reason="the C fast path is off or not built")
@settings(max_examples=400, deadline=None)
@given(st.text() | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=8)
       | st.text("abcXYZ019._-", max_size=249) | st.sampled_from(["", "topic-0", "\u00e9t\u00e9", "\U0001f600"]))
def test_str_hash_in_c_is_the_python_hash(value: str) -> None:
    """The C name hash is the Python one for every str (ASCII, other code points, lone
    surrogates, a str subclass): layouts, hence snapshot order, must not depend on the extension."""
    assert hash_str is str_hash
    assert str_hash(value) == hash_str_py(value)

    class Name(str):
        pass

    assert str_hash(Name(value)) == hash_str_py(Name(value))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.integers(0, 80), st.integers(0, 5), max_size=60),
       st.lists(st.dictionaries(st.integers(0, 90), st.integers(0, 5), max_size=20), max_size=5))
def test_chunk_map_is_a_dict_updated_in_place(start, batches) -> None:
    """ChunkMap keeps what the topic image's partition dict gave: dict order (new keys after
    the old), lookups and equality with a dict; a version shares every untouched chunk."""
    model = dict(start)
    m = ChunkMap.of(start)
    for changes in batches:
        before = m
        m = m.updated(changes)
        model.update(changes)
        assert list(m.items()) == list(model.items()) and list(m) == list(model) and list(m.values()) == list(model.values())
        assert m == model and model == m and len(m) == len(model) and bool(m) == bool(model)
        assert all(m.get(k) == model.get(k) and (k in m) == (k in model) for k in range(95))
        if all(k in before for k in changes):  # same keys: the positions and untouched chunks are shared
            touched = {pos // pmap.CHUNK for pos, k in enumerate(model) if k in changes}
            assert len(before.chunk_ids() - m.chunk_ids()) == len(touched)
        assert (m == before) == (dict(before.items()) == model)


class _Node:
    """A tracked object that can refer back to the map holding it."""

    back: Any = None


def _settled(kind: int, n: int) -> Any:
    """Items of every tracking kind: atomic, a gc=False struct, untracked and tracked tuples,
    an (untracked) empty dict and a list, both of types the collector supports."""
    return [n, None, f"s{n}", PartitionRegistration(intern.ints((n,)), intern.migrating(1), intern.ints((n,))),
            (n, "x"), ([n],), {}, [n], _Node()][kind]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3)), max_size=10))
def test_untracked_tuple_is_tuple_untracked_by_cpythons_own_rule(kinds) -> None:
    """Equal to tuple(); tracked exactly when a collection would leave tuple() tracked."""
    items = [_settled(k, n) for k, n in kinds]
    gc.collect()  # (the items' own tuples settle first, as they would have before)
    got = untracked_tuple(items)
    assert got == tuple(items) and type(got) is tuple
    plain = tuple(items)
    gc.collect()
    assert gc.is_tracked(got) == gc.is_tracked(plain)


def test_chunk_maps_of_registrations_are_untracked_at_once_and_cycles_through_others_collected() -> None:
    regs = {pid: _settled(3, pid) for pid in range(20)}
    m = ChunkMap.of(regs)
    _, chunks = m.layout()
    if untracked_tuple is not tuple:  # (the C extension built)
        assert not any(gc.is_tracked(c) for c in chunks) and not gc.is_tracked(chunks)
        m2 = m.updated({3: regs[5], 17: regs[1]})
        assert not any(gc.is_tracked(c) for c in m2.layout()[1]) and not gc.is_tracked(m2.layout()[1])
    node = _Node()
    cyclic = ChunkMap.of(regs).updated({4: node})
    node.back = cyclic
    gone = weakref.ref(node)
    del node, cyclic
    gc.collect()
    assert gone() is None  # the chunk holding a tracked value stayed visible to the collector
