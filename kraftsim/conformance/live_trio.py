"""A live Kafka cluster of one controller (node 1) and two brokers (nodes 2 and 3), separate
processes on 127.0.0.1 (three JVMs), formatted by the release's storage tool: what the
conformance runs that stop and start brokers of a real cluster stand on. Used as a context
manager: every process it started is killed with its process group when the block ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.node import free_port
from kraftsim.conformance.reregistration import UNFENCED, KafkaProcess, format_nodes, node_config, wait_for
from kraftsim.conformance.tools import run_tool

if TYPE_CHECKING:
    from kraftsim.protocol.entries import LogEntry
    from kraftsim.sim import Simulation

BROKERS = (2, 3)


class LiveTrio:
    """See the module docstring. `controller_lines`: more lines of the controller's properties."""

    def __init__(self, dist: KafkaDist, work: Path, controller_lines: Sequence[str] = ()) -> None:
        self.dist, self.work = dist, work
        self.version = dist.release.version
        cport = self.controller_port = free_port()
        self.ports = {node: free_port() for node in BROKERS}
        self.configs = {1: node_config(work / "controller", 1, "controller", cport, None, tuple(controller_lines))}
        for node in BROKERS:
            self.configs[node] = node_config(work / f"broker-{node}", node, "broker", cport, self.ports[node])
        self.processes: list[KafkaProcess] = []
        self.brokers: dict[int, KafkaProcess] = {}
        self._starts = dict.fromkeys(BROKERS, 0)

    def __enter__(self) -> LiveTrio:
        try:
            format_nodes(self.dist, self.configs.values())
            self.processes.append(KafkaProcess(self.dist, self.configs[1], self.work / "controller" / "server.log"))
            for node in BROKERS:
                self._launch(node)
            for node in BROKERS:
                self._wait_unfenced(node, "first start")
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.kill()

    def kill(self) -> None:
        for p in reversed(self.processes):
            p.kill()

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

    def restart(self, node: int) -> None:
        """Start broker `node` again (its last process must have ended) and wait until it is unfenced."""
        self._launch(node)
        self._wait_unfenced(node, "restart")

    def _launch(self, node: int) -> None:
        self._starts[node] += 1
        self.brokers[node] = KafkaProcess(self.dist, self.configs[node], self._log(node))
        self.processes.append(self.brokers[node])

    def _log(self, node: int) -> Path:
        return self.work / f"broker-{node}" / f"server-{self._starts[node]}.log"

    def _wait_unfenced(self, node: int, what: str) -> None:
        wait_for(self.brokers[node].proc, self._log(node), UNFENCED, f"Kafka {self.version} broker {node}'s {what}")


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
