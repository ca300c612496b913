"""DescribeQuorum (v0-v2), AddRaftVoter and RemoveRaftVoter (KIP-853: `kafka-metadata-quorum
add-controller|remove-controller`). DescribeQuorum: voters and observers of `__cluster_metadata-0` with their log end
offsets and last-fetch / last-caught-up times (as long before the client's now as they are
before the simulation's: `ServedCluster.client_time_ms`, so `--human-readable` reads them), and from
v2 the voters' controller endpoints. Only the raft leader answers it: another controller
answers NOT_LEADER_OR_FOLLOWER for the partition, as KafkaRaftClient does; a broker forwards it
to the active controller. A voter change is carried out by the raft leader as the simulation's
own (its refusals are Kafka's texts), after the cluster id and the request's own checks
KafkaRaftClient makes first; another controller answers NOT_LEADER_OR_FOLLOWER, a broker
forwards it. Each change made is recorded (`add-controller`, `remove-controller`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.protocol.primitives import Uuid
from kraftsim.sim import SimError, VoterChangeRefused
from kraftsim.wire.admin_handlers import refusal
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut, code
from kraftsim.wire.served import CONTROLLER, LISTENER_NAMES, Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.sim import ReplicaInfo

DESCRIBE_QUORUM_KEY, ADD_RAFT_VOTER_KEY, REMOVE_RAFT_VOTER_KEY = 55, 80, 81
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


def _voter_change_refusal(served: ServedCluster, listener: Listener, body: Mapping[str, Any],
                          verb: str) -> Body | None:
    """What KafkaRaftClient answers before it looks at the change itself (None: go on)."""
    refused = refusal(served, listener)
    if refused is not None:
        if listener.role == CONTROLLER:
            return {"ErrorCode": code("NOT_LEADER_OR_FOLLOWER")}
        return {"ErrorCode": code(refused[0]), "ErrorMessage": refused[1]}
    cluster_id = body.get("ClusterId")
    if cluster_id is not None and cluster_id != served.sim.cluster_id:
        return {"ErrorCode": code("INCONSISTENT_CLUSTER_ID"),
                "ErrorMessage": f'The given id "{cluster_id}" doesn\'t match the cluster id "{served.sim.cluster_id}"'}
    if body.get("VoterDirectoryId") in (None, Uuid.ZERO):
        return {"ErrorCode": code("INVALID_REQUEST"), "ErrorMessage": f"{verb} voter request didn't include a valid voter"}
    return None


def _changed(served: ServedCluster, change: Callable[[], None], op: str, voter: int) -> Body:
    """The raft leader's answer to a voter change, recorded when it was made."""
    at = served.sim.now_ms
    try:
        change()
    except VoterChangeRefused as e:
        return {"ErrorCode": code(e.error), "ErrorMessage": str(e)}
    finally:
        served.anchor()
    served.record(op, {"id": voter}, at)
    return {"ErrorCode": 0, "ErrorMessage": "NONE"}  # (Errors.NONE.message(), as RaftUtil fills it in)


def add_raft_voter(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    refused = _voter_change_refusal(served, listener, body, "Add")
    if refused is not None:
        return refused
    if LISTENER_NAMES[CONTROLLER] not in {x.get("Name") for x in body.get("Listeners", [])}:
        raise NotCarriedOut("AddRaftVoter without an endpoint for the controller listener")
    voter, directory = int(body["VoterId"]), body["VoterDirectoryId"]
    return _changed(served, lambda: served.sim.add_voter(voter, directory), "add-controller", voter)


def remove_raft_voter(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    refused = _voter_change_refusal(served, listener, body, "Remove")
    if refused is not None:
        return refused
    voter, directory = int(body["VoterId"]), body["VoterDirectoryId"]
    return _changed(served, lambda: served.sim.remove_controller(voter, str(directory)), "remove-controller", voter)


HANDLERS: dict[int, Handler] = {DESCRIBE_QUORUM_KEY: describe_quorum, ADD_RAFT_VOTER_KEY: add_raft_voter,
                                REMOVE_RAFT_VOTER_KEY: remove_raft_voter}
