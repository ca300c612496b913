"""Reading a metadata log directory as a whole, and telling what a user's path is.

`MetadataLogView` is what a node replays at start-up: the newest snapshot, then the log
records after it. The plain iterators walk every batch of every file without recovery
logic, for tools that show files as they are. Everything here opens files read-only.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Iterable, Iterator

from kraftsim.errors import KraftsimError
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.storage.batchfile import FileBatch, decode_file_batch, stream_file_batches
from kraftsim.regular_file import opened_file
from kraftsim.storage.log import MetadataLog, Validate
from kraftsim.storage.names import (
    BOOTSTRAP_FILE, METADATA_DIR_NAME, PathKind, SnapshotId, classify_path, parse_segment_name, segment_file_name,
    snapshot_file_name,
)
from kraftsim.storage.recovery import RecoveryAction
from kraftsim.storage.snapshot import SnapshotFile, list_snapshots, read_snapshot


def metadata_dir_of(path: Path | str) -> Path:
    """The `__cluster_metadata-0` directory of a path that is one, or a log directory holding one."""
    p = Path(path)
    kind = classify_path(p)
    if kind is PathKind.METADATA_DIR:
        return p
    if kind is PathKind.LOG_DIR:
        d = p / METADATA_DIR_NAME
        if not d.is_dir():
            raise KraftsimError(f"{p}: formatted, but has no {METADATA_DIR_NAME} directory yet")
        return d
    raise KraftsimError(f"{p}: a {kind.value} file, not a metadata log directory")


def segment_paths(directory: Path | str) -> list[Path]:
    """The `%020d.log` segments of a directory in offset order."""
    d = Path(directory)
    bases = sorted(b for b in (parse_segment_name(p.name) for p in d.iterdir()) if b is not None)
    return [d / segment_file_name(b) for b in bases]


def metadata_files(path: Path | str) -> list[tuple[PathKind, Path]]:
    """Every metadata file a path stands for, classified, in a fixed order: the bootstrap
    file, the segments by offset, then the snapshots oldest first."""
    p = Path(path)
    kind = classify_path(p)
    if kind in (PathKind.SEGMENT, PathKind.SNAPSHOT, PathKind.BOOTSTRAP):
        return [(kind, p)]
    out: list[tuple[PathKind, Path]] = []
    if kind is PathKind.LOG_DIR:
        if (p / BOOTSTRAP_FILE).is_file():
            out.append((PathKind.BOOTSTRAP, p / BOOTSTRAP_FILE))
        if not (p / METADATA_DIR_NAME).is_dir():
            return out
        p = p / METADATA_DIR_NAME
    out += [(PathKind.SEGMENT, s) for s in segment_paths(p)]
    out += [(PathKind.SNAPSHOT, p / snapshot_file_name(sid)) for sid in list_snapshots(p)]
    return out


def _kind_or_none(path: Path) -> PathKind | None:
    try:
        return classify_path(path)
    except KraftsimError:
        return None


def metadata_places(path: Path | str) -> list[Path]:
    """The metadata paths one user path stands for: the path itself when it is a metadata
    file or a log or metadata directory (or not a folder at all: `metadata_files` then says
    what it is not); any other folder stands for every log and metadata directory below it,
    in sorted order, so that a whole tree of clusters can be named at once."""
    p = Path(path)
    if not (p.is_dir() and _kind_or_none(p) is None):
        return [p]
    found = [d for d in sorted(p.rglob("*")) if d.is_dir() and _kind_or_none(d) is not None]
    if not found:
        raise KraftsimError(f"{p}: no metadata log directory, snapshot or bootstrap file below this folder")
    return found


def find_metadata_files(paths: Iterable[Path | str]) -> list[tuple[PathKind, Path]]:
    """Every metadata file the paths stand for, classified, in a fixed order: path by path,
    each place of `metadata_places` as `metadata_files` lists it. Below a folder a file is
    listed once even where two places share it (a log directory and its
    `__cluster_metadata-0`) or an earlier path listed it; a path that is itself a metadata
    file or directory lists all its files, as kafka-dump-log repeats a file named twice."""
    out: list[tuple[PathKind, Path]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        places = metadata_places(p)
        tree = places != [p]
        for place in places:
            for kind, path in metadata_files(place):
                if tree and path in seen:
                    continue
                seen.add(path)
                out.append((kind, path))
    return out


def iter_segment_batches(directory: Path | str, *, check_crc: bool = True) -> Iterator[FileBatch]:
    """Every batch of every segment, in order, as the files are: no recovery; the first
    problem (torn tail, bad CRC) raises LogFileError naming the file, offset and position."""
    for path in segment_paths(metadata_dir_of(directory)):
        with opened_file(path) as f:
            yield from stream_file_batches(str(path), f, check_crc=check_crc)


def iter_file_entries(path: Path | str, registry: Registry | None = None) -> Iterator[LogEntry]:
    """Every record of one file (segment, snapshot or bootstrap), control records included."""
    p = Path(path)
    registry = registry or default_registry()
    with opened_file(p) as f:
        for fb in stream_file_batches(str(p), f):
            yield from decode_file_batch(fb, registry)


def lowered_metadata_version(directory: Path | str, registry: Registry | None = None) -> tuple[int, int] | None:
    """The first fall of metadata.version in a log directory's segments, as (from, to) levels,
    or None. Any fall counts, whether or not the levels between changed metadata: replay
    names it in its hint only where Kafka's replay of the log already failed."""
    registry = registry or default_registry()
    level = None
    for fb in iter_segment_batches(directory):
        if fb.batch.is_control:
            continue
        for entry in decode_file_batch(fb, registry):
            if entry.record_type.name == "FeatureLevelRecord" and entry.message.name == "metadata.version":
                new = entry.message.feature_level
                if level is not None and new < level:
                    return level, new
                level = new
    return None


