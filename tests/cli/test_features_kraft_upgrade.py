"""A kraft.version upgrade on a static quorum, acting as each release (policy
kraft_version_upgrade): Kafka 4.0.2, seen live, answers 'kraft.version was upgraded to 1.'
and still describes 0 afterwards; from 4.1 on the quorum's kraft.version becomes 1."""

from __future__ import annotations

import json
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


def _kraft_level(capsys: pytest.CaptureFixture[str], d: Path) -> str:
    assert main(["features", "--cluster", str(d), "describe"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Feature: kraft.version"))
    return line.split("FinalizedVersionLevel: ")[1].split()[0]


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_3_9_finalizes_kraft_version_as_a_feature_and_4_0_reads_it_as_0(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    """Seen live on 3.9.1 (policy kraft_version_upgrade = feature-level): the upgrade writes
    FeatureLevelRecord(kraft.version=1) beside the metadata.version one, and describe, a
    restart, replay and cluster import of the log keep the level; rolled to 4.0.2 the same
    log describes kraft.version 0 and a downgrade to 0 is answered as done."""
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--engine", engine, "--controllers", "1", "--brokers", "1",
                 "--release", "3.9", "--seed", "0"]) == 0
    assert main(["features", "--cluster", str(d), "upgrade", "--feature", "kraft.version=1",
                 "--feature", "metadata.version=21"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["kraft.version was upgraded to 1.",
                                                        "metadata.version was upgraded to 21."]
    assert _kraft_level(capsys, d) == "1"
    assert main(["log", "dump", "--json", str(d / "node-1" / "__cluster_metadata-0")]) == 0
    dumped = capsys.readouterr().out
    assert '"name":"kraft.version","featureLevel":1' in dumped.replace(" ", "") and "KRaftVersion" not in dumped
    if engine == "events":  # stop and start are the event simulator's
        assert main(["cluster", "stop", "--nodes", "1,2", str(d)]) == 0
        assert main(["cluster", "start", "--nodes", "1,2", str(d)]) == 0
        capsys.readouterr()
        assert _kraft_level(capsys, d) == "1"
    assert main(["replay", "--json", "--no-verify", "--release", "3.9", str(d / "node-1")]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["summary"]["features"]["kraft.version"] == 1
    assert main(["cluster", "import", str(d / "node-1"), str(d / "node-2"), str(tmp_path / "imported")]) == 0
    capsys.readouterr()
    assert _kraft_level(capsys, tmp_path / "imported") == "1"
    assert main(["cluster", "roll", str(d), "--release", "4.0"]) == 0
    capsys.readouterr()
    assert _kraft_level(capsys, d) == "0"
    assert main(["features", "--cluster", str(d), "downgrade", "--feature", "kraft.version=0"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "kraft.version was downgraded to 0."
