"""Write a Kafka-format snapshot of a log's state at any offset, at any metadata.version.

`create_snapshot(path, O, out=...)` does what Kafka's SnapshotEmitter does for the image a
node holds after every record below O, with the inputs Kafka would take from the log:

- The snapshot id is (O, epoch of the record at O − 1), and the header's
  LastContainedLogTimestamp is the append timestamp of the batch holding O − 1. This is
  the image's provenance in Kafka (the loader takes both from the last contained batch);
  every snapshot in the oracle agrees with its log on both.
- Batch timestamps: Kafka stamps each batch of a snapshot with its wall clock at the
  moment it writes it (in the oracle: the header batch 30-710 ms after the last contained
  batch, then a few ms per batch), which no log records. kraftsim stamps every batch with
  the LastContainedLogTimestamp, so identical inputs give identical bytes; `time_ms`
  chooses another (fixed or clock) value.
- For a log directory the id must pass the raft log's createNewSnapshot rules, with
  Kafka's texts (emitter.check_snapshot_id): within the high watermark (everything on
  disk counts as committed), an (offset, epoch) the log's epochs agree with, and batch
  aligned (the base offset of a batch, or the log end). `allow_unaligned=True` goes beyond
  Kafka and cuts inside a batch. O must not lie inside a metadata transaction either
  (a node has no image there).
- When kraft.version ≥ 1 at O − 1 (a dynamic quorum), the header batch also holds a
  KRaftVersionRecord and the latest VotersRecord, as RecordsSnapshotWriter writes them:
  from the header of the snapshot the state was rebuilt from (or the 0-0 checkpoint),
  then the control records of the log after it.
- The records are `write_image` at the target metadata.version (default: the image's own),
  with the writer of a Kafka release line: `release` names it; by default it is the release
  whose software the registered nodes run (the highest metadata.version their
  registrations advertise, mapped to the release whose LATEST_PRODUCTION it is). 3.x
  writers put a ZkMigrationStateRecord after the feature levels, 4.x writers do not.
- The image is the one a node of that release rebuilt: its replay keeps the ConfigRecords
  that release keeps (from 4.3 only configs its code defines), whatever release `catalog`
  follows; with the release inferred, a load whose config filter would differ is redone.
- A target metadata.version that cannot hold everything raises Kafka's
  UnwritableMetadataException, unless `allow_loss=True`: then the LossReport lists every
  dropped item and the snapshot is written without them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from kraftsim.errors import KraftsimError
from kraftsim.image.publisher.snapshot_emitter import SnapshotCreationError, check_snapshot_id, kraft_header_records
from kraftsim.image.components.configs import resource_type_name
from kraftsim.image.image import MetadataImage
from kraftsim.image.loader.metadata_loader import TransactionState
from kraftsim.image.loader.loading import LoadResult, SnapshotChoice, load_path
from kraftsim.image.loader.summary import configs_dropped
from kraftsim.image.writer.loss import LossReport, raise_on_loss
from kraftsim.image.writer.image_writer import WriterLine, resolve_writer_line, write_image
from kraftsim.image.writer.kafka_order import config_entry_ranks
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.registry import Registry
from kraftsim.storage.batchfile import Clock
from kraftsim.storage.damage import load_limit
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import BOOTSTRAP_SNAPSHOT_ID, PathKind, SnapshotId, classify_path, snapshot_file_name
from kraftsim.storage.snapshot import read_snapshot, write_snapshot
from kraftsim.storage.view import metadata_dir_of
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, MetadataVersion, MVLike, Release, VersionsError, default_catalog


@dataclass
class SnapshotContents:
    """Everything a snapshot at one offset will hold, before it is written."""

    snapshot_id: SnapshotId
    last_contained_log_timestamp: int
    header_records: list[Payload]  # control records after SnapshotHeaderRecord (kraft.version ≥ 1)
    records: list[Payload]
    image: MetadataImage
    metadata_version: MetadataVersion
    release: str  # whose writer
    release_reason: str  # why that release
    writer_line: WriterLine
    source: str  # how the image was rebuilt
    loss: LossReport = field(default_factory=LossReport)
    registry: Registry | None = None
    #: The ConfigRecords the writer's replay ignored (summary.configs_dropped); None: none.
    configs_dropped: dict[str, object] | None = None

    def write(self, out: Path | str, *, time_ms: int | Clock | None = None, fsync: bool = True) -> Path:
        """Write the snapshot into directory `out` under Kafka's name, or to the file `out`."""
        return write_contents(self, out, time_ms=time_ms, fsync=fsync)


# ------------------------------------------------------------------------------ which release


def advertised_metadata_version(image: MetadataImage) -> int | None:
    """The highest metadata.version any registered broker or controller advertises (its
    software's own maximum), None without registrations."""
    best: int | None = None
    for reg in list(image.cluster.brokers.values()) + list(image.cluster.controllers.values()):
        for f in reg.supported_features:
            if f.name == MV_NAME and (best is None or f.max_version > best):
                best = f.max_version
    return best


