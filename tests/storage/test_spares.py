"""Deleted snapshots kept as spares and written over by the next snapshot (storage.reaper):
the new file's bytes are exactly those of a fresh one, a spare is never seen by a listing
that settles, and a file that still has another name is never written over."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from kraftsim.storage import MetadataLog, apply_retention, describe_log, plan_retention, reaper
from kraftsim.storage.names import SnapshotId, SnapshotState, snapshot_file_name
from kraftsim.storage.reaper import REAPER, mark_and_discard, settle
from kraftsim.storage.snapshot import file_identity, place_snapshot_copy, write_snapshot

from tests.storage.conftest import log_with_two_snapshots
from tests.storage.test_snapshot_restamp import topic_records


@pytest.fixture(autouse=True)
def no_spares_left() -> Iterator[None]:
    settle()
    yield
    settle()


SID = SnapshotId(10, 2)


def _snapshot(d: Path, topics: int, *, stamp: int = 7) -> Path:
    """A snapshot of `topics` TopicRecords (about 40 bytes each) in `d`, made if need be."""
    d.mkdir(parents=True, exist_ok=True)
    return write_snapshot(d, SID, topic_records([f"topic-{i:08d}" for i in range(topics)]),
                          last_contained_log_timestamp=1, time_ms=stamp, fsync=False)


def _deleted(path: Path) -> Path:
    """Mark a frozen snapshot deleted, as retention does, offering it as a spare."""
    marked = path.with_name(path.name.replace(".checkpoint", ".checkpoint.deleted"))
    mark_and_discard(path, marked, reusable=True)
    return marked


def test_the_next_snapshot_is_written_over_a_deleted_one_with_the_bytes_of_a_fresh_one(tmp_path: Path) -> None:
    big = _snapshot(tmp_path / "a", 60_000)
    inode, big_size = os.stat(big).st_ino, os.stat(big).st_size
    assert big_size > reaper.SPARE_MIN_BYTES
    kept = _deleted(big)
    assert kept.exists(), "a large deleted snapshot waits as a spare under its .deleted name"
    assert REAPER.pending(tmp_path / "a") == 1 and REAPER.pending(tmp_path / "b") == 0

    over = _snapshot(tmp_path / "b", 40_000, stamp=9)  # (shorter: the rest of the spare is cut)
    assert os.stat(over).st_ino == inode and not kept.exists()
    settle()
    fresh = _snapshot(tmp_path / "c", 40_000, stamp=9)
    assert os.stat(fresh).st_ino != inode
    assert over.read_bytes() == fresh.read_bytes() and os.stat(over).st_size < big_size
    assert os.stat(over).st_mode & 0o777 == os.stat(fresh).st_mode & 0o777  # (read-only, as every snapshot)
    assert sorted(p.name for p in over.parent.iterdir()) == [over.name]  # (no temp file left)


def test_a_restamped_copy_written_over_a_spare_is_the_copy_a_new_file_gets(tmp_path: Path) -> None:
    source = _snapshot(tmp_path / "src", 30_000, stamp=5)
    identity = file_identity(source)
    spare = _snapshot(tmp_path / "old", 70_000)
    inode = os.stat(spare).st_ino
    _deleted(spare)

    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    over = place_snapshot_copy(source, identity, tmp_path / "b", SID, restamp=(5, 6), fsync=False)
    assert over is not None and os.stat(over).st_ino == inode
    fresh = place_snapshot_copy(source, identity, tmp_path / "c", SID, restamp=(5, 6), fsync=False)
    assert fresh is not None and os.stat(fresh).st_ino != inode
    assert over.read_bytes() == fresh.read_bytes() == _snapshot(tmp_path / "d", 30_000, stamp=6).read_bytes()


def test_a_settle_releases_the_spares_below_its_directory_and_no_others(tmp_path: Path) -> None:
    kept_x = _deleted(_snapshot(tmp_path / "x", 40_000))
    kept_y = _deleted(_snapshot(tmp_path / "y", 40_000))
    settle(tmp_path / "x")
    assert not kept_x.exists() and kept_y.exists()
    settle()
    assert not kept_y.exists()
    fresh = _snapshot(tmp_path / "z", 40_000)
    assert os.stat(fresh).st_nlink == 1 and not list(tmp_path.glob("*/*.deleted"))


def test_a_file_with_another_name_or_a_small_one_is_not_kept(tmp_path: Path) -> None:
    linked = _snapshot(tmp_path / "a", 40_000)
    other = tmp_path / "elsewhere"
    os.link(linked, other)
    kept = _deleted(linked)
    small = _deleted(_snapshot(tmp_path / "b", 10))
    settle()
    assert not kept.exists() and not small.exists()
    before = other.read_bytes()
    _snapshot(tmp_path / "c", 40_000, stamp=99)
    assert other.read_bytes() == before, "the other name still shows its own bytes"


def test_no_more_spares_than_the_bound(tmp_path: Path) -> None:
    snapshots = [_snapshot(tmp_path / f"d{i}", 30_000) for i in range(reaper.SPARES_KEPT + 2)]
    marked = [_deleted(p) for p in snapshots]
    for p in marked[reaper.SPARES_KEPT:]:
        REAPER.settle(p.parent)  # (the ones past the bound were queued for unlinking)
    assert [p.exists() for p in marked] == [True] * reaper.SPARES_KEPT + [False, False]


def test_retention_offers_its_deleted_snapshots_and_opening_the_log_sees_none(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaper, "SPARE_MIN_BYTES", 0)
    d = tmp_path / "log"
    log = log_with_two_snapshots(d)
    segments, snapshots = describe_log(log)
    plan = plan_retention(segments, snapshots, log_start_offset=log.log_start_offset, now_ms=0,
                          retention_bytes=1000, retention_ms=-1)
    apply_retention(log, plan)
    kept = [d / snapshot_file_name(sid, SnapshotState.DELETED) for sid in plan.delete_snapshots]
    assert kept and all(p.exists() for p in kept)
    for seg in log.segments.values():  # (closed without the close that settles)
        seg.close()
    with MetadataLog.open(d, read_only=True) as again:  # (opening settles the directory: the spares go)
        assert [a.describe() for a in again.recovery] == []
    assert not any(p.exists() for p in kept)
