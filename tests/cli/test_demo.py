"""The main job (`kraftsim demo`) without Spark: it runs end to end, the cluster it writes
is fully determined by the seed, and what it reports agrees with the files it wrote.
(The Spark half is tested with the pipeline's shared session in tests/pipeline.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main
from kraftsim.demo import LOSSY_TARGET, TO_RELEASE, run_demo
from kraftsim.image import MvChangeHandling
from kraftsim.image import load_path
from kraftsim.versions import default_catalog


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_demo_command_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "a"), "--topics", "2"]) == 0
    first = capsys.readouterr().out
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "b"), "--topics", "2"]) == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert "replay verification: passed" in first
    assert "metadata.version was upgraded to 27." in first
    assert "Unsafe metadata downgrade is not supported in this version." in first  # Kafka's verdict, shown
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "a")]) == 1  # refuses to overwrite an earlier run
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "c"), "--seed", "7", "--topics", "2"]) == 0
    assert _tree(tmp_path / "a") != _tree(tmp_path / "c")  # the seed reaches the bytes


def test_the_reported_losses_are_what_the_nodes_lost(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_demo(tmp_path, topics=2, partitions=3, spark=False, say=lines.append)
    catalog = default_catalog()
    report = result.downgrades[catalog.metadata_version(LOSSY_TARGET).version]
    kinds = {item.kind for item in report.lost}
    assert kinds == {"broker log dirs", "controller registration", "replica directory assignment"}
    # Every node ends at the lossy metadata.version, on the target release, without what was reported.
    for node in sorted(p for p in result.cluster_dir.iterdir() if p.name.startswith("node-")):
        image = load_path(node, mv_change=MvChangeHandling.KIP_778).image
        assert image.metadata_version == catalog.metadata_version(LOSSY_TARGET).level
        assert not image.cluster.controllers
        assert all(not b.directories for b in image.cluster.brokers.values())
    assert any(f"Rolling every node to Kafka {TO_RELEASE}" in line for line in lines)
    assert result.verified
