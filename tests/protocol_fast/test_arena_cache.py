"""The extension's cache of freed allocator arenas: decoding and dropping a large batch again
reuses them (no new mappings, no page faults), the cache never holds more than asked,
and 0 gives every arena back."""

from __future__ import annotations

import resource

from kraftsim.protocol import batch_io, fastpath
from kraftsim.protocol.batch import parse_batch
from kraftsim.protocol.entries import Payload, decode_batch
from kraftsim.protocol.registry import default_registry

from ._support import needs_speedups

REGISTRY = default_registry()
CR = REGISTRY["ConfigRecord"]


def _big_batch() -> bytes:
    payloads = [Payload(CR, 0, CR.new(resource_type=2, resource_name=f"t{i}", name=f"k{i}", value="v" * (i % 50)))
                for i in range(40_000)]
    return batch_io.encode_data_batch(0, payloads, epoch=1, timestamp=5)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@needs_speedups
def test_freed_arenas_are_kept_up_to_the_limit_and_reused() -> None:
    c = fastpath._c
    batch = parse_batch(_big_batch())
    try:
        c.configure(arena_cache=8)
        first = decode_batch(batch, REGISTRY)
        expected = [e.message for e in first]
        del first
        assert 0 < c.info()["arenas_cached"] <= 8
        c.configure(arena_cache=1024)
        again = decode_batch(batch, REGISTRY)  # warm the cache with this batch's arenas
        del again
        cached = c.info()["arenas_cached"]
        before = _faults()
        third = decode_batch(batch, REGISTRY)
        faults = _faults() - before
        assert [e.message for e in third] == expected
        del third
        assert c.info()["arenas_cached"] == cached  # the same arenas went out and came back
        assert faults < 200  # without the cache: one fault per page, thousands (measured: ~3,300)
        c.configure(arena_cache=0)
        assert c.info()["arenas_cached"] == 0 and c.info()["arena_cache"] == 0
    finally:
        c.configure(arena_cache=fastpath.ARENA_CACHE if fastpath.ENABLED else 0)
