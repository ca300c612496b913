"""A node started on a directory whose bootstrap.checkpoint names a metadata.version its
release does not list stops before replaying anything, broker and controller alike, in
Kafka's words (policy bootstrap_metadata_version; seen live: 3.9.1 on a directory 4.0.2
formatted at 4.0-IV3). A level the release lists as a placeholder passes; the controller's
replay then refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main
from kraftsim.storage.bootstrap_start import bootstrap_start_refusal
from kraftsim.versions import default_catalog

UNKNOWN_25 = "No MetadataVersion with feature level 25"


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_rolling_a_4_0_directory_back_to_3_9_stops_every_node_at_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--engine", engine, "--controllers", "1", "--brokers", "1",
                 "--release", "4.0", "--seed", "0"]) == 0
    capsys.readouterr()
    main(["cluster", "roll", str(d), "--release", "3.9"])
    out = "".join(capsys.readouterr())
    # (either engine's roll stops at the first node that does not start: the broker is rolled next)
    assert "The roll stopped: 1 node(s) left on their old release (Kafka 4.0): 2." in out
    main(["cluster", "roll", str(d), "--release", "3.9", "--nodes", "2"])
    out += "".join(capsys.readouterr())
    assert out.count(UNKNOWN_25) >= 2 and "Tried to apply" not in out  # the broker too, before any replay
    main(["cluster", "status", str(d)])  # (exit 1: not healthy)
    status = capsys.readouterr().out
    rows = [ln for ln in status.splitlines() if ln[:2] in ("1 ", "2 ")]
    assert len(rows) == 2 and all("3.9" in r and ("stopped" in r or "failed" in r) for r in rows)


def test_a_placeholder_level_passes_the_bootstrap_check_and_the_replay_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 4.0-IV1 (23) is a level 3.9's code lists as an unstable placeholder.
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "4.0",
                 "-r", "4.0-IV1", "--seed", "0"]) == 0
    capsys.readouterr()
    main(["cluster", "roll", str(d), "--release", "3.9"])
    out = capsys.readouterr().out
    assert "No MetadataVersion" not in out
    assert ("Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=23), "
            "but this controller only supports versions 1-21") in out


def test_the_check_reads_only_the_bootstrap_file(tmp_path: Path) -> None:
    cat = default_catalog()
    assert bootstrap_start_refusal(tmp_path, cat.at_release("3.9")) is None  # no file: nothing to say
    d = tmp_path / "c"
    assert main(["cluster", "create", str(d), "--controllers", "1", "--brokers", "0", "--release", "4.0",
                 "--seed", "0"]) == 0
    node = d / "node-1"
    assert bootstrap_start_refusal(node, cat.at_release("4.0")) is None
    assert bootstrap_start_refusal(node, cat.at_release("3.9")) == UNKNOWN_25
    (node / "bootstrap.checkpoint").write_bytes(b"garbage")  # damaged: other checks word that
    assert bootstrap_start_refusal(node, cat.at_release("3.9")) is None