def advertised_ranges(features: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """A registration's supported features as {name: (min, max)}, features with max 0 left out."""
    return {f.name: (f.min_version, f.max_version) for f in features if f.max_version > 0}


def release_for_level(catalog: Catalog, level: int) -> Release:
    """The release whose nodes advertise `level` as their maximum (Catalog.release_for_level)."""
    return catalog.release_for_level(level)


def infer_release(image: MetadataImage, catalog: Catalog) -> tuple[str, str]:
    """(release name, why) for the writer of a snapshot of `image`: the release that advertises
    exactly what the registration with the highest metadata.version does (Catalog.release_advertising,
    as `cluster import` and `downgrade-report` infer a node's release), else the release that
    level names (Catalog.release_for_level: also for a node with unstable versions enabled)."""
    level = advertised_metadata_version(image)
    if level is not None:
        top = max((reg for reg in list(image.cluster.brokers.values()) + list(image.cluster.controllers.values())),
                  key=lambda reg: max((f.max_version for f in reg.supported_features if f.name == MV_NAME), default=-1))
        exact, unstable = catalog.release_advertising(advertised_ranges(top.supported_features))
        r = exact if exact is not None and not unstable else release_for_level(catalog, level)
        return r.name, f"the registered nodes advertise metadata.version up to {level}"
    if image.metadata_version is not None:
        r = release_for_level(catalog, image.metadata_version)
        return r.name, f"no registrations; the finalized metadata.version is {image.metadata_version}"
    return catalog.release.name, "no registrations and no metadata.version: the catalog's release"


# ------------------------------------------------------------------------------ the image at O


def _directory_base(log: MetadataLog, offset: int) -> SnapshotChoice:
    """Rebuild from the whole log when it reaches back to 0 without gaps, else from the
    newest snapshot at or below the offset (as a node starting up would)."""
    if log.log_start_offset == 0 and offset <= log.log_end_offset:
        if not any(a < offset for a, _ in log.gaps()):
            return "none"
    return "latest"


def _check_range(directory: Path, log: MetadataLog, offset: int) -> int:
    """The offset must lie where the directory holds a state; returns the high watermark
    (everything on disk counts as committed: the log end, or a newer snapshot's end)."""
    ids = log.snapshot_ids()
    end = max([log.log_end_offset] + [s.end_offset for s in ids])
    if offset < 1:
        raise KraftsimError(f"{directory}: offset {offset}: a snapshot's end offset is one past its last record, "
                            "so it is at least 1")
    if offset > end:
        raise KraftsimError(f"{directory}: Cannot create a snapshot at offset {offset}: it is greater than the end "
                            f"of the log ({end})")
    return end


def _check_id(directory: Path, log: MetadataLog, sid: SnapshotId, high_watermark: int) -> None:
    """Kafka's createNewSnapshot rules and texts (emitter.check_snapshot_id); an id Kafka
    would silently not create (below the log start) is an error here, since it was asked for."""
    try:
        reason = check_snapshot_id(log, sid, high_watermark)
    except SnapshotCreationError as e:
        raise KraftsimError(f"{directory}: {e}") from None
    if reason is not None:
        raise KraftsimError(f"{directory}: {reason}")


def _raft_state(directory: Path, log: MetadataLog, result: LoadResult,
                registry: Registry) -> tuple[int | None, object]:
    """(kraft.version, VotersRecord message) at the snapshot's offset − 1: what the snapshot
    the load started from (or the dynamic quorum's 0-0 checkpoint) says in its header,
    updated by the control records the loader met in the log after it."""
    header = result.snapshot_header
    if result.snapshot_id is None and BOOTSTRAP_SNAPSHOT_ID in log.snapshot_ids():
        header = read_snapshot(directory / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID), registry).header_entries
    kraft, voters = _header_state(header)
    loader = result.loader
    return (loader.kraft_version if loader.kraft_version is not None else kraft,
            loader.voters if loader.voters is not None else voters)


def _header_state(header: list[LogEntry]) -> tuple[int | None, object]:
    """(kraft.version, VotersRecord message) from a snapshot's header batch."""
    kraft, voters = None, None
    for e in header:
        if e.record_type.name == "KRaftVersionRecord":
            kraft = e.message.k_raft_version
        elif e.record_type.name == "VotersRecord":
            voters = e.message
    return kraft, voters


