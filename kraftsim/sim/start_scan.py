"""What a controller's start-up finds finalized on its disk, read once per distinct batch.

A node with the controller role replays its snapshot and log when it starts; a finalized
level its software does not support stops it with Kafka's text (SimNode.replay_refusal).
The levels are those of its snapshot's image and of every FeatureLevelRecord in its log
after it. Every start reads the node's whole log, and the nodes of a cluster hold the same
batches, so each distinct batch is decoded once: its FeatureLevelRecords are kept by the
batch's base offset, last offset delta, epoch and CRC (what names a batch's bytes in
kraftsim.sim.commit_share).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftsim.protocol.registry import Registry
from kraftsim.storage import decode_file_batch

if TYPE_CHECKING:
    from kraftsim.sim.node import SimNode

#: Batches whose levels are kept (emptied past it).
KEEP = 1 << 14


class FeatureLevelScan:
    """The finalized levels on a node's disk (see the module docstring), read with `registry`
    (the full catalog's records)."""

    def __init__(self, registry: Registry):
        self.registry = registry
        self._levels: dict[tuple[int, int, int, int], tuple[tuple[int, str, int], ...]] = {}

    def finalized(self, node: SimNode) -> dict[str, int]:
        assert node.loader is not None and node.log is not None
        levels = dict(node.loader.image.features.all_levels())
        start = node.loader.last_offset + 1
        known = self._levels
        for fb in node.log.batches(start):
            b = fb.batch
            key = (b.base_offset, b.last_offset_delta, b.partition_leader_epoch, b.crc)
            found = known.get(key)
            if found is None:
                found = tuple((e.offset, e.message.name, e.message.feature_level)
                              for e in decode_file_batch(fb, self.registry) if e.record_type.name == "FeatureLevelRecord")
                if len(known) >= KEEP:
                    known.clear()
                known[key] = found
            for offset, name, level in found:
                if offset >= start:
                    levels[name] = level
        return levels


__all__ = ["FeatureLevelScan"]
