"""bootstrap.checkpoint: read as Kafka does, and written again byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError, LogFileError
from kraftsim.storage import bootstrap_bytes, read_bootstrap, read_snapshot, replay_clock, write_bootstrap
from kraftsim.storage.bootstrap import read_bootstrap_dir
from kraftsim.storage.names import BOOTSTRAP_TMP_FILE

from tests.storage.conftest import ORACLE, REGISTRY, feature_payload, needs_oracle, oracle_paths, rel

BOOTSTRAPS = oracle_paths("bootstrap.checkpoint")


@pytest.mark.parametrize("path", BOOTSTRAPS, ids=rel)
def test_oracle_bootstrap_rewritten_byte_identically(path: Path) -> None:
    original = path.read_bytes()
    boot = read_bootstrap(path)
    timestamps = read_snapshot(path).batch_timestamps  # header, data, footer: three clock readings
    assert len(timestamps) == 3
    assert bootstrap_bytes(boot.payloads(), time_ms=replay_clock(timestamps)) == original


@pytest.mark.parametrize("path", BOOTSTRAPS, ids=rel)
def test_oracle_bootstrap_layout(path: Path) -> None:
    snap = read_snapshot(path)
    header, data, footer = (fb.batch for fb in snap.batches)
    assert snap.last_contained_log_timestamp == 0
    assert all(b.partition_leader_epoch == 0 for b in (header, data, footer))
    assert (header.base_offset, data.base_offset, footer.base_offset) == (0, 1, 1 + data.records_count)
    assert header.base_timestamp <= data.base_timestamp <= footer.base_timestamp
    boot = read_bootstrap(path)
    assert boot.metadata_version_level == boot.feature_levels()["metadata.version"]
    assert boot.records[0].message.name == "metadata.version"  # the MV record comes first
    assert boot.source == f"the binary bootstrap metadata file: {path}"


@needs_oracle
def test_oracle_bootstrap_levels() -> None:
    assert read_bootstrap(ORACLE / "kafka-3.4_cooler-SAI" / "bootstrap.checkpoint").metadata_version_level == 8
    boot = read_bootstrap_dir(ORACLE / "kafka-4.2_induswargods")
    assert boot is not None and boot.metadata_version_level == 29
    assert len(boot.feature_levels()) == 6


def test_write_goes_through_tmp_and_reads_back(tmp_path: Path) -> None:
    records = [feature_payload("metadata.version", 27), feature_payload("group.version", 1)]
    (tmp_path / BOOTSTRAP_TMP_FILE).write_bytes(b"left over from a crash")
    path = write_bootstrap(tmp_path, records, time_ms=1_700_000_000_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bootstrap.checkpoint"]
    boot = read_bootstrap(path)
    assert boot.metadata_version_level == 27
    assert [e.message for e in boot.records] == [p.message for p in records]
    # deterministic: the same records and clock give the same bytes
    assert path.read_bytes() == bootstrap_bytes(records, time_ms=1_700_000_000_000)


def test_the_last_metadata_version_record_wins(tmp_path: Path) -> None:
    path = write_bootstrap(tmp_path, [feature_payload("metadata.version", 7), feature_payload("metadata.version", 21)],
                           time_ms=0)
    assert read_bootstrap(path).metadata_version_level == 21


def test_missing_metadata_version_uses_kafkas_text(tmp_path: Path) -> None:
    path = write_bootstrap(tmp_path, [feature_payload("group.version", 1)], time_ms=0)
    with pytest.raises(KraftsimError, match=r"^No FeatureLevelRecord for metadata\.version was found in the bootstrap "
                                            r"metadata from the binary bootstrap metadata file: "):
        read_bootstrap(path)


def test_absent_bootstrap_is_none_and_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    assert read_bootstrap_dir(tmp_path) is None
    with pytest.raises(KraftsimError, match="No such directory as"):
        write_bootstrap(tmp_path / "nope", [feature_payload("metadata.version", 1)], time_ms=0)


def test_control_records_are_refused_as_bootstrap_records(tmp_path: Path) -> None:
    from kraftsim.protocol.entries import Payload
    rt = REGISTRY["KRaftVersionRecord"]
    with pytest.raises(KraftsimError, match="control record"):
        bootstrap_bytes([Payload(rt, 0, rt.new(version=0, k_raft_version=1))], time_ms=0)


def test_a_torn_bootstrap_is_an_error_naming_file_and_position(tmp_path: Path) -> None:
    data = bootstrap_bytes([feature_payload("metadata.version", 27)], time_ms=5)
    path = tmp_path / "bootstrap.checkpoint"
    path.write_bytes(data[:-3])
    with pytest.raises(LogFileError) as e:
        read_bootstrap(path)
    assert e.value.path == str(path) and e.value.position is not None and "torn batch" in str(e.value)
