"""`serve --record FILE`: a served session as a scenario file (contract 4).

Each state-changing request or command becomes a step at the simulated time it started: a
`run` step fills the simulated time since the previous one ended, so `kraftsim scenario
run FILE` replays the same acts in the same order at the same simulated times. The steps
that set the cluster up come first: a scenario target's own steps, or nothing for a
cluster directory (whose `[cluster]` is the shape and finalized levels it has when served).
A refused act is written with its refusal as `expect_error`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftsim.errors import KraftsimError
from kraftsim.sim import BROKER, CONTROLLER, Simulation, created_roles
from kraftsim.storage.fileio import atomic_write
from kraftsim.testing import OP_KEYS, ClusterShape, Step, scenario_text
from kraftsim.versions import FEATURE_NAME as MV_NAME


@dataclass
class Recorder:
    """The steps of a session so far (see the module docstring)."""

    name: str
    seed: int
    policy: str
    shape: ClusterShape
    origin_ms: int
    catalog: str | None = None
    steps: list[Step] = field(default_factory=list)
    _last_ms: int = -1

    def __post_init__(self) -> None:
        if self._last_ms < 0:
            self._last_ms = self.origin_ms

    def add(self, op: str, args: dict[str, object], at_ms: int, end_ms: int, error: str | None = None) -> None:
        """One act that started at `at_ms` and ended at `end_ms` (simulated)."""
        if at_ms > self._last_ms:
            self.steps.append(Step("run", {"ms": at_ms - self._last_ms}))
        keys = OP_KEYS[op]
        self.steps.append(Step(op, {k: v for k, v in args.items() if k in keys and v is not None}, error=error))
        self._last_ms = max(self._last_ms, end_ms)

    def finish(self, now_ms: int) -> None:
        """The time served after the last act (so the replay's clock ends where the session's did)."""
        if now_ms > self._last_ms:
            self.steps.append(Step("run", {"ms": now_ms - self._last_ms}))
            self._last_ms = now_ms

    def text(self) -> str:
        return scenario_text(name=self.name, shape=self.shape, steps=self.steps, seed=self.seed, policy=self.policy,
                             catalog=self.catalog, description="recorded by kraftsim serve --record")

    def write(self, path: Path) -> None:
        atomic_write(Path(path), self.text().encode("utf-8"))


def shape_of(sim: Simulation) -> ClusterShape:
    """`[cluster]` for a cluster directory: the node counts of its nodes laid out as `cluster
    create` numbers them (`created_nodes`), its release and finalized levels (as `cluster
    create --release-version/--feature` would give them), and a dynamic quorum where
    kraft.version is 1."""
    nodes = created_nodes(sim)
    combined = sum(1 for n in nodes if len(n.roles) == 2)
    controllers = sum(1 for n in nodes if n.roles == ("controller",))
    brokers = sum(1 for n in nodes if n.roles == ("broker",))
    finalized = sim.finalized()
    level = finalized.get(MV_NAME, 0)
    release_version = sim.catalog.mv_from_level(level).version if level else None
    features = {k: v for k, v in finalized.items() if k != MV_NAME and v and k != "kraft.version"}
    configs = sim.node_configs(nodes[0].id)  # the same on every node it creates
    return ClusterShape(controllers=controllers, brokers=brokers, release=nodes[0].release,
                        release_version=release_version, features=features, combined=combined, configs=configs,
                        dynamic_quorum=sim.kraft_version >= 1)


def created_nodes(sim: Simulation) -> list[Any]:
    """The directory's nodes `cluster create` would have made: the longest run of ids from 1
    whose roles are the layout it gives (`created_roles`); the rest were added later
    (`added_node_steps`)."""
    out: list[Any] = []
    counts: Counter[tuple[str, ...]] = Counter()  # the nodes so far, by their roles
    for expected, n in enumerate(sorted(sim.nodes(), key=lambda n: n.id), start=1):
        counts[n.roles] += 1
        made = created_roles(combined=counts[(BROKER, CONTROLLER)], controllers=counts[(CONTROLLER,)],
                             brokers=counts[(BROKER,)])
        if n.id != expected or made.get(n.id) != n.roles:
            break
        out.append(n)
    return out


def added_node_steps(sim: Simulation) -> list[Step]:
    """The nodes beyond `created_nodes` as `add-node` steps (on the first node's release: a
    later roll step brings them to theirs), and each added controller that is a voter now as
    an `add-controller` step after it."""
    made = {n.id for n in created_nodes(sim)}
    nodes = sim.nodes()
    voters = set(sim.voters())
    steps = []
    for n in nodes:
        if n.id in made:
            continue
        role = "broker" if n.roles == ("broker",) else "controller"
        steps.append(Step("add-node", {"role": role, "release": nodes[0].release, "id": n.id}))
        if role == "controller" and n.id in voters:
            steps.append(Step("add-controller", {"id": n.id}))
    return steps


def mixed_release_steps(sim: Simulation) -> list[Step]:
    """For a directory whose nodes run different releases (an operator mid-roll): a `roll` of
    each node not on the first node's release, controllers first, as the scenario runner's
    `[cluster] releases` would bring it there; the nodes added after it was made first
    (`added_node_steps`)."""
    nodes = sim.nodes()
    first = nodes[0].release
    odd = sorted((n for n in nodes if n.release != first), key=lambda n: ("controller" not in n.roles, n.id))
    return added_node_steps(sim) + [Step("roll", {"release": n.release, "nodes": [n.id]}) for n in odd]


def setup_steps(steps: Sequence[Any]) -> list[Step]:
    """A scenario's own steps (its validated structs) as recorded steps."""
    out = []
    for s in steps:
        if s.op not in OP_KEYS:
            raise KraftsimError(f"--record cannot write a scenario's {s.op!r} step yet (it writes "
                                f"{', '.join(OP_KEYS)})")
        raw = {k: getattr(s, k) for k in OP_KEYS[s.op] if getattr(s, k, None) is not None}
        out.append(Step(s.op, raw, error=s.expect_error))
    return out
