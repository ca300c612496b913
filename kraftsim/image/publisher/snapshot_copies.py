"""Snapshot files encoded once per identical image, and placed in every other directory
that would get the same bytes.

A snapshot's bytes are a pure function of the image, the metadata.version and writer line
it is written at, the record registry, the header records, the batch limits, the snapshot
id and the clock's timestamp. Nodes that stand on one image object (kraftsim.sim.node's
commit and snapshot shares make them) and run the same software therefore write the same
file; encoding it once per node is the cost of a snapshot step multiplied by the cluster
size. `SnapshotCopies` remembers, per image object and the rest of that key, which file
was written, and `place` gives another directory the file as a hard link (or a byte copy
where links are not possible) — same name, same bytes, same mode.

What makes this exact: the image is compared by identity (and held, so its id cannot be
reused while it is kept); everything else that goes into the bytes is in the key, but the
clock: it only stamps batches, so a file for another timestamp is a copy of a kept one
with its batches restamped (same boundaries, same records, new timestamps and CRCs).
The clock is asked once when a copy is placed, and a file is kept only if its write got
one timestamp (`SnapshotEmitter` records them), so a clock must not move during one emit
— a simulation's virtual clock does not. A source that was deleted (retention) or is no
longer the file written (replaced, rewritten: its device, inode, size and mtime are
checked) is skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Hashable, Sequence

from kraftsim.image.image import MetadataImage
from kraftsim.image.writer.image_writer import TopicValues
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.snapshot import file_identity, place_snapshot_copy

#: Writes kept. Each entry holds its image alive, and an image the nodes have moved on from
#: costs what changed since (at a million partitions, after a roll, most of the image). The
#: nodes that write one image do so together (a snapshot step, or the same commit reaching
#: the generator's trigger), but once per software: in a broker roll the controllers on the
#: new release, the brokers still on the old one and those already rolled write three files
#: of one commit. Four keep a stopped broker's last write until it starts again (with two,
#: 3 of the 30 broker restarts of the 1M what-if decoded a file of a million records).
KEEP = 4


@dataclass
class WrittenSnapshot:
    """One encoded snapshot: the image it was written from, what it holds, where it is
    (every file placed from it, with its identity and batch timestamp)."""

    image: MetadataImage
    key: Hashable
    header: Sequence[object]
    records: int
    sources: list[tuple[Path, tuple[int, int, int, int], int]] = field(default_factory=list)
    #: The content of its files (kraftsim.sim.node.snapshot_share's `snapshot_content`), once
    #: a reader hashed one: every file of a write holds the same records, header and batch
    #: boundaries (only batch timestamps and CRCs differ), so the next reader takes it.
    content: tuple[int, bytes] | None = None


class SnapshotCopies:
    """Written snapshot files by (image object, everything else that decides their bytes).

    `enabled=False` turns sharing off (every emitter encodes its own file: the plain path,
    for tests that compare the two). `link=False` places byte copies instead of hard links.
    A file wanted at another timestamp than any kept one is a copy with its batches
    restamped (storage.restamp.restamp_batches, made as a kernel copy with each batch's
    header patched): the clock only stamps batches."""

    def __init__(self, keep: int = KEEP, *, enabled: bool = True, link: bool = True) -> None:
        self.keep_limit = keep
        self.enabled = enabled
        self.link = link
        self._done: OrderedDict[tuple[int, Hashable], WrittenSnapshot] = OrderedDict()
        #: Files cleared but still found by `written_from` (see `clear`).
        self._readable: list[WrittenSnapshot] = []
        self.written = 0
        self.linked = 0
        self.copied = 0
        self.restamped = 0
        #: The topics' encoded records of the last write, for the next (a snapshot that
        #: cannot be placed from a kept file is encoded again, but mostly from these).
        #: `clear()` leaves them: they cost one image's records at most, and the write after
        #: a snapshot step (which clears the files) is of an image mostly like its last.
        self.topic_values = TopicValues()

    def clear(self, *, readable: bool = True) -> None:
        """Forget the files written (and let the images they were written from go): no
        file is placed from them any more. `readable`: `written_from` still finds them
        until the next write (`keep`) or clear. Why: a node that restarts from its newest
        file before anyone writes again (the first brokers rolled after a snapshot step)
        would otherwise decode it (at a million partitions, a file of a million records)
        rather than take the image it was written from; until then the images are the
        ones the nodes stand on, or little older."""
        self._readable = list(self._done.values()) if readable else []
        self._done.clear()

    def place(self, image: MetadataImage, key: Hashable, header: Sequence[object], timestamp: int, directory: Path,
              sid: SnapshotId, *, fsync: bool) -> tuple[Path, int] | None:
        """Put the file written for (`image`, `key`) with the header records `header` (compared
        by value) at `timestamp` into `directory`: (its path, its record count), or None when
        there is none to take it from."""
        if not self.enabled:
            return None
        hit = self._done.get((id(image), key))
        if hit is None or hit.image is not image or list(hit.header) != list(header):
            return None
        # Same timestamp first (a link), then any other (a restamped copy).
        for source, identity, stamp in sorted(hit.sources, key=lambda s: s[2] != timestamp):
            if stamp == timestamp:
                placed = place_snapshot_copy(source, identity, directory, sid, link=self.link, fsync=fsync)
            else:
                placed = place_snapshot_copy(source, identity, directory, sid, link=False, fsync=fsync,
                                             restamp=(stamp, timestamp))
            if placed is None:
                hit.sources.remove((source, identity, stamp))
                continue
            placed_identity = file_identity(placed)
            if stamp != timestamp:
                self.restamped += 1
            elif placed_identity[:2] == identity[:2]:
                self.linked += 1
            else:
                self.copied += 1
            hit.sources.append((placed, placed_identity, timestamp))  # (a source still, once the first one is deleted)
            self._done.move_to_end((id(image), key))
            return placed, hit.records
        del self._done[(id(image), key)]  # every file it was written to is gone
        return None

    def written_from(self, identity: tuple[int, int, int, int]) -> tuple[MetadataImage, Hashable] | None:
        """The image and key a kept file (written, linked or copied) whose identity when it
        was placed (`file_identity`: device, inode, size, mtime) is `identity` was written
        from; None if no kept file had it. Read-only: for a reader that would rather take
        the image than decode the file."""
        hit = self.find(identity)
        return None if hit is None else (hit.image, hit.key)

    def find(self, identity: tuple[int, int, int, int]) -> WrittenSnapshot | None:
        """The kept write one of whose files had `identity` when it was placed (see
        `written_from`), or None: for readers that keep what they found in it (`content`)."""
        for hit in chain(self._done.values(), self._readable):
            if any(ident == identity for _, ident, _ in hit.sources):
                return hit
        return None

    def keep(self, image: MetadataImage, key: Hashable, header: Sequence[object], timestamp: int, path: Path,
             records: int) -> None:
        """Remember that `path` holds `image` written with `key` and `header` at `timestamp`."""
        if not self.enabled:
            return
        self.written += 1
        self._readable = []
        self._done[(id(image), key)] = WrittenSnapshot(image, key, list(header), records,
                                                       [(path, file_identity(path), timestamp)])
        self._done.move_to_end((id(image), key))
        while len(self._done) > self.keep_limit:
            self._done.popitem(last=False)


__all__ = ["SnapshotCopies", "WrittenSnapshot"]
