"""KRaft snapshot files (`%020d-%010d.checkpoint`): write them as Kafka does, read and check them.

A snapshot is a batch file: a control batch that starts with SnapshotHeaderRecord (and,
when kraft.version ≥ 1, KRaftVersionRecord and VotersRecord), data batches, and a control
batch with SnapshotFooterRecord. Every batch carries the snapshot's epoch and offsets start
at 0. The writer streams into `<offset>-<epoch>-<random>.checkpoint.part`, forces it to
disk, makes it read-only and renames it, so a crash leaves no `.checkpoint` behind. The
temp name is random; the bytes are a pure function of the records, epoch and clock.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, NoReturn, Sequence, TypeVar

from kraftsim.errors import KraftsimError, LogFileError
from kraftsim.gcpause import collector_paused
from kraftsim.protocol.entries import LogEntry, Payload, PrebuiltPartition
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.batchfile import (
    MAX_BATCH_SIZE_BYTES, BatchAccumulator, Clock, FileBatch, as_clock, decode_file_batch, decode_file_batch_prebuilt,
    iter_file_batches, stream_file_batches,
)
from kraftsim.regular_file import require_regular_file
from kraftsim.storage.fileio import fsync_dir, read_opened, write_pieces
from kraftsim.storage.reaper import reuse
from kraftsim.storage.restamp import copy_file_bytes, pread, restamp_patches
from kraftsim.storage.names import (
    PART_SUFFIX, SnapshotId, SnapshotState, parse_snapshot_name, snapshot_file_name, snapshot_part_prefix,
)

# SnapshotEmitter's DEFAULT_BATCH_SIZE: the image writer appends records in groups of this many.
SNAPSHOT_APPEND_RECORDS = 1024


def control_payload(registry: Registry, name: str, **fields: object) -> Payload:
    rt = registry[name]
    version = fields.get("version", 0)
    if not isinstance(version, int):
        raise TypeError(f"{name}: version must be an int, not {version!r}")
    return Payload(rt, version, rt.new(**fields))


# ------------------------------------------------------------------------------ writing


class SnapshotWriter:
    """Writes one snapshot through a `.checkpoint.part` file; `freeze()` makes it a `.checkpoint`.

    Leaving the writer (or `abort()`) without freezing deletes the temp file, as Kafka's
    FileRawSnapshotWriter.close does. `append` is one Kafka append: its records share a
    batch, and consecutive appends share one while it stays within `max_batch_bytes`.
    """

    def __init__(self, directory: Path | str, snapshot_id: SnapshotId, *, last_contained_log_timestamp: int,
                 time_ms: int | Clock, header_records: Sequence[Payload] = (), registry: Registry | None = None,
                 max_batch_bytes: int = MAX_BATCH_SIZE_BYTES, fsync: bool = True):
        self.directory = Path(directory)
        self.snapshot_id = SnapshotId(*snapshot_id)
        self.registry = registry or default_registry()
        self.fsync = fsync
        self.path = self.directory / snapshot_file_name(self.snapshot_id)
        if self.path.exists():
            raise KraftsimError(f"{self.path}: snapshot already exists")
        for p in header_records:
            if p.record_type.schema.kind != "control":
                raise KraftsimError(f"{p.record_type.name} is not a control record: it cannot go in a snapshot header batch")
        self._acc = BatchAccumulator(epoch=self.snapshot_id.epoch, clock=as_clock(time_ms),
                                     max_batch_bytes=max_batch_bytes)
        header = control_payload(self.registry, "SnapshotHeaderRecord", version=0,
                                 last_contained_log_timestamp=last_contained_log_timestamp)
        self._acc.append_control([header, *header_records])
        header_batch = self._acc.drain()
        fd, tmp = _new_part_file(self.directory, self.snapshot_id)
        self.temp_path = Path(tmp)
        self._file = os.fdopen(fd, "wb")
        self.frozen = False
        #: Metadata records appended so far (what a snapshot's record count reports).
        self.records = 0
        self._write(header_batch)

    def _write(self, batches: list[bytes]) -> None:
        try:
            for b in batches:
                write_pieces(self._file, b)
        except OSError as e:
            raise KraftsimError(f"cannot write {self.temp_path}: {e.strerror or e}") from None

    def append(self, records: Sequence[Payload]) -> None:
        """Append metadata records (one Kafka `append`: they all go in the same batch)."""
        self._check_open()
        self._acc.append(records)
        self._appended(len(records))

    def append_values(self, values: Sequence[bytes]) -> None:
        """`append` of records already encoded: their framed values (`encode_values`)."""
        self._check_open()
        self._acc.append_values(values)
        self._appended(len(values))

    def _check_open(self) -> None:
        if self.frozen:
            raise KraftsimError(f"Append not supported. Snapshot is already frozen: id = '{self.snapshot_id}'.")

    def _appended(self, count: int) -> None:
        """Count `count` appended records and write the batches they completed."""
        self.records += count
        done = self._acc.drain()
        if done:  # as RecordsSnapshotWriter: a completed batch means a drain, which closes the open batch too
            done += self._acc.drain(force=True)
        self._write(done)

    def freeze(self) -> Path:
        """Write the footer, force the file to disk, make it read-only and rename it into place."""
        if self.frozen:
            return self.path
        footer = control_payload(self.registry, "SnapshotFooterRecord", version=0)
        self._acc.append_control([footer])
        self._write(self._acc.drain(force=True))
        self._file.flush()
        self._file.truncate()  # (a spare written over is longer than this snapshot)
        if self.fsync:
            os.fsync(self._file.fileno())
        self._file.close()
        os.chmod(self.temp_path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.replace(self.temp_path, self.path)
        if self.fsync:
            fsync_dir(self.directory)
        self.frozen = True
        return self.path

    def abort(self) -> None:
        """Drop an unfrozen snapshot: close and delete its temp file."""
        if self.frozen:
            return
        if not self._file.closed:
            self._file.close()
        try:
            self.temp_path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> "SnapshotWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


def write_snapshot(directory: Path | str, snapshot_id: SnapshotId, records: Iterable[Payload], *,
                   last_contained_log_timestamp: int, time_ms: int | Clock, header_records: Sequence[Payload] = (),
                   append_records: int = SNAPSHOT_APPEND_RECORDS, registry: Registry | None = None,
                   max_batch_bytes: int = MAX_BATCH_SIZE_BYTES, fsync: bool = True) -> Path:
    """Write a whole snapshot the way Kafka's SnapshotEmitter does: records appended in
    groups of `append_records` (1024), then frozen. Returns the `.checkpoint` path."""
    return write_snapshot_counted(directory, snapshot_id, records,
                                  last_contained_log_timestamp=last_contained_log_timestamp, time_ms=time_ms,
                                  header_records=header_records, append_records=append_records, registry=registry,
                                  max_batch_bytes=max_batch_bytes, fsync=fsync)[0]


def write_snapshot_counted(directory: Path | str, snapshot_id: SnapshotId, records: Iterable[Payload], *,
                           last_contained_log_timestamp: int, time_ms: int | Clock,
                           header_records: Sequence[Payload] = (), append_records: int = SNAPSHOT_APPEND_RECORDS,
                           registry: Registry | None = None, max_batch_bytes: int = MAX_BATCH_SIZE_BYTES,
                           fsync: bool = True) -> tuple[Path, int]:
    """`write_snapshot`, also returning how many metadata records went in (counted by the
    appends, not record by record).

    The cycle collector is paused meanwhile: the records of an 8 MiB batch stay alive until
    it is encoded, and every collection would walk the (large) image the records come from."""
    with collector_paused(), SnapshotWriter(directory, snapshot_id, last_contained_log_timestamp=last_contained_log_timestamp,
                        time_ms=time_ms, header_records=header_records, registry=registry,
                        max_batch_bytes=max_batch_bytes, fsync=fsync) as w:
        it = iter(records)
        while group := list(islice(it, append_records)):  # (groups cut in C, not record by record)
            w.append(group)
        return w.freeze(), w.records


def write_snapshot_values(directory: Path | str, snapshot_id: SnapshotId, values: Iterable[Sequence[bytes]], *,
                          last_contained_log_timestamp: int, time_ms: int | Clock,
                          header_records: Sequence[Payload] = (), append_records: int = SNAPSHOT_APPEND_RECORDS,
                          registry: Registry | None = None, max_batch_bytes: int = MAX_BATCH_SIZE_BYTES,
                          fsync: bool = True) -> tuple[Path, int]:
    """`write_snapshot_counted` of metadata records given as their framed values
    (`encode_values`), in runs of consecutive records of any length: the same appends of
    `append_records`, so the same bytes, with nothing encoded but the batches' framing."""
    with collector_paused(), SnapshotWriter(directory, snapshot_id, last_contained_log_timestamp=last_contained_log_timestamp,
                        time_ms=time_ms, header_records=header_records, registry=registry,
                        max_batch_bytes=max_batch_bytes, fsync=fsync) as w:
        group: list[bytes] = []
        for run in values:
            if len(group) + len(run) < append_records:
                group += run
                continue
            at = append_records - len(group)
            group += run[:at]
            w.append_values(group)
            while len(run) - at >= append_records:
                w.append_values(run[at:at + append_records])
                at += append_records
            group = list(run[at:])
        if group:
            w.append_values(group)
        return w.freeze(), w.records


