"""Snapshot files checked whole once, and their restamped copies checked against them.

At a million partitions every node writes a snapshot after every broker event. Nodes on
one image write the same bytes, and a node writing at another time gets a copy whose
batches differ only in their timestamps and CRCs (image.publisher's SnapshotCopies,
storage.restamp.restamp_patches). Read back, each copy was parsed and checked again
batch by batch (`read_snapshot`) and hashed (`snapshot_content`) only to learn that it
holds what the first file held.

Here a file is first compared with a file checked whole before, of the same length and
registry, batch by batch along that file's checked layout: its bytes must be equal outside
each batch's CRC and timestamps (compared in bulk), and each batch's CRC must be right.
The checked file's CRCs were computed from its bytes and CRC-32C is linear, so the right
CRC of a batch that differs only in its timestamps is the checked one changed by the CRC
of the timestamps' difference (`crc32c_zero_extend`), found without reading the batch
again. A file that passes is one `read_snapshot` accepts (framing, offsets, header, footer
and records are the checked file's bytes; every CRC is right) with the checked file's
content; any other (a record changed, a CRC left stale, other timestamps under the old
CRC, another length) is read and checked whole, and raises as `read_snapshot` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kraftsim.protocol.batch import CRC_AT, TIMESTAMPS_AT, crc32c
from kraftsim.protocol.registry import Registry
from kraftsim.sim.node.snapshot_share import snapshot_content
from kraftsim.storage import SnapshotFile, read_snapshot
from kraftsim.storage.restamp import crc32c_zero_extend

#: Files checked whole kept to compare others with (each holds its bytes: at a million
#: partitions 128 MB). One is enough: the copies of a file are read back right after it,
#: in the same deep check (in the 1M shape at 100k, keeping one and emptying it after
#: every check matches as many as keeping more), and with one, no file's bytes are held
#: beyond the file being read while another is loaded (the checks' peak), nor between checks.
KEEP = 1

# Where a v2 batch's CRC (of everything from the attributes on) and its base and max
# timestamps end.
_CRC_END, _STAMPS_END = CRC_AT + 4, TIMESTAMPS_AT + 16
_ZEROS_CRC = crc32c(bytes(_STAMPS_END - TIMESTAMPS_AT))


class Checked(NamedTuple):
    """A snapshot file checked whole: its bytes, the registry it was read with, its
    batches (position, size) and its content (`snapshot_content`)."""

    raw: bytes
    registry: Registry
    batches: tuple[tuple[int, int], ...]
    content: tuple[int, bytes]


class CheckedSnapshots:
    """`content(path, registry, raw)`: `snapshot_content` of the checked file, matched with
    a file checked whole before where it differs from it only in timestamps and CRCs."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._kept: list[Checked] = []
        #: The last file `content` parsed, with the bytes it parsed, until `take_parsed`.
        self._parsed: tuple[bytes, SnapshotFile] | None = None
        #: Files read and checked whole, and files matched with one of those.
        self.checked = 0
        self.matched = 0

    def clear(self) -> None:
        self._kept.clear()
        self._parsed = None

    def take_parsed(self, raw: bytes | None) -> SnapshotFile | None:
        """What the last `content` call parsed, if it parsed `raw` (a file matched with a
        checked one is not parsed), for a load of the same bytes not to parse them again;
        let go either way (it holds a copy of the file's batches)."""
        parsed, self._parsed = self._parsed, None
        return parsed[1] if parsed is not None and parsed[0] is raw else None

    def content(self, path: Path, registry: Registry, raw: bytes) -> tuple[int, bytes]:
        """What a loader takes from the snapshot file `path` holding `raw` (a problem raises
        LogFileError, as `read_snapshot` raises it)."""
        self._parsed = None
        for kept in self._kept:
            if kept.registry is registry and len(kept.raw) == len(raw) and restamped_from(kept, raw):
                self.matched += 1
                return kept.content
        snap = read_snapshot(path, registry, data=raw)
        content = snapshot_content(snap)
        self._parsed = (raw, snap)
        self.checked += 1
        self._kept.insert(0, Checked(raw, registry, tuple((fb.position, fb.batch.size) for fb in snap.batches),
                                     content))
        del self._kept[self.keep:]
        return content


def restamped_from(kept: Checked, raw: bytes) -> bool:
    """Whether `raw` (as long as `kept.raw`) is `kept`'s bytes with only batch timestamps
    changed, each batch's CRC right for its own bytes."""
    ref = kept.raw
    view = memoryview(ref)
    try:
        for pos, size in kept.batches:
            stamps, end = pos + TIMESTAMPS_AT, pos + size
            if not (raw.startswith(view[pos:pos + CRC_AT], pos)
                    and raw.startswith(view[pos + _CRC_END:stamps], pos + _CRC_END)
                    and raw.startswith(view[pos + _STAMPS_END:end], pos + _STAMPS_END)):
                return False
            crc = int.from_bytes(ref[pos + CRC_AT:pos + _CRC_END], "big")
            old, new = ref[stamps:pos + _STAMPS_END], raw[stamps:pos + _STAMPS_END]
            if old != new:
                change = (int.from_bytes(old, "big") ^ int.from_bytes(new, "big")).to_bytes(len(old), "big")
                crc ^= crc32c_zero_extend(crc32c(change) ^ _ZEROS_CRC, end - pos - _STAMPS_END)
            if int.from_bytes(raw[pos + CRC_AT:pos + _CRC_END], "big") != crc:
                return False
        return True
    finally:
        view.release()


__all__ = ["Checked", "CheckedSnapshots", "restamped_from"]
