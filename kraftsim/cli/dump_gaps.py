"""What kafka-dump-log says about records whose offsets do not follow one another.

Kafka's tool dumps such a file (batches that skip offsets, or a segment that starts after
the offset in its name) like any other and exits 0; once every file is dumped it prints on
stderr, per file, `Non-consecutive offsets in FILE` and one `  A is followed by B` per jump.
How it counts and orders them depends on the release (policy `dump_log_offset_gaps`, see
versions/data/policies.toml); `kraftsim log verify` still reports every such jump as a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from kraftsim.javacompat import compute_if_absent_order, scala_hash_map_order, string_hash


class OffsetGaps:
    """The jumps of the files dumped so far, as the release's kafka-dump-log collects them."""

    def __init__(self, policy: str) -> None:
        self.policy = policy  # "scala" (Kafka up to 4.2) or "java" (4.3 on)
        self._pairs: dict[str, list[tuple[int, int]]] = {}  # per file, in file order

    def file(self, path: Path) -> Callable[[Iterable[int]], None]:
        """One more file dumped: the function returned takes the offsets of its records in
        file order, a batch at a time (the dump holds no list of a large file's offsets)."""
        name = str(path.absolute())  # Kafka keys its map by File.getAbsolutePath
        last: int | None = -1 if self.policy == "java" else None
        pairs = self._pairs

        def add(offsets: Iterable[int]) -> None:
            nonlocal last
            for offset in offsets:
                if last is not None and offset != last + 1:
                    pairs.setdefault(name, []).append((last, offset))
                last = offset

        return add

    def lines(self) -> list[str]:
        """The lines Kafka prints after the dump (on stderr), files in its map's order."""
        names = list(self._pairs)
        if self.policy == "java":  # HashMap.computeIfAbsent of each file's TreeMap of pairs
            order = compute_if_absent_order(names, string_hash)
        else:  # Scala's mutable.Map of each file's List of pairs, prepended to
            order = scala_hash_map_order(names, string_hash)
        out = []
        for name in order:
            if self.policy == "java":  # a TreeMap by first offset: a repeated first offset keeps its last pair
                pairs = sorted(dict(self._pairs[name]).items())
            else:
                pairs = self._pairs[name][::-1]
            out.append(f"Non-consecutive offsets in {name}")
            out += [f"  {first} is followed by {second}" for first, second in pairs]
        return out
