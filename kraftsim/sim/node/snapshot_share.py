"""A snapshot file loaded once for the whole cluster, not once per node that starts from it.

Nodes snapshot the same committed image at the same offset, so their snapshot files hold
the same bytes. A fresh loader of one software (release, metadata.version handling,
catalog) fed the same bytes reaches the same image, raft state and published manifest:
loading is deterministic. The first node to load a file loads it; the others adopt its
result (`MetadataLoader.adopt` on their fresh loader), so every node started from that file
stands on one image object, and `CommitShare` then shares their later commits too. Only a
load without faults is shared.

At a million partitions this is the difference between one image in memory and one per
node, and between decoding a 128 MB file once and once per restart.

Writing goes the same way (`writes`, image.publisher's SnapshotCopies): nodes on one image
object of one software write the same bytes, so the first node's emitter encodes the file
and the others get it as a hard link (or a copy) under their own directory. A file whose
identity (device, inode, size, modification and change times: what a rewrite or a
replacement changes) was hashed already is not read nor hashed again to find its load —
the nodes' links of one written file are one file — provided it had not changed for a
while when it was hashed (`SETTLED_NS`), so that a later write cannot fall in the same
tick of the file system's clock and go unseen.

Two loads need no decode. A load is kept by the file's content without its batch
timestamps (`snapshot_content`): what a load gives does not depend on them, so a node's
copy restamped for its own clock takes another node's load. And a restarted node whose
file `writes` wrote from an image it still holds takes that image, with the file's
provenance (`MetadataLoader.adopt_snapshot`), when its software replays what the writer's
wrote as the writer does (`replays_alike`, held to a plain decode by a property across
releases and metadata.versions): at a million partitions every broker restart otherwise
decodes a file of a million records that no other node loaded. The file is still read
and checked (framing, every CRC, header and footer) and must be the file written (its
identity before and after the read). A file placed from the same write as one hashed
already (a link, or a copy restamped for another clock: `SnapshotCopies.find`) is read and
checked but not hashed again: its content is that file's.

Across softwares: during a roll the controllers and the brokers run different releases, and
each release decoded the same snapshot content once. A fresh loader that finds no load of
its software adopts a kept load of the same id and content made under another software
when the file's records replay alike under both (`replay_reads.replays_alike` of their
`Replayer`s, the loaders' own catalog, metadata.version handling and the registry the file
was read with, over the file's `batch_reads`: header records included). A load reads of
its software only what a batch's replay reads (MetadataLoader.handle_load_snapshot replays
the data records through a MetadataDelta of its catalog, from the fresh loader's empty
image; the header goes to `seed`, which must be the same function), so such a load gives
the image, raft state and manifest a decode here would give. This holds for every caller:
the shadows (invariants.replay_loader) and the read-back (`_snapshot_digest`) take the
load's image as the fresh decode's, and a node starting from its snapshot (SimNode.open)
loads it without refusing anything (it refuses unsupported levels only in the log it
applies after), so it stands where its own decode would put it. KIP-778 handling never
adopts across (`replays_alike` refuses it: it rewrites the image with its catalog), nor
do different registries or metadata.version mappings of the snapshot's level, nor
different config replay filters when the file holds a ConfigRecord. The records' reads
cost a decode pass over the file, made only when such a load is kept, once per content.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Hashable, Sequence

from blake3 import blake3

from kraftsim.image import (KRAFT_VERSION, MetadataImage, MetadataLoader, MvChangeHandling, SnapshotCopies, elr_written,
                            load_snapshot, resolve_writer_line)
from kraftsim.protocol.entries import LogEntry
from kraftsim.sim.node.replay_reads import BatchReads, Replayer, batch_reads
from kraftsim.sim.node.replay_reads import replays_alike as records_replay_alike
from kraftsim.storage import SnapshotFile, SnapshotId, read_snapshot
from kraftsim.versions import Catalog, VersionsError

#: Loads kept (each holds an image; images of one cluster share their unchanged parts).
KEEP = 8
#: File identities whose bytes' digest is remembered.
KEEP_HASHES = 64
#: How long a file must have been left alone before its identity stands for its bytes
#: (far above any file system's timestamp granularity).
SETTLED_NS = 1_000_000_000

Identity = tuple[int, int, int, int, int]
#: Whether the file written under a software key (SnapshotEmitter's `software`) from an
#: image loads, under the caller's software, to that image.
ReadsLike = Callable[[Hashable, MetadataImage], bool]
Seed = Callable[[MetadataLoader, Sequence[LogEntry]], None]


class _Kept:
    """A kept load: what `MetadataLoader.adopt` takes, and what a loader of another
    software needs to know whether it may (`_across`)."""

    __slots__ = ("delta", "image", "manifest", "kraft_version", "voters", "replayer", "seed", "reads")

    def __init__(self, loader: MetadataLoader, replayer: Replayer, seed: Seed | None) -> None:
        assert loader.last_publish is not None
        self.delta, self.image, self.manifest = loader.last_publish
        self.kraft_version, self.voters = loader.kraft_version, loader.voters
        self.replayer = replayer
        self.seed = seed
        #: What the file's records read of the software (`batch_reads`), once asked.
        self.reads: BatchReads | None = None

    def adopt_into(self, loader: MetadataLoader) -> None:
        loader.adopt(self.delta, self.image, self.manifest, kraft_version=self.kraft_version, voters=self.voters)


class SnapshotShare:
    """Loaded snapshots by (software, snapshot id, the file's content without its timestamps)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep_limit = keep
        self._done: OrderedDict[tuple[Any, ...], _Kept] = OrderedDict()
        self._hashes: OrderedDict[Identity, tuple[int, bytes]] = OrderedDict()
        #: Loads that replayed the file's records, took another load's result, took the image
        #: the file was written from (`reads_like`), and files read to find their content.
        self.loaded = 0
        self.adopted = 0
        self.taken = 0
        self.hashed = 0
        #: Files read whose content was not hashed: another file placed from the same write
        #: was (`SnapshotCopies.find`): links and restamped copies differ in timestamps only.
        self.known = 0
        #: Loads adopted from a load made under another software (`_across`; also in
        #: `adopted`), and decode passes made to learn what a file's records read.
        self.adopted_across = 0
        self.reads_passes = 0
        #: Snapshot files written once for the nodes' emitters (`writes.enabled = False`: each encodes its own).
        self.writes = SnapshotCopies()

    def clear(self) -> None:
        self._done.clear()
        self._hashes.clear()
        self.writes.clear(readable=False)

    def load(self, loader: MetadataLoader, path: Path, sid: SnapshotId, registry: Any, software: tuple[Any, ...],
             seed: Seed | None = None, *,
             data: bytes | None = None, reads_like: ReadsLike | None = None, keep: bool = True,
             checked: tuple[tuple[int, bytes], SnapshotFile | None] | None = None) -> None:
        """Load the snapshot file `path` (id `sid`) into the fresh, idle `loader`, as
        `load_snapshot` then `seed(loader, header)` would; from another loader's load of
        the same content when one was kept, or from the image `writes` wrote the file from
        when `reads_like(software key it was written under, image)` says
        this loader's software loads such a file as written (`replays_alike`). `data`: the
        file's bytes, read already by the caller (never taken from a write). `keep=False`:
        a load made here is not kept for others (a caller whose image nobody holds after
        it: keeping it would hold a whole image and its delta alive). `checked`: with
        `data`, what the caller found checking those bytes as `read_snapshot` does: their
        `snapshot_content`, and their parse when it made one, so neither is made again.
        A fresh loader may also adopt a load made under another software (`_across`)."""
        snap: SnapshotFile | None = None
        identity = _identity(path)
        content = self._hashes.get(identity) if identity is not None and data is None else None
        if checked is not None and data is not None:
            content, snap = checked
        elif content is None:
            self.hashed += 1
            snap = read_snapshot(path, registry, data=data)
            still = identity if data is None and identity is not None and identity == _identity(path) else None
            content = self._content(snap, still)
            if still is not None and time.time_ns() - max(still[3], still[4]) >= SETTLED_NS:
                self._remember(still, content)
        key = (software, sid.end_offset, sid.epoch, *content)
        fresh = loader.idle and loader.publishes == 0
        hit = self._done.get(key)
        if hit is not None and fresh:
            hit.adopt_into(loader)
            self._done.move_to_end(key)
            self.adopted += 1
            return
        faults = len(loader.faults)
        if snap is None and checked is not None and data is not None:
            snap = read_snapshot(path, registry, data=data)  # (the checked bytes: `content` is theirs)
        elif snap is None:  # (the bytes loaded are the ones the load is kept under)
            snap = read_snapshot(path, registry)
            content = snapshot_content(snap)
            key = (software, sid.end_offset, sid.epoch, *content)
        written = self._written(path, identity, sid, registry, reads_like) if fresh and data is None else None
        replayer = Replayer(loader.catalog, registry, loader.mv_change is MvChangeHandling.KIP_778)
        if written is None and fresh:
            across = self._across(key, replayer, seed, snap)
            if across is not None:
                across.adopt_into(loader)
                self.adopted += 1
                self.adopted_across += 1
                return
        if written is not None:
            loader.adopt_snapshot(written, end_offset=sid.end_offset, epoch=sid.epoch,
                                  last_contained_log_timestamp=snap.last_contained_log_timestamp)
            self.taken += 1
        else:
            load_snapshot(loader, snap, end_offset=sid.end_offset, epoch=sid.epoch)
            self.loaded += 1
        if seed is not None:
            seed(loader, snap.header_entries)
        if keep and fresh and len(loader.faults) == faults and loader.publishes == 1 and loader.idle \
                and loader.last_publish is not None:
            kept = _Kept(loader, replayer, seed)
            kept.delta.settle(kept.image)  # (a load's delta holds every partition; adopters read no topic changes)
            self._done[key] = kept
            while len(self._done) > self.keep_limit:
                self._done.popitem(last=False)

    def _across(self, key: tuple[Any, ...], replayer: Replayer, seed: Seed | None,
                snap: SnapshotFile) -> _Kept | None:
        """A kept load of the same snapshot id and content (`key` past its software) made
        under another software, with the same `seed`, whose records replay alike under
        `replayer` (the loader's software); None if none. What the records read is learnt
        from `snap` (a decode pass) only when such a load is kept, and kept with it."""
        rest = key[1:]
        for other, kept in self._done.items():
            if other[0] == key[0] or other[1:] != rest or kept.seed is not seed:
                continue
            if kept.reads is None:
                self.reads_passes += 1
                kept.reads = batch_reads(chain(snap.header_entries, snap.data_entries()))
            if records_replay_alike(kept.replayer, replayer, kept.reads):
                return kept
        return None

    def _content(self, snap: SnapshotFile, identity: Identity | None) -> tuple[int, bytes]:
        """`snapshot_content(snap)`, or the content a load found in another file placed from
        the same write (`SnapshotCopies.find`) when `snap` was read from the file that had
        `identity` before and after the read: links and restamped copies of a write hold
        the same records, header and batches (only batch timestamps and CRCs differ)."""
        written = self.writes.find(identity[:4]) if identity is not None else None
        if written is not None:
            if written.content is not None:
                self.known += 1
                return written.content
        content = snapshot_content(snap)
        if written is not None:
            written.content = content
        return content

    def _written(self, path: Path, identity: Identity | None, sid: SnapshotId, registry: Any,
                 reads_like: ReadsLike | None) -> MetadataImage | None:
        """The image `writes` wrote the file at `path` from, when a load of it by this
        loader's software gives that image: the file is still the one written (its identity,
        taken before it was read, and again now), written as `sid` with this registry and no
        writer line of its own (the emitter's key: snapshot id, metadata.version, writer
        line, software, registry, batch limits), by software whose files this one loads as
        written (`reads_like(software, image)`: `replays_alike`, which also rules out the
        losses Kafka makes silently; `writes` keeps no write Kafka refuses for a loss), so
        the file's records replay to that image's metadata; the provenance comes from the
        file (`adopt_snapshot`)."""
        if reads_like is None or identity is None or identity != _identity(path):
            return None
        found = self.writes.written_from(identity[:4])
        if found is None:
            return None
        image, key = found
        if not isinstance(key, tuple) or len(key) != 7:
            return None
        written_sid, level, writer_line, software, registry_id, _, _ = key
        if written_sid != sid or level != image.metadata_version or writer_line is not None \
                or registry_id != id(registry) or not reads_like(software, image):
            return None
        return image

    def _remember(self, identity: Identity, content: tuple[int, bytes]) -> None:
        self._hashes[identity] = content
        while len(self._hashes) > KEEP_HASHES:
            self._hashes.popitem(last=False)


def replays_alike(writer: Catalog, reader: Catalog, image: MetadataImage) -> bool:
    """Whether the snapshot `writer`'s software writes of `image` (without a writer line of
    its own, at the image's metadata.version) loads under `reader`'s software to `image`'s
    metadata. A write Kafka would refuse for a loss is never kept (SnapshotCopies), but two
    are silent: ELR fields where the writer does not write them, and the metadata.version
    itself below the first level that has its record. Replay looks at its
    catalog only for the metadata.version level (which both must know, as the same level),
    whether a kraft.version FeatureLevelRecord is kept (written only when the image has
    kraft.version finalized) and which ConfigRecords are kept (image.delta,
    image.components.features); the record classes come from the registry, which the
    caller compares."""
    level = image.metadata_version
    if level is None:
        return False
    try:
        mv = writer.mv_from_level(level)
        if not mv.level == reader.mv_from_level(level).level == level:
            return False
    except VersionsError:
        return False
    if not writer.supports("metadata_version_record", mv):
        return False  # (the level is not written: a load finds none)
    if writer.keeps_kraft_version_feature() != reader.keeps_kraft_version_feature() \
            and any(name == KRAFT_VERSION for name, _ in image.features.finalized):
        return False
    if writer.config_replay_filter() != reader.config_replay_filter():
        return False
    if not elr_written(None, resolve_writer_line(None, writer), image.features, writer, mv):
        return not image.topics.holds_elr()
    return True


def snapshot_content(snap: SnapshotFile) -> tuple[int, bytes]:
    """What a loader takes from the checked snapshot `snap` (`read_snapshot`: framing, every
    CRC, header, footer, offsets): its batches' bytes without their timestamps, nor the CRC
    over them. Nodes write the same snapshot at different times (a copy restamped for
    another clock, storage.restamp.restamp_batches); what a load gives does not depend on
    when: the records, the header's last contained log time and the id are all kept.
    BLAKE3: as collision-proof as the content it stands for needs, and over a 128 MB
    snapshot five times as fast as SHA-256 with SHA instructions, on one core (27 against
    135 ms here): every snapshot load and deep check of a file hashes it, 35 files of a
    million partitions in the 1M what-if."""
    h = blake3()
    for fb in snap.batches:
        b = memoryview(fb.batch.raw)
        h.update(b[:17])  # (base offset, length, leader epoch, magic)
        h.update(b[21:27])  # (attributes, last offset delta)
        h.update(b[43:])  # (producer, sequence, record count, records)
    return len(snap.batches), h.digest()


def _identity(path: Path) -> Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # (reading it names the problem)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


__all__ = ["SnapshotShare", "snapshot_content"]
