"""What a DescribeQuorum request answers for a simulated cluster: the leader's view of every
voter and observer (Kafka's QuorumInfo), for `kraftsim metadata-quorum` and the wire front end.

The leader reports itself with its log end offset and the current time as fetch and caught-up
times; a voter that never fetched in this epoch has log end offset -1 and no times; an
observer is any other replica that fetched from the leader. Directory ids are the replicas'
metadata directory ids (meta.properties); a static quorum (kraft.version 0) knows none for
its voters. Endpoints are known for voters only (the VotersRecord's, or the static voters').
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kraftsim.javacompat import hash_map_order
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.engine.member import LEADER, Member, VotersRecordView
from kraftsim.sim.node.simnode import CONTROLLER_LISTENER
from kraftsim.sim.types import SimError
from kraftsim.sim.node.voters import replica_key_hash

if TYPE_CHECKING:
    from kraftsim.sim.engine.core import Engine

#: A leader forgets an observer that has not fetched for this long (Kafka's LeaderState).
OBSERVER_SESSION_TIMEOUT_MS = 300_000


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica as DescribeQuorum reports it (-1 where Kafka reports none)."""

    node_id: int
    directory_id: Uuid
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int
    endpoints: tuple[str, ...] = ()

    def lag(self, leader: ReplicaInfo) -> int:
        return leader.log_end_offset - self.log_end_offset


@dataclass(frozen=True)
class QuorumInfo:
    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    kraft_version: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...] = field(default=())

    @property
    def leader(self) -> ReplicaInfo:
        return next(v for v in self.voters if v.node_id == self.leader_id)

    def to_json(self) -> dict[str, Any]:
        def one(r: ReplicaInfo) -> dict[str, Any]:
            return {"id": r.node_id, "directory_id": None if r.directory_id == Uuid.ZERO else str(r.directory_id),
                    "log_end_offset": r.log_end_offset, "lag": r.lag(self.leader), "last_fetch_ms": r.last_fetch_ms,
                    "last_caught_up_ms": r.last_caught_up_ms, "endpoints": list(r.endpoints)}
        return {"cluster_id": self.cluster_id, "leader_id": self.leader_id, "leader_epoch": self.leader_epoch,
                "high_watermark": self.high_watermark, "kraft_version": self.kraft_version,
                "voters": [one(v) for v in self.voters], "observers": [one(o) for o in self.observers]}


def quorum_info(engine: Engine, cluster_id: str) -> QuorumInfo:
    """The leader's answer to DescribeQuorum now (SimError when there is no leader)."""
    m = engine.leader_member()
    if m is None or m.role != LEADER:
        raise SimError("There is no leader of the metadata quorum: DescribeQuorum times out.")
    now = engine.now
    dynamic = engine.kraft_version >= 1
    endpoints = _voter_endpoints(m.voters_record) if dynamic else {}

    recorded = {v.voter_id: v.voter_directory_id for v in m.voters_record.voters} \
        if dynamic and m.voters_record is not None else {}

    def replica(i: int, voter: bool) -> ReplicaInfo:
        did = (recorded.get(i) or engine.directory_id_of(i)) if voter and dynamic else \
            engine.directory_id_of(i) if not voter else None
        eps = endpoints.get(i, (f"{CONTROLLER_LISTENER[0]}://node-{i}:{CONTROLLER_LISTENER[1]}",)) if voter else ()
        if i == m.id:
            return ReplicaInfo(i, did or Uuid.ZERO, m.log.log_end_offset, now, now, eps)
        return ReplicaInfo(i, did or Uuid.ZERO, m.replica_end(i), m.fetched_at(i), m.caught_up_time(i), eps)

    voters = tuple(replica(i, True) for i in sorted(m.voters))  # (a HashMap by id: ascending)
    watched = [i for i, t in m.fetchers()
               if i not in m.voters and i != m.id and now - t < OBSERVER_SESSION_TIMEOUT_MS]
    observers = [replica(i, False) for i in watched]
    observers += [ReplicaInfo(i, engine.directory_id_of(i) or Uuid.ZERO, leo, t, -1, ())  # a wiped voter's new self
                  for i, leo, t in m.other_key_fetchers()
                  if i in m.voters and now - t < OBSERVER_SESSION_TIMEOUT_MS]
    if _kip_853(m):  # observers kept in a HashMap by ReplicaKey (id and directory id) from 3.9
        observers = hash_map_order(observers, lambda r: replica_key_hash(r.node_id, r.directory_id))
    return QuorumInfo(cluster_id, m.id, m.epoch, m.high_watermark if m.high_watermark is not None else -1,
                      engine.kraft_version, voters, tuple(observers))


def _kip_853(m: Member) -> bool:
    """The leader's release knows kraft.version 1 (Kafka 3.9 on)."""
    return m.node is not None and m.node.catalog.supported_features().get("kraft.version", (0, 0))[1] >= 1


def _voter_endpoints(record: VotersRecordView | None) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    for v in record.voters if record is not None else ():
        out[v.voter_id] = tuple(f"{e.name}://{'[' + e.host + ']' if ':' in e.host else e.host}:{e.port}"
                                for e in v.endpoints)
    return out


__all__ = ["QuorumInfo", "ReplicaInfo", "quorum_info"]
