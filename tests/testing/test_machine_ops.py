"""The machine's add-node and wait rules, combined-mode clusters, and a user's failing rule
written as a scenario file that replays to the same state."""

from __future__ import annotations

import tomllib
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from kraftsim.testing import ClusterStateMachine
from kraftsim.testing.disks import VoterDisks
from kraftsim.testing.steps import Step
from kraftsim.versions import FEATURE_NAME as MV_NAME
from tests.testing._machines import repro_path, run_cli_json, run_machine, steps_of


class _Recording(ClusterStateMachine):
    """Keeps every run's steps (and the voters it ended with) for the test to look at."""

    runs: ClassVar[list[tuple[list[Step], tuple[int, ...]]]]

    def teardown(self) -> None:
        if self.sim is not None:
            self.runs.append((list(self.steps), self._voters))
        super().teardown()


def _replays(path: Any) -> dict[str, Any]:
    code, result = run_cli_json(path)
    assert [e["key"] for e in result["expect"] if not e["ok"]] == [], result["expect"]
    assert all(s["ok"] for s in result["steps"]), result["steps"]
    assert code == 0
    return result


def test_add_node_and_wait_keep_every_invariant(tmp_path):
    class Growing(_Recording):
        releases = ("3.8", "3.9")
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        ops = frozenset({"add-node", "wait", "run", "stop", "start"})
        runs = []

    run_machine(Growing, max_examples=40, steps=8)
    assert not list(tmp_path.iterdir())
    steps = [s for run, _ in Growing.runs for s in run]
    joined = [s for s in steps if s.op == "add-node" and s.error is None]
    assert {s.args["role"] for s in joined} == {"broker", "controller"}
    assert all(s.output and s.output[0].startswith("Node ") and "joined" in s.output[0] for s in joined)
    assert any("id" in s.args for s in steps if s.op == "add-node")  # an explicit id, past a gap
    # a controller that joined is counted as a voter (torn tails stay on a minority of them)
    grown = [(run, voters) for run, voters in Growing.runs
             if any(s.op == "add-node" and s.args["role"] == "controller" and s.error is None for s in run)]
    assert grown and all(len(voters) > 1 for _, voters in grown)
    waits = [s for s in steps if s.op == "wait"]
    assert any(s.error is None for s in waits)
    assert all(s.error is None or s.error.startswith("not stable after") for s in waits)


def test_voter_disks_lose_only_what_a_majority_of_the_others_hold():
    disks = VoterDisks((1, 2, 3), ends={1: 50, 2: 50, 3: 50})
    assert disks.may_lose(2) and disks.may_lose(9)  # 9: not a voter
    disks.ends[1] = 40  # voter 1 was down while 2 and 3 committed offsets 40-49
    assert not disks.may_lose(2) and not disks.may_lose(3) and disks.may_lose(1)
    disks.ends[1] = 50
    disks.lost(2, 50)  # voter 2 torn: it no longer holds what it held, and it counts as damaged
    assert not disks.may_lose(1) and not disks.may_lose(3) and disks.may_lose(9)
    five = VoterDisks((1, 2, 3, 4, 5), ends=dict.fromkeys(range(1, 6), 10))
    five.lost(1, 10)
    assert five.may_lose(2)
    five.lost(2, 10)
    assert not five.may_lose(3)
    assert not VoterDisks((1,), ends={1: 5}).may_lose(1)


def test_voters_are_added_only_while_the_holders_meet_every_majority():
    # 1 and 2 committed offsets below 20 while 3 lagged at 16 (a partition)
    disks = VoterDisks((1, 2, 3), ends={1: 20, 2: 20, 3: 16}, committed=20)
    assert disks.may_add_voter()  # of four, any three include 1 or 2
    disks.voters, disks.ends[6] = (1, 2, 3, 6), 0
    assert not disks.may_add_voter()  # of five, 3, 6 and a new 7 would be a majority
    disks.ends.update({3: 20, 6: 20})
    assert disks.may_add_voter()


class _CombinedAllRunning(ClusterStateMachine):
    """A user's invariant on a combined cluster that a crash breaks."""

    releases = ("3.9",)
    combined = 3
    controllers = 0
    brokers = 0
    ops = frozenset({"crash", "start", "run"})

    @invariant()
    def every_node_runs(self) -> None:
        if self.cluster is not None:
            assert self.cluster.running == [1, 2, 3], f"running: {self.cluster.running}"


