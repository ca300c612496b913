"""Kafka 4.4 reads its bootstrap records from the zero checkpoint before any bootstrap.checkpoint
(KIP-1170, kafka-facts §11.4/§11.6); older files keep being read."""

from __future__ import annotations

from pathlib import Path

from kraftsim.storage import BOOTSTRAP_SNAPSHOT_ID, METADATA_DIR_NAME, read_bootstrap_dir, write_bootstrap, write_snapshot
from kraftsim.storage.bootstrap_builder import feature_level_payload


def _zero(d: Path, levels: dict[str, int]) -> None:
    snap = d / METADATA_DIR_NAME
    snap.mkdir(parents=True, exist_ok=True)
    write_snapshot(snap, BOOTSTRAP_SNAPSHOT_ID, [feature_level_payload(n, v) for n, v in levels.items()],
                   last_contained_log_timestamp=5, time_ms=5, fsync=False)


def test_the_zero_checkpoint_comes_first(tmp_path: Path) -> None:
    write_bootstrap(tmp_path, [feature_level_payload("metadata.version", 29)], time_ms=1, fsync=False)
    assert read_bootstrap_dir(tmp_path).metadata_version_level == 29  # a layout written before 4.4
    _zero(tmp_path, {"metadata.version": 33, "share.version": 2})
    boot = read_bootstrap_dir(tmp_path)
    assert (boot.metadata_version_level, boot.feature_levels()) == (33, {"metadata.version": 33, "share.version": 2})
    assert boot.source.startswith("the bootstrap snapshot ")


def test_a_zero_checkpoint_without_records_leaves_bootstrap_checkpoint_in_charge(tmp_path: Path) -> None:
    _zero(tmp_path, {})  # a dynamic quorum formatted by 4.3: KRaft control records only
    assert read_bootstrap_dir(tmp_path) is None
    write_bootstrap(tmp_path, [feature_level_payload("metadata.version", 30)], time_ms=1, fsync=False)
    assert read_bootstrap_dir(tmp_path).metadata_version_level == 30
