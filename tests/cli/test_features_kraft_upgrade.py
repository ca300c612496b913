"""A kraft.version upgrade on a static quorum, acting as each release (policy
kraft_version_upgrade): Kafka 4.0.2, seen live, answers 'kraft.version was upgraded to 1.'
and still describes 0 afterwards; from 4.1 on the quorum's kraft.version becomes 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main


def _upgrade_then_kraft_level(capsys: pytest.CaptureFixture[str], d: Path, release: str, mv: str) -> tuple[str, str]:
    assert main(["cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", release,
                 "--seed", "0"]) == 0
    capsys.readouterr()
    assert main(["features", "--cluster", str(d), "upgrade", "--release-version", mv]) == 0
    upgraded = capsys.readouterr().out
    assert main(["features", "--cluster", str(d), "describe"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Feature: kraft.version"))
    return upgraded, line.split("FinalizedVersionLevel: ")[1].split()[0]


@pytest.mark.parametrize("release,mv,level", [("4.0", "4.0-IV3", "0"), ("4.1", "4.1-IV1", "1")])
def test_kraft_version_upgrade_on_a_static_quorum(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   release: str, mv: str, level: str) -> None:
    upgraded, finalized = _upgrade_then_kraft_level(capsys, tmp_path / "c", release, mv)
    assert "kraft.version was upgraded to 1." in upgraded.splitlines()
    assert finalized == level


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_upgrade_writes_kraft_version_and_voters_in_one_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              engine: str) -> None:
    """4.1+: the upgrade appends one control batch, KRaftVersion then KRaftVoters with every
    static voter's directory id from meta.properties (as Kafka's leader does), seen in the
    log dump of a follower before any voter change."""
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--engine", engine, "--controllers", "3", "--brokers", "1",
                 "--release", "4.1", "--seed", "0"]) == 0
    assert main(["features", "--cluster", str(d), "upgrade", "--feature", "kraft.version=1"]) == 0
    capsys.readouterr()
    assert main(["log", "dump", str(d / "node-2" / "__cluster_metadata-0" / "00000000000000000000.log")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if "KRaftVersion {" in ln)
    assert "isControl: true" in lines[at - 1] and "count: 2" in lines[at - 1]
    assert '"kRaftVersion":1' in lines[at] and "KRaftVoters {" in lines[at + 1]
    for v in (1, 2, 3):
        did = next(ln for ln in (d / f"node-{v}" / "meta.properties").read_text().splitlines()
                   if ln.startswith("directory.id=")).split("=", 1)[1]
        assert f'"voterId":{v},"voterDirectoryId":"{did}"' in lines[at + 1]
    assert "NO_OP_RECORD" in lines[at + 3]  # the controller's record comes next
