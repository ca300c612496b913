"""A run whose retention deletes snapshots and segments, with the reaper thread slowed on
purpose, gives the very output and the very files of a run that unlinks at once: every
listing, recovery and wipe settles what is queued first (storage.reaper)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kraftsim.storage import reaper, snapshot as snapshot_module
from kraftsim.storage.reaper import paced

from tests.cli_support import run
from tests.scenario.helpers import REPO

#: Snapshots on every node, retention (retention_bytes = 1) deleting segments and snapshots,
#: then a broker's directory wiped (its files listed) and the broker started again.
SCENARIO = REPO / "scenarios" / "wiped-broker-catches-up-by-snapshot.toml"


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _run(capsys: pytest.CaptureFixture[str], keep: Path, scenario: Path = SCENARIO,
         **pace: object) -> tuple[str, dict[str, str], int]:
    unlinked: list[str] = []
    with paced(before_unlink=unlinked.append, **pace):  # type: ignore[arg-type]
        code, out, err = run(capsys, "scenario", "run", str(scenario), "--seed", "1", "--json", "--keep", str(keep))
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


#: Rounds of snapshots under retention with a broker stopped and started between them, so
#: that nodes snapshot at different times (restamped copies, not links) after deletions.
ROUNDS = """
name = "snapshot-rounds"
description = "snapshots under retention, brokers stopped and started between them"
seed = 5

[config]
retention_bytes = 1
segment_bytes = 4096

[cluster]
controllers = 3
brokers = 3
release = "3.9.0"
""" + "".join(f"""
[[step]]
op = "create-topics"
count = 20
partitions = 3
replication_factor = 2

[[step]]
op = "snapshot"

[[step]]
op = "{op}"
nodes = [{node}]
""" for op, node in (("stop", 4), ("start", 4), ("stop", 5), ("start", 5))) + """
[[step]]
op = "wait"
timeout_ms = 60000

[[step]]
op = "snapshot"
"""


def test_snapshots_written_over_deleted_ones_change_no_output_and_no_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every deleted snapshot kept as a spare (whatever its size) and written over by the
    next snapshot or copy: the output and the files are those of a run with none."""
    scenario = tmp_path / "rounds.toml"
    scenario.write_text(ROUNDS, encoding="utf-8")
    out_inline, files_inline, _ = _run(capsys, tmp_path / "inline", scenario, inline=True)  # (inline: no spares)
    monkeypatch.setattr(reaper, "SPARE_MIN_BYTES", 0)
    taken: list[str] = []

    def counted(target: Path | str) -> bool:
        ok = reaper.REAPER.reuse(target)
        if ok:
            taken.append(str(target))
        return ok

    monkeypatch.setattr(snapshot_module, "reuse", counted)
    out_spares, files_spares, _ = _run(capsys, tmp_path / "spares", scenario)
    # At least the restamped copy's spare is written over; a linked snapshot becomes a spare
    # only when the reaper has already unlinked its twin's `.deleted` name (1 or 2 here,
    # by the reaper thread's speed; the output and the files may not differ either way).
    assert len(taken) >= 1
    assert json.loads(out_spares)["passed"] is True
    assert out_spares == out_inline
    assert files_spares == files_inline
