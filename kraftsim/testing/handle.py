"""ClusterHandle: the user's view of the simulated cluster inside a state machine.

A thin read-only face over `kraftsim.sim.Simulation` with the names contract 6 promises
(`finalized(name)` is 0 when the feature is not finalized). Operations go through the
machine's rules, never through the handle, so that every change is recorded as a step of
the scenario file a failure is written to.
"""

from __future__ import annotations

from pathlib import Path

from kraftsim.image import MetadataImage
from kraftsim.sim import NodeInfo, Simulation
from kraftsim.versions import Catalog


class ClusterHandle:
    """What a user's rules and invariants read: `self.cluster` of a ClusterStateMachine."""

    def __init__(self, sim: Simulation, catalog: Catalog, policy: str):
        self.sim = sim
        self.catalog = catalog
        self.policy = policy

    def finalized(self, name: str | None = None) -> int | dict[str, int]:
        """The committed finalized level of feature `name` (0 when none); all of them without `name`."""
        levels = self.sim.finalized()
        if name is None:
            return dict(sorted(levels.items()))
        return levels.get(name, 0)

    def metadata_version(self) -> int:
        """The finalized metadata.version level (0 when none)."""
        return self.sim.metadata_version()

    @property
    def nodes(self) -> list[NodeInfo]:
        """Every node, sorted by id (id, roles, release, state, fenced, detail)."""
        return self.sim.nodes()

    def node(self, node_id: int) -> NodeInfo:
        return next(n for n in self.sim.nodes() if n.id == node_id)

    @property
    def running(self) -> list[int]:
        return [n.id for n in self.sim.nodes() if n.state == "running"]

    def leader(self) -> int | None:
        """The active controller, if any."""
        return self.sim.leader()

    def image(self, node_id: int | None = None) -> MetadataImage | None:
        """What `node_id` has applied (None while it is down); the active controller's without an id."""
        if node_id is None:
            node_id = self.sim.leader()
            if node_id is None:
                return None
        return self.sim.image(node_id)

    def log_dir(self, node_id: int) -> Path:
        """The node's `__cluster_metadata-0` directory."""
        return self.sim.log_dir(node_id)

    @property
    def now_ms(self) -> int:
        return self.sim.now_ms
