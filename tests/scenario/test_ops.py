"""The one op model: every op is a typed value that writes itself back as the table it came
from, and an op carried out by the state machine's steps prints what the runner prints."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kraftsim.pipeline.sweep.faults import GAP_KINDS, _fault_steps
from kraftsim.scenario.ops import OPS, Crash, Heal, make, to_table
from kraftsim.scenario.runner import SETUP_TIMEOUT_MS, run_scenario
from kraftsim.scenario.validate import parse_scenario
from kraftsim.sim import SimError, Simulation
from kraftsim.testing.steps import Step, run_step
from tests.scenario.test_combined_ops import EVERY_OP


def test_every_op_is_its_own_type_and_round_trips_through_its_table() -> None:
    steps = parse_scenario(EVERY_OP, "every-op.toml").steps
    assert {type(s) for s in steps} == set(OPS.values())
    for step in steps:
        table = to_table(step)
        assert next(iter(table)) == "op" and table["op"] == step.op
        assert make(step.op, {k: v for k, v in table.items() if k != "op"}) == step


def test_make_refuses_an_unknown_op_or_key() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown op 'rol'; expected one of create-topics"):
        make("rol", {})
    with pytest.raises(msgspec.ValidationError, match="unknown field `node`"):
        make("crash", {"node": [1]})


@pytest.mark.parametrize("kind", GAP_KINDS)
def test_fault_schedules_are_typed_ops_written_as_steps(kind: str) -> None:
    tables = _fault_steps(kind, 2, [1, 2, 3], 3000, "sweep fault")
    ops = [make(t["op"], {k: v for k, v in t.items() if k != "op"}) for t in tables]
    assert all(op.note == "sweep fault" for op in ops)
    assert [to_table(op) for op in ops] == tables
    if kind == "partition":
        assert ops[0].groups == [[2], [1, 3]] and isinstance(ops[-1], Heal)  # type: ignore[attr-defined]
    if kind in ("crash", "torn-tail"):
        assert isinstance(ops[0], Crash) and ops[0].nodes == [2]


STEPS = """
name = "same-lines"
seed = 5
[cluster]
controllers = 1
brokers = 2
release = "3.9"

[[step]]
op = "create-topics"
count = 2

[[step]]
op = "snapshot"

[[step]]
op = "stop"
nodes = "brokers"

[[step]]
op = "start"
nodes = [2, 3]

[[step]]
op = "delete-topics"
names = ["topic-1"]

[[step]]
op = "snapshot"
nodes = "leader"
"""


def test_the_state_machine_steps_print_what_the_runner_prints(tmp_path: Path) -> None:
    scenario = parse_scenario(STEPS, "same-lines.toml")
    runner_lines = [s.output for s in run_scenario(scenario, seed=5).result.steps]
    assert any(line.startswith("Wrote ") and line.endswith(" bytes)") for line in runner_lines[1])
    c = scenario.cluster
    with Simulation.create(tmp_path / "cluster", controllers=c.controllers, brokers=c.brokers,  # type: ignore[arg-type]
                           release=c.release or "", seed=5) as sim:
        sim.wait(SETUP_TIMEOUT_MS)
        machine_lines = []
        for op in scenario.steps:
            args = {k: v for k, v in to_table(op).items() if k != "op"}
            machine_lines.append(run_step(sim, Step(op.op, args)))
        assert machine_lines == runner_lines
        assert sim.select("leader") == [1] and sim.select("brokers") == [2, 3] and sim.select([3, 2]) == [2, 3]
        with pytest.raises(SimError, match="no node 9"):
            sim.select([9])
