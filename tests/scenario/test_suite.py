"""The shipped suite: every scenario says what it answers and passes; a selection covering
every kind of op runs twice and must give the same bytes (the benchmark checks the whole
suite twice through the CLI, since running it all twice here would cost minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.scenario import load_scenario
from kraftsim.scenario.ops import CreateTopics
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.suite import is_slow

from tests.scenario.helpers import SUITE, check_shipped

#: Every shipped scenario but those marked `slow = true` (minutes each; benchmarks/bench_scale.py runs them).
FILES = [p for p in sorted(SUITE.glob("*.toml")) if not is_slow(p)]
#: Run twice: between them every op the suite uses (faults, features under both policies, roll, add-node).
TWICE = {"downgrade-lossy-kip778", "late-incompatible-controller", "partition-during-features-update", "torn-tail",
         "wiped-broker-catches-up-by-snapshot", "finalize-blocked-by-old-broker", "disable-feature",
         "leader-crash-mid-roll"}


def test_the_suite_is_there() -> None:
    assert len(FILES) >= 24
    assert TWICE <= {p.stem for p in FILES}


def test_the_production_scale_file_is_marked_slow_left_out_and_valid(tmp_path: Path) -> None:
    """`slow = true` is part of the language, keeps the 1M-partition what-if out of the runs of
    the whole suite, and a file without it (or with `slow = false`) is not slow."""
    big = SUITE / "production-scale-1m.toml"
    assert is_slow(big) and big not in FILES
    scenario = load_scenario(big)
    assert scenario.name == "production-scale-1m"
    creates = [s for s in scenario.steps if isinstance(s, CreateTopics)]  # (what the name and the answer promise)
    assert sum(s.count for s in creates) == scenario.expect.topics == 20_000
    assert sum(s.count * s.partitions for s in creates) == 1_000_000
    small = tmp_path / "s.toml"
    small.write_text(big.read_text(encoding="utf-8").replace("slow = true", "slow = false"), encoding="utf-8")
    assert not is_slow(small) and not is_slow(SUITE / "torn-tail.toml")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_shipped_scenario_passes(path: Path) -> None:
    check_shipped(path, load_scenario, twice=path.stem in TWICE)


def test_the_wiped_broker_really_caught_up_by_snapshot(tmp_path: Path) -> None:
    """The answer of wiped-broker-catches-up-by-snapshot, read off the kept cluster's files."""
    keep = tmp_path / "kept"
    assert run_scenario(load_scenario(SUITE / "wiped-broker-catches-up-by-snapshot.toml"), keep=keep).result.passed
    leader_files = sorted(p.name for p in (keep / "node-2" / "__cluster_metadata-0").iterdir())
    wiped_files = sorted(p.name for p in (keep / "node-4" / "__cluster_metadata-0").iterdir())
    assert "00000000000000000000.log" not in leader_files  # retention removed the log's start
    snapshots = [n for n in wiped_files if n.endswith(".checkpoint")]
    assert snapshots and min(wiped_files) == snapshots[0]  # node 4 starts from a fetched snapshot


def test_a_directorys_slow_scenarios_run_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`scenario run DIR` (and `spark sweep DIR`, through the same expansion) leaves out the
    files marked `slow = true`, saying so; `--include-slow` or naming the file runs it."""
    from tests.cli_support import run

    quick = (SUITE / "dry-run-upgrade.toml").read_text(encoding="utf-8")
    (tmp_path / "a.toml").write_text(quick, encoding="utf-8")
    (tmp_path / "b.toml").write_text(quick.replace("\n[cluster]", "\nslow = true\n\n[cluster]", 1)
                                     .replace('name = "dry-run-upgrade"', 'name = "dry-run-upgrade-slow"'),
                                     encoding="utf-8")
    assert is_slow(tmp_path / "b.toml") and not is_slow(tmp_path / "a.toml")
    code, out, err = run(capsys, "scenario", "run", str(tmp_path), "--json")
    assert code == 0 and len(out.splitlines()) == 1, (out, err)
    assert f"left out {tmp_path / 'b.toml'} (slow = true" in err
    code, out, err = run(capsys, "scenario", "run", str(tmp_path), "--json", "--include-slow")
    assert code == 0 and len(out.splitlines()) == 2 and "left out" not in err
    code, out, err = run(capsys, "scenario", "run", str(tmp_path / "b.toml"), "--json")
    assert code == 0 and len(out.splitlines()) == 1 and "left out" not in err
