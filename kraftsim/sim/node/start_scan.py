"""What a controller's start-up finds finalized on its disk, read once per distinct batch.

A node with the controller role replays its snapshot and log when it starts; a finalized
level its software does not support stops it with Kafka's text (SimNode.replay_refusal).
The levels are those of its snapshot's image and of every FeatureLevelRecord in its log
after it, as the replay meets them: a feature's first level the node does not support is
the one it stops on (a 4.3.1 controller with unstable versions, range 7-31, started on a
log formatted at 33 and upgraded to 34 names 33, the bootstrap record: seen live).

Every start reads the node's whole log, and the nodes of a cluster hold the same
batches, so each distinct batch is decoded once: its FeatureLevelRecords are kept by the
batch's base offset, last offset delta, epoch and CRC (what names a batch's bytes in
kraftsim.sim.node.commit_share), with the batch's checked bytes. A batch of the active segment
that the segment keeps no parse of is read as bytes first: bytes equal to those kept are
the same batch, which parses alike and passes the same CRC check, so its levels are taken
without parsing it; other bytes are read and checked as `LogSegment.read_batch` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kraftsim.protocol.batch import stored_crc
from kraftsim.protocol.registry import Registry
from kraftsim.storage import decode_file_batch
from kraftsim.storage.batchfile import FileBatch

if TYPE_CHECKING:
    from kraftsim.sim.node.simnode import SimNode

#: Batches whose levels are kept (emptied past it).
KEEP = 1 << 14


class FeatureLevelScan:
    """The finalized levels on a node's disk (see the module docstring), read with `registry`
    (the full catalog's records)."""

    def __init__(self, registry: Registry):
        self.registry = registry
        #: key -> (the batch's checked bytes, its FeatureLevelRecords as (offset, name, level))
        self._levels: dict[tuple[int, int, int, int], tuple[bytes, tuple[tuple[int, str, int], ...]]] = {}
        #: Batches whose levels were taken by their bytes (not parsed).
        self.matched_by_bytes = 0

    def clear(self) -> None:
        self._levels.clear()

    def finalized(self, node: SimNode) -> dict[str, int]:
        """Each feature's last level on disk, or the first its replay meets that the node's
        software does not support (see the module docstring)."""
        assert node.loader is not None and node.log is not None
        levels = _Replayed(node.supported_range)
        for name, level in node.loader.image.features.all_levels().items():
            levels[name] = level
        start = node.loader.last_offset + 1
        log = node.log
        seg = log.active_segment
        if seg is not None and start >= seg.base_offset and start >= log.log_start_offset:
            # (the active segment walked in one loop: a batch not parsed in memory is matched by
            # its bytes, all read with one read: bytes equal to the kept ones give their levels;
            # other bytes are read and checked as `LogSegment.read_batch` does)
            first, entries, parsed, known = seg.find(start), seg.entries, seg.parsed_batches(), self._levels
            raws = seg.read_raws(first, len(entries)) or []  # (one read; [] or None: one by one)
            for j in range(first, len(entries)):
                fb = parsed.get(j)
                if fb is None:
                    raw = raws[j - first] if raws else seg.read_raw(j)
                    e = entries[j]  # (base offset, last offset, position, size, epoch, ...)
                    kept = known.get((e[0], e[1] - e[0], e[4], stored_crc(raw)))
                    if kept is not None and kept[0] == raw:
                        _take(kept[1], start, levels)
                        self.matched_by_bytes += 1
                        continue
                    fb = seg.read_batch(j)
                _take(self._levels_of(fb), start, levels)
        else:
            for fb in log.batches(start):
                _take(self._levels_of(fb), start, levels)
        return dict(levels)

    def _levels_of(self, fb: FileBatch) -> tuple[tuple[int, str, int], ...]:
        """The batch's FeatureLevelRecords as (offset, name, level), decoded once per distinct batch."""
        b = fb.batch
        known = self._levels
        key = (b.base_offset, b.last_offset_delta, b.partition_leader_epoch, b.crc)
        kept = known.get(key)
        if kept is not None and kept[0] == b.raw:
            return kept[1]
        found = tuple((e.offset, e.message.name, e.message.feature_level)
                      for e in decode_file_batch(fb, self.registry) if e.record_type.name == "FeatureLevelRecord")
        if len(known) >= KEEP:
            known.clear()
        known[key] = (b.raw, found)
        return found


class _Replayed(dict[str, int]):
    """Levels set in replay order; a feature keeps the first level outside `supported_range`."""

    def __init__(self, supported_range: Callable[[str], tuple[int, int]]):
        super().__init__()
        self._range = supported_range
        self._stopped: set[str] = set()

    def __setitem__(self, name: str, level: int) -> None:
        if name in self._stopped:
            return
        lo, hi = self._range(name)
        if level != 0 and not lo <= level <= hi:
            self._stopped.add(name)
        super().__setitem__(name, level)


def _take(found: tuple[tuple[int, str, int], ...], start: int, levels: dict[str, int]) -> None:
    for offset, name, level in found:
        if offset >= start:
            levels[name] = level


__all__ = ["FeatureLevelScan"]
