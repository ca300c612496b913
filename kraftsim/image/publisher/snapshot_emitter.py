"""SnapshotEmitter: an image written as a Kafka `.checkpoint` in a metadata log directory.

What Kafka's SnapshotEmitter and the raft log do together (kafka-facts §4.5, §4.6, §6.4):

- The snapshot id is (last contained offset + 1, epoch) of the image's provenance, and the
  header carries its last contained log time. An id that already exists, or that lies
  below the log start offset, is not written again.
- With the node's `MetadataLog` at hand, the raft log's creation rules apply, with
  Kafka's texts: not beyond the high watermark, an (offset, epoch) the log's epoch history
  agrees with, and an end offset that starts a batch.
- The image is written at its own metadata.version with the writer line's ELR rule and
  the default loss handler, which raises (Kafka's UnwritableMetadataException) — an
  emitter never drops data silently. Records go in appends of 1024.
- Batch timestamps come from the injected clock (milliseconds), so the bytes are a pure
  function of the image, the clock and the header records.
- After a snapshot is frozen, the log directory's retention runs (storage/retention.py):
  older snapshots and the segments below the next one go while the size or age limit is
  exceeded, never the newest snapshot.

A plain directory without log segments can be a target too: then only the file rules
apply (no log to check against, nothing to retain).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.image.image import MetadataImage
from kraftsim.image.publisher.snapshot_copies import SnapshotCopies
from kraftsim.image.writer.loss import LossHandler, LossReport, raise_on_loss
from kraftsim.image.writer.image_writer import WriterLine, iter_image_records, iter_image_values
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import MAX_BATCH_SIZE_BYTES, Clock, as_clock
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import SnapshotId, parse_segment_name, snapshot_file_name
from kraftsim.storage.retention import (
    DEFAULT_RETENTION_BYTES, DEFAULT_RETENTION_MS, RetentionPlan, apply_retention, describe_log, plan_retention,
)
from kraftsim.storage.snapshot import (
    SNAPSHOT_APPEND_RECORDS, control_payload, write_snapshot_counted, write_snapshot_values,
)
from kraftsim.versions import Catalog, default_catalog

if TYPE_CHECKING:
    from kraftsim.image.loader.metadata_loader import MetadataLoader

HeaderRecords = Callable[[MetadataImage], Sequence[Payload]]


class SnapshotCreationError(KraftsimError):
    """The raft log refuses a snapshot id (Kafka's IllegalArgumentException from createNewSnapshot)."""


@dataclass(frozen=True)
class RetentionSettings:
    """metadata.max.retention.bytes and metadata.max.retention.ms (a negative value turns a limit off)."""

    retention_bytes: int = DEFAULT_RETENTION_BYTES
    retention_ms: int = DEFAULT_RETENTION_MS


@dataclass
class EmitResult:
    """One snapshot written, and what retention deleted after it."""

    snapshot_id: SnapshotId
    path: Path
    size_in_bytes: int
    records: int
    #: What the image lost against the state it was made from (a KIP-778 lossy
    #: metadata.version change); empty for every snapshot Kafka itself would write.
    losses: LossReport = field(default_factory=LossReport)
    retention: RetentionPlan | None = None
    deleted: list[Path] = field(default_factory=list)


def offset_and_epoch_text(sid: SnapshotId | tuple[int, int]) -> str:
    """Kafka's OffsetAndEpoch record as it prints."""
    return f"OffsetAndEpoch[offset={sid[0]}, epoch={sid[1]}]"


def snapshot_name(sid: SnapshotId | tuple[int, int]) -> str:
    """MetadataProvenance.snapshotName(): `snapshot <offset>-<epoch>` as in Kafka's log lines."""
    return f"snapshot {sid[0]:020d}-{sid[1]:010d}"


def kraft_header_records(kraft_version: int | None, voters: object | None,
                         registry: Registry | None = None) -> list[Payload]:
    """The records after SnapshotHeaderRecord in a snapshot's first batch: KRaftVersionRecord
    when kraft.version ≥ 1, then the VotersRecord if a voter set is known."""
    if not kraft_version:
        return []
    reg = registry or default_catalog().record_registry()
    out = [control_payload(reg, "KRaftVersionRecord", version=0, k_raft_version=kraft_version)]
    if voters is not None:
        out.append(Payload(reg["VotersRecord"], 0, voters))
    return out


def loader_header_records(loader: "MetadataLoader", registry: Registry | None = None) -> HeaderRecords:
    """Header records from a MetadataLoader's view of the KRaft control records, as the raft
    client takes them from its own state when it creates a snapshot (read at each emit)."""
    return lambda image: kraft_header_records(loader.kraft_version, loader.voters, registry)


# ------------------------------------------------------------------------------ Kafka's creation rules


class _Validity(enum.Enum):
    VALID = "VALID"
    DIVERGING = "DIVERGING"
    SNAPSHOT = "SNAPSHOT"


def _end_offset_for_epoch(log: MetadataLog, epoch: int) -> tuple[int, int]:
    """Raft's endOffsetForEpoch: where `epoch` ends in the log, with the epoch found for it."""
    epochs = log.leader_epochs()
    snaps = log.snapshot_ids()
    found: tuple[int, int] | None = None
    if epochs:
        if epochs[-1].epoch == epoch:
            found = (log.log_end_offset, epoch)
        else:
            higher = next((e for e in epochs if e.epoch > epoch), None)
            if higher is not None:
                floor = [e for e in epochs if e.epoch <= epoch]
                found = (higher.start_offset, floor[-1].epoch if floor else epoch)
    if found is None:
        last_epoch = epochs[-1].epoch if epochs else (snaps[-1].epoch if snaps else 0)
        return log.log_end_offset, last_epoch
    if snaps and found == (snaps[0].end_offset, epoch):
        return snaps[0].end_offset, snaps[0].epoch
    return found


def _validate_offset_and_epoch(log: MetadataLog, offset: int, epoch: int) -> tuple[_Validity, tuple[int, int]]:
    """Raft's validateOffsetAndEpoch, against the epochs of the log's batches."""
    start = log.log_start_offset
    if start == 0 and offset == 0:
        return _Validity.VALID, (0, 0)
    snaps = log.snapshot_ids()
    if snaps:
        earliest = snaps[0]
        if offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch:
            return _Validity.SNAPSHOT, tuple(earliest)  # type: ignore[return-value]
    end = _end_offset_for_epoch(log, epoch)
    if end[1] != epoch or end[0] < offset:
        return _Validity.DIVERGING, end
    return _Validity.VALID, (offset, epoch)


def check_snapshot_id(log: MetadataLog, sid: SnapshotId, high_watermark: int) -> str | None:
    """Kafka's createNewSnapshot checks. Returns why the snapshot is silently not created
    (None: create it); raises SnapshotCreationError for an id the log refuses."""
    start = log.log_start_offset
    if sid.end_offset < start:
        return (f"Cannot create a snapshot with an id ({offset_and_epoch_text(sid)}) less than the log start "
                f"offset ({start})")
    if sid.end_offset > high_watermark:
        raise SnapshotCreationError(f"Cannot create a snapshot with an id ({offset_and_epoch_text(sid)}) greater "
                                    f"than the high-watermark ({high_watermark})")
    kind, found = _validate_offset_and_epoch(log, sid.end_offset, sid.epoch)
    if kind is not _Validity.VALID:
        raise SnapshotCreationError(
            f"Snapshot id ({offset_and_epoch_text(sid)}) is not valid according to the log: "
            f"ValidOffsetAndEpoch(kind={kind.value}, offsetAndEpoch={offset_and_epoch_text(found)})")
    if sid.end_offset < log.log_end_offset:
        base = log.read(sid.end_offset, check_crc=False).batch.base_offset
        if base != sid.end_offset:
            raise SnapshotCreationError(
                f"Cannot create snapshot at offset ({sid.end_offset}) because it is not batch aligned. "
                f"The batch containing the requested offset has a base offset of ({base})")
    return None


# ------------------------------------------------------------------------------ the emitter


class SnapshotEmitter:
    """Writes images as snapshots into one metadata log directory (see the module docstring).

    `target`: the node's open MetadataLog (creation rules and retention apply), or a
    directory path (opened as a MetadataLog if it holds log segments; otherwise a plain
    snapshot directory). `clock_ms` stamps batches and drives retention's time limit.
    `high_watermark` defaults to the log end offset. `header_records` gives the KRaft
    records for the header batch (see `loader_header_records`); none by default
    (kraft.version 0). `copies`: where snapshots already encoded for the same image are
    found and kept (snapshot_copies; the clock must then not move during one emit), by
    `software`: what the caller vouches makes emitters' catalogs write alike (e.g. the
    base catalog and the release it is seen at; by default this emitter's catalog object).
    """

    def __init__(self, target: MetadataLog | Path | str, *, catalog: Catalog | None = None,
                 clock_ms: int | Clock = 0, registry: Registry | None = None,
                 writer_line: WriterLine | str | None = None, batch_size: int = SNAPSHOT_APPEND_RECORDS,
                 max_batch_bytes: int = MAX_BATCH_SIZE_BYTES, header_records: HeaderRecords | None = None,
                 high_watermark: Callable[[], int] | None = None,
                 retention: RetentionSettings | None = RetentionSettings(), fsync: bool = True,
                 copies: SnapshotCopies | None = None, software: Hashable = None):
        self.catalog = catalog if catalog is not None else default_catalog()
        self.registry = registry or self.catalog.record_registry()
        self.clock = as_clock(clock_ms)
        self.writer_line = writer_line
        self.batch_size = batch_size
        self.max_batch_bytes = max_batch_bytes
        self.header_records = header_records
        self.high_watermark = high_watermark
        self.retention = retention
        self.fsync = fsync
        self.copies = copies
        self.software = software if software is not None else id(self.catalog)
        self._owns_log = False
        self.log: MetadataLog | None
        if isinstance(target, MetadataLog):
            self.log, self.directory = target, target.directory
        else:
            self.directory = Path(target)
            self.log = None
            has_segments = self.directory.is_dir() and any(
                parse_segment_name(p.name) is not None for p in self.directory.iterdir())
            if has_segments:
                self.log = MetadataLog.open(self.directory, fsync=fsync)
                self._owns_log = True
            else:
                try:
                    self.directory.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise KraftsimError(f"cannot create {self.directory}: {e.strerror or e}") from None
        self.results: list[EmitResult] = []
        #: What the emitter would log: snapshots skipped and why, snapshots written.
        self.messages: list[str] = []

    def close(self) -> None:
        if self._owns_log and self.log is not None:
            self.log.close()

    def __enter__(self) -> "SnapshotEmitter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def maybe_emit(self, image: MetadataImage, *, losses: LossReport | None = None,
                   loss_handler: LossHandler = raise_on_loss) -> EmitResult | None:
        """Write `image` unless its snapshot exists; returns what was written, or None.

        `losses` is attached to the result (what a KIP-778 rewrite dropped before this
        image was made); `loss_handler` is for the write itself and raises by default.
        """
        mv = image.metadata_version
        sid = SnapshotId(*image.provenance.snapshot_id())
        name = snapshot_name(sid)
        if mv is None:
            raise KraftsimError(f"cannot write {name}: the image has no metadata.version")
        path = self.directory / snapshot_file_name(sid)
        if self.log is not None:
            hw = self.high_watermark() if self.high_watermark is not None else self.log.log_end_offset
            refused = check_snapshot_id(self.log, sid, hw)
            if refused is not None:
                self.messages.append(refused)
                self.messages.append(f"Not generating {name} because it already exists.")
                return None
        if path.exists():
            self.messages.append(f"Not generating {name} because it already exists.")
            return None
        header = list(self.header_records(image)) if self.header_records is not None else []
        copies = self.copies if loss_handler is raise_on_loss else None  # (another handler may want each loss)
        key = (sid, mv, self.writer_line, self.software, id(self.registry), self.batch_size, self.max_batch_bytes)
        placed = None
        if copies is not None:
            placed = copies.place(image, key, header, self.clock(), self.directory, sid, fsync=self.fsync)
        if placed is not None:
            written, count = placed
        else:
            stamps: set[int] = set()

            def clock() -> int:  # (the timestamps the batches got: a copy must get the same)
                t = self.clock()
                stamps.add(t)
                return t

            stamp = image.provenance.last_contained_log_time_ms
            if copies is not None and copies.enabled and self.batch_size > 0:
                # The records as values, the topics' taken from the last write where unchanged.
                values = iter_image_values(image, mv, self.catalog, writer_line=self.writer_line,
                                           registry=self.registry, topic_values=copies.topic_values)
                written, count = write_snapshot_values(
                    self.directory, sid, values, last_contained_log_timestamp=stamp, time_ms=clock,
                    header_records=header, append_records=self.batch_size, registry=self.registry,
                    max_batch_bytes=self.max_batch_bytes, fsync=self.fsync)
            else:
                # read_only: the records are only encoded, so they may share the image's lists.
                records = iter_image_records(image, mv, self.catalog, loss_handler=loss_handler,
                                             writer_line=self.writer_line, registry=self.registry, read_only=True)
                written, count = write_snapshot_counted(
                    self.directory, sid, records, last_contained_log_timestamp=stamp, time_ms=clock,
                    header_records=header, append_records=self.batch_size, registry=self.registry,
                    max_batch_bytes=self.max_batch_bytes, fsync=self.fsync)
            if copies is not None and len(stamps) == 1:
                copies.keep(image, key, header, stamps.pop(), written, count)
        result = EmitResult(sid, written, written.stat().st_size, count, losses if losses is not None else LossReport())
        self.messages.append(f"Successfully wrote {name}")
        self._retain(result)
        self.results.append(result)
        return result

    def _retain(self, result: EmitResult) -> None:
        if self.log is None or self.retention is None:
            return
        segments, snapshots = describe_log(self.log)
        plan = plan_retention(segments, snapshots, log_start_offset=self.log.log_start_offset, now_ms=self.clock(),
                              retention_bytes=self.retention.retention_bytes,
                              retention_ms=self.retention.retention_ms)
        result.retention = plan
        if not plan.empty:
            result.deleted = apply_retention(self.log, plan)
            self.messages.extend(plan.reasons)
