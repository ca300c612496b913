"""Committed batches replayed once for the whole cluster, not once per node.

Every node's loader replays the same committed batches; nodes of one release (with the same
metadata.version handling) that stand on the same image object and apply the same batch
(offsets, epoch and CRC equal: the same bytes) reach the same image, since replay is
deterministic. The first node to apply a batch replays it; the others adopt its delta and
image (`MetadataLoader.adopt`), and their publishers (snapshots, KIP-778 changes) see the
commit as if replayed there. Only a commit that published exactly once from an idle loader
is shared; anything else (a transaction left open, a fault, a mid-batch publish) is
replayed by each node. Nodes sharing an image object are what the deep invariants group.

Across softwares (`across`): a loader of another release adopts a commit replayed on its
very image object when the batch reads nothing of the software that differs between the
two (`replays_alike`, from the batch's `BatchReads`: kraftsim.sim.node.replay_reads says what a
replay reads of its software).
"""

from __future__ import annotations

import heapq
import itertools
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kraftsim.image import MetadataLoader

from kraftsim.sim.node.replay_reads import NEUTRAL, BatchReads, Replayer, batch_reads, replays_alike
from kraftsim.sim.node.snapshot_share import SnapshotShare

#: Commits kept, so that a node replaying its log from the start after a restart adopts too
#: (images are persistent structures: one more image costs what its commit changed).
KEEP = 1 << 16

BatchKey = object  # what names a batch's bytes: (base offset, last offset, epoch, CRC), or the bytes


