"""DescribeQuorum (v0-v2): voters and observers of `__cluster_metadata-0` with their log end
offsets and last-fetch / last-caught-up times (as long before the client's now as they are
before the simulation's: `ServedCluster.client_time_ms`, so `--human-readable` reads them), and from
v2 the voters' controller endpoints. Only the raft leader answers it: another controller
answers NOT_LEADER_OR_FOLLOWER for the partition, as KafkaRaftClient does; a broker forwards it
to the active controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kraftsim.sim import SimError
from kraftsim.wire.admin_handlers import refusal
from kraftsim.wire.handlers import Body, code
from kraftsim.wire.served import CONTROLLER, LISTENER_NAMES, Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.sim import ReplicaInfo

DESCRIBE_QUORUM_KEY = 55
TOPIC, PARTITION = "__cluster_metadata", 0


def _replica(served: ServedCluster, r: ReplicaInfo) -> Body:
    return {"ReplicaId": r.node_id, "ReplicaDirectoryId": r.directory_id, "LogEndOffset": r.log_end_offset,
            "LastFetchTimestamp": served.client_time_ms(r.last_fetch_ms),
            "LastCaughtUpTimestamp": served.client_time_ms(r.last_caught_up_ms)}


def _partition_error(name: str, text: str | None) -> Body:
    return {"Topics": [{"TopicName": TOPIC, "Partitions": [
        {"PartitionIndex": PARTITION, "ErrorCode": code(name), "ErrorMessage": text, "LeaderId": -1, "LeaderEpoch": -1,
         "HighWatermark": -1, "CurrentVoters": [], "Observers": []}]}]}


def describe_quorum(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, object]) -> Body:
    refused = refusal(served, listener)
    if refused is not None:
        if listener.role == CONTROLLER:
            return _partition_error("NOT_LEADER_OR_FOLLOWER", None)
        return {"ErrorCode": code(refused[0]), "ErrorMessage": refused[1]}
    try:
        q = served.sim.quorum_info()
    except SimError:  # no leader
        return _partition_error("NOT_LEADER_OR_FOLLOWER", None)
    nodes = []
    for r in q.voters:
        port = served.port_of(r.node_id, CONTROLLER)
        listeners = [] if port is None else [{"Name": LISTENER_NAMES[CONTROLLER], "Host": served.host, "Port": port}]
        nodes.append({"NodeId": r.node_id, "Listeners": listeners})
    return {"Topics": [{"TopicName": TOPIC, "Partitions": [
        {"PartitionIndex": PARTITION, "ErrorCode": 0, "LeaderId": q.leader_id, "LeaderEpoch": q.leader_epoch,
         "HighWatermark": q.high_watermark, "CurrentVoters": [_replica(served, r) for r in q.voters],
         "Observers": [_replica(served, r) for r in q.observers]}]}], "Nodes": nodes}
