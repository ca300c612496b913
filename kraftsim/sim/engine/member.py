"""A node of the event-driven simulation: what it is (NodeState), what runs (SimNode), and
its raft state (role, epoch, vote, leader, high watermark, flushed offset, timers), with the
state only one role has in a per-role object (LeaderState, ElectionState, FollowerState), as
Kafka's QuorumState holds one EpochState at a time.

The raft state a real node keeps on disk is `quorum-state` (epoch, leader, vote), written
whenever it changes; everything else is soft and starts again with the process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol
from collections.abc import Sequence

from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.engine.events import Message
from kraftsim.sim.node.simnode import NodeState, SimNode
from kraftsim.sim.types import RUNNING
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.names import SnapshotId
from kraftsim.storage.segment import IndexEntry, LogSegment

UNATTACHED, FOLLOWER, PROSPECTIVE, CANDIDATE, LEADER, RESIGNED, OBSERVER = (
    "unattached", "follower", "prospective", "candidate", "leader", "resigned", "observer")


class VoterEndpoint(Protocol):
    """An endpoint of a voter in a decoded VotersRecord (what the engine reads of it)."""

    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class RecordedVoter(Protocol):
    """A voter of a decoded VotersRecord."""

    @property
    def voter_id(self) -> int: ...
    @property
    def voter_directory_id(self) -> Uuid: ...
    @property
    def endpoints(self) -> Sequence[VoterEndpoint]: ...


class VotersRecordView(Protocol):
    """A decoded VotersRecord as the engine reads it (the protocol package builds its message
    classes from the schema at run time, so they have no static type of their own)."""

    @property
    def voters(self) -> Sequence[RecordedVoter]: ...


@dataclass(slots=True)
class LeaderState:
    """What a leader keeps for its epoch (Kafka's LeaderState): made when it wins, gone when it
    stops leading, so no other role can read a stale copy."""

    #: Where its epoch starts: the high watermark moves only past it (raft's commit rule).
    epoch_start_offset: int
    #: replica -> the offset it has (flushed): the leader's own flushed end included.
    matched: dict[int, int]
    #: replica -> the time of its last fetch.
    last_fetch_from: dict[int, int] = field(default_factory=dict)
    #: replica -> (its process generation, the fetch waiting for something new).
    parked: dict[int, tuple[int, Message]] = field(default_factory=dict)
    #: replica -> (offset, time) of its last fetch, for a replica with a voter's id but another
    #: directory id (a wiped voter formatted again): an observer, apart from the voter's state.
    other_key_fetch: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: The voter change in flight: (kind, node id, offset of its VotersRecord).
    voter_change: tuple[str, int, int] | None = None


@dataclass(slots=True)
class ElectionState:
    """A prospective (pre-vote) or candidate voter's election: who granted it a vote."""

    granted: set[int]


@dataclass(slots=True)
class FollowerState:
    """A voter following a known leader: when its last fetch succeeded (the fetch timer)."""

    last_fetch_ok_ms: int


@dataclass(slots=True)
class Member:
    """One node as the engine runs it: its process, its raft state (the state of its current
    role in one of `leading`, `election`, `following`), its fetcher's and lifecycle's soft state."""

    state: NodeState
    voter: bool
    status: str = RUNNING  # running | stopped | crashed | failed
    detail: str | None = None
    node: SimNode | None = None
    # raft (persisted in quorum-state: epoch, leader, voted)
    #: The raft role; its state object, when the role has one, is `leading`, `election` or
    #: `following` (the others None): changed only through `lead`, `campaign`, `follow`, `set_role`.
    role: str = UNATTACHED
    leading: LeaderState | None = None
    election: ElectionState | None = None
    following: FollowerState | None = None
    epoch: int = 0
    leader: int | None = None
    voted: int | None = None
    #: The high watermark it knows (every role has one, as in Kafka's EpochState).
    high_watermark: int | None = None
    flushed_end: int = 0
    #: A leader's flush is scheduled (it outlives the leadership: the flush finds it over).
    flush_pending: bool = False
    #: The last epoch its leader-epoch-checkpoint file holds.
    epoch_file_last: int = -1
    # timers: one raft timer per node with a generation number; a fired timer with an older
    # generation is stale (it is not a role's: a prospective voter's timer runs on as candidate)
    timer_gen: int = 0
    # the fetcher's soft state: a follower's or an observer's fetch in flight
    fetch_in_flight: bool = False
    fetch_seq: int = 0
    fetch_target: int | None = None
    fetch_rotation: int = 0
    snapshot_in_flight: bool = False
    #: (node, key, its snapshot ids): Fetcher.snapshot_ids.
    snapshot_cache: tuple[SimNode, tuple[int, int, int], list[SnapshotId]] | None = None
    #: Bumped whenever the node's files lose data (truncation, crash, disk fault, snapshot install).
    disk_gen: int = 0
    #: disk_gen when its process started (equal: its files lost nothing since).
    disk_gen_at_start: int = 0
    #: replica -> when its fetch last reached this node's log end while it led (Kafka's
    #: lastCaughtUpTimestamp). Kept across its leaderships, where Kafka's LeaderState starts
    #: afresh each epoch: moving it into LeaderState would change what an add-voter accepts.
    caught_up_at: dict[int, int] = field(default_factory=dict)
    # quorum membership (sim.reconfig): the voter set this replica's log holds, the offset of
    # its VotersRecord (-1: the bootstrap checkpoint, or static voters), and the record itself
    voters: tuple[int, ...] = ()
    voters_offset: int = -1
    voters_record: VotersRecordView | None = None
    #: Its metadata directory id (meta.properties) under kraft.version 1: with its id, the
    #: replica key a VotersRecord names (None under kraft.version 0, where ids alone count).
    directory_id: Uuid | None = None
    # broker / controller lifecycle (soft)
    broker_epoch: int | None = None
    fenced: bool | None = None
    shutdown_wanted: bool = False
    shutdown_done: bool = False
    controller_registered: bool = False
    controller_register_sent_ms: int = -(10**12)
    lifecycle_gen: int = 0
    #: (node, its image's features and cluster, incarnation, whether a ControllerRegistration is
    #: due): asked after every apply.
    registration_due: tuple[SimNode, object, object, str, bool] | None = None

    #: The node's id (its state's, which never changes): a field, read on every message.
    id: int = field(init=False)

    def __post_init__(self) -> None:
        self.id = self.state.id

    # -------------------------------------------------------------- role changes

    def lead(self, state: LeaderState) -> None:
        self.role, self.leading, self.election, self.following = LEADER, state, None, None

    def campaign(self, role: str, granted: set[int]) -> None:
        """Becomes PROSPECTIVE or CANDIDATE with the votes `granted` so far."""
        self.role, self.leading, self.election, self.following = role, None, ElectionState(granted), None

    def follow(self, now_ms: int) -> None:
        """Becomes a FOLLOWER (a voter) of its known leader, the fetch timer running from now."""
        self.role, self.leading, self.election, self.following = FOLLOWER, None, None, FollowerState(now_ms)

    def set_role(self, role: str) -> None:
        """Becomes UNATTACHED, RESIGNED or OBSERVER: roles without state of their own."""
        self.role, self.leading, self.election, self.following = role, None, None, None

    def end_process(self, status: str, detail: str | None) -> None:
        """Its process ends: the node lets go of what it held (SimNode.retire), and nothing
        that names the node outlives it (the snapshot-id cache)."""
        if self.node is not None:
            self.node.retire()
        self.node = None
        self.snapshot_cache = None
        self.state.running = False
        self.status, self.detail = status, detail

    # -------------------------------------------------------------- what a leader knows (public)

    def fetched_at(self, replica: int, default: int = -1) -> int:
        """When `replica` last fetched from this node as leader (`default`: never, or not leading)."""
        ls = self.leading
        return default if ls is None else ls.last_fetch_from.get(replica, default)

    def replica_end(self, replica: int) -> int:
        """The offset `replica` last fetched from this leader (-1: none, or not leading)."""
        ls = self.leading
        return -1 if ls is None else ls.matched.get(replica, -1)

    def caught_up_time(self, replica: int) -> int:
        """When `replica`'s fetch last reached this leader's log end (-1: never)."""
        return self.caught_up_at.get(replica, -1)

    def fetchers(self) -> list[tuple[int, int]]:
        """(replica, time of its last fetch) of every replica that fetched from this leader, by id."""
        ls = self.leading
        return [] if ls is None else sorted(ls.last_fetch_from.items())

    def other_key_fetchers(self) -> list[tuple[int, int, int]]:
        """(replica, offset, time) of the replicas with a voter's id but another directory id
        that fetched from this leader, by id."""
        ls = self.leading
        return [] if ls is None else [(i, leo, t) for i, (leo, t) in sorted(ls.other_key_fetch.items())]

    def voter_change_pending(self) -> bool:
        """Whether this node leads with a voter change appended but not yet committed."""
        ls = self.leading
        return ls is not None and ls.voter_change is not None

    @property
    def running(self) -> bool:
        return self.status == RUNNING and self.node is not None

    @property
    def log(self) -> MetadataLog:
        assert self.node is not None
        log: MetadataLog | None = self.node.log
        assert log is not None
        return log

    @property
    def applied(self) -> int:
        """The last offset its loader replayed (-1 before any)."""
        return -1 if self.node is None else self.node.applied_offset


def last_entry(log: MetadataLog) -> IndexEntry | None:
    """The last batch's index entry (None for an empty log)."""
    seg = log.active_segment
    if seg is not None and seg.entries:
        return seg.entries[-1]  # (the common case: asked on every fetch)
    for key in reversed(log.segments.keys()):
        older: LogSegment = log.segments[key]
        if len(older):
            return older.entries[-1]
    return None


def batch_key(e: IndexEntry) -> tuple[int, ...]:
    """A batch as the index knows it, without its file position (which differs by node)."""
    return (e.base_offset, e.last_offset, e.size, e.epoch, e.max_timestamp)


def entry_at(log: MetadataLog, offset: int) -> IndexEntry | None:
    """The index entry of the batch holding `offset` (None outside the log)."""
    if offset < log.log_start_offset or offset >= log.log_end_offset:
        return None
    seg = log.active_segment
    if seg is not None:
        entries = seg.entries
        if entries and entries[-1].base_offset <= offset:
            return entries[-1]  # (the common case: a fetch from the log end)
    found = log.locate(offset)
    if found is None:
        return None
    key, i = found
    holder: LogSegment = log.segments[key]
    return holder.entries[i]


def last_epoch(log: MetadataLog, snapshot_epoch: int = 0) -> int:
    """The epoch of the last batch, or of the snapshot the log starts at when it is empty."""
    e = last_entry(log)
    return snapshot_epoch if e is None else e.epoch


def end_offset_for_epoch(log: MetadataLog, epoch: int, snapshot: tuple[int, int] | None = None) -> tuple[int, int]:
    """(the largest epoch <= `epoch` this log holds, the offset where that epoch ends): Kafka's
    endOffsetForEpoch, which a leader answers a diverging fetch with."""
    entries = log.leader_epochs()
    found_epoch, found_end = -1, log.log_start_offset
    if snapshot is not None and snapshot[1] <= epoch:
        found_epoch, found_end = snapshot[1], snapshot[0]
    for i, e in enumerate(entries):
        if e.epoch > epoch:
            break
        found_epoch = e.epoch
        found_end = entries[i + 1].start_offset if i + 1 < len(entries) else log.log_end_offset
    return found_epoch, found_end
