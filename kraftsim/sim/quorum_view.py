"""The metadata quorum as its leader sees it: what DescribeQuorum answers (KIP-595, KIP-836).

The leader knows, for every voter and every observer that fetched from it, the offset it has
and when it last fetched, on the simulated clock. A replica counts as caught up when the
offset it has reached the high watermark (the leader's log end moves on with every NoOpRecord,
so a follower one fetch behind it is still current); its last-caught-up time is then its last
fetch (Kafka tracks the exact moment; kraftsim does not keep that history). The leader itself
reports its own log end and the current time for both.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftsim.sim.engine import Engine


@dataclass(frozen=True)
class ReplicaView:
    replica_id: int
    log_end_offset: int
    last_fetch_ms: int  # -1: never fetched
    last_caught_up_ms: int  # -1: not known to be caught up


@dataclass(frozen=True)
class QuorumView:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaView, ...]
    observers: tuple[ReplicaView, ...]


def quorum_view(engine: Engine) -> QuorumView | None:
    """The active leader's view of the quorum (None when there is no leader)."""
    lead = engine.leader_member()
    if lead is None or lead.node is None or lead.node.log is None:
        return None
    now = engine.now
    end = lead.log.log_end_offset
    hw = lead.high_watermark if lead.high_watermark is not None else -1

    def replica(i: int) -> ReplicaView:
        if i == lead.id:
            return ReplicaView(i, end, now, now)
        fetched = lead.last_fetch_from.get(i, -1)
        if i in lead.matched:
            offset = lead.matched[i]
        else:
            m = engine.members.get(i)
            offset = m.log.log_end_offset if m is not None and m.running and fetched >= 0 else -1
        return ReplicaView(i, offset, fetched, fetched if fetched >= 0 and 0 <= hw <= offset else -1)

    voters = tuple(replica(v) for v in engine.voters)
    observers = tuple(replica(i) for i in sorted(lead.last_fetch_from) if i not in engine.voters)
    return QuorumView(lead.id, lead.epoch, hw, voters, observers)
