"""What a Kafka tool run against a simulated cluster reads: the active controller's image, the
broker its admin client asks (the lowest-id unfenced broker that is running), and the tool's
release (the cluster's newest, as an operator's would be: `Simulation.tool_release`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftsim.sim.types import RUNNING, SimError

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage
    from kraftsim.sim.simulation import Simulation


@dataclass(frozen=True)
class ToolView:
    image: MetadataImage
    #: The broker that answers, and its release.
    broker: int
    broker_release: str
    #: The release of the tool; the format of what it prints is this release's.
    tool: str
    #: Every running broker's release, by id.
    running: dict[int, str]

    @property
    def live(self) -> list[int]:
        """The unfenced brokers, by id (what DescribeCluster lists)."""
        return sorted(b.id for b in self.image.cluster.brokers.values() if not b.fenced)


def tool_view(sim: Simulation, tool: str) -> ToolView:
    """The view of `tool` (its name, for the error when it has nobody to ask)."""
    leader = sim.leader()
    image = sim.image(leader) if leader is not None else None
    if image is None:
        raise SimError(f"no active controller: {tool} has no answer to print")
    running = {n.id: n.release for n in sim.nodes() if n.state == RUNNING}
    broker = next((b for b in sorted(image.cluster.brokers) if b in running and not image.cluster.brokers[b].fenced),
                  None)
    if broker is None:
        raise SimError(f"no unfenced broker is running: {tool} has no broker to ask")
    return ToolView(image, broker, running[broker], sim.tool_release(), running)
