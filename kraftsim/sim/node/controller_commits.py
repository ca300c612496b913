"""The active controller's replay handed to the loaders of its own software.

The controller replays each batch it appends; once the batch commits, every node's loader
replays it again (once per software through the commit share). The controller's image for a
batch equals the loaders' (metadata and provenance: replay is deterministic), so when the
controller stands on the very image object the loaders of its node's software hold, its delta
and image are what their first replay would give: they are kept in the commit share under
the batch's key, and the loaders adopt them (`CommitShare.find`'s test) instead of replaying.

Kept only when that is exact: the co-located loader idle just below the batch, on the
controller's image (its raft state is then the loader's), or the batch right after one kept
(no control batch between: the raft state is unchanged); no transaction marker, no open
transaction, no FeatureLevelRecord (the loader handles metadata.version changes itself).
Loaders of other softwares standing on the same image adopt it too when the batch replays
alike under theirs (`CommitShare.across`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from kraftsim.image import LogDeltaManifest, MetadataImage
from kraftsim.image.delta import TRANSACTION_RECORDS, MetadataDelta
from kraftsim.protocol.batch import stored_crc
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.sim.node.replay_reads import READ_TYPES, batch_reads, reads_of_types, record_type_names

if TYPE_CHECKING:
    from kraftsim.controller import ReplayState
    from kraftsim.sim.node.simnode import SimNode

_HELD_BACK = TRANSACTION_RECORDS | {"FeatureLevelRecord"}


class ControllerCommits:
    """A `BatchObserver` of the controller running on `node` (kraftsim.controller.quorum_controller)."""

    def __init__(self, node: SimNode) -> None:
        self.node = node
        #: (last offset, image, raft state) of the batch kept last: the next one may follow it.
        self._last: tuple[int, MetadataImage, tuple[object, object]] | None = None
        self.kept = 0

    def prepare(self, state: ReplayState, base_offset: int) -> None:
        """Stand the controller on its loader's image when the two are equal at `base_offset - 1`."""
        loader = self.node.loader
        if loader is None or loader.image is state.image or not self._loader_below(base_offset):
            return
        if state.transaction_start_offset is None and loader.image == state.image:
            state.rebase(loader.image)

    def replayed(self, raw: bytes, records: Sequence[LogEntry | Payload], base_offset: int, epoch: int,
                 before: MetadataImage, delta: MetadataDelta, state: ReplayState) -> None:
        last, self._last = self._last, None
        loader, share = self.node.loader, self.node.share
        if loader is None or share is None or state.transaction_start_offset is not None:
            return
        types = record_type_names(records)
        if not _HELD_BACK.isdisjoint(types) or delta.metadata_version_changed() is not None:
            return
        raft: tuple[object, object]
        if self._loader_below(base_offset) and loader.image is before:
            raft = (loader.kraft_version, loader.voters)
        elif last is not None and last[0] == base_offset - 1 and last[1] is before:
            raft = last[2]
        else:
            return
        image = state.image
        end = base_offset + len(records) - 1
        manifest = LogDeltaManifest(image.provenance, epoch, 1, 0, len(raw), None)
        key = (base_offset, end, epoch, stored_crc(raw))
        share.keep_result(self.node.software, key, before, raft, delta, image, manifest, raw)
        reads = batch_reads(records) if not READ_TYPES.isdisjoint(types) else reads_of_types(types)
        share.shareable(self.node.software, key, reads, self.node.replayer)
        self._last = (end, image, raft)
        self.kept += 1

    def _loader_below(self, base_offset: int) -> bool:
        loader = self.node.loader
        return loader is not None and loader.idle and loader.last_offset == base_offset - 1


__all__ = ["ControllerCommits"]
