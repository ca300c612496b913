"""`kafka-leader-election` against a simulated cluster: its one ElectLeaders request, and what
the tool prints for the controller's answer.

Kafka's tool (LeaderElectionCommand) sorts the admin client's results into elected,
not needed (ElectionNotNeededException) and failed, and prints one line for each of the first
two groups and one line per failed partition; any failure prints "N replica(s) could not be
elected" on stderr and exits 1, except in 3.7.0, whose tool exits 0 after any failure
(KAFKA-16410). The partitions of a line come in the order of Java's hash tables: the
admin client's HashMap of results, filled in the response's order, then the tool's HashSet.
A request refused whole fails the admin client's future with the error's exception (its default
text: the admin client does not read the response's message).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kraftsim.controller import ELECTION_TYPES, ElectLeadersRequest, TopicPartitions, error_codes, exception_text
from kraftsim.javacompat import hash_map_order, topic_partition_hash

if TYPE_CHECKING:
    from kraftsim.controller import ElectLeadersResponse
    from kraftsim.sim.simulation import Simulation

_ELECTED = "Successfully completed leader election"
#: What the tool prints on stdout and stderr when the request timed out.
TIMEOUT_TEXT = "Timeout waiting for election results"


@dataclass(frozen=True)
class ElectionOutput:
    """The tool's lines on stdout, and its failure (the first line on stderr), if any."""

    lines: list[str]
    failure: str | None = None
    #: Whether the tool's release exits 0 even when it failed (3.7.0: policy
    #: leader_election_failure_exit).
    failure_exits_zero: bool = False

    @property
    def exit_code(self) -> int:
        return 1 if self.failure is not None and not self.failure_exits_zero else 0

    @property
    def failure_text(self) -> str | None:
        """What a step that failed says: the lines of the partitions that were not elected,
        else the failure itself."""
        failed = [line for line in self.lines if line.startswith("Error completing leader election")]
        return "\n".join(failed) if failed else self.failure


def _hash_set_order(tps: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    return hash_map_order(list(tps), topic_partition_hash)


def _joined(tps: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{topic}-{pid}" for topic, pid in tps)


def election_output(election_type: str, response: ElectLeadersResponse) -> ElectionOutput:
    """The tool's output for an answered request (`election_type`: "preferred" or "unclean")."""
    names = {code: name for name, code in error_codes().items()}
    kind = election_type.upper()
    results = {(t.topic, p.partition_id): (names.get(p.error_code, "UNKNOWN_SERVER_ERROR"), p.error_message)
               for t in response.replica_election_results for p in t.partition_result}
    in_map = _hash_set_order(results)  # (the admin client's HashMap: a later answer for a partition replaces one)
    elected = [tp for tp in in_map if results[tp][0] == "NONE"]
    not_needed = [tp for tp in in_map if results[tp][0] == "ELECTION_NOT_NEEDED"]
    failed = [tp for tp in in_map if results[tp][0] not in ("NONE", "ELECTION_NOT_NEEDED")]
    lines = []
    if elected:
        lines.append(f"{_ELECTED} ({kind}) for partitions {_joined(_hash_set_order(elected))}")
    if not_needed:
        lines.append(f"Valid replica already elected for partitions {_joined(_hash_set_order(not_needed))}")
    for topic, pid in _hash_set_order(failed):
        error, message = results[(topic, pid)]
        lines.append(f"Error completing leader election ({kind}) for partition: {topic}-{pid}: "
                     f"{exception_text(error, message)}")
    return ElectionOutput(lines, f"{len(failed)} replica(s) could not be elected" if failed else None)


def elected_partitions(stdout: str) -> dict[str, list[int]]:
    """The partitions the tool's output says were elected, by topic (a topic's name may hold
    '-': the partition is after the last one)."""
    out: dict[str, list[int]] = {}
    for line in stdout.splitlines():
        if line.startswith(_ELECTED) and " for partitions " in line:
            for tp in line.split(" for partitions ", 1)[1].split(", "):
                topic, _, pid = tp.rpartition("-")
                out.setdefault(topic, []).append(int(pid))
    return out


def refused_output(error: str) -> ElectionOutput:
    """The tool's output when the request as a whole failed with `error`."""
    if error == "REQUEST_TIMED_OUT":
        return ElectionOutput([TIMEOUT_TEXT], TIMEOUT_TEXT)
    return ElectionOutput([], f"java.util.concurrent.ExecutionException: {exception_text(error)}")


def leader_election(sim: Simulation, election_type: str = "preferred",
                    partitions: Mapping[str, Sequence[int]] | None = None) -> ElectionOutput:
    """`kafka-leader-election --election-type TYPE` for `partitions` (topic: partition ids), or
    for every partition when None (`--all-topic-partitions`): what the tool prints, and its
    failure when a partition could not be elected or the request failed whole."""
    wanted = None if partitions is None else tuple(TopicPartitions(t, tuple(ids)) for t, ids in partitions.items())
    result = sim.send_elect_leaders(ElectLeadersRequest(ELECTION_TYPES[election_type], wanted))
    if result is None:
        out = refused_output("REQUEST_TIMED_OUT")
    elif not result.ok:
        out = refused_output(result.error.name)
    else:
        out = election_output(election_type, result.response)
    return replace(out, failure_exits_zero=failure_exits_zero(sim))


def failure_exits_zero(sim: Simulation) -> bool:
    """Whether the cluster's kafka-leader-election exits 0 when it fails (Kafka 3.7.0's does)."""
    return sim.catalog.at_release(sim.tool_release()).policy("leader_election_failure_exit") == "zero"
