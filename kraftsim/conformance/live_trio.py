"""A live Kafka cluster of one controller (node 1) and two brokers (nodes 2 and 3), separate
processes on 127.0.0.1 (three JVMs, `live_cluster.LiveCluster`): what the conformance runs
that stop and start brokers of a real cluster stand on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.live_cluster import LiveCluster
from kraftsim.conformance.node import free_port
from kraftsim.conformance.reregistration import node_config
from kraftsim.conformance.tools import run_tool

if TYPE_CHECKING:
    from kraftsim.protocol.entries import LogEntry
    from kraftsim.sim import Simulation

BROKERS = (2, 3)


class LiveTrio(LiveCluster):
    """See the module docstring. `controller_lines`: more lines of the controller's properties."""

    def __init__(self, dist: KafkaDist, work: Path, controller_lines: Sequence[str] = ()) -> None:
        self.work = work
        cport = self.controller_port = free_port()
        self.ports = {node: free_port() for node in BROKERS}
        configs = {1: node_config(work / "controller", 1, "controller", cport, None, tuple(controller_lines))}
        for node in BROKERS:
            configs[node] = node_config(work / f"broker-{node}", node, "broker", cport, self.ports[node])
        super().__init__(dist, configs, BROKERS)

    @property
    def metadata_log(self) -> Path:
        """The controller's metadata log directory."""
        return self.work / "controller" / "data" / "__cluster_metadata-0"

    def bootstrap(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    @property
    def bootstrap_controller(self) -> str:
        """The controller's listener (a tool's --bootstrap-controller)."""
        return f"127.0.0.1:{self.controller_port}"

    def create_topic(self, topic: str, assignment: Sequence[Sequence[int]]) -> None:
        """kafka-topics --create with the given replicas per partition, through broker 2."""
        text = ",".join(":".join(map(str, replicas)) for replicas in assignment)
        made = run_tool(self.dist, "topics", ["--bootstrap-server", self.bootstrap(BROKERS[0]), "--create",
                                              "--topic", topic, "--replica-assignment", text])
        if made.code != 0:
            raise KafkaUnavailable(f"Kafka {self.version} did not create the topic: {made.text()[:300]}")


def metadata_log_records(log_dir: Path) -> Iterator[LogEntry]:
    """The records of the metadata log at `log_dir` (a live node's or a simulated one's), in log order."""
    from kraftsim.protocol.batch_io import read_log_entries
    from kraftsim.protocol.registry import default_registry

    registry = default_registry()
    for segment in sorted(log_dir.glob("*.log")):
        entries, _ = read_log_entries(segment.read_bytes(), registry)
        yield from entries


def create_simulated_topic(sim: Simulation, topic: str, assignment: Sequence[Sequence[int]]) -> None:
    """`LiveTrio.create_topic` in kraftsim's simulator `sim`: the same replicas per partition."""
    from kraftsim.controller import CreatableReplicaAssignment, CreatableTopic

    made = CreatableTopic(topic, -1, -1, assignments=tuple(
        CreatableReplicaAssignment(i, tuple(replicas)) for i, replicas in enumerate(assignment)))
    result = sim.send_create_topics([made])
    if result is None or not result.ok or result.response.topics[0].error_code != 0:
        raise RuntimeError(f"the simulated cluster did not create the topic: {result}")
