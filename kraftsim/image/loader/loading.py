"""Loading files into images: a log directory, a segment, a snapshot or a bootstrap file.

`load_path` is what `kraftsim replay`, the verifiers and the pipeline use. A log directory
is loaded as a Kafka node loads it at start-up — the chosen snapshot through
`MetadataLoader.handle_load_snapshot`, then the log's batches after it through
`handle_commit` — so transactions, snapshot replacement and provenance behave exactly as
they do inside a node. Everything is opened read-only.

`load_snapshot` and `committed_batches` are those two steps on their own, for readers that
drive a loader over a log they hold open (the verifiers).

Offsets follow Kafka's snapshot ids: `upto_offset=O` gives the state after every record
below O (the image a snapshot with end offset O holds). Everything on disk counts as
committed: the high watermark is taken to be the end of what is loaded.

A damaged log is never loaded as if it were whole (kraftsim.storage.damage): a torn last
batch is left out as Kafka's recovery cuts it (`LoadResult.recovered` says so); any other
damage below the offset asked for raises DamagedLog, or with `up_to_damage` the load stops
below it and `LoadResult.partial` says where.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Callable, Iterable, Iterator, Literal

import msgspec

from kraftsim.errors import KraftsimError
from kraftsim.image.image import MetadataImage
from kraftsim.image.loader.metadata_loader import (
    AbortHandling, CommittedBatch, FaultHandler, LoaderFault, MetadataLoader, MvChangeHandling, Publisher, raise_fault,
)
from kraftsim.protocol.entries import LogEntry, PrebuiltPartition
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import FileBatch, decode_file_batch
from kraftsim.storage.bootstrap import read_bootstrap
from kraftsim.storage.damage import LoadLimit, check_snapshot_epoch, load_limit, segment_batches
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, PathKind, SnapshotId, classify_path, snapshot_file_name
from kraftsim.storage.recovery import RecoveryAction
from kraftsim.storage.snapshot import SnapshotFile, SnapshotStream
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import Catalog, default_catalog

#: (bytes done, bytes in total) — called after each batch of a long load.
Progress = Callable[[int, int], None]
#: Which snapshot a directory load starts from: the newest usable one, the one the catalog's
#: release starts from (policy start_snapshot), none (the whole log), or this one.
SnapshotChoice = Literal["latest", "start", "none"] | SnapshotId


class LoadResult(msgspec.Struct, kw_only=True):
    """An image and what was read to build it."""

    path: str
    kind: PathKind
    image: MetadataImage
    loader: MetadataLoader
    #: The snapshot the load started from (None: none, or a snapshot file whose name does not
    #: give its id; BOOTSTRAP_SNAPSHOT_ID for a bootstrap file).
    snapshot_id: SnapshotId | None
    #: First log offset replayed after the snapshot (= the snapshot's end offset, or the log start).
    log_start: int
    #: One past the last offset replayed. The image itself can stop earlier: a load that ends
    #: inside an open metadata transaction holds the state before its BeginTransactionRecord.
    end_offset: int
    #: One past the last offset on disk (beyond `end_offset` when `upto_offset` stopped early).
    disk_end_offset: int
    records: int = 0
    batches: int = 0
    bytes: int = 0
    recovery: list[RecoveryAction] = []
    gaps: list[tuple[int, int]] = []
    #: The records of the loaded snapshot's header batch (SnapshotHeaderRecord, then
    #: KRaftVersionRecord and VotersRecord when kraft.version ≥ 1); empty without a snapshot.
    snapshot_header: list[LogEntry] = []
    #: One line when a torn last batch was left out, as Kafka's recovery cuts it.
    recovered: str | None = None
    #: One line when the load stopped below damage (only with up_to_damage): the result is partial.
    partial: str | None = None

    @property
    def faults(self) -> list[LoaderFault]:
        return self.loader.faults


def load_path(path: Path | str, *, catalog: Catalog | None = None, upto_offset: int | None = None,
              snapshot: SnapshotChoice = "latest", registry: Registry | None = None,
              publishers: tuple[Publisher, ...] = (), batches_per_commit: int = 1,
              abort_handling: AbortHandling = AbortHandling.KAFKA,
              mv_change: MvChangeHandling = MvChangeHandling.KAFKA, fault_handler: FaultHandler = raise_fault,
              progress: Progress | None = None, up_to_damage: bool = False) -> LoadResult:
    """Load a metadata log directory (or the log directory holding one), a `.log` segment,
    a `.checkpoint` snapshot or a `bootstrap.checkpoint` into an image. A snapshot file whose
    name is not `<end offset>-<epoch>.checkpoint` loads too, with its id unknown.

    `batches_per_commit` groups the log's batches into commits of that many batches (Kafka
    hands the loader whatever one read returned; only publish points depend on it).
    `mv_change=MvChangeHandling.KIP_778` rewrites the image at each new metadata.version as
    KIP-778 designs it (see metadata_loader.py); Kafka's behaviour is the default.
    A damaged log raises DamagedLog unless `up_to_damage` (see the module's docstring).
    """
    p = Path(path)
    catalog = catalog if catalog is not None else default_catalog()
    registry = registry or catalog.record_registry()
    kind = classify_path(p)
    loader = MetadataLoader(catalog, abort_handling=abort_handling, mv_change=mv_change, fault_handler=fault_handler)
    loader.install_publishers(*publishers)
    if kind in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        return _load_directory(p, kind, loader, registry, upto_offset, snapshot, batches_per_commit, progress,
                               up_to_damage)
    if kind is PathKind.SNAPSHOT:
        return _load_snapshot_file(p, loader, registry, upto_offset)
    if kind is PathKind.BOOTSTRAP:
        boot = read_bootstrap(p, registry)
        loader.set_high_watermark(0)
        image = loader.handle_load_snapshot(boot.records, end_offset=0, epoch=0, last_contained_log_timestamp=0)
        return LoadResult(path=str(p), kind=kind, image=image, loader=loader, snapshot_id=BOOTSTRAP_SNAPSHOT_ID,
                          log_start=0, end_offset=0, disk_end_offset=0, records=len(boot.records))
    if kind is PathKind.SEGMENT:
        batches, limit, size = segment_batches(p, up_to_damage=up_to_damage)
        start = batches[0].batch.base_offset if batches else 0
        upto = _below(upto_offset, limit)
        result = LoadResult(path=str(p), kind=kind, image=loader.image, loader=loader, snapshot_id=None,
                            log_start=start, end_offset=start, disk_end_offset=batches[-1].batch.next_offset if batches else start,
                            recovered=limit.recovery_line(), partial=limit.partial_line())
        return _replay_batches(result, iter(batches), registry, upto, batches_per_commit, progress, size)
    raise KraftsimError(f"{p}: not a metadata log directory, segment, snapshot or bootstrap file ({kind.value})")


def _load_snapshot_file(p: Path, loader: MetadataLoader, registry: Registry, upto_offset: int | None) -> LoadResult:
    with SnapshotStream(p, registry, recheck=check_snapshot_epoch) as snap:  # one batch in memory at a time
        sid = snap.snapshot_id
        # A snapshot saved under a name of the user's choosing (no id in it): its records and
        # header are all there, only its end offset is unknown, so the image says offset -1.
        end, epoch = (sid.end_offset, sid.epoch) if sid is not None else (0, snap.epoch)
        if upto_offset is not None and (sid is None or upto_offset != end):
            snap.check_whole()  # damage is reported before the request is refused
        if upto_offset is not None and sid is None:
            raise KraftsimError(f"{p}: the file name does not say which offset this snapshot holds, so it cannot "
                                f"give the state at offset {upto_offset}")
        if upto_offset is not None and upto_offset != end:
            raise KraftsimError(f"{p}: a snapshot holds the state at offset {end} only, not {upto_offset}")
        loader.set_high_watermark(end)
        records = load_snapshot(loader, snap, end_offset=end, epoch=epoch)
    return LoadResult(path=str(p), kind=PathKind.SNAPSHOT, image=loader.image, loader=loader, snapshot_id=sid,
                      log_start=end, end_offset=end, disk_end_offset=end, records=records,
                      batches=snap.batches, bytes=snap.size_in_bytes, snapshot_header=snap.header_entries)


def load_snapshot(loader: MetadataLoader, snap: SnapshotFile | SnapshotStream, *, end_offset: int, epoch: int) -> int:
    """Replace `loader`'s image with `snap`'s, as the snapshot (end_offset, epoch), streaming
    its records (a snapshot is replayed without a list of it); returns how many it held."""
    handed = [0]

    def counted(batches: Iterable[list[LogEntry | PrebuiltPartition]]) -> Iterator[list[LogEntry | PrebuiltPartition]]:
        for batch in batches:  # (counted a batch at a time: nothing per record)
            handed[0] += len(batch)
            yield batch

    # (most PartitionRecords come built into registrations: all a loader keeps of them)
    loader.handle_load_snapshot(chain.from_iterable(counted(snap.loader_batches())), end_offset=end_offset,
                                epoch=epoch, last_contained_log_timestamp=snap.last_contained_log_timestamp)
    return handed[0]


def committed_batches(batches: Iterable[FileBatch], registry: Registry, start: int,
                      upto: int | None = None) -> Iterator[tuple[CommittedBatch, bool]]:
    """A log's batches as the raft layer hands them to the loader, from offset `start` up to
    (not including) `upto`, each with whether it ends where its batch on disk ends.

    Batches wholly below `start` are skipped and a batch's records below it dropped (the
    snapshot the load started from holds them). The batch holding `upto - 1` is cut there
    and is the last one; it is the only one that can be unaligned."""
    end = start
    for fb in batches:
        b = fb.batch
        if b.next_offset <= end:
            continue  # wholly before the start (the snapshot already holds it)
        if upto is not None and b.base_offset >= upto:
            return
        entries = [e for e in decode_file_batch(fb, registry) if e.offset >= end]
        if upto is not None and b.last_offset >= upto:
            entries = [e for e in entries if e.offset < upto]
            yield CommittedBatch(b.base_offset, upto - 1, b.partition_leader_epoch, b.max_timestamp, b.size,
                                 entries), False
            return
        yield CommittedBatch(b.base_offset, b.last_offset, b.partition_leader_epoch, b.max_timestamp, b.size,
                             entries), True
        end = b.next_offset


def passes_snapshots_by(log: MetadataLog) -> bool:
    """Whether a 3.3-3.5 node starting on `log` replays the whole log and no snapshot (policy
    start_snapshot, below_log_start): its listeners read from offset 0, and a snapshot is read
    only when the log no longer holds offset 0, because it starts later or because the raft
    layer cuts it at start-up to a newer snapshot (one of a later epoch than the log's last, or
    of the same epoch ending past the log's end)."""
    ids = log.snapshot_ids()
    if log.log_start_offset > 0 or not ids:
        return not ids
    epochs = log.leader_epochs()
    last_epoch = epochs[-1].epoch if epochs else 0
    newest = ids[-1]
    return not (newest.epoch > last_epoch or (newest.epoch == last_epoch and newest.end_offset > log.log_end_offset))


def starts_without_snapshot(log: MetadataLog, catalog: Catalog) -> bool:
    """Whether a node of the catalog's release starting on `log` replays it whole and loads no
    snapshot: only 3.3-3.5 (policy start_snapshot), as passes_snapshots_by says."""
    return catalog.policy("start_snapshot") == "below_log_start" and passes_snapshots_by(log)


def pick_snapshot(log: MetadataLog, directory: Path, upto: int | None, choice: SnapshotChoice, *,
                  catalog: Catalog | None = None) -> SnapshotId | None:
    """The snapshot a load of `log` up to `upto` starts from (None: the log from its start),
    or a KraftsimError saying why that state cannot be rebuilt. "start" is "none" where a node
    of the `catalog`'s release replays the log whole at start-up (starts_without_snapshot),
    else "latest"."""
    if choice == "start":
        choice = "none" if catalog is not None and starts_without_snapshot(log, catalog) else "latest"
    ids = log.snapshot_ids()
    if choice == "none":
        if log.log_start_offset > 0:
            raise KraftsimError(f"{directory}: the log starts at offset {log.log_start_offset}; the records "
                                "below it exist only in snapshots, so the whole log cannot be replayed")
        return None
    if choice == "latest":
        usable = [s for s in ids if upto is None or s.end_offset <= upto]
        if usable:
            return usable[-1]
        if log.log_start_offset > 0:
            raise KraftsimError(f"{directory}: no snapshot at or below offset {upto} and the log starts at "
                                f"{log.log_start_offset}: the state at {upto} cannot be rebuilt")
        return None
    if choice not in ids:
        raise KraftsimError(f"{directory}: no snapshot {snapshot_file_name(choice)}")
    if upto is not None and choice.end_offset > upto:
        raise KraftsimError(f"{directory}: snapshot {snapshot_file_name(choice)} lies beyond offset {upto}")
    return choice


def _below(upto: int | None, limit: LoadLimit) -> int | None:
    """The offset a load stops below: the one asked for, or the damage if that comes first."""
    if limit.upto is None:
        return upto
    return limit.upto if upto is None else min(upto, limit.upto)


def _load_directory(p: Path, kind: PathKind, loader: MetadataLoader, registry: Registry, upto: int | None,
                    choice: SnapshotChoice, per_commit: int, progress: Progress | None,
                    up_to_damage: bool = False) -> LoadResult:
    directory = metadata_dir_of(p)
    # Every segment's CRCs are checked on opening, so that damage anywhere is known before
    # anything is loaded (Kafka checks the segments after its recovery point only).
    with MetadataLog.open(directory, read_only=True, validate="all") as log:
        limit = load_limit(log, up_to_damage=up_to_damage, upto=upto)
        upto = _below(upto, limit)
        sid = pick_snapshot(log, directory, upto, choice, catalog=loader.catalog)
        ids = log.snapshot_ids()
        disk_end = max(log.log_end_offset, ids[-1].end_offset if ids else 0)
        if upto is not None and upto > disk_end:
            raise KraftsimError(f"{directory}: offset {upto} is beyond the end of the log ({disk_end})")
        if upto is not None and sid is None and upto > log.log_end_offset:
            raise KraftsimError(f"{directory}: the log's records end at offset {log.log_end_offset}; the state "
                                f"at {upto} exists only in a snapshot")
        loader.set_high_watermark(upto if upto is not None else disk_end)
        records, header = 0, []
        if sid is not None:
            with SnapshotStream(directory / snapshot_file_name(sid), registry, recheck=check_snapshot_epoch) as snap:
                records = load_snapshot(loader, snap, end_offset=sid.end_offset, epoch=sid.epoch)
            header = snap.header_entries
        start = sid.end_offset if sid is not None else log.log_start_offset
        result = LoadResult(path=str(p), kind=kind, image=loader.image, loader=loader, snapshot_id=sid,
                            log_start=start, end_offset=start, disk_end_offset=disk_end, records=records,
                            recovery=list(log.recovery), snapshot_header=header,
                            gaps=[(max(a, start), b) for a, b in log.gaps() if b > start],
                            recovered=limit.recovery_line(), partial=limit.partial_line())
        total = max(1, log.size_in_bytes())
        return _replay_batches(result, log.batches(start) if start < log.log_end_offset else iter(()), registry,
                               upto, per_commit, progress, total)


def _replay_batches(result: LoadResult, batches: Iterator[FileBatch], registry: Registry, upto: int | None,
                    per_commit: int, progress: Progress | None, total_bytes: int) -> LoadResult:
    loader = result.loader
    if upto is None and result.kind is PathKind.SEGMENT:
        loader.set_high_watermark(result.disk_end_offset)
    elif upto is not None and loader.high_watermark is None:
        loader.set_high_watermark(upto)
    commit: list[CommittedBatch] = []
    done = 0
    for batch, aligned in committed_batches(batches, registry, result.end_offset, upto):
        commit.append(batch)
        result.records += len(batch.entries)
        result.batches += 1
        result.bytes += batch.size_in_bytes
        result.end_offset = batch.last_offset + 1
        if len(commit) >= per_commit or not aligned:
            loader.handle_commit(commit, aligned=aligned)
            commit = []
        if progress is not None and result.bytes - done >= 1 << 20:
            done = result.bytes
            progress(done, total_bytes)
    if commit:
        loader.handle_commit(commit)
    if progress is not None:
        progress(result.bytes, total_bytes)
    result.image = loader.image
    return result
