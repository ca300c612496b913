"""File and directory names Kafka uses for KRaft metadata, and their parsers.

Names carry data (a segment's base offset, a snapshot's end offset and epoch), so they
are parsed strictly: a file that merely looks similar is not taken for one of Kafka's.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import NamedTuple

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import why_absent

METADATA_TOPIC = "__cluster_metadata"
METADATA_DIR_NAME = "__cluster_metadata-0"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
BOOTSTRAP_TMP_FILE = "bootstrap.checkpoint.tmp"
META_PROPERTIES_FILE = "meta.properties"
QUORUM_STATE_FILE = "quorum-state"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"

LOG_SUFFIX = ".log"
SNAPSHOT_SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
DELETED_SUFFIX = ".checkpoint.deleted"
#: What a segment file marked for deletion gets after its name (`%020d.log.deleted`).
DELETED_FILE_SUFFIX = ".deleted"

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})(\.checkpoint|\.checkpoint\.part|\.checkpoint\.deleted)$")
# Kafka's temp names add "-<random>" before the suffix: <offset>-<epoch>-<random>.checkpoint.part
_PART_RE = re.compile(r"^(\d{20})-(\d{10})-[^/]*\.checkpoint\.part$")


class SnapshotId(NamedTuple):
    """Kafka's OffsetAndEpoch for a snapshot: end offset (last contained offset + 1) and epoch."""

    end_offset: int
    epoch: int


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


class SnapshotState(enum.Enum):
    """Which of the three snapshot file states a name is in."""

    FROZEN = ".checkpoint"
    PART = ".checkpoint.part"
    DELETED = ".checkpoint.deleted"


class SnapshotName(NamedTuple):
    snapshot_id: SnapshotId
    state: SnapshotState


def segment_file_name(base_offset: int) -> str:
    """`%020d.log`."""
    if base_offset < 0:
        raise ValueError(f"negative segment base offset {base_offset}")
    return f"{base_offset:020d}{LOG_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset of a `%020d.log` name, or None for any other name."""
    m = _SEGMENT_RE.match(name)
    return int(m.group(1)) if m else None


def snapshot_file_name(snapshot_id: SnapshotId, state: SnapshotState = SnapshotState.FROZEN) -> str:
    """`%020d-%010d.checkpoint` (or `.checkpoint.part` / `.checkpoint.deleted`)."""
    offset, epoch = snapshot_id
    if offset < 0 or epoch < 0:
        raise ValueError(f"invalid snapshot id {snapshot_id}")
    return f"{offset:020d}-{epoch:010d}{state.value}"


def parse_snapshot_name(name: str) -> SnapshotName | None:
    """Parse a snapshot file name as Kafka's Snapshots.parse does: offset from characters
    0..19, epoch from 21..30, and one of the three suffixes; None for anything else."""
    m = _SNAPSHOT_RE.match(name) or _PART_RE.match(name)
    if not m:
        return None
    if name.endswith(PART_SUFFIX):
        state = SnapshotState.PART
    elif name.endswith(DELETED_SUFFIX):
        state = SnapshotState.DELETED
    else:
        state = SnapshotState.FROZEN
    return SnapshotName(SnapshotId(int(m.group(1)), int(m.group(2))), state)


def snapshot_part_prefix(snapshot_id: SnapshotId) -> str:
    """The prefix Kafka gives a snapshot's temp file: `<offset>-<epoch>-`."""
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}-"


class PathKind(enum.Enum):
    """What a user-supplied path is, for tools that accept any of Kafka's metadata files."""

    SEGMENT = "log segment"
    SNAPSHOT = "snapshot"
    BOOTSTRAP = "bootstrap checkpoint"
    METADATA_DIR = "metadata log directory"
    LOG_DIR = "log directory"


