"""The metadata log directory (`__cluster_metadata-0`): segments, appends, reads, truncation.

This is Kafka's UnifiedLog reduced to what KRaft's metadata partition uses: segments named
by base offset, appends at the log end offset with rolling at a size limit
(`metadata.log.segment.bytes`), reads by offset through a sorted map of segments, and
truncation to an offset. Opening a directory recovers it like Kafka does at start-up (cut
a torn or corrupt tail, delete leftovers of interrupted writes) and reports every action;
read-only, it reports the same actions and changes nothing on disk.
"""

from __future__ import annotations


import struct
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, NamedTuple, Sequence

from sortedcontainers import SortedDict

from kraftsim.errors import CorruptRecordException, KraftsimError
from kraftsim.protocol.batch import LOG_OVERHEAD, RecordBatch, parse_batch
from kraftsim.protocol.entries import LogEntry, Payload, encode_control_batch, encode_data_batch
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import FileBatch, decode_file_batch
from kraftsim.storage.fileio import fsync_dir
from kraftsim.storage.names import (
    LOG_SUFFIX, SnapshotId, SnapshotState, parse_segment_name, parse_snapshot_name, segment_file_name,
    snapshot_file_name,
)
from kraftsim.storage.reaper import settle
from kraftsim.storage.recovery import Damage, RecoveryAction, RecoveryKind
from kraftsim.storage.safepath import refuse_symlinks
from kraftsim.storage.segment import IndexEntry, LogSegment, ScanProblem, shared_entry
from kraftsim.storage.snapshot import SnapshotFile, list_snapshots, read_snapshot, snapshot_path

# metadata.log.segment.bytes default (Kafka requires at least 8 MiB; tests use far less).
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024

Validate = Literal["last", "all", "framing"]
#: A batch's length field (bytes 8-11).
_LENGTH = struct.Struct(">i")
#: tuple.__new__: a NamedTuple made from a tuple of its fields without its Python-level __new__.
_new_tuple = tuple.__new__


class EpochEntry(NamedTuple):
    """One line of leader-epoch-checkpoint: the first offset written in a leader epoch."""

    epoch: int
    start_offset: int


def epoch_starts(batches: Iterable[tuple[int, int]], log_start_offset: int) -> list[EpochEntry]:
    """Kafka's leader epoch cache from (epoch, base offset) of each batch in offset order:
    an entry each time a batch carries a higher epoch, those at or below the log start
    collapsed into one that starts there."""
    return _collapsed(_rising_epochs(batches), log_start_offset)


def _rising_epochs(batches: Iterable[tuple[int, int]]) -> list[EpochEntry]:
    """`epoch_starts` before the log start: an entry each time a batch carries a higher epoch."""
    entries: list[EpochEntry] = []
    for epoch, base in batches:
        if epoch >= 0 and (not entries or epoch > entries[-1].epoch):
            entries.append(EpochEntry(epoch, base))
    return entries


def _collapsed(entries: list[EpochEntry], log_start_offset: int) -> list[EpochEntry]:
    """The entries at or below the log start collapsed into one that starts there."""
    below = [x for x in entries if x.start_offset <= log_start_offset]
    if below and below[-1].start_offset < log_start_offset:
        entries = [EpochEntry(below[-1].epoch, log_start_offset)] + entries[len(below):]
    return entries


class SegmentMap(SortedDict):  # type: ignore[misc]  # (sortedcontainers has no types)
    """Base offset -> LogSegment, with the last segment kept at hand until the map changes:
    `log_end_offset` is asked on every event of a simulation, and finding the last item of
    a SortedDict each time is most of that cost."""

    def __init__(self) -> None:
        super().__init__()
        self._last: LogSegment | None = None

    def last_segment(self) -> LogSegment | None:
        if self._last is None and self:
            self._last = self.peekitem(-1)[1]
        return self._last

    def __setitem__(self, key: object, value: object) -> None:
        self._last = None
        super().__setitem__(key, value)

    def __delitem__(self, key: object) -> None:
        self._last = None
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        self._last = None
        return super().pop(*args)

    def popitem(self, *args: object) -> object:
        self._last = None
        return super().popitem(*args)

    def clear(self) -> None:
        self._last = None
        super().clear()

    def setdefault(self, *args: object) -> object:
        self._last = None
        return super().setdefault(*args)

    def update(self, *args: object, **kwargs: object) -> None:
        self._last = None
        super().update(*args, **kwargs)

    def __ior__(self, other: object) -> SegmentMap:
        self._last = None
        return super().__ior__(other)  # type: ignore[no-any-return]


