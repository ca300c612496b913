"""The extension's cache of freed allocator arenas: decoding and dropping a large batch again
reuses them (no new mappings, no page faults), the cache never holds more than asked,
and 0 gives every arena back. Run in a fresh interpreter: in a long test process the
allocator has room to spare in arenas already in use, and frees no whole arena."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ._support import REPO, needs_speedups

PROBE = r'''
import hashlib, json, resource
from kraftsim.protocol import batch_io, fastpath
from kraftsim.protocol.batch import parse_batch
from kraftsim.protocol.entries import Payload, decode_batch
from kraftsim.protocol.registry import default_registry

REGISTRY = default_registry()
CR = REGISTRY["ConfigRecord"]
c = fastpath._c
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
digest = lambda entries: hashlib.sha256(repr([e.message for e in entries]).encode()).hexdigest()
payloads = [Payload(CR, 0, CR.new(resource_type=2, resource_name=f"t{i}", name=f"k{i}", value="v" * (i % 50)))
            for i in range(40_000)]
batch = parse_batch(batch_io.encode_data_batch(0, payloads, epoch=1, timestamp=5))
del payloads
out = {}
for cache in (0, 8, 1024):
    c.configure(arena_cache=cache)
    first = decode_batch(batch, REGISTRY)
    expected = digest(first)
    del first
    cached = c.info()["arenas_cached"]
    before = faults()
    again = decode_batch(batch, REGISTRY)
    out[cache] = dict(faults=faults() - before, cached_before=cached, cached_after=None)
    out[cache]["same"] = digest(again) == expected
    del again
    out[cache]["cached_after"] = c.info()["arenas_cached"]
c.configure(arena_cache=0)
out["released"] = c.info()["arenas_cached"]
print(json.dumps(out))
'''


@needs_speedups
def test_freed_arenas_are_kept_up_to_the_limit_and_reused() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("KRAFTSIM_PURE_PYTHON", None)
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    out = json.loads(proc.stdout)
    off, small, big = out["0"], out["8"], out["1024"]
    assert off["same"] and small["same"] and big["same"]
    assert off["cached_before"] == off["cached_after"] == 0
    assert 0 < small["cached_before"] <= 8 and small["cached_after"] <= 8
    # with room for every arena, the second decode takes them from the cache and gives them
    # back (less the one empty arena Python's allocator keeps for itself)
    assert big["cached_before"] > 8 and big["cached_after"] >= big["cached_before"] - 1
    assert big["faults"] < off["faults"] // 10  # without the cache: one fault per page (~3,300 measured)
    assert out["released"] == 0
