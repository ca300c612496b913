"""Reading what an operator hands `cluster import`: one or more copies of a real node's
metadata, checked and loaded read-only.

A source is a `__cluster_metadata-0` directory, a node's log directory holding one, or a
single `.checkpoint` snapshot. Beside the log Kafka keeps `quorum-state` (raft's epoch and
voters) and, one level up, `meta.properties` (cluster id, node id, directory id); both are
read when present. Nothing here writes: damage is found the way a read-only open finds it
(the valid prefix and what start-up recovery would cut), and reported, never repaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.image import LoadResult, load_path
from kraftsim.protocol.entries import LogEntry
from kraftsim.storage import (
    METADATA_DIR_NAME,
    MetadataLog,
    QuorumState,
    read_meta_properties,
    read_quorum_state,
)
from kraftsim.storage.batchfile import decode_file_batch
from kraftsim.storage.meta_properties import MetaPropertiesFile
from kraftsim.storage.names import (
    PathKind,
    classify_path,
    parse_snapshot_name,
    snapshot_file_name,
)
from kraftsim.sim.node.voters import MEMBERSHIP_RECORDS, Membership
from kraftsim.versions import Catalog

QUORUM_STATE_FILE = "quorum-state"
META_PROPERTIES_FILE = "meta.properties"


class ImportRefused(KraftsimError):
    """An import that cannot be done as asked; `exit_code` is the CLI's (2 input, 1 damage)."""

    def __init__(self, message: str, exit_code: int = 2, node: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        #: The node a per-node override names when the cluster has no such node.
        self.node = node


@dataclass
class Damage:
    """Where a source stops being a valid log, and why (what start-up recovery would cut)."""

    offset: int | None
    file: str
    reason: str

    def text(self) -> str:
        where = f"offset {self.offset}" if self.offset is not None else "an unknown offset"
        return f"{self.file}: damaged at {where}: {self.reason}"


@dataclass
class SourceReplica:
    """One node's copy of the metadata as found on disk, loaded."""

    given: Path
    metadata_dir: Path | None  # None for a lone snapshot file
    snapshot_file: Path | None  # the snapshot the load started from (a lone one, or the log's newest)
    meta: MetaPropertiesFile | None
    quorum: QuorumState | None
    loaded: LoadResult
    damage: Damage | None
    #: The KRaftVersionRecord and VotersRecord of the loaded snapshot's header.
    header: list[LogEntry] = field(default_factory=list)
    #: The log's control records that name voters or kraft.version, in file order:
    #: LeaderChange, KRaftVersionRecord and VotersRecord.
    control: list[LogEntry] = field(default_factory=list)
    last_epoch: int = 0
    last_timestamp: int = 0

    @property
    def end_offset(self) -> int:
        """The offset where this copy ends: the next record would get it."""
        return self.loaded.end_offset

    @property
    def membership(self) -> Membership:
        """kraft.version and the latest VotersRecord where this copy ends (sim.voters)."""
        after = [e for e in self.control if e.offset >= self.loaded.log_start]
        return Membership().read(self.header, in_snapshot_header=True).read(after)

    @property
    def node_id(self) -> int | None:
        return None if self.meta is None else self.meta.meta.node_id

    @property
    def cluster_id(self) -> str | None:
        return None if self.meta is None else self.meta.meta.cluster_id

    @property
    def directory_id(self) -> str | None:
        return None if self.meta is None else self.meta.meta.directory_id


def _damage_of(log: MetadataLog) -> Damage | None:
    """The first damage of a log opened read-only with every segment checked: a cut that is
    not a torn tail, a bad batch in any segment, missing offsets (the load stops below it).
    A torn last batch is not damage: Kafka's recovery cuts it as a matter of course (the
    load leaves it out and says so in `LoadResult.recovered`)."""
    found = log.damage()
    if not found:
        return None
    first = min(found, key=lambda d: d.offset)
    return Damage(first.offset, first.where, first.reason)


def _read_beside(metadata_dir: Path) -> tuple[MetaPropertiesFile | None, QuorumState | None]:
    meta = quorum = None
    qs = metadata_dir / QUORUM_STATE_FILE
    mp = metadata_dir.parent / META_PROPERTIES_FILE
    try:
        if qs.is_file():
            quorum = read_quorum_state(qs)
        if mp.is_file():
            meta = read_meta_properties(mp)
    except KraftsimError as e:
        raise ImportRefused(str(e)) from None
    return meta, quorum


def import_source_kind(path: Path) -> PathKind:
    """What a source is, from its names alone (nothing is read): ImportRefused (exit 2) when it
    cannot hold a cluster. Also what `scenario check` asks of a file's `from`, so that it
    refuses what `scenario run` would."""
    p = Path(path)
    try:
        kind = classify_path(p)
    except KraftsimError as e:
        raise ImportRefused(f"{e}") from None
    if kind in (PathKind.SEGMENT, PathKind.BOOTSTRAP):
        raise ImportRefused(f"{p}: a {kind.value} alone does not hold a cluster; give its {METADATA_DIR_NAME} "
                            "directory, the log directory holding it, or a .checkpoint snapshot")
    if kind is PathKind.SNAPSHOT and parse_snapshot_name(p.name) is None:
        raise ImportRefused(f"{p}: the file name does not say which offset this snapshot ends at "
                            "(expected <end offset>-<epoch>.checkpoint)")
    if kind is PathKind.LOG_DIR and not (p / METADATA_DIR_NAME).is_dir():
        raise ImportRefused(f"{p}: a log directory without a {METADATA_DIR_NAME} directory: nothing to import")
    return kind


def read_source(path: Path, catalog: Catalog, *, up_to_damage: bool = False) -> SourceReplica:
    """Load one source read-only; ImportRefused (exit 2) when it is not Kafka metadata, (exit 1)
    when it is damaged and `up_to_damage` is not given."""
    p = Path(path)
    kind = import_source_kind(p)
    registry = catalog.record_registry()
    if kind is PathKind.SNAPSHOT:
        meta, quorum = _read_beside(p.parent)
        try:
            loaded = load_path(p, catalog=catalog, registry=registry)
        except KraftsimError as e:
            raise ImportRefused(f"{e}", exit_code=1) from None
        src = SourceReplica(p, None, p, meta, quorum, loaded, None)
        src.header = [e for e in loaded.snapshot_header if e.type_name in MEMBERSHIP_RECORDS]
        src.last_epoch = loaded.snapshot_id.epoch if loaded.snapshot_id is not None else 0
        src.last_timestamp = loaded.snapshot_header[0].message.last_contained_log_timestamp
        return src
    metadata_dir = p if kind is PathKind.METADATA_DIR else p / METADATA_DIR_NAME
    meta, quorum = _read_beside(metadata_dir)
    try:
        # Every segment is checked (Kafka's recovery checks the last one only): damage in an
        # older segment must stop the import, or label it partial, as well.
        with MetadataLog.open(metadata_dir, read_only=True, validate="all") as log:
            damage = _damage_of(log)
            if damage is not None and not up_to_damage:
                raise ImportRefused(f"{damage.text()} (give --up-to-damage to import what comes before it)",
                                    exit_code=1)
            loaded = load_path(metadata_dir, catalog=catalog, registry=registry, up_to_damage=up_to_damage)
            if loaded.end_offset == 0 and loaded.snapshot_id is None and log.log_end_offset == 0:
                raise ImportRefused(f"{metadata_dir}: holds no records: nothing to import")
            src = SourceReplica(p, metadata_dir, None, meta, quorum, loaded, damage)
            src.header = [e for e in loaded.snapshot_header if e.type_name in MEMBERSHIP_RECORDS]
            if loaded.snapshot_id is not None:
                src.snapshot_file = metadata_dir / snapshot_file_name(loaded.snapshot_id)
                src.last_epoch = loaded.snapshot_id.epoch
            for fb in log.batches(log.log_start_offset):
                b = fb.batch
                if b.base_offset >= loaded.end_offset:
                    break  # beyond what was loaded (the damage)
                src.last_epoch = max(src.last_epoch, b.partition_leader_epoch)
                src.last_timestamp = max(src.last_timestamp, b.max_timestamp)
                if b.is_control:
                    src.control += [e for e in decode_file_batch(fb, registry)
                                    if e.type_name == "LEADER_CHANGE" or e.type_name in MEMBERSHIP_RECORDS]
    except ImportRefused:
        raise
    except KraftsimError as e:
        raise ImportRefused(f"{e}", exit_code=1) from None
    return src


__all__ = ["Damage", "ImportRefused", "SourceReplica", "import_source_kind", "read_source"]
