"""`kraftsim spark sweep`: seeded fault schedules, the scenario_sweep table, reproducers, summary.

The planted bug is a configuration used only here: the admin client gives up after 200 ms
and the voters wait 10-20 s before electing, so a run whose fault schedule crashes the
active controller just before a create-topics step fails with Kafka's timeout text, while
the same scenario without faults always passes.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.pipeline.schemas import schema
from kraftsim.pipeline.sweep import engine
from kraftsim.pipeline.sweep.faults import inject, parse_faults, to_toml
from kraftsim.pipeline.sweep.runs import parse_seeds, sweep_inputs
from kraftsim.pipeline.sweep.summary import summary_text, wilson
from kraftsim.pipeline.sweep.tasks import GUIDE, TAIL, guided_bins, run_cost
from kraftsim.scenario import parse_scenario
from kraftsim.scenario.suite import SUITE_DIR
from tests.pipeline.conftest import run_cli

PLANTED = """\
# Question: does a sweep find runs broken by a too-short admin timeout?
# Source: tests/pipeline/test_sweep.py (a planted bug).
# Answer: only runs whose faults crash the active controller fail.
name = "planted-short-admin-timeout"

[cluster]
controllers = 3
brokers = 2
release = "3.9.0"

[config]
admin_timeout_ms = 200
fetch_timeout_ms = 20000
election_timeout_ms = 10000

[[step]]
op = "create-topics"

[[step]]
op = "create-topics"

[[step]]
op = "create-topics"
"""
FAULTS = "crash=0.6"


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    p = tmp_path / "planted.toml"
    p.write_text(PLANTED, encoding="utf-8")
    return p


def _deterministic(table) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in table.to_pylist()]


# --------------------------------------------------------------------------- inputs


@pytest.mark.parametrize("spec", ["crash", "crash=2", "crash=x", "meteor=0.1", "loss=0.9", "down=0"])
def test_bad_fault_specs_are_refused(spec: str) -> None:
    with pytest.raises(KraftsimError, match="--faults"):
        parse_faults(spec)


def test_seeds() -> None:
    assert parse_seeds("3:5") == range(3, 6)
    assert parse_seeds("7") == range(7, 8)
    for bad in ("5:3", "a:b", "-1:2"):
        with pytest.raises(KraftsimError, match="--seeds"):
            parse_seeds(bad)


def test_a_sweep_of_more_runs_than_it_makes_is_refused_before_any_input_is_built(tmp_path: Path,
                                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--seeds 1:100000000 built one input per seed first, taking the memory (754 MB after 10 s)."""
    from kraftsim.cli.main import main

    scenario = sorted(SUITE_DIR.glob("*.toml"))[0]
    capsys.readouterr()
    code = main(["spark", "sweep", str(scenario), "--seeds", "1:100000000", "--local", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "1 scenario(s) x 100,000,000 seeds is 100,000,000 runs: more than the 1,000,000" in err
    assert not (tmp_path / "o").exists()


def test_schedules_are_seeded_and_stay_scenarios() -> None:
    """Every shipped scenario, faulted, is still a valid scenario; a seed gives one schedule."""
    spec = parse_faults("crash=0.3,restart=0.2,partition=0.3,torn-tail=0.2,loss=0.01")
    files = sorted(SUITE_DIR.glob("*.toml"))
    assert files
    schedules = set()
    for f in files:
        raw = tomllib.loads(f.read_text(encoding="utf-8"))
        faulted, schedule = inject(raw, 11, spec)
        assert inject(raw, 11, spec) == (faulted, schedule)
        text = to_toml(faulted, ["faulted"])
        assert tomllib.loads(text) == faulted
        parse_scenario(text, f.name, f.parent)  # raises when the faulted file is not a valid scenario
        schedules.add(tuple(schedule))
        assert inject(raw, 11, parse_faults(None))[0]["step"] == raw.get("step", [])
    assert len(schedules) > 1


def test_toml_round_trip_of_the_suite() -> None:
    for f in sorted(SUITE_DIR.glob("*.toml")):
        raw = tomllib.loads(f.read_text(encoding="utf-8"))
        assert tomllib.loads(to_toml(raw, [])) == raw, f.name


def test_wilson_known_values() -> None:
    lo, hi = wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(0.7225, abs=1e-4) and hi == 1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10_000), st.data())
