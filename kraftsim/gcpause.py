"""Pausing the cycle collector while a bulk load allocates.

Why: loading a 1,000,000-partition snapshot allocates a few hundred thousand container
objects (topic deltas, per-topic read-only views, trie nodes) and keeps all of them. Each
time the collector's thresholds trip during that growth it walks every tracked object
again: measured at 1,000,000 partitions, six full collections cost about 0.7 s of a ~2 s
load. Nothing a load allocates forms a cycle, so the pause loses nothing; the new objects
are examined once, by the next collection after it. The codec's C decoder pauses the
collector for the same reason.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a block with the cycle collector off; it is back on after (if it was on before)."""
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
