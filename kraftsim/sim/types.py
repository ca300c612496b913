"""The simulator's public value types: its configuration, its error, and what it reports.

These are the names the scenario runner, the state machine and the CLI use (with
`Simulation`); they carry no behaviour of their own.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from typing import Annotated, Any

import msgspec

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.image import MetadataVersionChange

#: The invariants checked after every event (contract 5 uses these names).
INVARIANTS = ("OneLeaderPerEpoch", "ConsistentCommittedData", "MonotonicHighWatermark", "ImageMatchesLog",
              "SnapshotMatchesLog", "BrokersApplyOnlyCommitted")
#: Invariants of quorum membership, reported for dynamic quorums (kraft.version 1).
MEMBERSHIP_INVARIANTS = ("NoDisjointMajorities", "VoterOfSeenSet")

#: Node states as `NodeInfo.state` reports them.
RUNNING, STOPPED, CRASHED, FAILED = "running", "stopped", "crashed", "failed"
#: A node's process.roles, in the order a combined node lists them (`NodeInfo.roles`).
BROKER, CONTROLLER = "broker", "controller"


def created_roles(*, combined: int, controllers: int, brokers: int) -> dict[int, tuple[str, ...]]:
    """The roles of the nodes `cluster create` makes, by node id: combined nodes from 1, then
    controllers, then brokers (a scenario's `[cluster]` and a recording's shape read ids so)."""
    kinds = [(BROKER, CONTROLLER)] * combined + [(CONTROLLER,)] * controllers + [(BROKER,)] * brokers
    return dict(enumerate(kinds, start=1))


class SimError(KraftsimError):
    """An operation the simulated cluster refuses (str: Kafka's text) or cannot carry out."""

    #: What the operation said of the part it did carry out before it was refused (a scenario
    #: step keeps it as its output): set where that part is committed, such as the topics a
    #: CreateTopics request refused in part created.
    output: Sequence[str] = ()


class NotAClusterError(SimError, UsageError):
    """A directory named as a simulated cluster holds none (no cluster.json, or not a folder at
    all): invalid input, exit 2 in every command, those acting as Kafka's tools too."""

    @classmethod
    def at(cls, directory: object) -> "NotAClusterError":
        return cls(not_a_cluster_text(directory))


def holds_no_cluster(error: OSError) -> bool:
    """Whether reading a cluster's state file failed because there is no cluster at all: nothing
    there, a file named as the folder (ENOTDIR), a symbolic link that leads to itself (ELOOP)."""
    return error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


def not_a_cluster_text(directory: object) -> str:
    """What every command says of a directory named as a cluster that holds none (one text,
    whichever engine or command reads it)."""
    return f"{directory}: not a simulated cluster (no cluster.json); create one with `kraftsim cluster create`"


class RollStopped(SimError):
    """A roll stopped at the first node that did not come back on the new release, as an
    operator stops: str() is Kafka's text alone (what a scenario's `expect_error` matches);
    `node`, `release` and `left` (the nodes not rolled, with the releases they stay on) are
    what the command line adds."""

    def __init__(self, text: str, node: int, release: str, left: list[tuple[int, str]]) -> None:
        super().__init__(text)
        self.text, self.node, self.release, self.left = text, node, release, left

    def lines(self) -> list[str]:
        """The node, Kafka's text, and where the roll left the cluster."""
        ids = ",".join(str(i) for i, _ in sorted(self.left))
        olds = ", ".join(sorted({r for _, r in self.left}))
        where = f" (Kafka {olds}): {ids}" if self.left else ""
        return [f"Node {self.node} did not come up on Kafka {self.release}: {self.text}",
                f"The roll stopped: {len(self.left)} node(s) left on their old release{where}."]


class TopicsRefused(SimError):
    """A CreateTopics request the controller refused in part: str() is Kafka's text for the
    first topic refused; `created` names the topics the same request did create (committed,
    so a caller still reports them)."""

    def __init__(self, text: str, created: list[str]) -> None:
        super().__init__(text)
        self.created = created


class InvalidNodes(SimError, UsageError):
    """Node ids the caller gave that the cluster cannot take: an id no node has, a node in two
    partition groups. The caller's input, so invalid input at the command line (exit 2), as a
    malformed id is; still a SimError to code that drives a simulation."""


#: cluster.json's format numbers: the tick engine's (kraftsim.sim.ticks) and the event simulator's.
TICKS_STATE_FORMAT, EVENTS_STATE_FORMAT = 1, 2


def unsupported_state_format(path: object, fmt: object) -> str:
    """The text for a cluster.json of a format neither engine reads (either reader may meet it)."""
    return (f"{path}: cluster state format {fmt} is not supported (kraftsim reads {TICKS_STATE_FORMAT}, the tick "
            f"engine's, and {EVENTS_STATE_FORMAT}, the event simulator's)")


#: A timeout or interval: at least 1 ms, since a timer of 0 ms (or less) fires again at the same
#: simulated instant, forever.
_Period = Annotated[int, msgspec.Meta(ge=1)]
#: A delay that may be none at all, never negative (a message may not arrive before it was sent).
_Delay = Annotated[int, msgspec.Meta(ge=0)]


class SimConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Timeouts and intervals, Kafka's defaults unless overridden, and the network's behaviour
    (kraftsim's: Kafka has no setting for a network's delay or loss)."""

    #: controller.quorum.election.timeout.ms: a follower that hears nothing from its leader
    #: this long (plus a random part of the same size) becomes a candidate.
    election_timeout_ms: _Period = 1000
    #: controller.quorum.election.backoff.max.ms: a failed candidate waits up to this long.
    election_backoff_max_ms: _Delay = 1000
    #: controller.quorum.fetch.timeout.ms: a follower without a successful fetch this long
    #: starts an election; a leader without fetches from a majority this long resigns (check-quorum).
    fetch_timeout_ms: _Period = 2000
    #: controller.quorum.request.timeout.ms: an unanswered request is retried after this long.
    request_timeout_ms: _Period = 2000
    #: default.api.timeout.ms: how long an admin client (kafka-features, topic creation)
    #: keeps retrying a request whose records were not committed.
    admin_timeout_ms: _Period = 60000
    #: How long a leader holds a fetch that finds nothing new (Kafka's raft fetch max wait).
    fetch_max_wait_ms: _Delay = 500
    #: replica.fetch.wait.max.ms: how long a partition leader holds a follower's fetch that finds
    #: nothing; a follower missing from the ISR is added back at its next fetch.
    replica_fetch_wait_max_ms: _Delay = 500
    #: auto.leader.rebalance.enable: the active controller moves leaderships back to preferred
    #: replicas by itself, every leader.imbalance.check.interval.seconds (here in ms).
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: _Period = 300_000
    #: unclean.leader.election.interval.ms (3.9+): how often the active controller looks for
    #: leaderless partitions of topics with unclean.leader.election.enable.
    unclean_leader_election_interval_ms: _Period = 300_000
    #: broker.heartbeat.interval.ms
    broker_heartbeat_interval_ms: _Period = 2000
    #: broker.session.timeout.ms
    broker_session_timeout_ms: _Period = 9000
    #: initial.broker.registration.timeout.ms: a broker process that has not registered this
    #: long after its lifecycle manager started shuts itself down.
    initial_broker_registration_timeout_ms: _Period = 60000
    #: metadata.max.idle.interval.ms: the active controller's NoOpRecord when idle.
    metadata_max_idle_interval_ms: _Period = 500
    #: How long after an append the leader flushes its log (Kafka: at the end of the poll
    #: that appended, bounded by the append linger, quorum.append.linger.ms = 25).
    append_linger_ms: _Delay = 25
    #: Network delay of one message, uniform in [min, max] milliseconds (seeded).
    network_delay_min_ms: _Delay = 1
    network_delay_max_ms: _Delay = 10
    #: Probability that the network drops a message (seeded; 0: a reliable network).
    message_loss: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.0
    #: metadata.max.retention.bytes: segments wholly below the newest snapshot go once the
    #: log is larger than this (-1: never). Small values exercise FetchSnapshot.
    retention_bytes: Annotated[int, msgspec.Meta(ge=-1)] = 100 * 1024 * 1024
    #: metadata.log.segment.bytes (at least a batch's offset and length, MetadataLog's least)
    segment_bytes: Annotated[int, msgspec.Meta(ge=12)] = 1024 * 1024 * 1024

    def __post_init__(self) -> None:
        """The delay range must be a range: with min above max every message would silently
        take min."""
        if self.network_delay_min_ms > self.network_delay_max_ms:
            raise ValueError(f"network_delay_min_ms {self.network_delay_min_ms} is above "
                             f"network_delay_max_ms {self.network_delay_max_ms}")


class NodeInfo(msgspec.Struct, frozen=True):
    """One node as `Simulation.nodes()` reports it."""

    id: int
    roles: tuple[str, ...]
    release: str
    state: str  # running | stopped | crashed | failed
    fenced: bool | None  # brokers only
    detail: str | None  # e.g. Kafka's text when it failed to start


class SimEvent(msgspec.Struct, frozen=True):
    """One event of the timeline: simulated time, the node it happened on, its kind, details."""

    time_ms: int
    node: int | None
    kind: str
    details: dict[str, Any]

    def to_json(self) -> dict[str, object]:
        return {"time_ms": self.time_ms, "node": self.node, "kind": self.kind, "details": self.details}


class InvariantResult(msgspec.Struct, frozen=True):
    """An invariant's verdict: its name, whether it held, and (when not) the event, node and offsets."""

    name: str
    ok: bool
    detail: str | None = None


class MvChangeReport(msgspec.Struct, frozen=True):
    """A metadata.version change a node's KIP-778 loader carried out, with what it dropped."""

    node_id: int
    offset: int
    change: MetadataVersionChange
    snapshots: tuple[str, ...] = ()