def _load_at(path: Path, offset: int, catalog: Catalog, registry: Registry,
             allow_unaligned: bool) -> tuple[LoadResult, list[Payload], str]:
    kind = classify_path(path)
    if kind is PathKind.BOOTSTRAP:
        raise KraftsimError(f"{path}: a bootstrap file holds the state before the log begins; snapshot a log "
                            "directory, segment or snapshot instead")
    if kind in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        directory = metadata_dir_of(path)
        with MetadataLog.open(directory, read_only=True, validate="all") as log:
            load_limit(log, up_to_damage=False, upto=offset)  # damage below the offset: no snapshot of it
            high_watermark = _check_range(directory, log, offset)
            result = load_path(directory, catalog=catalog, registry=registry, upto_offset=offset,
                               snapshot=_directory_base(log, offset))
            if not allow_unaligned:
                _check_id(directory, log, SnapshotId(offset, result.image.provenance.last_contained_epoch),
                          high_watermark)
            kraft, voters = _raft_state(directory, log, result, registry)
        source = (f"snapshot {snapshot_file_name(result.snapshot_id)} + log" if result.snapshot_id is not None
                  else "the whole log")
        return result, kraft_header_records(kraft, voters, registry), source
    if kind is PathKind.SNAPSHOT:
        result = load_path(path, catalog=catalog, registry=registry, upto_offset=offset)
        return result, kraft_header_records(*_header_state(result.snapshot_header), registry), \
            f"snapshot {path.name}"
    result = load_path(path, catalog=catalog, registry=registry, upto_offset=offset)  # a segment
    if offset > result.disk_end_offset or offset <= result.log_start:
        raise KraftsimError(f"{path}: offset {offset} is outside the segment's records "
                            f"({result.log_start}..{result.disk_end_offset - 1})")
    return result, kraft_header_records(result.loader.kraft_version, result.loader.voters, registry), \
        f"segment {path.name}"


def _config_entry_ranks(path: Path, result: LoadResult, offset: int,
                        registry: Registry) -> dict[tuple[int, str], int] | None:
    """kafka_order.config_entry_ranks over the records a directory load replayed below
    `offset` (its snapshot's, then the log's); None for a single file."""
    if classify_path(path) not in (PathKind.METADATA_DIR, PathKind.LOG_DIR):
        return None
    directory = metadata_dir_of(path)
    replayed: list[LogEntry] = []
    if result.snapshot_id is not None:
        replayed += read_snapshot(directory / snapshot_file_name(result.snapshot_id), registry).data_entries()
    with MetadataLog.open(directory, read_only=True) as log:
        for e in log.entries(result.log_start, registry):
            if e.offset >= offset:
                break
            replayed.append(e)
    return config_entry_ranks((e.record_type.name, e.message) for e in replayed if not e.control)


def _replays_configs_otherwise(result: LoadResult, writer: Catalog) -> bool:
    """Whether a node of the writer's release would have rebuilt another image: the writer
    replays ConfigRecords with its own code (Kafka 4.3 on drops configs it does not define),
    so a load that dropped some, or kept some the writer drops, is redone as the writer."""
    if writer.keeps_kraft_version_feature() != result.loader.catalog.keeps_kraft_version_feature():
        return True  # 3.9 keeps a kraft.version FeatureLevelRecord in the image, 4.x drops it
    keeps = writer.config_replay_filter()
    if keeps == result.loader.catalog.config_replay_filter():
        return False
    if result.loader.configs_dropped:
        return True
    return keeps is not None and any(not keeps.keeps(resource_type_name(rtype), name)
                                     for (rtype, _), data in result.image.configs.sorted_resources() for name in data)


# ------------------------------------------------------------------------------ public API