def test_wilson_contains_the_observed_rate(runs: int, data: st.DataObject) -> None:
    passes = data.draw(st.integers(0, runs))
    lo, hi = wilson(passes, runs)
    assert 0 <= lo <= passes / runs <= hi <= 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.5, 500.0), min_size=1, max_size=300), st.integers(1, 8))
def test_guided_bins_place_every_run_once_heaviest_first(weights: list[float], cores: int) -> None:
    bins = guided_bins(weights, cores)
    assert sorted(i for b in bins for i in b) == list(range(len(weights)))
    assert all(b == sorted(b) for b in bins) and guided_bins(weights, cores) == bins
    heaviest = [max(weights[i] for i in b) for b in bins]
    lightest = [min(weights[i] for i in b) for b in bins]
    assert all(lightest[k] >= heaviest[k + 1] for k in range(len(bins) - 1))  # heavy runs start first
    smallest = sum(weights) / (TAIL * cores)
    if len(bins) > 1:
        assert sum(weights[i] for i in bins[-1]) >= smallest / 2  # no crumb of a last task
    assert len(bins) <= 2 * GUIDE * cores + TAIL * cores


def test_guided_bins_shrink_towards_the_end() -> None:
    sizes = [len(b) for b in guided_bins([1.0] * 1000, 2)]
    assert sizes[0] == 250 and sizes[:-1] == sorted(sizes[:-1], reverse=True)  # a quarter: half of a core's share
    assert max(sizes[-3:]) <= 5 and len(sizes) <= 25  # small tasks at the end, few tasks in all


def test_run_cost_counts_faulted_steps_and_partitions() -> None:
    at_scale = tomllib.loads((SUITE_DIR / "snapshot-during-roll-at-scale.toml").read_text(encoding="utf-8"))
    small = tomllib.loads((SUITE_DIR / "torn-tail.toml").read_text(encoding="utf-8"))
    assert run_cost(at_scale, 0, "") > 100 * run_cost(small, 0, "")
    faulted = max(range(20), key=lambda seed: run_cost(small, seed, "crash=0.5"))
    assert run_cost(small, faulted, "crash=0.5") > run_cost(small, faulted, "")


# --------------------------------------------------------------------------- in process


