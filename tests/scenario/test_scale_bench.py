"""benchmarks/bench_scale.py's split of a run's cost: the same scenario with and without the
deep checks, the second through benchmarks/_without_deep_checks.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import _without_deep_checks, bench_scale
from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim.engine import core, invariants
from tests.scenario.helpers import SUITE

REPO = Path(__file__).resolve().parents[2]


def _deep_checks_made(monkeypatch: pytest.MonkeyPatch) -> int:
    made = 0
    deep = invariants.Checker.deep

    def counted(self: invariants.Checker, event: str, members: list[object]) -> None:
        nonlocal made
        made += 1
        deep(self, event, members)  # type: ignore[arg-type]
    monkeypatch.setattr(invariants.Checker, "deep", counted)
    assert run_scenario(load_scenario(SUITE / "topics-through-a-roll.toml"), seed=1).result.passed
    return made


def test_the_runner_turns_off_the_deep_checks_and_only_them(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _deep_checks_made(monkeypatch) > 0
    monkeypatch.setattr(core.Engine, "check_deep", core.Engine.check_deep)  # (undone after the test)
    _without_deep_checks.turn_off_deep_checks()
    assert _deep_checks_made(monkeypatch) == 0


def test_a_run_without_deep_checks_gives_the_same_result_bytes() -> None:
    """Nothing the deep checks do is output: the two commands agree byte for byte."""
    args = ["scenario", "run", str(SUITE / "topics-through-a-roll.toml"), "--seed", "3", "--json"]
    env = dict(os.environ, PYTHONPATH=str(REPO))  # (this checkout's kraftsim, as bench_scale runs it)
    plain = subprocess.run([sys.executable, "-m", "kraftsim", *args], env=env, capture_output=True, check=False)
    off = subprocess.run([sys.executable, str(bench_scale.WITHOUT_DEEP_CHECKS), *args], env=env,
                         capture_output=True, check=False)
    assert plain.returncode == off.returncode == 0, off.stderr
    assert off.stdout == plain.stdout and b'"passed":true' in off.stdout


def test_the_benchmark_labels_a_run_without_deep_checks() -> None:
    row = bench_scale.run_size(1_000, timeout_s=300, deep_checks=False, label="here")
    assert row["passed"] and row["code"] == "here, deep checks off" and row["partitions"] == 1_000
    # the kernel's share and the pages it gave are kept per row, and shown (a row from before: '-')
    assert 0 < row["system_s"] <= row["cpu_s"] and row["page_faults"] > 1_000  # type: ignore[operator]
    table = bench_scale.markdown([row, {k: v for k, v in row.items() if k not in ("system_s", "page_faults")}], {})
    lines = [line for line in table.splitlines() if line.startswith("| here")]
    assert f"| {row['system_s']} | {row['page_faults']:,} |" in lines[0] and "| - | - |" in lines[1]
    # the files it wrote (its own blocks: a 1,000-partition run writes about 20 MB of logs and
    # snapshots on 33 nodes) and held (the file system sampled: others may write or delete
    # there at the same time, so only shown)
    assert 0 < row["written_gb"] < 1 and row["peak_disk_gb"] >= 0  # type: ignore[operator]
    assert f"| {row['written_gb']} | {row['peak_disk_gb']} | True |" in lines[0]


def test_the_io_floor_writes_as_many_bytes_holding_no_more_than_asked(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    monkeypatch.setattr(bench_scale, "FLOOR_FILE_BYTES", 1 << 20)
    held: list[int] = []
    opened = os.open

    def counting(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if Path(path).name.startswith("file-"):
            held.append(len(os.listdir(os.path.dirname(path))))  # (files there before this one)
        return opened(path, flags, mode, **kwargs)
    monkeypatch.setattr(os, "open", counting)
    total = 5 * (1 << 20) + 12345
    floor = bench_scale.io_floor(total, 2 << 20, tmp_path)
    assert floor["written_bytes"] == total and floor["files"] == 6 and held == [0, 1, 2, 2, 2, 2]
    assert list(tmp_path.iterdir()) == []  # (nothing left behind)
    row = {"code": "here", "partitions": 1_000, **floor}
    table = bench_scale.markdown([], {}, [row])
    assert f"| here | 1,000 | {floor['written_gb']} | {floor['live_gb']} | {floor['wall_s']} |" in table
