"""Quorum membership (KIP-853): the kraft.version and the voter set a node's replica holds.

With kraft.version 0 the voters are static (`controller.quorum.voters`, kept in
cluster.json) and `quorum-state` lists them (data_version 0). With kraft.version 1, a
dynamic quorum (`kafka-storage format --standalone` or `--initial-controllers`, Kafka 3.9
on), the voter set lives in the metadata log itself: a KRaftVersionRecord and a
VotersRecord in a control batch (the first leader's, beside its LeaderChange, and again at
each membership change), and in the header batch of every snapshot, after its
SnapshotHeaderRecord; `quorum-state` is then written at data_version 1, without voters.
The latest record in log order wins, as in Kafka's KRaftControlRecordStateMachine.

Each replica of the simulator knows the voter set its own log holds, and voters are added
and removed one at a time through the leader (sim.reconfig). As in Kafka's
QuorumFeatures, a dynamic quorum has no static voter list for the controller's feature
checks: only registered controllers count there.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kraftsim.image import MetadataLoader
from kraftsim.javacompat import hash_map_order, uuid_hash
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage import QuorumState

#: Control record types that carry quorum membership (their type names in a decoded log).
KRAFT_VERSION_RECORD, VOTERS_RECORD = "KRAFT_VERSION", "KRAFT_VOTERS"
MEMBERSHIP_RECORDS = (KRAFT_VERSION_RECORD, VOTERS_RECORD)


@dataclass
class Membership:
    """kraft.version and the latest VotersRecord, read from control records in log order."""

    kraft_version: int = 0
    #: The latest VotersRecord (its decoded message); None when none was read.
    voters_record: Any | None = None
    #: Where that VotersRecord was read: its offset in the log, or -1 in a snapshot's header.
    voters_offset: int | None = None

    def read(self, entries: Iterable[LogEntry], *, in_snapshot_header: bool = False) -> Membership:
        for e in entries:
            if e.type_name == KRAFT_VERSION_RECORD:
                self.kraft_version = e.message.k_raft_version
            elif e.type_name == VOTERS_RECORD:
                self.voters_record = e.message
                self.voters_offset = -1 if in_snapshot_header else e.offset
        return self

    @property
    def dynamic(self) -> bool:
        return self.kraft_version >= 1

    @property
    def voter_ids(self) -> tuple[int, ...]:
        """The voters the latest VotersRecord names, sorted; () without one."""
        if self.voters_record is None:
            return ()
        return tuple(sorted(v.voter_id for v in self.voters_record.voters))


def seed_loader(loader: MetadataLoader, header: Sequence[LogEntry]) -> None:
    """A loader that starts from a snapshot learns the membership in the snapshot's header
    (Kafka's raft layer reads it there), so that the snapshots its node writes next carry
    the same KRaftVersionRecord and VotersRecord. Control records later in the log still
    replace what it learns here."""
    seen = Membership().read(header, in_snapshot_header=True)
    if seen.kraft_version and not loader.kraft_version:
        loader.kraft_version = seen.kraft_version
    if seen.voters_record is not None and loader.voters is None:
        loader.voters = seen.voters_record


def quorum_state(kraft_version: int, *, leader: int | None, epoch: int, voted: int | None,
                 voters: Sequence[int]) -> QuorumState:
    """The `quorum-state` a node writes: data_version 0 listing the static voters under
    kraft.version 0, data_version 1 without them under a dynamic quorum (as Kafka writes each)."""
    leader_id, voted_id = -1 if leader is None else leader, -1 if voted is None else voted
    if kraft_version >= 1:
        return QuorumState(data_version=1, current_voters=None, leader_id=leader_id, leader_epoch=epoch,
                           voted_id=voted_id)
    return QuorumState(data_version=0, current_voters=tuple(voters), leader_id=leader_id, leader_epoch=epoch,
                       voted_id=voted_id)


def majority_leader(voters: Collection[int], beliefs: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The (epoch, leader) a majority of `voters` knows, from the (epoch, leader) each running
    voter believes in (its quorum-state): None when no leader has a majority behind it. A node
    that alone still believes it leads (partitioned away, or not yet told of a newer epoch) is
    no leader of the cluster: `cluster status`, the scenario's `has_leader` and `leader`."""
    counts: dict[tuple[int, int], int] = {}
    for belief in beliefs:
        counts[belief] = counts.get(belief, 0) + 1
    known = [belief for belief, count in counts.items() if count >= len(voters) // 2 + 1]
    return max(known) if known else None


#: quorum_state_bytes' answers by their arguments (a pure function of them; at most QS_KEEP).
_QS_BYTES: dict[tuple[int, int | None, int, int | None, tuple[int, ...]], bytes] = {}
QS_KEEP = 4096


def quorum_state_bytes(kraft_version: int, leader: int | None, epoch: int, voted: int | None,
                       voters: tuple[int, ...]) -> bytes:
    """The bytes of `quorum_state(...)`'s file (write_quorum_state's: its text in UTF-8), made
    once per distinct state: a node rewrites, or compares, its quorum-state on every raft state
    change, and most changes come back to states written before."""
    key = (kraft_version, leader, epoch, voted, voters)
    known = _QS_BYTES.get(key)
    if known is None:
        known = quorum_state(kraft_version, leader=leader, epoch=epoch, voted=voted,
                             voters=voters).text().encode("utf-8")
        if len(_QS_BYTES) >= QS_KEEP:
            _QS_BYTES.clear()
        _QS_BYTES[key] = known
    return known


def replica_key(node_id: int, directory_id: object, style: str = "plain") -> str:
    """Kafka's ReplicaKey.toString, as the raft layer's refusals print a voter: `style` is the
    leader's policy raft_replica_key_text ("optional" in 3.9: Optional[id] / Optional.empty;
    "plain" from 4.0: the id / <undefined>)."""
    missing = directory_id is None or directory_id == Uuid.ZERO
    if style == "optional":
        shown = "Optional.empty" if missing else f"Optional[{directory_id}]"
    else:
        shown = "<undefined>" if missing else str(directory_id)
    return f"ReplicaKey(id={node_id}, directoryId={shown})"


def replica_key_hash(node_id: int, directory_id: Uuid | None) -> int:
    """ReplicaKey.hashCode: Objects.hash(id, Optional(directoryId)), as 32 bits."""
    opt = 0 if directory_id is None or directory_id == Uuid.ZERO else uuid_hash(directory_id)
    return (31 * (31 + node_id) + opt) & 0xFFFFFFFF


def voter_keys_text(record: Any | None, style: str = "plain") -> str:
    """VoterSet.voterKeys() printed: a Java HashSet of ReplicaKeys, in its iteration order
    (ReplicaKey.hashCode is Objects.hash(id, Optional(directoryId)))."""
    if record is None:
        return "[]"
    keys = [(v.voter_id, v.voter_directory_id) for v in record.voters]
    ordered = hash_map_order(keys, lambda k: replica_key_hash(k[0], k[1]))
    return "[" + ", ".join(replica_key(i, d, style) for i, d in ordered) + "]"


def controller_static_voters(kraft_version: int, voters: Sequence[int]) -> tuple[int, ...]:
    """The voters the active controller's feature checks list (QuorumFeatures' quorum node
    ids): the static ones; none with a dynamic quorum, where only registered controllers count."""
    return () if kraft_version >= 1 else tuple(voters)


__all__ = ["MEMBERSHIP_RECORDS", "VOTERS_RECORD", "Membership", "controller_static_voters", "majority_leader",
           "quorum_state", "quorum_state_bytes", "replica_key", "replica_key_hash", "seed_loader", "voter_keys_text"]