def file_identity(path: Path | str) -> tuple[int, int, int, int]:
    """(device, inode, size, mtime_ns) of a file: what changes when it is replaced or rewritten."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def place_snapshot_copy(source: Path | str, identity: tuple[int, int, int, int], directory: Path | str,
                        snapshot_id: SnapshotId, *, link: bool = True, fsync: bool = True,
                        restamp: tuple[int, int] | None = None) -> Path | None:
    """Give `directory` the frozen snapshot `source` under its own name, without encoding
    it again: a hard link where the file system allows one (a frozen snapshot is never
    written again, and deleting one name leaves the others), else a byte copy made the way
    the writer makes a file (a `.part` temp file, read-only, renamed into place).
    `restamp=(old, new)`: the copy holds `restamp_batches(source's bytes, old, new)` (never a
    link), made as a copy in the kernel with each batch's header patched (`restamp_patches`);
    where `restamp_batches` gives None, nothing is made and None is returned.

    `identity` is `file_identity(source)` when it was written: a source that is gone, or
    is no longer that file (replaced, rewritten), is not used and None is returned."""
    src, d = Path(source), Path(directory)
    sid = SnapshotId(*snapshot_id)
    dest = d / snapshot_file_name(sid)
    if dest.exists():
        raise KraftsimError(f"{dest}: snapshot already exists")
    try:
        if file_identity(src) != identity:
            return None
    except OSError:
        return None
    if link and restamp is None:
        try:
            os.link(src, dest)
        except FileNotFoundError:
            return None
        except OSError:  # no hard links here (another file system, a limit, not supported): copy
            pass
        else:
            if fsync:
                fsync_dir(d)
            return dest
    try:
        f = open(src, "rb")
    except OSError:
        return None
    with f:
        src_fd = f.fileno()
        try:
            st = os.fstat(src_fd)
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != identity:
                return None
            patches = [] if restamp is None else restamp_patches(partial(pread, src_fd), st.st_size, *restamp)
        except OSError:
            return None
        if patches is None:
            return None
        fd, tmp = _new_part_file(d, sid)
        try:
            try:
                copy_file_bytes(src_fd, fd, st.st_size)
                os.ftruncate(fd, st.st_size)  # (a spare written over is longer than the copy)
                for at, data in patches:
                    os.pwrite(fd, data, at)
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            os.replace(tmp, dest)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise KraftsimError(f"cannot write {dest}: {e.strerror or e}") from None
    if fsync:
        fsync_dir(d)
    return dest


def _new_part_file(directory: Path, snapshot_id: SnapshotId) -> tuple[int, str]:
    """A new `.checkpoint.part` temp file for `snapshot_id`, open for writing from its start:
    a deleted snapshot kept as a spare when there is one (`reaper.reuse`), else an empty file.
    The caller cuts it to what it wrote."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=snapshot_part_prefix(snapshot_id), suffix=PART_SUFFIX, dir=directory)
    except OSError as e:
        raise KraftsimError(f"cannot create a snapshot in {directory}: {e.strerror or e}") from None
    if not reuse(tmp):
        return fd, tmp
    os.close(fd)
    try:
        os.chmod(tmp, stat.S_IRUSR | stat.S_IWUSR)  # (a spare was read-only; mkstemp's mode)
        return os.open(tmp, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)), tmp
    except OSError as e:
        with suppress(OSError):
            os.unlink(tmp)
        raise KraftsimError(f"cannot create a snapshot in {directory}: {e.strerror or e}") from None