def test_sweep_in_process_twice_gives_the_same_table(tmp_path: Path, planted: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    args = ["spark", "sweep", str(planted), str(SUITE_DIR / "torn-tail.toml"), "--seeds", "0:2",
            "--faults", "crash=0.6,partition=0.3,loss=0.01", "--no-progress"]
    status = run_cli([*args, "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert "running in this process, without Spark" in err
    assert run_cli([*args, "--out", str(tmp_path / "b"), "--no-plots"]) == status
    a = engine.read_table(tmp_path / "a" / engine.TABLE)
    b = engine.read_table(tmp_path / "b" / engine.TABLE)
    assert status == (0 if all(r["verdict"] == "pass" for r in a.to_pylist()) else 1)
    assert a.schema.equals(schema("scenario_sweep"), check_metadata=True)
    assert a.num_rows == 6
    assert [(r["scenario"], r["seed"]) for r in a.to_pylist()] == sorted(
        (n, s) for n in ("planted-short-admin-timeout", "torn-tail") for s in range(3))
    assert _deterministic(a) == _deterministic(b)
    for r in a.to_pylist():
        assert json.loads(r["result"])["seed"] == r["seed"] and json.loads(r["result"])["digest"] == r["digest"]
        assert r["events"] > 0
    summary = (tmp_path / "a" / "summary.txt").read_text(encoding="utf-8")
    assert "95% CI (Wilson)" in summary and "torn-tail" in summary
    pytest.importorskip("matplotlib")
    assert {p.name for p in (tmp_path / "a" / "plots").iterdir()} == {
        "outcomes.png", "outcomes.svg", "times.png", "times.svg"}


def test_planted_bug_fails_rows_whose_reproducers_fail_the_same_way(tmp_path: Path, planted: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    clean = engine.run_in_process(sweep_inputs([planted], range(0, 4), None)).table
    assert all(r["verdict"] == "pass" for r in clean.to_pylist())  # the bug needs a fault to show

    out = tmp_path / "sweep"
    assert run_cli(["spark", "sweep", str(planted), "--seeds", "0:7", "--faults", FAULTS, "--out", str(out),
                    "--no-plots", "--no-progress"]) == 1  # some runs failed: the table is written all the same
    rows = engine.read_table(out / engine.TABLE).to_pylist()
    failing = [r for r in rows if r["verdict"] == "fail"]
    assert failing and len(failing) < len(rows)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"sweep: {len(failing)} of {len(rows)} runs did not pass ({len(failing)} failed, 0 errors): exit status 1"
    for r in failing:
        assert "Timed out" in r["failure"] and "crash" in " ".join(r["fault_schedule"])
        path = engine.reproducer_path(out, r["scenario"], r["seed"])
        assert path.read_text(encoding="utf-8") == r["reproducer"]
        assert run_cli(["scenario", "run", str(path), "--json"]) == 1
        replay = json.loads(capsys.readouterr().out)
        assert replay == json.loads(r["result"])
    passing = [r for r in rows if r["verdict"] == "pass"]
    assert all(r["reproducer"] is None for r in passing)
    assert not any(engine.reproducer_path(out, r["scenario"], r["seed"]).exists() for r in passing)
    text = summary_text(engine.read_table(out / engine.TABLE), engine="local", elapsed_s=1.0)
    assert f"{len(failing)} x planted-short-admin-timeout: step N (create-topics): Timed out" in text


def test_exit_status_is_0_when_every_run_passed(tmp_path: Path, planted: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["spark", "sweep", str(planted), "--seeds", "0:1", "--out", str(tmp_path / "s"),
                    "--no-plots", "--no-progress"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "sweep: all 2 runs passed"


def test_an_unrelated_folder_is_not_replaced(tmp_path: Path, planted: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(KraftsimError, match="not an earlier sweep output"):
        engine.prepare_out(tmp_path, overwrite=False)
    assert (tmp_path / "mine.txt").exists()


# --------------------------------------------------------------------------- Spark


@pytest.mark.spark
def test_spark_sweep_matches_the_in_process_sweep(spark, tmp_path: Path, planted: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    local = engine.run_in_process(sweep_inputs([planted], range(0, 4), FAULTS)).table
    out = tmp_path / "sweep"
    status = run_cli(["spark", "sweep", str(planted), "--seeds", "0:3", "--faults", FAULTS, "--out", str(out),
                      "--spark", "--partitions", "2", "--no-plots", "--no-progress"])
    assert status == (0 if all(r["verdict"] == "pass" for r in local.to_pylist()) else 1)
    assert "on Spark local[2]" in capsys.readouterr().out
    assert _deterministic(engine.read_table(out / engine.TABLE)) == _deterministic(local)
    failing = [r for r in local.to_pylist() if r["verdict"] != "pass"]
    for r in failing:
        assert engine.reproducer_path(out, r["scenario"], r["seed"]).is_file()


def test_progress_line_reports_runs_rate_and_eta() -> None:
    import io

    out = io.StringIO()
    progress = engine.Progress(40, out=out, every=0.0)
    progress.start -= 10.0  # as if ten seconds had passed
    progress.update(10)
    line = out.getvalue().strip()
    assert line.startswith("sweep: 10/40 runs (25%), 1.00 runs/s, ETA 30 s"), line
    progress.update(40)
    assert out.getvalue().strip().splitlines()[-1].endswith("ETA -")
