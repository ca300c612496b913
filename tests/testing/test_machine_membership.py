"""The machine's add-controller and remove-controller rules on a KIP-853 dynamic quorum:
membership changes mixed with crashes, partitions and disk faults keep every invariant, and a
written counterexample of such a run replays to the same voters."""

from __future__ import annotations

from typing import ClassVar

from kraftsim.testing import ClusterStateMachine
from kraftsim.testing.steps import ClusterShape, Step, scenario_text
from tests.testing._machines import run_machine


class _Membership(ClusterStateMachine):
    releases = ("4.0", "4.1")
    controllers = 3
    brokers = 1
    dynamic_quorum = True
    ops = frozenset({"add-controller", "remove-controller", "crash", "start", "stop", "partition", "heal",
                     "disk-fault", "wait", "run", "create-topics"})
    runs: ClassVar[list[tuple[list[Step], tuple[int, ...]]]] = []

    def teardown(self) -> None:
        if self.sim is not None:
            self.runs.append((list(self.steps), self._voters))
        super().teardown()


def test_membership_changes_keep_every_invariant(tmp_path):
    class Machine(_Membership):
        repro_dir = tmp_path
        runs = []

    run_machine(Machine, max_examples=300, steps=12)
    assert not list(tmp_path.iterdir())  # no counterexample written
    steps = [s for run, _ in Machine.runs for s in run]
    done = {op: sum(1 for s in steps if s.op == op and s.error is None) for op in ("add-controller", "remove-controller")}
    assert done["add-controller"] > 0 and done["remove-controller"] > 0, done
    assert any(len(voters) != 3 for _, voters in Machine.runs)  # the voter set did change


def test_a_dynamic_shape_is_written_as_such() -> None:
    text = scenario_text(name="x", shape=ClusterShape(3, 1, "4.1.1", dynamic_quorum=True),
                         steps=[Step("add-controller", {"release": "4.1.1"}), Step("remove-controller", {"id": 1})],
                         seed=0, policy="kafka")
    assert "dynamic_quorum = true" in text
    assert 'op = "add-controller"\nrelease = "4.1.1"' in text and 'op = "remove-controller"\nid = 1' in text
