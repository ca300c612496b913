"""Snapshot-driven retention of the metadata log (Kafka's KafkaMetadataLog.maybeClean).

While the log plus snapshots exceed `metadata.max.retention.bytes`, or the oldest
snapshot is older than `metadata.max.retention.ms`, and at least two snapshots exist:
delete the oldest snapshot, move the log start offset to the next snapshot, and delete
the segments that lie wholly below it. The newest snapshot is never deleted. Planning is
a pure function, so a simulation can ask "what would be deleted" without touching disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.reaper import mark_and_discard
from kraftsim.storage.names import SnapshotId, SnapshotState, segment_file_name, snapshot_file_name
from kraftsim.storage.snapshot import read_snapshot_header

DEFAULT_RETENTION_BYTES = 100 * 1024 * 1024  # metadata.max.retention.bytes
DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000  # metadata.max.retention.ms


class SegmentInfo(NamedTuple):
    base_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    snapshot_id: SnapshotId
    size: int
    last_contained_log_timestamp: int


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """What retention would delete, and the log start offset afterwards."""

    delete_snapshots: tuple[SnapshotId, ...]
    delete_segments: tuple[int, ...]  # base offsets
    log_start_offset: int
    reasons: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.delete_snapshots and not self.delete_segments


def plan_retention(segments: Sequence[SegmentInfo], snapshots: Sequence[SnapshotInfo], *, log_start_offset: int,
                   now_ms: int, retention_bytes: int = DEFAULT_RETENTION_BYTES,
                   retention_ms: int = DEFAULT_RETENTION_MS) -> RetentionPlan:
    """Kafka's maybeClean, size pass then time pass, on descriptions of the files."""
    segs = sorted(segments)
    snaps = sorted(snapshots, key=lambda s: s.snapshot_id)
    lso = log_start_offset
    deleted_snaps: list[SnapshotId] = []
    deleted_segs: list[int] = []
    reasons: list[str] = []

    def delete_before(nxt: SnapshotInfo) -> bool:  # deleteBeforeSnapshot
        nonlocal lso, snaps
        latest = snaps[-1].snapshot_id
        sid = nxt.snapshot_id
        if not (any(s.snapshot_id == sid for s in snaps) and lso < sid.end_offset <= latest.end_offset):
            return False
        lso = sid.end_offset
        n_before = len(deleted_segs)
        while len(segs) >= 2 and segs[1].base_offset <= lso:  # never the active (last) segment
            deleted_segs.append(segs.pop(0).base_offset)
        forgotten = [s.snapshot_id for s in snaps if s.snapshot_id < sid]
        snaps = [s for s in snaps if s.snapshot_id >= sid]
        deleted_snaps.extend(forgotten)
        return len(deleted_segs) > n_before or bool(forgotten)

    def clean(predicate: Callable[[SnapshotInfo], bool], why: str) -> None:  # cleanSnapshots
        if len(snaps) < 2:
            return
        window = list(snaps)
        for snap, nxt in zip(window, window[1:]):
            if predicate(snap) and delete_before(nxt):
                reasons.append(f"{snapshot_file_name(snap.snapshot_id)}: {why}")
            else:
                return

    if retention_bytes >= 0:
        total = sum(s.size for s in snaps)

        def over_size(snap: SnapshotInfo) -> bool:
            nonlocal total
            if sum(s.size for s in segs) + total > retention_bytes:
                total -= snap.size
                return True
            return False

        clean(over_size, f"log and snapshots exceed metadata.max.retention.bytes={retention_bytes}")
    if retention_ms >= 0:
        clean(lambda snap: now_ms - snap.last_contained_log_timestamp > retention_ms,
              f"older than metadata.max.retention.ms={retention_ms}")
    return RetentionPlan(tuple(deleted_snaps), tuple(deleted_segs), lso, tuple(reasons))


def describe_log(log: MetadataLog) -> tuple[list[SegmentInfo], list[SnapshotInfo]]:
    """The inputs of plan_retention for an open log directory (reads each snapshot's header)."""
    segments = [SegmentInfo(base, seg.size) for base, seg in log.segments.items()]
    snapshots = []
    for sid in log.snapshot_ids():
        path = log.directory / snapshot_file_name(sid)
        header = read_snapshot_header(path)
        snapshots.append(SnapshotInfo(sid, path.stat().st_size, header.last_contained_log_timestamp))  # type: ignore[attr-defined]
    return segments, snapshots


def apply_retention(log: MetadataLog, plan: RetentionPlan) -> list[Path]:
    """Carry out a plan: advance the log start offset (deleting the segments below it) and
    delete the snapshots. As in Kafka, each file is renamed to its `.deleted` name now and
    unlinked later, off the caller's thread (storage.reaper). Returns the deleted files."""
    if log.read_only:
        raise KraftsimError(f"{log.directory}: the log is open read-only")
    deleted = log.advance_log_start_offset(plan.log_start_offset)
    if sorted(p.name for p in deleted) != sorted(segment_file_name(b) for b in plan.delete_segments):
        raise KraftsimError(f"{log.directory}: the directory changed since the retention plan was made")
    for sid in plan.delete_snapshots:
        src = log.directory / snapshot_file_name(sid)
        marked = log.directory / snapshot_file_name(sid, SnapshotState.DELETED)
        mark_and_discard(src, marked, reusable=True)  # (the next snapshot may be written over it)
        deleted.append(src)
    return deleted
