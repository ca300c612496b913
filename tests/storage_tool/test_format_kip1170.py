"""Kafka 4.4's `kafka-storage format` layout (KIP-1170, kafka-facts §11.4 and §11.6): no
bootstrap.checkpoint; the bootstrap records go into the zero checkpoint of a controller's
metadata log directory only; brokers get meta.properties only; the layout follows the tool's
release, not the metadata.version."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage import read_bootstrap_dir, read_meta_properties, read_snapshot
from tests.storage_tool.conftest import config_for, run_format

ZERO = Path("__cluster_metadata-0") / "00000000000000000000-0000000000.checkpoint"
AS_44 = ("--release", "4.4.0")


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def zero_contents(d: Path) -> tuple[list[str], list[tuple[str, int]]]:
    snap = read_snapshot(d / ZERO)
    control = [e.record_type.name for e in snap.entries() if e.control]
    data = [(e.message.name, e.message.feature_level) for e in snap.data_entries()]
    return control, data


def test_a_static_combined_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_for(tmp_path, dirs=("m", "d"), log_dirs=None,
                        **{"metadata.log.dir": str(tmp_path / "m"), "log.dirs": f"{tmp_path / 'm'},{tmp_path / 'd'}"})
    code, out, err = run_format(capsys, config, *AS_44)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1].endswith("with metadata.version 4.4-IV2.")
    assert files(tmp_path / "m") == ["__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
                                     "meta.properties"]
    assert files(tmp_path / "d") == ["meta.properties"]
    control, data = zero_contents(tmp_path / "m")
    assert control == ["SnapshotHeaderRecord", "SnapshotFooterRecord"]  # static quorum: kraft.version 0
    assert data == [("metadata.version", 33), ("eligible.leader.replicas.version", 1), ("group.version", 1),
                    ("share.version", 2), ("streams.version", 1), ("transaction.version", 2)]
    assert read_bootstrap_dir(tmp_path / "m").metadata_version_level == 33
    assert read_bootstrap_dir(tmp_path / "d") is None


def test_the_layout_follows_the_tool_not_the_metadata_version(tmp_path: Path, capsys) -> None:
    code, _, _ = run_format(capsys, config_for(tmp_path / "a"), *AS_44, "--release-version", "4.3-IV0")
    assert code == 0 and files(tmp_path / "a" / "data") == [str(ZERO), "meta.properties"]
    assert zero_contents(tmp_path / "a" / "data")[1][0] == ("metadata.version", 30)
    # the 4.3 tool writes the old layout
    code, _, _ = run_format(capsys, config_for(tmp_path / "b"), "--release", "4.3.1")
    assert code == 0 and files(tmp_path / "b" / "data") == ["bootstrap.checkpoint", "meta.properties"]
    assert read_bootstrap_dir(tmp_path / "b" / "data").metadata_version_level == 30


def test_a_standalone_controller_has_its_voter_and_the_features(tmp_path: Path, capsys) -> None:
    config = config_for(tmp_path, dynamic=True, process_roles="controller", listeners="CONTROLLER://:9093")
    code, _, err = run_format(capsys, config, *AS_44, "--standalone", "--seed", "3")
    assert (code, err) == (0, "")
    d = tmp_path / "data"
    assert files(d) == [str(ZERO), "meta.properties"]
    snap = read_snapshot(d / ZERO)
    control = [e for e in snap.entries() if e.control]
    assert [e.record_type.name for e in control] == ["SnapshotHeaderRecord", "KRaftVersionRecord", "VotersRecord",
                                                    "SnapshotFooterRecord"]
    voter = control[2].message.voters[0]
    assert str(voter.voter_directory_id) == read_meta_properties(d).meta.directory_id
    data = [(e.message.name, e.message.feature_level) for e in snap.data_entries()]
    assert data[0] == ("metadata.version", 33) and ("kraft.version", 1) not in data  # kraft.version lives in KRaft


def test_a_broker_gets_meta_properties_only(tmp_path: Path, capsys) -> None:
    config = config_for(tmp_path, dynamic=True, process_roles="broker", listeners="PLAINTEXT://:9092")
    code, _, err = run_format(capsys, config, *AS_44, "--no-initial-controllers")
    assert (code, err) == (0, "")
    assert files(tmp_path / "data") == ["meta.properties"]
    # before 4.4 a dynamic broker had bootstrap.checkpoint and a zero checkpoint without records
    code, _, _ = run_format(capsys, config_for(tmp_path / "old", dynamic=True, process_roles="broker",
                                               listeners="PLAINTEXT://:9092"), "--release", "4.3", "-N")
    assert code == 0 and "bootstrap.checkpoint" in files(tmp_path / "old" / "data")