# ------------------------------------------------------------------------------ reading


@dataclass(slots=True)
class SnapshotFile:
    """A checked snapshot (or bootstrap) file: its batches, header and footer."""

    path: str
    snapshot_id: SnapshotId | None  # from the file name; None when the name is not a snapshot's
    batches: list[FileBatch]
    header_entries: list[LogEntry]  # the records of the first (control) batch
    registry: Registry

    @property
    def header(self) -> object:
        """The SnapshotHeaderRecord message."""
        return self.header_entries[0].message

    @property
    def last_contained_log_timestamp(self) -> int:
        stamp: int = self.header.last_contained_log_timestamp  # type: ignore[attr-defined]
        return stamp

    @property
    def epoch(self) -> int:
        return self.batches[0].batch.partition_leader_epoch

    @property
    def batch_timestamps(self) -> list[int]:
        return [fb.batch.base_timestamp for fb in self.batches]

    @property
    def size_in_bytes(self) -> int:
        last = self.batches[-1]
        return last.position + last.batch.size

    def entries(self) -> Iterator[LogEntry]:
        """Every record in file order, control records included (offsets are the file's, from 0)."""
        for fb in self.batches:
            yield from decode_file_batch(fb, self.registry)

    def data_entries(self) -> Iterator[LogEntry]:
        """The metadata records only: what a loader replays. (Chained in C: a generator that
        yields them one by one costs as much again as what reads them, at a million records.)"""
        registry = self.registry
        return chain.from_iterable(decode_file_batch(fb, registry) for fb in self.batches if not fb.batch.is_control)

    def loader_batches(self) -> Iterator[list[LogEntry | PrebuiltPartition]]:
        """The data batches' records for a loader replaying the snapshot: each PartitionRecord
        in its usual shape may come built into its registration (entries.PrebuiltPartition)."""
        registry = self.registry
        return (decode_file_batch_prebuilt(fb, registry) for fb in self.batches if not fb.batch.is_control)

    def payloads(self) -> list[Payload]:
        """The metadata records as payloads, to write them again."""
        return [Payload(e.record_type, e.version, e.message) for e in self.data_entries()]


