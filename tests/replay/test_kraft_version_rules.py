"""`replay` and `downgrade-report` on a log holding a kraft.version FeatureLevelRecord (3.9 writes
one on a static quorum, policy kraft_version_upgrade = feature-level): without `--release` the
record is read by the rules of the release that wrote the log, as that release's own tools read
it, and what was done with it is said in the output either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.cli.main import main
from tests.cli_support import run


@pytest.fixture(scope="module")
def cluster_3_9(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3.9 cluster (one controller, one broker) with kraft.version 1 finalized."""
    d = tmp_path_factory.mktemp("kv") / "c"
    assert main(["cluster", "create", str(d), "--engine", "ticks", "--controllers", "1", "--brokers", "1",
                 "--release", "3.9", "--seed", "0"]) == 0
    assert main(["features", "--cluster", str(d), "upgrade", "--feature", "kraft.version=1"]) == 0
    return d


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, _ = run(capsys, "replay", "--json", "--no-verify", *args)
    assert code == 0
    return json.loads(out)["results"][0]


def test_replay_keeps_the_level_as_the_writing_release_does(cluster_3_9: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    r = _replay(capsys, str(cluster_3_9 / "node-1"))
    assert r["summary"]["features"]["kraft.version"] == 1
    rule = r["kraft_version_record"]
    assert (rule["level"], rule["kept"], rule["release"]) == (1, True, "3.9.2")
    assert rule["reason"].startswith("the release that wrote the log: the registered nodes advertise metadata.version")
    code, out, _ = run(capsys, "replay", str(cluster_3_9 / "node-1"))  # verification passes with the level kept
    assert code == 0
    assert "kraft.version 1: a FeatureLevelRecord in the log, kept as Kafka 3.9.2 replays it" in out
    assert "\n  kraft.version: 1\n" in out


def test_a_4_0_reading_drops_the_level_and_says_so(cluster_3_9: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _replay(capsys, "--release", "4.0", str(cluster_3_9 / "node-1"))
    assert "kraft.version" not in r["summary"]["features"]
    assert r["kraft_version_record"] == {"level": 1, "kept": False, "release": "4.0.2", "reason": "--release 4.0"}
    code, out, _ = run(capsys, "replay", "--no-verify", "--release", "4.0", str(cluster_3_9 / "node-1"))
    assert "ignored as Kafka 4.0.2 replays it" in out and "--release 3.9 keeps it" in out


def test_downgrade_report_reads_the_log_as_the_controller_release(cluster_3_9: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(cluster_3_9 / "node-1"), "--metadata", "3.8-IV0", "--json")
    r = json.loads(out)
    assert r["controller_release"] == "3.9.2"
    assert r["kraft_version_record"] == {"level": 1, "kept": True, "release": "3.9.2",
                                         "reason": "the answering controller's release"}
    code, out, _ = run(capsys, "downgrade-report", str(cluster_3_9 / "node-1"), "--metadata", "3.8-IV0")
    assert "kraft.version 1: a FeatureLevelRecord in the log, kept as Kafka 3.9.2 replays it" in out
    assert "kraft.version=1 needs metadata.version 3.9-IV0" in out  # the level is seen, so its dependency is
    code, out, _ = run(capsys, "downgrade-report", str(cluster_3_9 / "node-1"), "--metadata", "3.8-IV0",
                       "--release", "4.0")
    assert "ignored as Kafka 4.0.2 replays it" in out and "kraft.version=1 needs" not in out


def test_after_a_roll_to_4_0_the_log_reads_as_4_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--engine", "ticks", "--controllers", "1", "--brokers", "1",
                 "--release", "3.9", "--seed", "0"]) == 0
    assert main(["features", "--cluster", str(d), "upgrade", "--feature", "kraft.version=1",
                 "--feature", "metadata.version=21"]) == 0
    assert main(["cluster", "roll", str(d), "--release", "4.0"]) == 0
    capsys.readouterr()
    r = _replay(capsys, str(d / "node-1"))
    assert "kraft.version" not in r["summary"]["features"]
    assert (r["kraft_version_record"]["kept"], r["kraft_version_record"]["release"]) == (False, "4.0.2")


def test_the_shipped_scenario_log_keeps_the_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kraft-version-blocks-rollback-to-3.8 leaves a 3.9 log at metadata.version 3.8-IV0 with
    kraft.version 1: Kafka 3.9's tools read the level, and so does replay by default."""
    assert main(["scenario", "run", "kraft-version-blocks-rollback-to-3.8", "--seed", "1",
                 "--keep", str(tmp_path / "k")]) == 0
    capsys.readouterr()
    r = _replay(capsys, str(tmp_path / "k" / "node-2"))
    assert r["summary"]["features"]["kraft.version"] == 1 and r["kraft_version_record"]["release"] == "3.9.2"


def test_a_log_without_the_record_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--engine", "ticks", "--controllers", "1", "--brokers", "1",
                 "--release", "3.9", "--seed", "0"]) == 0
    capsys.readouterr()
    r = _replay(capsys, str(d / "node-1"))
    assert "kraft_version_record" not in r and "kraft.version" not in r["summary"]["features"]
