"""Live Kafka nodes on 127.0.0.1, one JVM each, formatted by the release's storage tool and
started together: what the conformance runs that need a real cluster of several nodes stand
on (`live_trio.LiveTrio`, `reassignment.LivePair`). Used as a context manager: every process it
started is killed with its process group when the block ends, or at once when a start fails,
so no JVM outlives its run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from kraftsim.conformance.dist import KafkaDist
from kraftsim.conformance.reregistration import UNFENCED, KafkaProcess, format_nodes, wait_for


class LiveCluster:
    """Nodes started from `configs` (node id -> its server.properties, in start order); the
    start waits until each of `brokers` is unfenced. Each node logs to `server-K.log` beside its
    properties, K counting its starts."""

    def __init__(self, dist: KafkaDist, configs: Mapping[int, Path], brokers: Sequence[int]) -> None:
        self.dist, self.version = dist, dist.release.version
        self.configs = dict(configs)
        self.broker_ids = tuple(brokers)
        #: Each node's newest process.
        self.running: dict[int, KafkaProcess] = {}
        self._started: list[KafkaProcess] = []
        self._starts = dict.fromkeys(self.configs, 0)

    def __enter__(self) -> Self:
        try:
            format_nodes(self.dist, self.configs.values())
            for node in self.configs:
                self._launch(node)
            for node in self.broker_ids:
                self._wait_unfenced(node, "first start")
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.kill()

    def kill(self, node: int | None = None) -> None:
        """SIGKILL to every process started (of `node` only, if given), newest first."""
        for p in reversed(self._started):
            if node is None or self.running.get(node) is p:
                p.kill()

    def restart(self, node: int) -> None:
        """Start broker `node` again (its last process must have ended) and wait until it is unfenced."""
        self._launch(node)
        self._wait_unfenced(node, "restart")

    def _launch(self, node: int) -> None:
        self._starts[node] += 1
        self.running[node] = KafkaProcess(self.dist, self.configs[node], self.log(node))
        self._started.append(self.running[node])

    def log(self, node: int) -> Path:
        """The server log of `node`'s newest start."""
        return self.configs[node].parent / f"server-{self._starts[node]}.log"

    def _wait_unfenced(self, node: int, what: str) -> None:
        wait_for(self.running[node].proc, self.log(node), UNFENCED, f"Kafka {self.version} broker {node}'s {what}")