def read_snapshot(path: Path | str, registry: Registry | None = None, *, data: bytes | None = None) -> SnapshotFile:
    """Read and check a snapshot file: every batch (framing, CRC), the header first and the footer last.

    Problems raise LogFileError with Kafka's texts where Kafka has them.
    """
    registry = registry or default_registry()
    p = Path(path)
    spath = str(p)
    batches = _file_batches(p) if data is None else list(iter_file_batches(spath, data))
    parsed = parse_snapshot_name(p.name)
    sid = parsed.snapshot_id if parsed is not None else None
    if not batches or not batches[0].batch.is_control or batches[0].batch.records_count < 1:
        where = batches[0] if batches else None
        raise LogFileError(spath, where.batch.base_offset if where else None,
                           "First batch is not a control batch with at least one record",
                           where.position if where else None)
    first = batches[0]
    header_entries = decode_file_batch(first, registry)
    first_type = header_entries[0].type_name if header_entries and header_entries[0].offset == first.batch.base_offset else "UNKNOWN"
    if first_type != "SNAPSHOT_HEADER":
        raise LogFileError(spath, first.batch.base_offset, f"First control record is not a snapshot header ({first_type})",
                           first.position)
    last = batches[-1]
    footer = decode_file_batch(last, registry) if len(batches) > 1 and last.batch.is_control else []
    if not any(e.type_name == "SNAPSHOT_FOOTER" for e in footer):
        raise LogFileError(spath, last.batch.base_offset,
                           "Last batch is not a control batch with a snapshot footer: the snapshot is incomplete",
                           last.position)
    _check_offsets(spath, batches)
    return SnapshotFile(spath, sid, batches, header_entries, registry)