def _looks_like_metadata_dir(path: Path) -> bool:
    if path.name == METADATA_DIR_NAME:
        return True
    try:
        return any(
            parse_segment_name(p.name) is not None or parse_snapshot_name(p.name) is not None
            for p in path.iterdir()
            if p.is_file()
        )
    except OSError:
        return False


def classify_path(path: Path | str) -> PathKind:
    """Say which of Kafka's metadata files or directories `path` is.

    Files are told apart by name (Kafka's tools do the same); a directory is the
    metadata log directory when it is named `__cluster_metadata-0` or holds segments or
    snapshots, and a log directory when it holds `__cluster_metadata-0`, `meta.properties`
    or `bootstrap.checkpoint`. Anything else is a KraftsimError naming the path.
    """
    p = Path(path)
    if p.is_file():
        if p.name == BOOTSTRAP_FILE:
            return PathKind.BOOTSTRAP
        if p.name.endswith(LOG_SUFFIX):
            return PathKind.SEGMENT
        if p.name.endswith(SNAPSHOT_SUFFIX):
            return PathKind.SNAPSHOT
        raise KraftsimError(
            f"{p}: not a metadata file (expected a .log segment, a .checkpoint snapshot or {BOOTSTRAP_FILE})"
        )
    if p.is_dir():
        if (p / METADATA_DIR_NAME).is_dir() or (p / META_PROPERTIES_FILE).is_file() or (p / BOOTSTRAP_FILE).is_file():
            return PathKind.LOG_DIR
        if _looks_like_metadata_dir(p):
            return PathKind.METADATA_DIR
        raise KraftsimError(
            f"{p}: neither a {METADATA_DIR_NAME} directory (no .log segments or .checkpoint snapshots) "
            f"nor a log directory (no {METADATA_DIR_NAME}, {META_PROPERTIES_FILE} or {BOOTSTRAP_FILE})"
        )
    if p.exists():  # a device, a FIFO, a socket: something is there, but not a file to read as metadata
        raise KraftsimError(f"{p}: not a regular file or a directory (expected a .log segment, a .checkpoint "
                            f"snapshot, {BOOTSTRAP_FILE} or a directory of them)")
    raise KraftsimError(f"{p}: {why_absent(p)}")


# Topic names: Kafka's Topic.validate (a topic name is also a partition directory's name).

#: Kafka's Topic.MAX_NAME_LENGTH.
MAX_TOPIC_NAME_LENGTH = 249
#: Topics Kafka marks internal (org.apache.kafka.common.internals.Topic) before 3.9.
_INTERNAL_BEFORE_SHARE_STATE = frozenset({"__consumer_offsets", "__transaction_state"})
#: From 3.9 (KIP-932's first parts) the share-group state topic is internal too.
_INTERNAL_WITH_SHARE_STATE = _INTERNAL_BEFORE_SHARE_STATE | {"__share_group_state"}
_SHARE_STATE_INTERNAL_FROM = (3, 9, 0)


def internal_topics(release: str) -> frozenset[str]:
    """The topic names release `release`'s Topic.isInternal counts: brokers mark them
    IsInternal in Metadata and refuse to delete their records, tools leave them out with
    --exclude-internal. A name that is internal in one release may be any topic in an older one."""
    from kraftsim.versions import release_name_key  # (here: the catalog it loads is dear to tools' start-up)

    if release_name_key(release) < _SHARE_STATE_INTERNAL_FROM:
        return _INTERNAL_BEFORE_SHARE_STATE
    return _INTERNAL_WITH_SHARE_STATE
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name_error(name: str) -> str | None:
    """Kafka's Topic.validate text for an illegal topic name (the same in 3.3 to 4.4), None
    when it is legal."""
    if not name:
        why = "the empty string is not allowed"
    elif name in (".", ".."):
        why = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le")) // 2 > MAX_TOPIC_NAME_LENGTH:  # (String.length: UTF-16 units)
        why = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not set(name) <= _LEGAL_TOPIC_CHARS:
        why = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {why}"
