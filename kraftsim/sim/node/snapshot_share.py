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
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Sequence

from kraftsim.image import MetadataLoader, SnapshotCopies, load_snapshot
from kraftsim.protocol.entries import LogEntry
from kraftsim.storage import SnapshotId, read_snapshot
from kraftsim.storage.fileio import read_file

#: Loads kept (each holds an image; images of one cluster share their unchanged parts).
KEEP = 8
#: File identities whose bytes' digest is remembered.
KEEP_HASHES = 64
#: How long a file must have been left alone before its identity stands for its bytes
#: (far above any file system's timestamp granularity).
SETTLED_NS = 1_000_000_000

Identity = tuple[int, int, int, int, int]


class SnapshotShare:
    """Loaded snapshots by (software, snapshot id, the file's bytes)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep_limit = keep
        self._done: OrderedDict[tuple[Any, ...], tuple[Any, ...]] = OrderedDict()
        self._hashes: OrderedDict[Identity, tuple[int, bytes]] = OrderedDict()
        self.loaded = 0
        self.adopted = 0
        self.hashed = 0
        #: Snapshot files written once for the nodes' emitters (`writes.enabled = False`: each encodes its own).
        self.writes = SnapshotCopies()

    def clear(self) -> None:
        self._done.clear()
        self._hashes.clear()
        self.writes.clear()

    def load(self, loader: MetadataLoader, path: Path, sid: SnapshotId, registry: Any, software: tuple[Any, ...],
             seed: Callable[[MetadataLoader, Sequence[LogEntry]], None] | None = None) -> None:
        """Load the snapshot file `path` (id `sid`) into the fresh, idle `loader`, as
        `load_snapshot` then `seed(loader, header)` would; from another loader's load of
        the same bytes when one was kept."""
        raw: bytes | None = None
        identity = _identity(path)
        digest = self._hashes.get(identity) if identity is not None else None
        if digest is None:
            raw = read_file(path)
            digest = _digest(raw)
            self.hashed += 1
            if identity is not None and identity == _identity(path) \
                    and time.time_ns() - max(identity[3], identity[4]) >= SETTLED_NS:
                self._hashes[identity] = digest
                while len(self._hashes) > KEEP_HASHES:
                    self._hashes.popitem(last=False)
        key = (software, sid.end_offset, sid.epoch, *digest)
        hit = self._done.get(key)
        if hit is not None and loader.idle and loader.publishes == 0:
            delta, image, manifest, kraft_version, voters = hit
            loader.adopt(delta, image, manifest, kraft_version=kraft_version, voters=voters)
            self._done.move_to_end(key)
            self.adopted += 1
            return
        faults = len(loader.faults)
        fresh = loader.idle and loader.publishes == 0
        if raw is None:  # (the bytes loaded are the ones the load is kept under)
            raw = read_file(path)
            key = (software, sid.end_offset, sid.epoch, *_digest(raw))
        snap = read_snapshot(path, registry, data=raw)
        load_snapshot(loader, snap, end_offset=sid.end_offset, epoch=sid.epoch)
        if seed is not None:
            seed(loader, snap.header_entries)
        self.loaded += 1
        if fresh and len(loader.faults) == faults and loader.publishes == 1 and loader.idle \
                and loader.last_publish is not None:
            delta, image, manifest = loader.last_publish
            self._done[key] = (delta, image, manifest, loader.kraft_version, loader.voters)
            while len(self._done) > self.keep_limit:
                self._done.popitem(last=False)


def _identity(path: Path) -> Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # (reading it names the problem)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _digest(raw: bytes) -> tuple[int, bytes]:
    return len(raw), hashlib.blake2b(raw, digest_size=32).digest()


__all__ = ["SnapshotShare"]