def snapshot_contents(path: Path | str, offset: int, *, metadata_version: MVLike | None = None, allow_loss: bool = False,
                      release: str | None = None, catalog: Catalog | None = None,
                      allow_unaligned: bool = False,
                      config_type_hashes: Mapping[int, int] | None = None) -> SnapshotContents:
    """What a snapshot of `path` at end offset `offset` holds (nothing is written).

    `catalog` reads the log (default: the shipped catalog); the writer uses the same
    catalog seen from `release` (or the inferred release). `config_type_hashes`: see
    write_image (the JVM-run facts that order config resources as one Kafka process did);
    with them, for a log directory, resources that share a HashMap bucket follow the order
    they entered that process's map, taken from the records replayed here (the process is
    assumed to have started from the same snapshot, or from the log's start)."""
    p = Path(path)
    catalog = catalog if catalog is not None else default_catalog()
    registry = catalog.record_registry()
    load_catalog = catalog if release is None else catalog.replaying_configs_as(release)
    result, header, source = _load_at(p, offset, load_catalog, registry, allow_unaligned)
    if release is None:
        release, reason = infer_release(result.image, catalog)
        if _replays_configs_otherwise(result, catalog.at_release(release)):
            result, header, source = _load_at(p, offset, catalog.replaying_configs_as(release), registry,
                                              allow_unaligned)
    else:
        reason = "chosen"
    if result.loader.transaction_state in (TransactionState.STARTED, TransactionState.CONTINUED):
        raise KraftsimError(f"{p}: offset {offset} lies inside a metadata transaction (no EndTransactionRecord "
                            "below it): a node has no image there to snapshot")
    image = result.image
    prov = image.provenance
    if not prov.is_offset_batch_aligned and not allow_unaligned:
        raise KraftsimError(f"{p}: Cannot create snapshot at offset ({offset}) because it is not batch aligned")
    if prov.last_contained_offset != offset - 1:
        raise KraftsimError(f"{p}: the records below offset {offset} end at offset {prov.last_contained_offset}: "
                            "there is no image at that offset")
    writer_catalog = catalog.at_release(release)
    line = resolve_writer_line(None, writer_catalog)
    if metadata_version is None:
        if image.metadata_version is None:
            raise KraftsimError(f"{p}: no metadata.version is finalized at offset {offset}; give one to write at")
        metadata_version = image.metadata_version
    try:
        mv = writer_catalog.metadata_version(metadata_version)
    except VersionsError as e:
        raise KraftsimError(f"the snapshot writer of Kafka {release} cannot write metadata.version "
                            f"{metadata_version}: {e}") from None
    report = LossReport()
    ranks = _config_entry_ranks(p, result, offset, registry) if config_type_hashes else None
    records = write_image(image, mv, writer_catalog, loss_handler=report if allow_loss else raise_on_loss,
                          writer_line=line, registry=registry, config_type_hashes=config_type_hashes,
                          config_entry_ranks=ranks)
    return SnapshotContents(
        snapshot_id=SnapshotId(offset, prov.last_contained_epoch),
        last_contained_log_timestamp=prov.last_contained_log_time_ms,
        header_records=header, records=records, image=image, metadata_version=mv, release=release,
        release_reason=reason, writer_line=line, source=source, loss=report, registry=registry,
        configs_dropped=configs_dropped(result))


def output_problem(out: Path | str) -> str | None:
    """Why a snapshot cannot be written to `out` (as given: a trailing separator names a
    directory), or None: an existing directory takes Kafka's file name, a new file is never
    written over an existing one. Asked again before the write, and early by a caller that
    has a long read to do first."""
    out_path = Path(out)
    if out_path.is_dir():
        return None
    if str(out).endswith(os.sep):  # (a directory's name: never written as a file)
        return f"{out}: not a directory" if out_path.exists() else f"{out}: no such directory"
    if out_path.exists():
        return f"{out_path}: already exists; not overwriting it"
    if not out_path.parent.is_dir():
        return f"{out_path.parent}: no such directory"
    return None


def write_contents(contents: SnapshotContents, out: Path | str, *, time_ms: int | Clock | None = None,
                   fsync: bool = True) -> Path:
    """Write `contents` as a `.checkpoint` into directory `out` (Kafka's file name), or to
    the file name `out`. Never overwrites an existing file."""
    out_path = Path(out)
    stamp = contents.last_contained_log_timestamp if time_ms is None else time_ms
    kw: dict[str, Any] = dict(last_contained_log_timestamp=contents.last_contained_log_timestamp, time_ms=stamp,
                              header_records=contents.header_records, registry=contents.registry, fsync=fsync)
    if out_path.is_dir():
        return write_snapshot(out_path, contents.snapshot_id, contents.records, **kw)
    problem = output_problem(out)
    if problem is not None:
        raise KraftsimError(problem)
    parent = out_path.parent
    try:
        staging = Path(tempfile.mkdtemp(prefix=".kraftsim-snapshot-", dir=parent))
    except OSError as e:
        raise KraftsimError(f"cannot write in {parent}: {e.strerror or e}") from None
    try:
        written = write_snapshot(staging, contents.snapshot_id, contents.records, **kw)
        if out_path.exists():
            raise KraftsimError(f"{out_path}: already exists; not overwriting it")
        os.replace(written, out_path)
    except OSError as e:
        raise KraftsimError(f"cannot write {out_path}: {e.strerror or e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_path


def create_snapshot(path: Path | str, offset: int, *, out: Path | str, metadata_version: MVLike | None = None,
                    allow_loss: bool = False, release: str | None = None, catalog: Catalog | None = None,
                    time_ms: int | Clock | None = None, allow_unaligned: bool = False,
                    fsync: bool = True) -> tuple[Path, LossReport]:
    """Write a Kafka-format snapshot of `path` (log directory, segment or snapshot) at end
    offset `offset`; returns the file written and what was dropped (empty unless
    `allow_loss`). See the module docstring for every rule."""
    contents = snapshot_contents(path, offset, metadata_version=metadata_version, allow_loss=allow_loss,
                                 release=release, catalog=catalog, allow_unaligned=allow_unaligned)
    return contents.write(out, time_ms=time_ms, fsync=fsync), contents.loss
