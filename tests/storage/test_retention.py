"""Snapshot-driven retention (KafkaMetadataLog.maybeClean) and a directory written end to end."""

from __future__ import annotations

from pathlib import Path

from kraftsim.storage import (
    MetadataLog, MetadataLogView, SegmentInfo, SnapshotId, SnapshotInfo, apply_retention, describe_log, list_snapshots,
    plan_retention,
)
from kraftsim.storage.names import segment_file_name

from tests.storage.conftest import log_with_two_snapshots, noop_payload

DAY = 24 * 3600 * 1000


def _snap(offset: int, size: int = 100, ts: int = 0) -> SnapshotInfo:
    return SnapshotInfo(SnapshotId(offset, 1), size, ts)


def test_nothing_to_do_under_the_limits() -> None:
    plan = plan_retention([SegmentInfo(0, 1000)], [_snap(10), _snap(20)], log_start_offset=0, now_ms=0)
    assert plan.empty and plan.log_start_offset == 0


def test_size_limit_deletes_oldest_snapshots_and_segments_wholly_below() -> None:
    segments = [SegmentInfo(0, 500), SegmentInfo(100, 500), SegmentInfo(200, 500), SegmentInfo(300, 100)]
    snaps = [_snap(150), _snap(250), _snap(320)]
    plan = plan_retention(segments, snaps, log_start_offset=0, now_ms=0, retention_bytes=1000, retention_ms=-1)
    # 1600 + 300 > 1000: drop snapshot 150 (LSO 250: segments 0 and 100 go); 600 + 200 ≤ 1000: stop
    assert plan.delete_snapshots == (SnapshotId(150, 1),)
    assert plan.delete_segments == (0, 100)
    assert plan.log_start_offset == 250
    assert len(plan.reasons) == 1


def test_the_newest_snapshot_and_the_active_segment_always_stay() -> None:
    segments = [SegmentInfo(0, 10_000), SegmentInfo(100, 10_000)]
    snaps = [_snap(50), _snap(150), _snap(200)]
    plan = plan_retention(segments, snaps, log_start_offset=0, now_ms=0, retention_bytes=0, retention_ms=-1)
    assert plan.delete_snapshots == (SnapshotId(50, 1), SnapshotId(150, 1))
    assert plan.delete_segments == (0,)
    assert plan.log_start_offset == 200
    assert plan_retention(segments, [_snap(50)], log_start_offset=0, now_ms=0, retention_bytes=0).empty


def test_time_limit_uses_the_last_contained_log_timestamp() -> None:
    segments = [SegmentInfo(0, 10), SegmentInfo(100, 10), SegmentInfo(200, 10)]
    snaps = [_snap(100, ts=0), _snap(200, ts=5 * DAY), _snap(210, ts=9 * DAY)]
    plan = plan_retention(segments, snaps, log_start_offset=0, now_ms=10 * DAY, retention_bytes=-1)
    assert plan.delete_snapshots == (SnapshotId(100, 1),)  # only the one older than 7 days
    assert plan.delete_segments == (0, 100)
    assert plan.log_start_offset == 200


def test_a_directory_written_end_to_end(tmp_path: Path) -> None:
    """Append, snapshot, append more, apply retention, and read it back through the view."""
    with log_with_two_snapshots(tmp_path) as log:
        assert len(log.segments) > 4
        segments, snapshots = describe_log(log)
        assert [s.snapshot_id.end_offset for s in snapshots] == [11, 21]
        plan = plan_retention(segments, snapshots, log_start_offset=log.log_start_offset, now_ms=0,
                              retention_bytes=1000, retention_ms=-1)
        assert plan.delete_snapshots == (SnapshotId(11, 1),) and plan.log_start_offset == 21
        deleted = apply_retention(log, plan)
        assert log.log_start_offset == 21
        assert all(not p.exists() for p in deleted)
        assert min(log.segments) <= 21
    assert list_snapshots(tmp_path) == [SnapshotId(21, 1)]
    with MetadataLogView(tmp_path) as view:
        assert view.recovery == []
        assert view.snapshot_id == SnapshotId(21, 1)
        assert [e.message.name for e in view.snapshot_entries()] == ["metadata.version"]
        assert [e.offset for e in view.log_entries()] == list(range(21, 30))
        assert view.missing_offsets() == []
    # the first remaining segment starts below the snapshot: Kafka's start-up check passes
    assert (tmp_path / segment_file_name(min(int(p.stem) for p in tmp_path.glob("*.log")))).exists()
    with MetadataLog.open(tmp_path, fsync=False) as log:
        assert log.recovery == []
        log.append_records([noop_payload()], epoch=2, timestamp=9)
        assert log.leader_epochs()[-1] == (2, 30)
