"""The default ClusterStateMachine finds nothing on current kraftsim, and a user's
invariant's counterexample replays through the `kraftsim` command to the same state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import invariant

from kraftsim.testing import ClusterStateMachine
from kraftsim.testing.readiness import simulated_ops
from tests.testing._machines import fixed_settings, repro_path, run_machine, steps_of

REPO = Path(__file__).resolve().parents[2]

class DefaultMachine(ClusterStateMachine):
    """Every invariant, the shipped catalog, releases 3.7 to 3.9, every op the simulator
    carries out (torn tails on at most a minority of the voters at once)."""


# CI: 300 examples of up to 12 steps (about 90 s on a quiet machine). `--hypothesis-profile=deep`
# (the kraftsim plugin's profile) runs the profile's examples and steps instead, with randomized sequences.
if settings.default.max_examples >= 1000:
    DefaultMachine.TestCase.settings = settings(fixed_settings(settings.default.max_examples,
                                                               settings.default.stateful_step_count),
                                                derandomize=False)
else:
    DefaultMachine.TestCase.settings = fixed_settings(max_examples=300, steps=12)
TestDefaultMachine = DefaultMachine.TestCase


def test_every_op_the_simulator_offers_is_generated():
    assert {"crash", "partition", "heal", "disk-fault", "start"} <= simulated_ops()


class NeverBelow3_8(ClusterStateMachine):
    """The user's invariant of docs/testing.md: metadata.version never goes below 3.8-IV0."""

    releases = ("3.8",)
    controllers = 1
    brokers = 1
    ops = frozenset({"features-upgrade", "features-downgrade", "run"})

    @invariant()
    def metadata_version_stays(self) -> None:
        if self.cluster is not None:
            assert self.cluster.metadata_version() >= 20, f"metadata.version is {self.cluster.metadata_version()}"


def test_user_invariant_counterexample_replays_through_the_command(tmp_path):
    NeverBelow3_8.repro_dir = tmp_path
    with pytest.raises(AssertionError) as info:
        run_machine(NeverBelow3_8, max_examples=100, steps=5)
    path = repro_path(info.value)
    steps = steps_of(path)
    assert len(steps) <= 2 and steps[-1]["op"] == "features-downgrade"
    assert steps[-1]["features"]["metadata.version"] < 20
    assert "AssertionError" in path.read_text("utf-8").split("\n\n", 1)[0]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "kraftsim", "scenario", "run", "--json", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["passed"] and all(e["ok"] for e in result["expect"])
    assert result["final"]["metadata_version"]["level"] == steps[-1]["features"]["metadata.version"]


REGRESSIONS = Path(__file__).parent / "regressions"


def _run_regression(name: str):  # type: ignore[no-untyped-def]
    from kraftsim.scenario import load_scenario
    from kraftsim.scenario.runner import run_scenario
    return run_scenario(load_scenario(REGRESSIONS / name)).result


def test_regression_committed_with_a_crashed_voters_disk():
    """Once a finding: voter 3 crashes with a fetch in flight; the leader's commit on it is
    backed by voter 2's disk, and every invariant holds."""
    result = _run_regression("committed-without-majority.toml")
    assert all(s.ok for s in result.steps), [s.error for s in result.steps]
    assert [i.detail for i in result.invariants if not i.ok] == []
    assert result.passed, [e for e in result.expect if not e.ok]


def test_regression_controller_rolled_back_after_snapshot_fails_to_start():
    """Once a finding: a controller rolled back to 3.7 cannot load a snapshot at metadata.version
    20; it fails to start with Kafka's text and is reported failed."""
    result = _run_regression("controller-rolled-back-after-snapshot.toml")
    node3 = next(n for n in result.final.nodes if n.id == 3)
    assert node3.state == "failed"
    roll = result.steps[1]
    assert roll.op == "roll" and roll.ok and roll.error is not None
    # 3.7 knows 20 as its unstable placeholder: its controller, not its loader, refuses it
    assert roll.error.startswith("Tried to apply FeatureLevelRecord ") and "only supports versions 1-19" in roll.error
    assert result.passed, [e for e in result.expect if not e.ok] + [i for i in result.invariants if not i.ok]


def test_regression_broker_rolled_back_after_snapshot_runs_fenced():
    """Once a finding: the invariants' own replay of a 3.7 broker's files stopped at the
    snapshot record 3.7 cannot load, and that error came out of every later op. The broker
    runs on fenced (Kafka's brokers do not stop on a loading fault), kafka-features refuses
    metadata.version 21 with the controller's text, and every invariant holds."""
    result = _run_regression("broker-rolled-back-after-snapshot.toml")
    start, upgrade = result.steps[2], result.steps[4]
    assert start.op == "start" and start.ok and start.error is None
    assert upgrade.ok and upgrade.error is not None and "Local controller 1 only supports versions 1-20" in upgrade.error
    assert [i.detail for i in result.invariants if not i.ok] == []
    assert result.passed, [e for e in result.expect if not e.ok]