def _file_batches(path: Path) -> list[FileBatch]:
    """Every batch of the file `path`, checked, read one batch at a time: each batch's bytes
    are read once, not read whole and then copied out (a snapshot at a million partitions is
    128 MB)."""
    return read_opened(path, lambda f: list(stream_file_batches(str(path), f)))


_Entries = TypeVar("_Entries", list[LogEntry], list[LogEntry | PrebuiltPartition])


class SnapshotStream:
    """A snapshot read the way a loader consumes it: one batch in memory at a time.

    Why: a 1M-partition snapshot is 128 MB, and reading it whole kept the file (and its
    batches) alive beside the image being built, a third of a load's peak memory. Kafka's
    reader also goes batch by batch. The header batch is read and checked on opening;
    `data_entries()` hands out the metadata records batch by batch, checking each batch
    (framing, CRC, offsets; with `recheck`, the name's epoch) as it comes and the footer
    at the end. On any problem the file is read again by `read_snapshot` and `recheck`
    (e.g. damage.check_snapshot_epoch), so the error raised is exactly the one a whole-file
    read gives, in the same precedence. Single use; `batches` and `size_in_bytes` count
    what was read so far (all of it once data_entries() is exhausted).
    """

    def __init__(self, path: Path | str, registry: Registry | None = None, *,
                 recheck: Callable[[SnapshotFile], None] | None = None):
        p = Path(path)
        self.path = str(p)
        self.registry = registry or default_registry()
        parsed = parse_snapshot_name(p.name)
        self.snapshot_id: SnapshotId | None = parsed.snapshot_id if parsed is not None else None
        self._recheck = recheck
        self._expect_epoch = self.snapshot_id.epoch if self.snapshot_id is not None and recheck else None
        require_regular_file(p)  # (a FIFO named like a snapshot would block the open)
        try:
            self._file: BinaryIO = open(p, "rb")
        except OSError as e:
            raise KraftsimError(f"cannot read {p}: {e.strerror or e}") from None
        self._stream = stream_file_batches(self.path, self._file)
        self.batches = 0
        self.size_in_bytes = 0
        self._next_offset = 0
        first = self._next()
        if first is None or not first.batch.is_control or first.batch.records_count < 1:
            self._fail(LogFileError(self.path, None, "First batch is not a control batch with at least one record"))
        assert first is not None
        try:
            self.header_entries = decode_file_batch(first, self.registry)
        except LogFileError as e:
            self._fail(e)
        head = self.header_entries
        if not head or head[0].type_name != "SNAPSHOT_HEADER" or head[0].offset != first.batch.base_offset:
            self._fail(LogFileError(self.path, 0, "First control record is not a snapshot header"))
        self.epoch = first.batch.partition_leader_epoch
        self._last = first

    @property
    def last_contained_log_timestamp(self) -> int:
        stamp: int = self.header_entries[0].message.last_contained_log_timestamp
        return stamp

    def data_entries(self) -> Iterator[LogEntry]:
        """The metadata records, batch by batch; the footer is checked once they are all out
        (chained in C, as SnapshotFile.data_entries)."""
        return chain.from_iterable(self.data_batches())

    def loader_batches(self) -> Iterator[list[LogEntry | PrebuiltPartition]]:
        """data_batches for a loader replaying the snapshot: each PartitionRecord in its usual
        shape may come built into its registration (entries.PrebuiltPartition)."""
        return self._decoded_batches(decode_file_batch_prebuilt)

    def data_batches(self) -> Iterator[list[LogEntry]]:
        """The metadata records of each data batch, in order; the footer is checked after the last."""
        return self._decoded_batches(decode_file_batch)

    def _decoded_batches(self, decode: Callable[[FileBatch, Registry], _Entries]) -> Iterator[_Entries]:
        while (fb := self._next()) is not None:
            self._last = fb
            if not fb.batch.is_control:
                try:
                    entries = decode(fb, self.registry)
                except LogFileError as e:
                    self._fail(e)
                yield entries
        last = self._last
        footer = decode_file_batch(last, self.registry) if self.batches > 1 and last.batch.is_control else []
        if not any(e.type_name == "SNAPSHOT_FOOTER" for e in footer):
            self._fail(LogFileError(self.path, last.batch.base_offset, "Last batch is not a control batch with a "
                                    "snapshot footer: the snapshot is incomplete", last.position))
        self.close()

    def check_whole(self) -> None:
        """Read and check the whole file now (read_snapshot and `recheck`): for a caller about to
        refuse the load for another reason, so that damage is still reported first."""
        snap = read_snapshot(self.path, self.registry)
        if self._recheck is not None:
            self._recheck(snap)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "SnapshotStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self) -> FileBatch | None:
        try:
            fb = next(self._stream, None)
        except LogFileError as e:
            self._fail(e)
        if fb is None:
            return None
        b = fb.batch
        if b.base_offset != self._next_offset or b.last_offset - b.base_offset + 1 != b.records_count:
            self._fail(LogFileError(self.path, b.base_offset, "offsets out of order", fb.position))
        if self._expect_epoch is not None and b.partition_leader_epoch != self._expect_epoch:
            self._fail(LogFileError(self.path, b.base_offset, "epoch differs from the name's", fb.position))
        self._next_offset = b.next_offset
        self.batches += 1
        self.size_in_bytes = fb.position + b.size
        return fb

    def _fail(self, problem: Exception) -> NoReturn:
        """Raise what a whole-file read raises (its first problem), else `problem`."""
        self.close()
        self.check_whole()
        raise problem