class MetadataLog:
    """A `__cluster_metadata-0` directory's segments. Use `MetadataLog.open`."""

    def __init__(self, directory: Path, *, read_only: bool, segment_bytes: int, fsync: bool):
        self.directory = directory
        self.read_only = read_only
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        self.segments: SegmentMap = SegmentMap()  # base offset -> LogSegment
        self.recovery: list[RecoveryAction] = []
        self.warnings: list[str] = []  # read-only: what Kafka would refuse to start with
        self.misnamed: list[tuple[LogSegment, IndexEntry]] = []  # segments whose first batch is not their name's offset
        self.findings: list[tuple[LogSegment, ScanProblem]] = []  # wrong, but nothing Kafka's recovery would cut for
        self.log_start_offset = 0
        #: Appends written by the writer thread (storage.background_writes): a simulated node's log.
        self.background_appends = False
        #: `_rising_epochs` of the batches, kept up to date by appends (None: to compute again,
        #: after anything else changed the segments or their batches).
        self._rising: list[EpochEntry] | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, directory: Path | str, *, read_only: bool = False, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
             validate: Validate = "last", fsync: bool = True) -> "MetadataLog":
        """Open (and unless read-only, create and recover) a metadata log directory.

        `validate="last"` checks every batch's CRC in the last segment, as Kafka's
        recovery does after an unclean stop; `"all"` checks every segment; `"framing"` only
        the framing (for a caller that has just checked the same files read-only and found
        nothing to recover). Whatever is
        cut or deleted is listed in `.recovery`.
        """
        directory = Path(directory)
        if segment_bytes < LOG_OVERHEAD:
            raise ValueError(f"segment_bytes {segment_bytes} is too small")
        if not directory.is_dir():
            if read_only or directory.exists():
                raise KraftsimError(f"{directory}: not a directory")
            try:
                directory.mkdir(parents=True)
            except OSError as e:
                raise KraftsimError(f"cannot create {directory}: {e.strerror or e}") from None
        if not read_only:  # recovery and appends never reach a file elsewhere through a link
            refuse_symlinks(directory, recursive=False)
        log = cls(directory, read_only=read_only, segment_bytes=segment_bytes, fsync=fsync)
        try:
            log._load(validate)
        except BaseException:
            log.close()
            raise
        return log

    def to_writable(self, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES, fsync: bool = True) -> bool:
        """Make this log, opened read-only, the log `MetadataLog.open` would give now for
        writing (with these `segment_bytes` and `fsync`), without reading the files again:
        a caller that checks a log read-only before it starts on it (a refusal to look
        for) then scans it once, not twice. Only when the read-only open found nothing to
        recover, delete or refuse: then the writable open would cut and delete nothing and
        index the very same batches (a clean CRC check and a framing walk of the same bytes
        agree), so only the descriptors and the empty log's first segment differ. False
        (and the log unchanged) otherwise."""
        if not self.read_only or self.recovery or self.warnings:
            return False
        refuse_symlinks(self.directory, recursive=False)
        self.read_only = False
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        for seg in self.segments.values():
            seg.writable = True
            seg.release_fd()  # (opened read-only: opened again, for writing, when next used)
        if not self.segments:
            self._new_segment(0)
        return True

    def _act(self, action: RecoveryAction) -> None:
        self.recovery.append(action)

    def _load(self, validate: Validate) -> None:
        settle(self.directory)  # (files this process marked for deletion are gone, not leftovers to report)
        try:
            names = sorted(p.name for p in self.directory.iterdir())
        except OSError as e:
            raise KraftsimError(f"cannot list {self.directory}: {e.strerror or e}") from None
        applied = not self.read_only
        segment_bases: list[int] = []
        snapshots: list[SnapshotId] = []
        leftovers: list[tuple[Path, str]] = []  # deleted last, after the consistency check, as Kafka does
        for name in names:
            path = self.directory / name
            base = parse_segment_name(name)
            if base is not None:
                segment_bases.append(base)
                continue
            snap = parse_snapshot_name(name)
            if snap is not None:
                if snap.state is SnapshotState.FROZEN:
                    snapshots.append(snap.snapshot_id)
                else:
                    what = "an unfinished snapshot" if snap.state is SnapshotState.PART else "a snapshot marked for deletion"
                    leftovers.append((path, f"{what}, left by an interrupted write or clean-up"))
                continue
            if name.endswith(LOG_SUFFIX):
                raise KraftsimError(f"{path}: not a log segment name (expected 20 digits and {LOG_SUFFIX})")
            if name.endswith((".deleted", ".cleaned")):
                leftovers.append((path, "a file left by an interrupted deletion or cleaning"))

        expected: int | None = None
        epoch: int | None = None
        for i, base in enumerate(segment_bases):
            path = self.directory / segment_file_name(base)
            check = validate == "all" or (validate == "last" and i == len(segment_bases) - 1)
            found: list[ScanProblem] = []
            seg, problem = LogSegment.open(path, base, writable=applied, validate=check, expected_next=expected,
                                           min_epoch=epoch, findings=found)
            self.findings += [(seg, f) for f in found]
            self._rising = None
            self.segments[base] = seg
            if seg.entries and seg.entries[0].base_offset != base:
                self.misnamed.append((seg, seg.entries[0]))
            file_size = seg.scanned_size  # (a file another process appends to is taken as it was scanned)
            if problem is None and file_size != seg.size:  # cannot happen: the scan covers what it mapped
                raise AssertionError(f"{path}: scan ended at {seg.size} of {file_size}")
            if problem is not None:
                self._cut(seg, problem.position, file_size, problem.base_offset, problem.reason,
                          torn_tail=problem.torn and i == len(segment_bases) - 1)
                for later in segment_bases[i + 1:]:
                    lpath = self.directory / segment_file_name(later)
                    size = lpath.stat().st_size
                    self._act(RecoveryAction(RecoveryKind.DELETE_SEGMENT, str(lpath),
                                             f"follows the cut at {path} position {problem.position}",
                                             bytes_cut=size, applied=applied))
                    if applied:
                        lpath.unlink()
                break
            expected = seg.next_offset
            epoch = seg.entries[-1].epoch if seg.entries else epoch
            if i < len(segment_bases) - 1:
                seg.close()  # reopened on demand: a long log must not hold a descriptor per segment

        if self.segments:
            self.log_start_offset = self.segments.peekitem(0)[0]
        elif applied:
            self._new_segment(0)

        kept = []
        for sid in snapshots:
            if sid.end_offset < self.log_start_offset:
                leftovers.append((self.directory / snapshot_file_name(sid),
                                  f"snapshot below the log start offset {self.log_start_offset}"))
            else:
                kept.append(sid)
        if self.log_start_offset > 0 and not any(s.end_offset >= self.log_start_offset for s in kept):
            latest = kept[-1] if kept else None
            text = (f"{self.directory}: Inconsistent snapshot state: there must be a snapshot at an offset larger "
                    f"then the current log start offset {self.log_start_offset}, but the latest snapshot is {latest}")
            if applied:
                raise KraftsimError(text)
            self.warnings.append(text)
        for path, reason in sorted(leftovers):
            self._delete_file(path, reason)
        if applied and self.recovery:
            fsync_dir(self.directory)

    def _cut(self, seg: LogSegment, position: int, file_size: int, base_offset: int | None, reason: str, *,
             torn_tail: bool = False) -> None:
        applied = not self.read_only
        self._act(RecoveryAction(RecoveryKind.TRUNCATE, str(seg.path), reason, position=position,
                                 bytes_cut=file_size - position, base_offset=base_offset, applied=applied,
                                 torn_tail=torn_tail))
        if applied:
            self._rising = None
            seg.truncate_to_size(position)
            if self.fsync:
                seg.flush()

    def _delete_file(self, path: Path, reason: str) -> None:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        applied = not self.read_only
        self._act(RecoveryAction(RecoveryKind.DELETE_FILE, str(path), reason, bytes_cut=size, applied=applied))
        if applied:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                raise KraftsimError(f"cannot delete {path}: {e.strerror or e}") from None

    def _new_segment(self, base_offset: int) -> LogSegment:
        seg = LogSegment.create(self.directory / segment_file_name(base_offset), base_offset)
        self._rising = None
        self.segments[base_offset] = seg
        if self.fsync:
            fsync_dir(self.directory)
        return seg

    # ------------------------------------------------------------------ queries

    @property
    def active_segment(self) -> LogSegment | None:
        seg = self.segments._last
        return seg if seg is not None else self.segments.last_segment()

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets (Kafka's LEO)."""
        seg = self.segments._last  # (last_segment(), inlined: asked on every event of a simulation)
        if seg is None:
            seg = self.segments.last_segment()
            if seg is None:
                return self.log_start_offset
        entries = seg.entries
        return entries[-1].last_offset + 1 if entries else seg.base_offset

    def snapshot_ids(self) -> list[SnapshotId]:
        """The frozen snapshots in the directory at or above the log start offset, oldest first."""
        return [s for s in list_snapshots(self.directory) if s.end_offset >= self.log_start_offset]

    def read_latest_snapshot(self, registry: Registry | None = None) -> SnapshotFile | None:
        """The newest frozen snapshot at or above the log start that holds records (end offset
        above 0), read; None when there is none. What a controller loads before the log."""
        ids = [s for s in self.snapshot_ids() if s.end_offset > 0]
        return read_snapshot(snapshot_path(self.directory, ids[-1]), registry) if ids else None

    def size_in_bytes(self) -> int:
        return sum(seg.size for seg in self.segments.values())

    def index_entries(self) -> Iterator[tuple[LogSegment, IndexEntry]]:
        for seg in self.segments.values():
            for e in seg.entries:
                yield seg, e

    def gaps(self) -> list[tuple[int, int]]:
        """Offset ranges [from, to) missing between the log start and the log end offset."""
        out = []
        expected = self.log_start_offset
        for _, e in self.index_entries():
            if e.base_offset > expected:
                out.append((expected, e.base_offset))
            expected = max(expected, e.next_offset)
        return out

    def torn_tail(self) -> RecoveryAction | None:
        """The cut of a torn last batch, if opening found one: recovery, not damage."""
        return next((a for a in self.recovery if a.torn_tail), None)

    def damage(self) -> list[Damage]:
        """Everything that makes the log as opened less than the whole log, in offset order:
        a cut that is not a torn tail (with the segments after it), missing offsets, a log
        start no snapshot covers. A load must stop below the first (or refuse to load)."""
        found: list[Damage] = []
        cuts = [a for a in self.recovery if a.kind is RecoveryKind.TRUNCATE and not a.torn_tail]
        later = [a for a in self.recovery if a.kind is RecoveryKind.DELETE_SEGMENT]
        for cut in cuts:
            after = f" and {len(later)} later segment(s) cannot be read" if later else ""
            where = f"{cut.path} position {cut.position}"
            offset = cut.base_offset if cut.base_offset is not None and cut.base_offset >= 0 else self.log_end_offset
            found.append(Damage(min(offset, self.log_end_offset), where, cut.reason + after))
        for start, stop in self.gaps():
            found.append(Damage(start, str(self.directory), f"offsets {start}..{stop - 1} are missing"))
        for seg, f in self.findings:
            found.append(Damage(f.base_offset if f.base_offset is not None else seg.base_offset,
                                f"{seg.path} position {f.position}", f.reason))
        for seg, first in self.misnamed:
            found.append(Damage(min(seg.base_offset, first.base_offset), f"{seg.path} position {first.position}",
                                f"the segment's name says it starts at offset {seg.base_offset}, but its first batch "
                                f"starts at {first.base_offset}"))
        for text in self.warnings:
            found.append(Damage(self.log_start_offset, str(self.directory), text))
        return sorted(found, key=lambda d: d.offset)

    def leader_epochs(self) -> list[EpochEntry]:
        """The leader epoch cache Kafka derives from batch epochs (leader-epoch-checkpoint's lines).

        An entry starts each time a batch carries a higher epoch; entries at or below the
        log start offset collapse into one that starts at the log start offset.
        """
        if self._rising is None:  # (kept by appends until something else changes the log)
            self._rising = _rising_epochs((e.epoch, e.base_offset) for _, e in self.index_entries())
        return _collapsed(list(self._rising), self.log_start_offset)

    def locate(self, offset: int) -> tuple[object, int] | None:
        """The first (segment key, batch index) whose batch ends at or after `offset`, None
        past the end: `segments[key].entries[index]` is its index entry."""
        return self._locate(offset)

    def _locate(self, offset: int) -> tuple[object, int] | None:
        """The first (segment key, batch index) whose batch ends at or after `offset`."""
        last = self.segments.last_segment()
        if last is not None and offset >= last.base_offset:  # (the common case: near the log end)
            i = last.find(offset)
            return (last.base_offset, i) if i < len(last) else None
        keys = self.segments.keys()
        k = max(self.segments.bisect_right(offset) - 1, 0)
        for key in keys[k:]:
            seg = self.segments[key]
            i = seg.find(offset)
            if i < len(seg):
                return key, i
        return None

    def read(self, offset: int, *, check_crc: bool = True) -> FileBatch:
        """The batch holding `offset` (or, inside a gap, the first batch after it)."""
        if offset < self.log_start_offset or offset >= self.log_end_offset:
            raise KraftsimError(f"{self.directory}: offset {offset} is outside the log "
                                f"[{self.log_start_offset}, {self.log_end_offset})")
        found = self._locate(offset)
        if found is None:
            raise KraftsimError(f"{self.directory}: no batch holds offset {offset}")
        key, i = found
        segment: LogSegment = self.segments[key]
        return segment.read_batch(i, check_crc=check_crc)

    def batches(self, start_offset: int | None = None, *, check_crc: bool = True) -> Iterator[FileBatch]:
        """Every batch from the one holding `start_offset` (default: the log start) to the end."""
        start = self.log_start_offset if start_offset is None else max(start_offset, self.log_start_offset)
        last = self.segments._last
        if last is None:
            last = self.segments.last_segment()
        if last is not None and start >= last.base_offset:  # (_locate's common case, inlined: near the log end)
            read = last.read_batch
            for j in range(last.find(start), len(last.entries)):
                yield read(j, check_crc=check_crc)
            return
        found = self._locate(start)
        if found is None:
            return
        key, i = found
        for k in self.segments.irange(minimum=key):
            seg = self.segments[k]
            for j in range(i if k == key else 0, len(seg)):
                yield seg.read_batch(j, check_crc=check_crc)

    def entries(self, start_offset: int | None = None, registry: Registry | None = None) -> Iterator[LogEntry]:
        """Decoded records with offsets ≥ `start_offset`, in offset order."""
        start = self.log_start_offset if start_offset is None else start_offset
        for fb in self.batches(start):
            for entry in decode_file_batch(fb, registry):
                if entry.offset >= start:
                    yield entry

    # ------------------------------------------------------------------ changes

    def _check_writable(self) -> None:
        if self.read_only:
            raise KraftsimError(f"{self.directory}: the log is open read-only")

    def append(self, raw: bytes, *, assign_offset: bool = False, checked: RecordBatch | None = None) -> IndexEntry:
        """Append one whole batch at the log end offset, rolling the segment first if it would
        grow past `segment_bytes`. With `assign_offset`, the batch's base offset is set to the
        log end offset (the base offset is outside the CRC, so this is what a leader does).
        `checked`: the checked parse of these very bytes (`checked.raw is raw`) another log
        made, which spares parsing them again."""
        if self.read_only:
            self._check_writable()
        length = _LENGTH.unpack_from(raw, 8)[0] if len(raw) >= LOG_OVERHEAD else -LOG_OVERHEAD
        if length + LOG_OVERHEAD != len(raw):
            raise KraftsimError(f"{self.directory}: cannot append: the batch's length field says "
                                f"{length + LOG_OVERHEAD} bytes, {len(raw)} given")
        if checked is not None and checked.raw is raw:
            batch = checked
        else:
            try:
                batch = parse_batch(raw)
            except CorruptRecordException as e:
                raise KraftsimError(f"{self.directory}: cannot append: {e}") from None
        segments = self.segments
        seg = segments._last  # (active_segment and log_end_offset, inlined: every replica appends)
        if seg is None:
            seg = segments.last_segment()
        size = 0  # (the active segment's size: seg.size, inlined)
        if seg is None:
            leo = self.log_start_offset
        else:
            seg_entries = seg.entries
            if seg_entries:
                last = seg_entries[-1]
                leo, size = last.last_offset + 1, last.position + last.size
            else:
                leo = seg.base_offset
        if assign_offset:
            raw = struct.pack(">q", leo) + raw[8:]
        elif batch.base_offset != leo:
            raise KraftsimError(f"{self.directory}: cannot append a batch at offset {batch.base_offset}: "
                                f"the log end offset is {leo}")
        if seg is None:
            seg = self._new_segment(leo)
            size = seg.size
        elif size and size + len(raw) > self.segment_bytes:  # (a segment with batches has a size above 0)
            seg = self.roll()
            size = seg.size
        entry = shared_entry(_new_tuple(IndexEntry, (leo, leo + batch.last_offset_delta, size, len(raw),
                                                     batch.partition_leader_epoch, batch.max_timestamp)))
        rising = self._rising
        if rising is not None and entry.epoch >= 0 and (not rising or entry.epoch > rising[-1].epoch):
            rising.append(EpochEntry(entry.epoch, leo))
        seg.append(raw, entry, None if assign_offset else batch,  # (an assigned offset changed the bytes)
                   background=self.background_appends)
        return entry

    def append_records(self, payloads: Sequence[Payload], *, epoch: int, timestamp: int,
                       control: bool = False) -> IndexEntry:
        """Encode records as one batch at the log end offset and append it."""
        encode = encode_control_batch if control else encode_data_batch
        return self.append(encode(self.log_end_offset, payloads, epoch=epoch, timestamp=timestamp))

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (kept if it is already empty)."""
        self._check_writable()
        seg = self.active_segment
        leo = self.log_end_offset
        if seg is not None:
            if seg.base_offset == leo and not len(seg):
                return seg
            if self.fsync:
                seg.flush()
            seg.close()  # reopened read-write on demand
        return self._new_segment(leo)

    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset is ≥ `offset`; segments starting after it go.

        As in Kafka, a segment whose base offset equals `offset` stays, emptied; below the
        log start offset the log is emptied and starts again at `offset`.
        """
        self._check_writable()
        if offset >= self.log_end_offset:
            return
        self._rising = None
        if offset < self.log_start_offset:
            for seg in list(self.segments.values()):
                seg.delete()
            self.segments.clear()
            self.log_start_offset = offset
            self._new_segment(offset)
            return
        for key in list(self.segments.irange(minimum=offset, inclusive=(False, True))):
            self.segments.pop(key).delete()
        seg = self.active_segment
        assert seg is not None
        i = seg.find(offset)
        if i < len(seg):
            seg.truncate_to_size(seg.entries[i].position)
        if self.fsync:
            seg.flush()
            fsync_dir(self.directory)

    def advance_log_start_offset(self, offset: int) -> list[Path]:
        """Raise the log start offset (after a snapshot) and delete segments wholly below it.

        The active segment is never deleted. Returns the deleted segment files.
        """
        self._check_writable()
        if offset > self.log_end_offset:
            raise KraftsimError(f"{self.directory}: cannot move the log start offset to {offset}, past the log end "
                                f"offset {self.log_end_offset}")
        self.log_start_offset = max(self.log_start_offset, offset)
        self._rising = None
        deleted = []
        keys = list(self.segments.keys())
        for key, nxt in zip(keys, keys[1:]):
            if nxt <= self.log_start_offset:
                seg = self.segments.pop(key)
                seg.delete()
                deleted.append(seg.path)
        if deleted and self.fsync:
            fsync_dir(self.directory)
        return deleted

    def flush(self) -> None:
        """fsync the active segment (older ones were flushed when they were rolled)."""
        seg = self.active_segment
        if seg is not None and not self.read_only:
            seg.flush()

    def close(self) -> None:
        """Close the segments; the files deleted meanwhile are gone once it returns."""
        for seg in self.segments.values():
            seg.close()
        settle(self.directory)

    def __enter__(self) -> "MetadataLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
