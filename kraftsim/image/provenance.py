"""MetadataProvenance: where in the log an image comes from.

Kept apart from the image contents so that two images with the same metadata compare and
digest equal even when they were reached at different offsets.
"""

from __future__ import annotations

import msgspec


class MetadataProvenance(msgspec.Struct, frozen=True, gc=False):
    """Last contained offset, its epoch and log time (ms), and whether it ends a batch."""

    last_contained_offset: int
    last_contained_epoch: int
    last_contained_log_time_ms: int
    is_offset_batch_aligned: bool = False

    def snapshot_id(self) -> tuple[int, int]:
        """The id of a snapshot of this image: (last contained offset + 1, epoch)."""
        return self.last_contained_offset + 1, self.last_contained_epoch


MetadataProvenance.EMPTY = MetadataProvenance(-1, -1, -1, False)  # type: ignore[attr-defined]
EMPTY_PROVENANCE = MetadataProvenance.EMPTY  # type: ignore[attr-defined]
