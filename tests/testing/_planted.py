"""Users' machines with a planted bug each: an invariant that is wrong after a certain
sequence of ops, as a user's too-strict expectation would be. The shrink tests and
benchmarks/bench_shrink.py find, shrink and write each one.

- RollThenDowngrade: "metadata.version never goes down once a node was rolled" (fails after
  a roll and a features downgrade).
- CrashDuringRoll: "no node crashes while the nodes run mixed releases" (fails after a crash
  in the middle of a roll).
- HealKeepsLeader: "the leader after a partition heals is the one from before it" (fails
  when the partition cut the leader off long enough for an election).
"""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import invariant

from kraftsim.testing import ClusterStateMachine
from kraftsim.testing.steps import Step
from kraftsim.versions import FEATURE_NAME as MV_NAME


def _succeeded(step: Step, op: str) -> bool:
    return step.op == op and step.error is None and not step.args.get("dry_run")


class RollThenDowngrade(ClusterStateMachine):
    releases = ("3.7", "3.8", "3.9")
    initial_release = "3.7"

    @invariant()
    def metadata_version_never_down_after_roll(self) -> None:
        rolled = False
        for step in self.steps:
            rolled = rolled or _succeeded(step, "roll")
            if rolled and _succeeded(step, "features-downgrade") and MV_NAME in (step.args.get("features") or {}):
                raise AssertionError(f"metadata.version went down to level {step.args['features'][MV_NAME]} "
                                     f"after a roll")


class CrashDuringRoll(ClusterStateMachine):
    releases = ("3.7", "3.8", "3.9")
    initial_release = "3.7"

    @invariant()
    def no_crash_while_releases_mixed(self) -> None:
        if self.cluster is None:
            return
        nodes = self.cluster.nodes
        running = sorted({n.release for n in nodes})
        crashed = [n.id for n in nodes if n.state == "crashed"]
        assert not (crashed and len(running) > 1), f"node {crashed[0]} crashed while nodes ran {', '.join(running)}"


class HealKeepsLeader(ClusterStateMachine):
    releases = ("3.9",)

    def __init__(self) -> None:
        super().__init__()
        self.leader_at_partition: int | None = None
        self.healed = False

    def do(self, op: str, **args: Any) -> Step:
        if op == "partition" and self.sim is not None and self.leader_at_partition is None:
            self.leader_at_partition = self.sim.leader()
        step = super().do(op, **args)
        self.healed = op == "heal" and self.leader_at_partition is not None
        return step

    @invariant()
    def leader_survives_heal(self) -> None:
        if not self.healed or self.cluster is None:
            return
        leader = self.cluster.leader()
        assert leader in (None, self.leader_at_partition), \
            f"the leader was {self.leader_at_partition} before the partition and is {leader} after it healed"


PLANTED = (RollThenDowngrade, CrashDuringRoll, HealKeepsLeader)
