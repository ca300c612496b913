"""The main job (`kraftsim demo`): it runs end to end, is deterministic, and its what-if
verdicts agree with the catalog and with what the written snapshots really hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main
from kraftsim.demo import run_demo
from kraftsim.image import diff_images, image_from_records
from kraftsim.image.synthetic import ClusterShape
from kraftsim.storage import read_snapshot
from kraftsim.versions import default_catalog


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_demo_command_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path / "a"), "--topics", "4"]) == 0
    first = capsys.readouterr().out
    assert main(["demo", "--out", str(tmp_path / "b"), "--topics", "4"]) == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert "replaying the snapshot gives the image it was written from: yes" in first
    assert main(["demo", "--out", str(tmp_path / "a")]) == 1  # refuses to overwrite an earlier run


def test_verdicts_match_the_catalog_and_the_written_files(tmp_path: Path) -> None:
    catalog = default_catalog()
    result = run_demo(tmp_path, catalog, ClusterShape(topics=3), say=lambda _: None)
    assert [r.target.level for r in result.rows] == list(range(result.metadata_version.level - 1, 6, -1))
    for row in result.rows:
        assert row.lossy == catalog.is_lossy(result.metadata_version, row.target)
        if not row.lossy:
            assert not row.losses
    assert len(result.written) == 2
    for path in result.written:
        reread = image_from_records(read_snapshot(path).data_entries(), catalog=catalog, snapshot=True)
        row = next(r for r in result.rows if f"to-{r.target.version}" in str(path))
        changes = diff_images(result.image, reread)
        # The metadata.version changes, and each reported loss shows up as a difference.
        assert any("metadata.version" in c.text for c in changes)
        assert (len(changes) > 1) == bool(row.losses)