def test_combined_cluster_with_crashes_keeps_every_invariant(tmp_path):
    class Combined(_Recording):
        releases = ("3.8", "3.9")
        initial_release = "3.8"
        combined = 3
        controllers = 0
        brokers = 1
        repro_dir = tmp_path
        ops = frozenset({"crash", "start", "stop", "run", "wait", "roll", "features-upgrade", "create-topics",
                         "disk-fault", "snapshot"})
        runs = []

    run_machine(Combined, max_examples=25, steps=10)
    assert not list(tmp_path.iterdir())
    run, voters = Combined.runs[0]
    assert voters == (1, 2, 3)
    crashed = {n for run, _ in Combined.runs for s in run if s.op == "crash" and s.error is None
               for n in s.args["nodes"]}
    assert crashed & {1, 2, 3}  # combined nodes crash, not only the broker


def test_combined_counterexample_replays(tmp_path):
    _CombinedAllRunning.repro_dir = tmp_path
    with pytest.raises(AssertionError) as info:
        run_machine(_CombinedAllRunning, max_examples=30, steps=4)
    path = repro_path(info.value)
    assert "combined = 3" in path.read_text("utf-8")
    steps = steps_of(path)
    assert [s["op"] for s in steps] == ["crash"]
    result = _replays(path)
    assert len(result["final"]["nodes"]) == 3


class _DowngradeRule(ClusterStateMachine):
    """A user's rule with an assertion: a downgrade it carries out keeps 3.8-IV0 (it does not)."""

    releases = ("3.8",)
    controllers = 1
    brokers = 1
    ops = frozenset({"run"})

    @rule(level=st.sampled_from([20, 19, 18]))
    def downgrade_and_check(self, level: int) -> None:
        self.do("features-downgrade", features={MV_NAME: level})
        assert self.cluster is not None
        assert self.cluster.metadata_version() >= 20, f"metadata.version is {self.cluster.metadata_version()}"


def test_failing_user_rule_is_written_as_a_scenario(tmp_path):
    _DowngradeRule.repro_dir = tmp_path
    with pytest.raises(AssertionError) as info:
        run_machine(_DowngradeRule, max_examples=50, steps=4)
    path = repro_path(info.value)
    header = path.read_text("utf-8").split("\n\n", 1)[0]
    assert "Does rule downgrade_and_check hold" in header and "AssertionError: metadata.version is 19" in header
    recorded = tomllib.loads(path.read_text("utf-8"))["recorded_failure"]
    assert recorded["rule"] == "downgrade_and_check" and "invariant" not in recorded
    assert recorded["message"].startswith("AssertionError: metadata.version is 19")
    steps = steps_of(path)
    assert len(steps) == 1 and steps[0]["op"] == "features-downgrade"
    assert steps[0]["features"] == {MV_NAME: 19}
    result = _replays(path)
    assert result["final"]["metadata_version"]["level"] == 19


def test_a_voter_that_never_registered_leaves_the_refusal_unpredicted(tmp_path):
    """Once a deep-run finding: a 3.7 controller added at metadata.version 20 stops before it
    registers. Whether Kafka's quorum check names it ("controller 5 has not registered")
    before the lossy-downgrade check depends on the active controller's configured voters;
    the machine predicts neither text then, but still holds kraftsim to changing nothing."""
    class Mixed(ClusterStateMachine):
        initial_release = "3.8"
        controllers = 3
        brokers = 1
        repro_dir = tmp_path

    machine = Mixed()
    machine.create_cluster(data=None)
    try:
        downgrade = Step("features-downgrade", {"features": {MV_NAME: 16}})
        assert machine._kafka_refusal(downgrade) is not None  # lossy under policy kafka: predicted
        joined = machine.do("add-node", role="controller", release="3.7")
        assert joined.error is not None and "20" in joined.error and "1-19" in joined.error
        assert 5 in machine._voters
        assert machine._kafka_refusal(downgrade) is None
        refused = machine.do("features-downgrade", features={MV_NAME: 16})
        assert refused.error is not None and machine.cluster is not None
        assert machine.cluster.metadata_version() == 20
    finally:
        machine.teardown()
    assert not list(tmp_path.iterdir())
