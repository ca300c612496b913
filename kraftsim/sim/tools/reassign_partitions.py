"""`kafka-reassign-partitions --execute` and `--cancel` against a simulated cluster: one
AlterPartitionReassignments request to the active controller, and the tool's lines for its
answer.

The tool names partitions as `topic-partition`, sorted by topic then partition, and says
"reassignment" or "reassignments" by their count. A partition the controller refused makes it
exit 1 with "Error reassigning partition(s):" (for targets) or "Error cancelling partition
reassignment(s) for:" (for cancels), then one `topic-partition: message` line each, the message
being the controller's (the admin client's exception carries it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftsim.controller import (
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic, code_text,
)

if TYPE_CHECKING:
    from kraftsim.sim.simulation import Simulation

#: What a step says when no active controller committed the request in time.
TIMEOUT_TEXT = "Timed out waiting for a node assignment: no active controller committed the request"


@dataclass(frozen=True)
class Target:
    """One partition of a plan: its new replicas, or None to cancel its reassignment."""

    topic: str
    partition: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True)
class ReassignOutput:
    """The tool's lines on stdout, and its failure (exit 1), if any."""

    lines: list[str]
    failure: str | None = None


def request_of(targets: Sequence[Target], allow_replication_factor_change: bool = True
               ) -> AlterPartitionReassignmentsRequest:
    """The request the admin client sends: the partitions grouped by topic, topics in the order
    they first appear."""
    by_topic: dict[str, list[ReassignablePartition]] = {}
    for t in targets:
        by_topic.setdefault(t.topic, []).append(ReassignablePartition(t.partition, t.replicas))
    return AlterPartitionReassignmentsRequest(
        tuple(ReassignableTopic(name, tuple(parts)) for name, parts in by_topic.items()),
        allow_replication_factor_change)


def _names(parts: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"{topic}-{pid}" for topic, pid in sorted(parts))


def _s(parts: Sequence[object]) -> str:
    return "" if len(parts) == 1 else "s"


def reassign_partitions(sim: Simulation, targets: Sequence[Target],
                        allow_replication_factor_change: bool = True) -> ReassignOutput:
    """Send the plan and say what the tool says of the answer."""
    result = sim.send_alter_partition_reassignments(request_of(targets, allow_replication_factor_change))
    if result is None:
        return ReassignOutput([], TIMEOUT_TEXT)
    if not result.ok:
        return ReassignOutput([], result.error.message or result.error.name)
    cancels = {(t.topic, t.partition) for t in targets if t.replicas is None}
    started: list[tuple[str, int]] = []
    cancelled: list[tuple[str, int]] = []
    refused: dict[bool, list[tuple[tuple[str, int], str]]] = {True: [], False: []}
    for topic in result.response.responses:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            cancel = key in cancels
            if p.error_code != 0:
                refused[cancel].append((key, code_text(p.error_code, p.error_message)))
            else:
                (cancelled if cancel else started).append(key)
    failures = []
    if refused[False]:
        failures.append("Error reassigning partition(s):\n" + "\n".join(
            f"{t}-{pid}: {text}" for (t, pid), text in sorted(refused[False])))
    if refused[True]:
        failures.append(f"Error cancelling partition reassignment{_s(refused[True])} for:\n" + "\n".join(
            f"{t}-{pid}: {text}" for (t, pid), text in sorted(refused[True])))
    lines = []
    if started:
        lines.append(f"Successfully started partition reassignment{_s(started)} for {_names(started)}")
    if cancelled:
        lines.append(f"Successfully cancelled partition reassignment{_s(cancelled)} for: {_names(cancelled)}")
    return ReassignOutput(lines, "\n".join(failures) if failures else None)
