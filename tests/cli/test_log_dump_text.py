"""`kraftsim log dump` prints what kafka-dump-log --cluster-metadata-decoder prints (Kafka
4.1 on, read from the released jars by `kraftsim conformance run`): a line naming a
bootstrap file or a snapshot's id before the batches, and snapshot control records
labelled without a colon ('SnapshotHeader {...}')."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main
from tests.storage_tool.conftest import SDE, config_for, run_format


def test_dump_of_a_bootstrap_file_and_a_zero_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(SDE))
    config = config_for(tmp_path, dynamic=True, process_roles="controller", listeners="CONTROLLER://:9093")
    code, _, _ = run_format(capsys, config, "--release", "4.2", "--standalone", "--seed", "1")
    assert code == 0
    boot = tmp_path / "data" / "bootstrap.checkpoint"
    assert main(["log", "dump", str(boot)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"Dumping {boot}", "KRaft bootstrap snapshot"]
    assert lines[3].endswith('headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}')
    assert lines[-1].endswith('headerKeys: [] SnapshotFooter {"version":0}')
    zero = tmp_path / "data" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert main(["log", "dump", str(zero)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "Snapshot end offset: 0, epoch: 0"
    assert any(" KRaftVersion {" in line for line in lines) and any(" KRaftVoters {" in line for line in lines)


def test_leader_change_as_each_release_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Up to 4.0 kafka-dump-log names a LeaderChange record by its control type only; 4.1 on prints its JSON."""
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--controllers", "1", "--release", "4.0", "--seed", "0"]) == 0
    capsys.readouterr()
    segment = d / "node-1" / "__cluster_metadata-0" / "00000000000000000000.log"
    texts = {}
    for release in ("3.9", "4.0", "4.1", None):
        assert main(["log", "dump", str(segment), *(["--release", release] if release else [])]) == 0
        line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| offset: 0 "))
        texts[release] = line.split("headerKeys: [] ", 1)[1]
    assert texts["3.9"] == texts["4.0"] == "controlType: LEADER_CHANGE(2)"
    assert texts["4.1"] == texts[None] and texts[None].startswith('LeaderChange: {"version":0,"leaderId":1,')