class CommitShare:
    def __init__(self, keep: int = KEEP) -> None:
        self.keep_limit = keep
        self._done: OrderedDict[tuple[object, ...], tuple[Any, ...]] = OrderedDict()
        #: (last offset, order kept, key) of every commit kept under a batch key with offsets, smallest first:
        #: what `drop_below` pops instead of scanning every kept commit (at a million
        #: partitions tens of thousands, after every settle). A key evicted or dropped already
        #: is skipped when popped; past twice the kept commits, it is rebuilt from them.
        self._by_last: list[tuple[int, int, tuple[object, ...]]] = []
        self._kept_order = itertools.count()
        self.replayed = 0
        self.adopted = 0
        self.rebased = 0
        #: Commits adopted from a replay made under another software (`across`).
        self.adopted_across = 0
        #: The replayer of each software that kept a commit shareable across softwares.
        self._replayers: dict[tuple[object, ...], Replayer] = {}
        self._alike: dict[tuple[object, ...], bool] = {}
        self._differs: weakref.WeakSet[MetadataLoader] = weakref.WeakSet()  # loaders found to stand on other metadata
        #: Snapshot files loaded once for the loaders sharing these commits.
        self.snapshots = SnapshotShare()

    def clear(self) -> None:
        """Forget every kept commit and snapshot load (the counters stay)."""
        self._done.clear()
        self._by_last.clear()
        self._replayers.clear()
        self._alike.clear()
        self.snapshots.clear()

    def kept(self) -> Mapping[tuple[Any, ...], tuple[Any, ...]]:
        """Every kept commit by (software, batch key), as `keep` stored it: for replay loops
        that look up many batches in a row (`find`'s test, done by the caller)."""
        return self._done

    def find(self, software: tuple[object, ...], batch: BatchKey, loader: MetadataLoader) -> tuple[Any, ...] | None:
        """What another loader got from this batch on this loader's image, if any."""
        hit = self._done.get((software, batch))
        if hit is None or hit[0] is not loader.image or hit[1] != (loader.kraft_version, loader.voters):
            return None
        return hit

    def keep(self, software: tuple[object, ...], batch: BatchKey, before: object, raft_before: tuple[object, object],
             loader: MetadataLoader, raw: bytes | None = None, *, reads: BatchReads | None = None,
             replayer: Replayer | None = None) -> None:
        """Remember what `loader` got from `batch` on the image `before`; `raw`: the batch's
        checked bytes, for a reader that compares bytes instead of parsing them
        (SimNode's catch-up after a start). With `reads` (what the batch read of the
        software) and `replayer` (that software), loaders of other softwares may adopt it (`across`)."""
        published = loader.last_publish
        assert published is not None, "only a commit that published is kept"
        delta, image, manifest = published
        self.keep_result(software, batch, before, raft_before, delta, image, manifest, raw,
                         raft_after=(loader.kraft_version, loader.voters))
        if reads is not None and replayer is not None:
            self.shareable(software, batch, reads, replayer)

    def keep_result(self, software: tuple[object, ...], batch: BatchKey, before: object,
                    raft_before: tuple[object, object], delta: Any, image: object, manifest: object,
                    raw: bytes | None, raft_after: tuple[object, object] | None = None) -> None:
        """`keep` of what replaying `batch` on `before` gave (`delta`, `image`, `manifest`),
        whoever replayed it (a loader, or the active controller: controller_commits); the raft
        state after it is `raft_before` unless given. Kept for its software only until
        `shareable` says what the batch read of it."""
        delta.settle(image)  # (publishers that adopt it read no topic changes: let them go)
        kraft_version, voters = raft_after if raft_after is not None else raft_before
        key = (software, batch)
        if key not in self._done and type(batch) is tuple:
            heapq.heappush(self._by_last, (batch[1], next(self._kept_order), key))
        self._done[key] = (before, raft_before, delta, image, manifest, kraft_version, voters, raw, None)
        while len(self._done) > self.keep_limit:
            self._done.popitem(last=False)
        if len(self._by_last) > 2 * self.keep_limit:  # (evicted keys' entries: rebuilt from what is kept)
            self._by_last = [(k[1][1], next(self._kept_order), k) for k in self._done if type(k[1]) is tuple]
            heapq.heapify(self._by_last)

    def shareable(self, software: tuple[object, ...], batch: BatchKey, reads: BatchReads, replayer: Replayer) -> None:
        """Let loaders of other softwares adopt the commit of `batch` just kept under
        `software` (`across`): the batch read `reads` of it, and `replayer` is that software."""
        hit = self._done.get((software, batch))
        if hit is not None:
            self._replayers.setdefault(software, replayer)
            self._done[(software, batch)] = (*hit[:8], reads)

    def across(self, software: tuple[object, ...], batch: BatchKey, image: object, raft: tuple[object, object],
               replayer: Replayer) -> tuple[Any, ...] | None:
        """What a loader of another software got from `batch` on the very image object
        `image` with the raft state `raft`, when the batch replays alike under `replayer`
        (`replays_alike`); None if none. The caller still checks that its node supports
        the levels the batch finalizes (`BatchReads.levels`, the kept tuple's last field)."""
        for other, theirs in self._replayers.items():
            if other == software:
                continue
            hit = self._done.get((other, batch))
            if hit is None or hit[0] is not image or hit[1] != raft or hit[8] is None:
                continue
            key = (other, software, hit[8])
            alike = self._alike.get(key)
            if alike is None:
                alike = self._alike[key] = replays_alike(theirs, replayer, hit[8])
            if alike:
                return hit
        return None

    def drop_below(self, offset: int) -> int:
        """Forget the kept commits of batches that end below `offset`; how many went.

        For the owner of the nodes: once every node's newest snapshot ends at or above
        `offset`, no node replays those batches again (a node starts from its newest
        snapshot), so what they kept (two images, a delta, the bytes) is only memory: at a
        million partitions every kept commit holds its share of the run's history. Only
        commits named by (base offset, last offset, epoch, CRC) are known by offset; others
        stay."""
        by_last, done, gone = self._by_last, self._done, 0
        while by_last and by_last[0][0] < offset:
            key = heapq.heappop(by_last)[2]
            if done.pop(key, None) is not None:
                gone += 1
        return gone

    def rebase(self, software: tuple[object, ...], batch: BatchKey, loader: MetadataLoader) -> bool:
        """Put `loader`, idle after replaying `batch` alone on an image of its own (it started
        from its snapshot, or caught up gathering many batches in one delta), on the image
        another loader of this software got from the same batch, when the two are equal
        (metadata and provenance) and so is the raft state: from then on it adopts that
        loader's commits instead of replaying them. Images share the parts neither changed,
        so a comparison costs what differs; a loader whose image was found to differ is not
        compared again (a difference stays while both apply the same batches)."""
        hit = self._done.get((software, batch))
        if hit is None or hit[3] is loader.image or hit[5] != loader.kraft_version or hit[6] != loader.voters:
            return False
        if loader in self._differs:
            return False
        if hit[3] != loader.image:
            self._differs.add(loader)
            return False
        loader.rebase(hit[3])
        self.rebased += 1
        return True


__all__ = ["NEUTRAL", "BatchReads", "CommitShare", "Replayer", "batch_reads", "replays_alike"]
