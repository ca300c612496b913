"""What a controller's start-up finds finalized on its disk, read once per distinct batch.

A node with the controller role replays its snapshot and log when it starts; a finalized
level its software does not support stops it with Kafka's text (SimNode.replay_refusal).
The levels are those of its snapshot's image and of every FeatureLevelRecord in its log
after it. Every start reads the node's whole log, and the nodes of a cluster hold the same
batches, so each distinct batch is decoded once: its FeatureLevelRecords are kept by the
batch's base offset, last offset delta, epoch and CRC (what names a batch's bytes in
kraftsim.sim.commit_share), with the batch's checked bytes. A batch of the active segment
that the segment keeps no parse of is read as bytes first: bytes equal to those kept are
the same batch, which parses alike and passes the same CRC check, so its levels are taken
without parsing it; other bytes are read and checked as `LogSegment.read_batch` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from kraftsim.protocol.registry import Registry
from kraftsim.storage import decode_file_batch
from kraftsim.storage.batchfile import FileBatch
from kraftsim.storage.segment import LogSegment

if TYPE_CHECKING:
    from kraftsim.sim.node import SimNode

#: Batches whose levels are kept (emptied past it).
KEEP = 1 << 14


class FeatureLevelScan:
    """The finalized levels on a node's disk (see the module docstring), read with `registry`
    (the full catalog's records)."""

    def __init__(self, registry: Registry):
        self.registry = registry
        #: key -> (the batch's checked bytes, its FeatureLevelRecords as (offset, name, level))
        self._levels: dict[tuple[int, int, int, int], tuple[bytes, tuple[tuple[int, str, int], ...]]] = {}

    def clear(self) -> None:
        self._levels.clear()

    def finalized(self, node: SimNode) -> dict[str, int]:
        assert node.loader is not None and node.log is not None
        levels = dict(node.loader.image.features.all_levels())
        start = node.loader.last_offset + 1
        log = node.log
        seg = log.active_segment
        if seg is not None and start >= seg.base_offset and start >= log.log_start_offset:
            first = seg.find(start)
            raws = seg.read_raws(first, len(seg.entries)) or []  # (one read; [] or None: one by one)
            batches: Iterable[FileBatch | None] = (
                seg._parsed.get(j) or self._by_bytes(seg, j, start, levels, raws[j - first] if raws else None)
                for j in range(first, len(seg.entries)))
        else:
            batches = log.batches(start)
        known = self._levels
        for fb in batches:
            if fb is None:
                continue  # (known by its bytes: _by_bytes took its levels)
            b = fb.batch
            key = (b.base_offset, b.last_offset_delta, b.partition_leader_epoch, b.crc)
            kept = known.get(key)
            if kept is None or kept[0] != b.raw:
                found = tuple((e.offset, e.message.name, e.message.feature_level)
                              for e in decode_file_batch(fb, self.registry) if e.record_type.name == "FeatureLevelRecord")
                if len(known) >= KEEP:
                    known.clear()
                known[key] = (b.raw, found)
            else:
                found = kept[1]
            _take(found, start, levels)
        return levels

    def _by_bytes(self, seg: LogSegment, j: int, start: int, levels: dict[str, int],
                  raw: bytes | None = None) -> FileBatch | None:
        """Batch `j` of `seg` (not parsed in memory; `raw`: its bytes, when read already): None
        when its bytes are those of a batch known here (its levels taken into `levels`),
        else the batch, read and checked."""
        e = seg.entries[j]
        if raw is None:
            raw = seg.read_raw(j)
        kept = self._levels.get((e.base_offset, e.last_offset - e.base_offset, e.epoch,
                                 int.from_bytes(raw[17:21], "big")))
        if kept is not None and kept[0] == raw:
            _take(kept[1], start, levels)
            return None
        return seg.read_batch(j)


def _take(found: tuple[tuple[int, str, int], ...], start: int, levels: dict[str, int]) -> None:
    for offset, name, level in found:
        if offset >= start:
            levels[name] = level


__all__ = ["FeatureLevelScan"]
