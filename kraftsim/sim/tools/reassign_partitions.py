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
#: What the tool says of --disallow-replication-factor-change before 4.1 (joptsimple's refusal).
NO_DISALLOW_OPTION = "disallow-replication-factor-change is not a recognized option"
#: The admin client's UnsupportedVersionException (4.1's AlterPartitionReassignmentsRequest.Builder,
#: read from the 4.1.2 jar) when the controller has no request v1 to carry the option: every
#: partition of the request fails with it.
NO_V1_TEXT = ("The broker does not support the AllowReplicationFactorChange option for the "
              "AlterPartitionReassignments API. Consider re-sending the request without the option or updating "
              "the server version")


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


def _takes_disallow(sim: Simulation, release: str) -> bool:
    """Whether `release` has KIP-860's AllowReplicationFactorChange (4.1 on: its tool's option,
    its controller's request v1 and check came together)."""
    return sim.catalog.at_release(release).policy("reassignment_replication_factor") == "checked"


def _disallow_refused(sim: Simulation, targets: Sequence[Target]) -> ReassignOutput | None:
    """What --disallow-replication-factor-change gets where it cannot be sent: a tool before
    4.1 has no such option; a 4.1 tool's admin client refuses to send it to an older active
    controller (every partition fails with the same exception). None where it can be sent."""
    if not _takes_disallow(sim, sim.tool_release()):
        return ReassignOutput([], NO_DISALLOW_OPTION)
    leader = sim.leader()
    release = next((r for i, _, r, _ in sim.node_summaries() if i == leader), None)
    if release is None or _takes_disallow(sim, release):
        return None
    return _output([], [], [((t.topic, t.partition), t.replicas is None, NO_V1_TEXT) for t in targets])


def _output(started: list[tuple[str, int]], cancelled: list[tuple[str, int]],
            refused: list[tuple[tuple[str, int], bool, str]]) -> ReassignOutput:
    """The tool's lines and failure for partitions started, cancelled and refused (each with
    whether it was a cancel, and the text of its error)."""
    failures = []
    targets = sorted((key, text) for key, cancel, text in refused if not cancel)
    cancels = sorted((key, text) for key, cancel, text in refused if cancel)
    if targets:
        failures.append("Error reassigning partition(s):\n" + "\n".join(f"{t}-{pid}: {text}"
                                                                        for (t, pid), text in targets))
    if cancels:
        failures.append(f"Error cancelling partition reassignment{_s(cancels)} for:\n" + "\n".join(
            f"{t}-{pid}: {text}" for (t, pid), text in cancels))
    lines = []
    if started:
        lines.append(f"Successfully started partition reassignment{_s(started)} for {_names(started)}")
    if cancelled:
        lines.append(f"Successfully cancelled partition reassignment{_s(cancelled)} for: {_names(cancelled)}")
    return ReassignOutput(lines, "\n".join(failures) if failures else None)


def reassign_partitions(sim: Simulation, targets: Sequence[Target],
                        allow_replication_factor_change: bool = True) -> ReassignOutput:
    """Send the plan and say what the tool says of the answer."""
    if not allow_replication_factor_change and (unsent := _disallow_refused(sim, targets)) is not None:
        return unsent
    result = sim.send_alter_partition_reassignments(request_of(targets, allow_replication_factor_change))
    if result is None:
        return ReassignOutput([], TIMEOUT_TEXT)
    if not result.ok:
        return ReassignOutput([], result.error.message or result.error.name)
    cancels = {(t.topic, t.partition) for t in targets if t.replicas is None}
    started: list[tuple[str, int]] = []
    cancelled: list[tuple[str, int]] = []
    refused: list[tuple[tuple[str, int], bool, str]] = []
    for topic in result.response.responses:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            cancel = key in cancels
            if p.error_code != 0:
                refused.append((key, cancel, code_text(p.error_code, p.error_message)))
            else:
                (cancelled if cancel else started).append(key)
    return _output(started, cancelled, refused)