class MetadataLogView:
    """The newest snapshot of a metadata log directory and the log records after it.

    Snapshot records carry the snapshot file's own offsets (0, 1, ...); log records carry
    log offsets, all ≥ `start_offset` (the snapshot's end offset, or the log start).
    Opened read-only: nothing on disk changes, and any tail recovery would cut is listed
    in `recovery` and left out of the records.
    """

    def __init__(self, path: Path | str, *, registry: Registry | None = None, validate: Validate = "last"):
        self.directory = metadata_dir_of(path)
        self.registry = registry or default_registry()
        self.log = MetadataLog.open(self.directory, read_only=True, validate=validate)
        try:
            ids = self.log.snapshot_ids()
            self.snapshot_id: SnapshotId | None = ids[-1] if ids else None
            self.snapshot: SnapshotFile | None = (
                read_snapshot(self.directory / snapshot_file_name(self.snapshot_id), self.registry)
                if self.snapshot_id is not None else None
            )
        except BaseException:
            self.log.close()
            raise
        self.start_offset = self.snapshot_id.end_offset if self.snapshot_id is not None else self.log.log_start_offset

    @property
    def recovery(self) -> list[RecoveryAction]:
        return self.log.recovery

    @property
    def end_offset(self) -> int:
        """One past the last offset the view covers."""
        return max(self.start_offset, self.log.log_end_offset)

    def missing_offsets(self) -> list[tuple[int, int]]:
        """Offset ranges [from, to) between `start_offset` and the log end that no batch holds."""
        gaps = []
        expected = self.start_offset
        for _, e in self.log.index_entries():
            if e.next_offset <= expected:
                continue
            if e.base_offset > expected:
                gaps.append((expected, e.base_offset))
            expected = e.next_offset
        return gaps

    def snapshot_entries(self) -> Iterator[LogEntry]:
        """The snapshot's metadata records (none without a snapshot)."""
        return self.snapshot.data_entries() if self.snapshot is not None else iter(())

    def log_entries(self) -> Iterator[LogEntry]:
        """The log's records (control records included) from `start_offset` on, in offset order."""
        return self.log.entries(self.start_offset, self.registry)

    def entries(self) -> Iterator[LogEntry]:
        """The snapshot's records, then the log's."""
        return chain(self.snapshot_entries(), self.log_entries())

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> "MetadataLogView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
