"""A node of the event-driven simulation: what it is (NodeState), what runs (SimNode), and
its raft state (role, epoch, vote, leader, high watermark, flushed offset, timers).

The raft state a real node keeps on disk is `quorum-state` (epoch, leader, vote), written
whenever it changes; everything else is soft and starts again with the process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftsim.sim.node.simnode import NodeState, SimNode
from kraftsim.sim.types import RUNNING
from kraftsim.storage import MetadataLog
from kraftsim.storage.segment import IndexEntry

UNATTACHED, FOLLOWER, PROSPECTIVE, CANDIDATE, LEADER, RESIGNED, OBSERVER = (
    "unattached", "follower", "prospective", "candidate", "leader", "resigned", "observer")


@dataclass(slots=True)
class Member:
    state: NodeState
    voter: bool
    status: str = RUNNING  # running | stopped | crashed | failed
    detail: str | None = None
    node: SimNode | None = None
    # raft (persisted in quorum-state: epoch, leader, voted)
    role: str = UNATTACHED
    epoch: int = 0
    leader: int | None = None
    voted: int | None = None
    high_watermark: int | None = None
    flushed_end: int = 0
    flush_pending: bool = False
    #: The last epoch its leader-epoch-checkpoint file holds.
    epoch_file_last: int = -1
    # timers: a generation number per timer; a fired timer with an older generation is stale
    timer_gen: int = 0
    last_fetch_ok_ms: int = 0
    fetch_in_flight: bool = False
    fetch_seq: int = 0
    fetch_target: int | None = None
    fetch_rotation: int = 0
    snapshot_in_flight: bool = False
    snapshot_cache: tuple | None = None  # (node, key, its snapshot ids): Fetcher.snapshot_ids
    #: Bumped whenever the node's files lose data (truncation, crash, disk fault, snapshot install).
    disk_gen: int = 0
    #: disk_gen when its process started (equal: its files lost nothing since).
    disk_gen_at_start: int = 0
    # elections
    granted: set[int] = field(default_factory=set)
    # leader soft state
    matched: dict[int, int] = field(default_factory=dict)  # replica -> offset it has (flushed)
    last_fetch_from: dict[int, int] = field(default_factory=dict)  # replica -> time of its last fetch
    parked: dict[int, tuple[int, object]] = field(default_factory=dict)  # replica -> (generation, message)
    epoch_start_offset: int = 0
    #: replica -> (offset, time) of its last fetch, for a replica with a voter's id but another
    #: directory id (a wiped voter formatted again): an observer, apart from the voter's state.
    other_key_fetch: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: replica -> when its fetch last reached the leader's log end (Kafka's lastCaughtUpTimestamp).
    caught_up_at: dict[int, int] = field(default_factory=dict)
    # quorum membership (sim.reconfig): the voter set this replica's log holds, the offset of
    # its VotersRecord (-1: the bootstrap checkpoint, or static voters), and the record itself
    voters: tuple[int, ...] = ()
    voters_offset: int = -1
    voters_record: object | None = None
    #: Its metadata directory id (meta.properties) under kraft.version 1: with its id, the
    #: replica key a VotersRecord names (None under kraft.version 0, where ids alone count).
    directory_id: object | None = None
    #: The leader's voter change in flight: (kind, node id, offset of its VotersRecord).
    voter_change: tuple[str, int, int] | None = None
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
    registration_due: tuple | None = None

    #: The node's id (its state's, which never changes): a field, read on every message.
    id: int = field(init=False)

    def __post_init__(self) -> None:
        self.id = self.state.id

    @property
    def running(self) -> bool:
        return self.status == RUNNING and self.node is not None

    @property
    def log(self) -> MetadataLog:
        assert self.node is not None and self.node.log is not None
        return self.node.log

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
        seg = log.segments[key]
        if len(seg):
            return seg.entries[-1]
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
    return log.segments[key].entries[i]


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
