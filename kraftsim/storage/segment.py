"""One log segment file (`%020d.log`): its batch index, reads, appends and truncation.

Opening a segment walks its batch headers once and keeps, in memory, where each batch
starts (Kafka keeps a sparse `.index` file for this; kraftsim neither needs nor writes
one). The walk stops at the first batch that cannot be trusted and says why, so that the
log can cut the tail off (or, read-only, just report it) the way Kafka's recovery does.
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kraftsim.errors import CorruptRecordException, KraftsimError, LogFileError
from kraftsim.protocol.batch import (
    _CRC_START, LOG_OVERHEAD, MAGIC_AT, MAGIC_V2, RECORD_BATCH_OVERHEAD, RecordBatch, TornTail, check_batch_at, crc32c_slicer,
    parse_batch,
)
from kraftsim.storage.background_writes import WRITES
from kraftsim.storage.batchfile import FileBatch
from kraftsim.storage.fileio import pwrite_all
from kraftsim.regular_file import require_regular_file
from kraftsim.storage.names import DELETED_FILE_SUFFIX
from kraftsim.storage.reaper import mark_and_discard

#: Batches at the end of a segment whose checked parse an open segment keeps (see
#: LogSegment): a simulated leader serves its newest batches to every follower, and each
#: replica reads what it appended again to apply it once committed.
PARSED_TAIL = 256
#: tuple.__new__: a NamedTuple made from a tuple of its fields without its Python-level __new__.
_new_tuple = tuple.__new__

# base offset, length, partition leader epoch, magic, crc, attributes, last offset delta,
# base timestamp, max timestamp, producer id, producer epoch, base sequence, record count
_HEAD = struct.Struct(">qiibIhiqqqhii")


class IndexEntry(NamedTuple):
    """Where one batch is and what offsets it holds."""

    base_offset: int
    last_offset: int
    position: int
    size: int
    epoch: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


#: Index entries by value, shared by every log of the process (`shared_entry`): the replicas
#: of a metadata log hold equal entries (offsets, position, size, epoch, timestamp) for each
#: batch, and a simulated cluster would otherwise keep one copy per node of each entry and of
#: its ints. Entries are immutable and compared by value, never by identity, so sharing
#: changes nothing but memory. Emptied past `SHARED_ENTRIES_LIMIT` (and by `forget_shared_entries`).
_shared_entries: dict[IndexEntry, IndexEntry] = {}
SHARED_ENTRIES_LIMIT = 1 << 20


def shared_entry(entry: IndexEntry) -> IndexEntry:
    """The entry equal to `entry` another log holds already, else `entry` (kept for the next)."""
    found = _shared_entries.get(entry)
    if found is not None:
        return found
    if len(_shared_entries) >= SHARED_ENTRIES_LIMIT:
        _shared_entries.clear()
    _shared_entries[entry] = entry
    return entry


def forget_shared_entries() -> None:
    """Drop the shared index entries (the logs keep theirs): when a simulation closes."""
    _shared_entries.clear()


class ScanProblem(NamedTuple):
    """The first untrustworthy bytes of a segment: from `position` to the end of the file."""

    position: int
    base_offset: int | None
    reason: str
    #: The bytes are a batch cut short by the end of the file (what a crash mid-write leaves),
    #: not a whole batch that is wrong.
    torn: bool = False


def scan_segment(data: bytes, base_offset: int, *, validate: bool,
                 expected_next: int | None = None, min_epoch: int | None = None,
                 findings: list[ScanProblem] | None = None) -> tuple[list[IndexEntry], ScanProblem | None]:
    """Index the batches of a segment's bytes, stopping at the first bad one.

    Without `validate`, only the framing is checked (length, magic, offsets), as Kafka
    trusts segments below its recovery point; with it, every batch's CRC-32C too.
    `expected_next` and `min_epoch` carry the offset and epoch the previous segment ended with.
    What Kafka's recovery would not cut for (an offset range that does not match the record
    count, a falling epoch) goes into `findings`, when given, and the walk goes on.
    """
    entries: list[IndexEntry] = []
    end = len(data)
    pos = 0
    expected = base_offset if expected_next is None else max(base_offset, expected_next)
    head, append = _HEAD.unpack_from, entries.append
    crc_of = crc32c_slicer(data)  # (CRC-32C of data[start:end], no copy where it can)
    prev = None  # the epoch of the last batch indexed (entries[-1].epoch; None before any)
    while pos < end:
        remaining = end - pos
        if remaining >= RECORD_BATCH_OVERHEAD:
            # The common case, one header read: a whole batch that is right (magic, CRC and
            # count when validating; offsets and epochs in order) is indexed here; anything
            # else goes the long way below, which names the problem.
            base, length, epoch, magic, crc, _, last_delta, _, max_ts, _, _, _, count = head(data, pos)
            size = length + LOG_OVERHEAD
            if (RECORD_BATCH_OVERHEAD <= size <= remaining and magic == MAGIC_V2 and 0 <= last_delta
                    and count == last_delta + 1 and base >= expected
                    and (epoch >= prev if prev is not None else (min_epoch is None or epoch >= min_epoch))
                    and (not validate or (count >= 0 and crc_of(pos + _CRC_START, pos + size) == crc))):
                append(shared_entry(_new_tuple(IndexEntry, (base, base + last_delta, pos, size, epoch, max_ts))))
                prev = epoch
                expected = base + last_delta + 1
                pos += size
                continue
        problem, pos, expected = _scan_step(data, pos, expected, entries, validate=validate, min_epoch=min_epoch,
                                            findings=findings)
        if problem is not None:
            return entries, problem
        prev = entries[-1].epoch if entries else None
    return entries, None


#: Bytes of a segment file its scan reads at a time (`scan_segment_file`): past a few MiB a
#: window only costs fresh pages (a 300 MB segment of 1 MB batches, validated: 4 MiB windows
#: 77 ms, 16 MiB 82 ms, 1 MiB 72 ms but a batch larger than a window is read twice; mapped,
#: as before, 43 ms).
SCAN_WINDOW = 4 * 1024 * 1024


def scan_segment_file(fd: int, size: int, base_offset: int, *, validate: bool,
                      expected_next: int | None = None, min_epoch: int | None = None,
                      findings: list[ScanProblem] | None = None, window: int | None = None,
                      raws: list[bytes] | None = None) -> tuple[list[IndexEntry], ScanProblem | None]:
    """`scan_segment` over the first `size` bytes of the open file `fd`, read `window` bytes
    at a time (more for a batch that is larger), not mapped: a file another process cuts
    while it is scanned reads short, which ends the walk there as the end of the file
    would, where a mapped read of the lost pages would kill the process (SIGBUS). Memory is
    a window, whatever the file's size; positions are the file's. `window`: SCAN_WINDOW.
    `raws`, when given, gets each indexed batch's bytes as the scan read them (a reader
    that wants them all reads the file once)."""
    window = SCAN_WINDOW if window is None else window
    entries: list[IndexEntry] = []
    pos, want = 0, window
    expected, floor = expected_next, min_epoch
    while pos < size:
        data = os.pread(fd, min(want, size - pos), pos)
        last = pos + len(data) >= size or len(data) < min(want, size - pos)  # (the end, or a cut file's)
        found: list[ScanProblem] | None = [] if findings is not None else None
        part, problem = scan_segment(data, base_offset, validate=validate, expected_next=expected, min_epoch=floor,
                                     findings=found)
        if raws is not None:
            raws += [data[e.position:e.position + e.size] for e in part]
        if pos:
            part = [shared_entry(_new_tuple(IndexEntry, (e[0], e[1], e[2] + pos, *e[3:]))) for e in part]
        entries += part
        if findings is not None and found:
            findings += [f._replace(position=f.position + pos) for f in found]
        if part:
            expected, floor = part[-1].next_offset, part[-1].epoch
        if problem is None:
            if last:
                return entries, None
            pos, want = pos + len(data), window  # (the window ended between two batches)
            continue
        need = _bytes_needed(data, problem.position)
        if last or need <= len(data) - problem.position:  # (the batch is all there: the problem is its own)
            return entries, problem._replace(position=pos + problem.position)
        pos, want = pos + problem.position, max(window, need)  # (the window cut the batch: read on from its start)
    return entries, None


def _bytes_needed(data: bytes, pos: int) -> int:
    """How many bytes from `pos` the batch starting there says it takes (its header's, while
    the length field is not all there)."""
    if len(data) - pos < LOG_OVERHEAD:
        return RECORD_BATCH_OVERHEAD
    length: int = struct.unpack_from(">i", data, pos + 8)[0]
    return max(RECORD_BATCH_OVERHEAD, length + LOG_OVERHEAD)


def _scan_step(data: bytes, pos: int, expected: int, entries: list[IndexEntry], *, validate: bool,
               min_epoch: int | None, findings: list[ScanProblem] | None) -> tuple[ScanProblem | None, int, int]:
    """One batch of `scan_segment` the long way, every check in turn: (the problem that ends
    the walk, or None with the batch indexed into `entries`; the next position; the next
    expected offset)."""
    remaining = len(data) - pos
    if remaining < LOG_OVERHEAD:
        base = struct.unpack_from(">q", data, pos)[0] if remaining >= 8 else None
        return _torn(data, pos, expected, TornTail(pos, base, remaining, None)), pos, expected
    base, length = struct.unpack_from(">qi", data, pos)
    size = length + LOG_OVERHEAD
    if size < RECORD_BATCH_OVERHEAD:
        return ScanProblem(pos, base, f"Record batch is corrupt (the size {size} is smaller than the "
                           f"minimum allowed overhead {RECORD_BATCH_OVERHEAD})"), pos, expected
    if size > remaining:
        return _torn(data, pos, expected, TornTail(pos, base, remaining, size)), pos, expected
    _, _, epoch, magic, _, _, last_delta, _, max_ts, _, _, _, count = _HEAD.unpack_from(data, pos)
    if validate:
        try:
            check_batch_at(data, pos, size)
        except CorruptRecordException as e:
            return ScanProblem(pos, base, str(e)), pos, expected
    elif magic != MAGIC_V2:
        return ScanProblem(pos, base, f"Invalid magic {magic}: only record batches of magic 2 are supported"), pos, expected
    if last_delta < 0:
        return ScanProblem(pos, base, f"invalid last offset delta {last_delta}"), pos, expected
    if count != last_delta + 1 and findings is not None:
        findings.append(ScanProblem(pos, base, f"offset range [{base}, {base + last_delta}] does not match its "
                                    f"count of {count} record(s)"))
    if base < expected:
        return ScanProblem(pos, base, f"batch base offset {base} is below the expected next offset "
                           f"{expected} (offsets must increase)"), pos, expected
    floor = entries[-1].epoch if entries else min_epoch
    if floor is not None and epoch < floor and findings is not None:
        findings.append(ScanProblem(pos, base, f"leader epoch {epoch} is lower than the previous batch's epoch "
                                    f"{floor}"))
    entries.append(IndexEntry(base, base + last_delta, pos, size, epoch, max_ts))
    return None, pos + size, base + last_delta + 1


def _torn(data: bytes, pos: int, expected: int, tail: TornTail) -> ScanProblem:
    """The problem of bytes at the end of a segment too short for the batch they start: a
    torn write (what a crash leaves) only where they can be the next batch's start
    (`TornTail.not_a_batch_start`); anything else is damage."""
    magic_at = pos + MAGIC_AT
    why = tail._replace(magic=data[magic_at] if magic_at < len(data) else None).not_a_batch_start(expected)
    if why is not None:
        return ScanProblem(pos, tail.base_offset, f"{tail.describe()}, and {why}")
    return ScanProblem(pos, tail.base_offset, tail.describe(), torn=True)


@dataclass(slots=True)
class LogSegment:
    """A `%020d.log` file and the in-memory index of its batches.

    While it is open, the segment keeps the checked parse of its last `PARSED_TAIL` batches
    that were appended or read (batch index -> FileBatch): the bytes of an open segment
    change only through this object (appends, truncation), so a kept parse is what reading
    the file again would give. Closing the segment forgets them."""

    path: Path
    base_offset: int
    entries: list[IndexEntry]
    writable: bool
    _lasts: list[int]
    _fd: int | None = None
    #: The file's size when it was opened and indexed: what `entries` were scanned from (a
    #: reader of a directory another process writes sees the file as it was then).
    scanned_size: int = 0
    _parsed: dict[int, FileBatch] = field(default_factory=dict)
    #: str(path), made once (every appended batch's kept parse names its file).
    _path_text: str = field(init=False)

    def __post_init__(self) -> None:
        self._path_text = str(self.path)

    @classmethod
    def open(cls, path: Path, base_offset: int, *, writable: bool, validate: bool,
             expected_next: int | None = None, min_epoch: int | None = None,
             findings: list[ScanProblem] | None = None) -> tuple["LogSegment", ScanProblem | None]:
        """Open and index a segment; the returned problem (if any) says where its good prefix ends."""
        require_regular_file(path)  # (a FIFO named like a segment would block the open)
        WRITES.drain()  # (its size and bytes as appended, also by this process's writer thread)
        try:
            fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        except OSError as e:
            raise KraftsimError(f"cannot open {path}: {e.strerror or e}") from None
        try:
            file_size = os.fstat(fd).st_size
            if file_size == 0:
                entries: list[IndexEntry] = []
                problem: ScanProblem | None = None
            else:
                entries, problem = scan_segment_file(fd, file_size, base_offset, validate=validate,
                                                     expected_next=expected_next, min_epoch=min_epoch,
                                                     findings=findings)
        except BaseException:
            os.close(fd)
            raise
        seg = cls(path, base_offset, entries, writable, [e.last_offset for e in entries], fd, file_size)
        return seg, problem

    @classmethod
    def create(cls, path: Path, base_offset: int) -> "LogSegment":
        """A new, empty segment file (it must not exist yet)."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as e:
            raise KraftsimError(f"cannot create {path}: {e.strerror or e}") from None
        return cls(path, base_offset, [], True, [], fd)

    # -------------------------------------------------------------------- queries

    @property
    def size(self) -> int:
        """Bytes of whole, indexed batches (the file may hold more until recovery cuts them)."""
        if not self.entries:
            return 0
        last = self.entries[-1]
        return last.position + last.size

    @property
    def next_offset(self) -> int:
        return self.entries[-1].next_offset if self.entries else self.base_offset

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, offset: int) -> int:
        """Index of the first batch whose last offset is ≥ `offset` (len(self) when none)."""
        return bisect.bisect_left(self._lasts, offset)

    def _fileno(self) -> int:
        """The descriptor, opened when needed; the file holds every byte appended to it
        (storage.background_writes: anything but an append waits for the writes)."""
        if WRITES.pending:
            WRITES.drain()
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR if self.writable else os.O_RDONLY)
            except OSError as e:
                raise KraftsimError(f"cannot open {self.path}: {e.strerror or e}") from None
        return self._fd

    def read_raw(self, i: int) -> bytes:
        e = self.entries[i]
        data = os.pread(self._fileno(), e.size, e.position)
        if len(data) != e.size:
            raise LogFileError(str(self.path), e.base_offset, f"file shrank: {len(data)} of {e.size} bytes readable",
                               e.position)
        return data

    def read_raws(self, first: int, stop: int) -> list[bytes] | None:
        """The bytes of batches `first` to `stop - 1` with one read of the file (what
        `read_raw` gives for each); None when the file holds fewer bytes than indexed (read
        them one by one then: `read_raw` names the batch)."""
        entries = self.entries[first:stop]
        if not entries:
            return []
        p0 = entries[0].position
        n = entries[-1].position + entries[-1].size - p0
        data = os.pread(self._fileno(), n, p0)
        if len(data) != n:
            return None
        return [data[e.position - p0:e.position - p0 + e.size] for e in entries]

    def read_batch(self, i: int, *, check_crc: bool = True) -> FileBatch:
        """The i-th batch, checked; a bad one raises LogFileError naming file, offset and position."""
        fb = self._parsed.get(i)
        if fb is not None:
            return fb
        e = self.entries[i]
        try:
            batch = parse_batch(self.read_raw(i), check_crc=check_crc)
        except CorruptRecordException as err:
            raise LogFileError(str(self.path), e.base_offset, str(err), e.position) from None
        fb = FileBatch(str(self.path), e.position, batch)
        if check_crc:
            self._keep_parsed(i, fb)
        return fb

    def _keep_parsed(self, i: int, fb: FileBatch) -> None:
        tail = len(self.entries) - PARSED_TAIL
        if i < tail:
            return
        parsed = self._parsed
        parsed[i] = fb
        if len(parsed) > 2 * PARSED_TAIL:
            self._parsed = {k: v for k, v in parsed.items() if k >= tail}

    # -------------------------------------------------------------------- changes

    def _check_writable(self) -> None:
        if not self.writable:
            raise KraftsimError(f"{self.path}: opened read-only")

    def append(self, raw: bytes, entry: IndexEntry, batch: RecordBatch | None = None, *,
               background: bool = False) -> None:
        """Write a batch at the end of the indexed data (entry.position must equal self.size);
        `batch`: its checked parse, kept for reading it again. `background`: by the writer
        thread (storage.background_writes), done before the file is next used otherwise."""
        if not self.writable:
            self._check_writable()
        entries = self.entries
        position = entry.position
        if entries:  # (self.size, inlined: a simulation appends on every replica)
            e = entries[-1]
            size = e.position + e.size
        else:
            size = 0
        if position != size:
            raise AssertionError(f"append at {position}, segment size {size}")
        fd = self._fd
        if background:
            WRITES.submit(fd if fd is not None else self._fileno(), raw, position, self._path_text)
        else:
            written = pwrite_all(fd if fd is not None else self._fileno(), raw, position)
            if written != len(raw):
                raise KraftsimError(f"{self.path}: short write ({written} of {len(raw)} bytes)")
        entries.append(entry)
        self._lasts.append(entry.last_offset)
        if batch is not None:  # (_keep_parsed, inlined: the appended batch is the newest, always kept)
            parsed = self._parsed
            parsed[len(entries) - 1] = _new_tuple(FileBatch, (self._path_text, position, batch))
            if len(parsed) > 2 * PARSED_TAIL:
                tail = len(entries) - PARSED_TAIL
                self._parsed = {k: v for k, v in parsed.items() if k >= tail}

    def truncate_to_size(self, size: int) -> None:
        """Cut the file to `size` bytes (a batch boundary) and forget the batches after it."""
        self._check_writable()
        os.ftruncate(self._fileno(), size)
        keep = bisect.bisect_left([e.position for e in self.entries], size)
        del self.entries[keep:]
        del self._lasts[keep:]
        self._parsed = {k: v for k, v in self._parsed.items() if k < keep}

    def file_size(self) -> int:
        return os.fstat(self._fileno()).st_size

    def flush(self) -> None:
        WRITES.drain()
        if self.writable and self._fd is not None:
            os.fsync(self._fd)

    def parsed_batches(self) -> dict[int, FileBatch]:
        """The batches parsed so far, by index (the live cache, to be read, not changed): a
        replay that walks the segment takes `get(i) or read_batch(i)` without a call per batch."""
        return self._parsed

    def release_fd(self) -> None:
        """Close the file descriptor, keeping what was parsed: the next use opens it again
        (a log opened read-only becomes writable)."""
        self._close_fd()

    def close(self) -> None:
        self._parsed = {}
        self._close_fd()

    def _close_fd(self) -> None:
        """The descriptor is forgotten before it is closed: an interrupt (SIGTERM, Ctrl-C)
        between the two must not leave a closed number behind for the cleanup that follows
        to close again (EBADF, or another file's descriptor closed by mistake)."""
        if self._fd is not None and WRITES.pending:  # (no write may land on a closed, maybe reused, number)
            WRITES.drain()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def delete(self) -> None:
        """Kafka's asynchronous delete: renamed to `<name>.deleted` now, unlinked by the
        reaper later (storage.reaper: whatever lists the directory settles it first)."""
        self.close()
        mark_and_discard(self.path, self.path.with_name(self.path.name + DELETED_FILE_SUFFIX))