def _check_offsets(path: str, batches: list[FileBatch]) -> None:
    """A snapshot's offsets run from 0 without gap or overlap. (Its batches' epoch against
    its name is for the verifiers to compare, naming both.)"""
    expected = 0
    for fb in batches:
        b = fb.batch
        if b.base_offset != expected or b.last_offset - b.base_offset + 1 != b.records_count:
            raise LogFileError(path, b.base_offset, f"batch offsets [{b.base_offset}, {b.last_offset}] with "
                               f"{b.records_count} record(s) do not follow offset {expected - 1}: a snapshot's offsets "
                               "run from 0 without gap or overlap", fb.position)
        expected = b.next_offset


def list_snapshots(directory: Path | str) -> list[SnapshotId]:
    """The frozen snapshots of a directory, oldest first (`.part` and `.deleted` files are not snapshots)."""
    d = Path(directory)
    try:
        names = [p.name for p in d.iterdir()]
    except OSError as e:
        raise KraftsimError(f"cannot list {d}: {e.strerror or e}") from None
    out = []
    for name in names:
        parsed = parse_snapshot_name(name)
        if parsed is not None and parsed.state is SnapshotState.FROZEN:
            out.append(parsed.snapshot_id)
    return sorted(out)


def latest_snapshot(directory: Path | str) -> SnapshotId | None:
    found = list_snapshots(directory)
    return found[-1] if found else None


def snapshot_path(directory: Path | str, snapshot_id: SnapshotId) -> Path:
    return Path(directory) / snapshot_file_name(snapshot_id)


def read_snapshot_header(path: Path | str, registry: Registry | None = None) -> object:
    """Only the SnapshotHeaderRecord of a snapshot (what retention needs), without reading the rest."""
    p = Path(path)

    def first_batch(f: BinaryIO) -> bytes:
        head = f.read(12)
        length = int.from_bytes(head[8:12], "big", signed=True) if len(head) == 12 else 0
        return head + f.read(max(length, 0))

    data = read_opened(p, first_batch)  # (a FIFO named like a snapshot is refused before the open)
    head = data[:12]
    if len(head) < 12:
        raise LogFileError(str(p), None, "First batch is not a control batch with at least one record", 0)
    registry = registry or default_registry()
    batches = list(iter_file_batches(str(p), data))
    first = batches[0]
    entries = decode_file_batch(first, registry) if first.batch.is_control else []
    if not entries or entries[0].type_name != "SNAPSHOT_HEADER" or entries[0].offset != first.batch.base_offset:
        kind = entries[0].type_name if entries else None
        text = (f"First control record is not a snapshot header ({kind})" if kind
                else "First batch is not a control batch with at least one record")
        raise LogFileError(str(p), first.batch.base_offset, text, 0)
    return entries[0].message
