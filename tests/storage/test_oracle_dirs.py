"""Every real `__cluster_metadata-0` opens read-only, needs no recovery, and reads in offset order."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage import (
    MetadataLog, MetadataLogView, PathKind, classify_path, iter_segment_batches, metadata_files,
    read_leader_epoch_checkpoint,
)
from kraftsim.storage.names import METADATA_DIR_NAME

from tests.storage.conftest import ORACLE, needs_oracle, oracle_paths, rel, tree_fingerprint

METADATA_DIRS = oracle_paths(METADATA_DIR_NAME, dirs=True)


@needs_oracle
def test_the_oracle_has_what_these_tests_expect() -> None:
    assert len(METADATA_DIRS) >= 15
    assert len(oracle_paths("*.checkpoint")) >= 70


@pytest.mark.parametrize("directory", METADATA_DIRS, ids=rel)
def test_opens_read_only_without_recovery_and_changes_nothing(directory: Path) -> None:
    before = tree_fingerprint(directory)
    with MetadataLog.open(directory, read_only=True, validate="all") as log:
        assert log.recovery == []
        assert log.warnings == []
        batches = list(log.batches())
        assert sum(b.batch.size for b in batches) == log.size_in_bytes()
        assert sum(p.stat().st_size for p in directory.glob("*.log")) == log.size_in_bytes()
        if batches:
            assert batches[-1].batch.next_offset == log.log_end_offset
    assert tree_fingerprint(directory) == before


@pytest.mark.parametrize("directory", METADATA_DIRS, ids=rel)
def test_newest_snapshot_then_the_log_after_it_in_offset_order(directory: Path) -> None:
    with MetadataLogView(directory.parent) as view:
        snapshot_offsets = [e.offset for e in view.snapshot_entries()]
        log_offsets = [e.offset for e in view.log_entries()]
        assert view.recovery == []
        if view.snapshot is not None:
            assert view.snapshot_id == max(view.log.snapshot_ids())
            assert snapshot_offsets and snapshot_offsets == sorted(set(snapshot_offsets))
            assert all(not e.control for e in view.snapshot_entries())
        else:
            assert snapshot_offsets == []
        assert log_offsets == sorted(set(log_offsets))
        assert all(o >= view.start_offset for o in log_offsets)
        if log_offsets:
            assert log_offsets[-1] == view.log.log_end_offset - 1
            missing = sum(b - a for a, b in view.missing_offsets())
            assert len(log_offsets) + missing == view.log.log_end_offset - view.start_offset
        entries = list(view.entries())
        assert len(entries) == len(snapshot_offsets) + len(log_offsets)


@needs_oracle
def test_snapshot_and_log_split_where_the_snapshot_ends() -> None:
    d = ORACLE / "cp-kafka-3.6_rjmfernandes" / METADATA_DIR_NAME
    with MetadataLogView(d) as view:
        assert view.snapshot_id == (14926, 1)
        first = next(view.log_entries())
        assert first.offset == 14926
        assert view.missing_offsets() == []


@needs_oracle
def test_a_trimmed_log_reports_its_missing_offsets() -> None:
    d = ORACLE / "kafka-3.8.0_codecrafters" / "trimmed-two-batches-018f9bc"
    with MetadataLogView(d) as view:
        assert view.snapshot is None
        assert view.missing_offsets() == [(0, 1), (5, 34)]


@pytest.mark.parametrize("directory", [d for d in METADATA_DIRS if (d / "leader-epoch-checkpoint").exists()
                                       and any(d.glob("*.log"))], ids=rel)
def test_leader_epochs_derived_from_batches_match_kafkas_checkpoint(directory: Path) -> None:
    with MetadataLog.open(directory, read_only=True) as log:
        assert log.leader_epochs() == read_leader_epoch_checkpoint(directory)


@pytest.mark.parametrize("directory", METADATA_DIRS, ids=rel)
def test_plain_iteration_sees_every_batch_of_every_segment(directory: Path) -> None:
    with MetadataLog.open(directory, read_only=True) as log:
        indexed = [(b.path, b.position, b.batch.base_offset) for b in log.batches()]
    plain = [(b.path, b.position, b.batch.base_offset) for b in iter_segment_batches(directory)]
    assert plain == indexed


@needs_oracle
def test_classify_paths() -> None:
    root = ORACLE / "kafka-4.1_dkoh12"
    md = root / METADATA_DIR_NAME
    assert classify_path(root) is PathKind.LOG_DIR
    assert classify_path(md) is PathKind.METADATA_DIR
    assert classify_path(md / "00000000000000000000.log") is PathKind.SEGMENT
    assert classify_path(md / "00000000000000007209-0000000001.checkpoint") is PathKind.SNAPSHOT
    assert classify_path(root / "bootstrap.checkpoint") is PathKind.BOOTSTRAP
    # a parent without meta.properties, holding only __cluster_metadata-0, is still a log dir
    assert classify_path(ORACLE / "cp-kafka-3.9_weebee" / "snapshot-from-3cd48fbd70") is PathKind.LOG_DIR
    kinds = [k for k, _ in metadata_files(root)]
    assert kinds == [PathKind.BOOTSTRAP, PathKind.SEGMENT, PathKind.SNAPSHOT]
