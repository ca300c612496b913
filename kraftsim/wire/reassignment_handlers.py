"""AlterPartitionReassignments (`kafka-reassign-partitions --execute` and `--cancel`, the Admin
client's alterPartitionReassignments), answered by the active controller.

A broker forwards the request to the active controller (KIP-590) and a controller listener
hands it to its controller, as Kafka's ControllerApis does; either way the controller judges
each partition (kraftsim.controller.reassignments) and the reassignment then goes on in the
simulation (the new replicas catch up, the leader adds them to its ISR, the controller completes
it). A request the node could not get to the active controller is answered as Kafka's error
response is: the error at the top and for every partition. The accepted partitions are recorded
as one `reassign-partitions` step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.controller import AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic
from kraftsim.wire.admin_handlers import ask_controller
from kraftsim.wire.handlers import Body, Handler, code
from kraftsim.wire.served import Listener, ServedCluster

ALTER_PARTITION_REASSIGNMENTS_KEY = 45


def _request(version: int, body: Mapping[str, Any]) -> AlterPartitionReassignmentsRequest:
    topics = tuple(
        ReassignableTopic(t["Name"], tuple(
            ReassignablePartition(int(p["PartitionIndex"]),
                                  None if p.get("Replicas") is None else tuple(int(b) for b in p["Replicas"]))
            for p in t.get("Partitions") or []))
        for t in body.get("Topics") or [])
    allow = bool(body.get("AllowReplicationFactorChange", True)) if version >= 1 else True
    return AlterPartitionReassignmentsRequest(topics, allow)


def alter_partition_reassignments(served: ServedCluster, listener: Listener, version: int,
                                  body: Mapping[str, Any]) -> Body:
    request = _request(version, body)
    at = served.sim.now_ms
    result = ask_controller(served, listener, lambda: served.sim.send_alter_partition_reassignments(request))
    if isinstance(result, tuple):
        err, text = code(result[0]), result[1]
        return {"ErrorCode": err, "ErrorMessage": text,
                "AllowReplicationFactorChange": request.allow_replication_factor_change,
                "Responses": [{"Name": t.name, "Partitions": [
                    {"PartitionIndex": p.partition_index, "ErrorCode": err, "ErrorMessage": text}
                    for p in t.partitions]} for t in request.topics]}
    response = result.response
    accepted: list[dict[str, object]] = []
    for asked, answered in zip(request.topics, response.responses):
        for p, a in zip(asked.partitions, answered.partitions):
            if a.error_code == 0:
                accepted.append({"topic": asked.name, "partition": p.partition_index,
                                 **({} if p.replicas is None else {"replicas": list(p.replicas)})})
    if accepted:
        served.record("reassign-partitions", {
            "partitions": accepted,
            "allow_replication_factor_change": None if request.allow_replication_factor_change else False}, at)
    return {"ErrorCode": response.error_code, "ErrorMessage": response.error_message,
            "AllowReplicationFactorChange": response.allow_replication_factor_change,
            "Responses": [{"Name": t.name, "Partitions": [
                {"PartitionIndex": p.partition_index, "ErrorCode": p.error_code, "ErrorMessage": p.error_message}
                for p in t.partitions]} for t in response.responses]}


HANDLERS: dict[int, Handler] = {ALTER_PARTITION_REASSIGNMENTS_KEY: alter_partition_reassignments}
