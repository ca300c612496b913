"""A run whose retention deletes snapshots and segments, with the reaper thread slowed on
purpose, gives the very output and the very files of a run that unlinks at once: every
listing, recovery and wipe settles what is queued first (storage.reaper)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kraftsim.storage.reaper import paced

from tests.cli_support import run
from tests.scenario.helpers import REPO

#: Snapshots on every node, retention (retention_bytes = 1) deleting segments and snapshots,
#: then a broker's directory wiped (its files listed) and the broker started again.
SCENARIO = REPO / "scenarios" / "wiped-broker-catches-up-by-snapshot.toml"


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _run(capsys: pytest.CaptureFixture[str], keep: Path, **pace: object) -> tuple[str, dict[str, str], int]:
    unlinked: list[str] = []
    with paced(before_unlink=unlinked.append, **pace):  # type: ignore[arg-type]
        code, out, err = run(capsys, "scenario", "run", str(SCENARIO), "--seed", "1", "--json", "--keep", str(keep))
        files = _files(keep)  # (before the block's own settle)
    assert code == 0, err
    return out, files, len(unlinked)


def test_a_slow_reaper_changes_no_output_and_no_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_inline, files_inline, _ = _run(capsys, tmp_path / "inline", inline=True)
    out_slow, files_slow, unlinked = _run(capsys, tmp_path / "slow", delay_s=0.05)
    assert unlinked >= 10  # (the run did delete, through the thread)
    assert out_slow == out_inline
    assert files_slow == files_inline
    assert not any(name.endswith(".deleted") for name in files_slow)
