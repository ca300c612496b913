"""The two requests `kafka-topics --describe` sends besides Metadata: DescribeTopicPartitions
(KIP-966, Kafka 3.8+ brokers; the 4.x tool describes with it) and ListPartitionReassignments
(the 3.x tool asks which described partitions are being reassigned).

DescribeTopicPartitions is answered from the broker's own image, as Kafka's metadata cache
does: all topics when none are named, sorted by name, paged by ResponsePartitionLimit (at
most the broker's max.request.partition.size.limit, 2000) with a cursor. ListPartitionReassignments
is the active controller's answer (a broker forwards it): only partitions with replicas
being added or removed, unknown topics left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.protocol.primitives import Uuid
from kraftsim.storage import internal_topics, topic_name_error
from kraftsim.wire.admin_handlers import refusal
from kraftsim.wire.authorized_operations import authorized_operations
from kraftsim.wire.handlers import Body, Handler, code, release_of
from kraftsim.wire.served import Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage, PartitionRegistration

LIST_PARTITION_REASSIGNMENTS_KEY, DESCRIBE_TOPIC_PARTITIONS_KEY = 46, 75
#: Kafka's max.request.partition.size.limit default: the most partitions one answer carries.
MAX_PARTITIONS = 2000


def _invalid(names: list[str]) -> Body:
    """Kafka's answer to a cursor it refuses (a negative partition, a topic not asked for)."""
    return {"Topics": [{"ErrorCode": code("INVALID_REQUEST"), "Name": n, "TopicId": Uuid.ZERO, "Partitions": []}
                       for n in names]}


def describe_topic_partitions(served: ServedCluster, listener: Listener, version: int,
                              body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    requested = [t["Name"] for t in body.get("Topics") or []]
    cursor = body.get("Cursor")
    start_name = cursor["TopicName"] if cursor is not None else ""
    fetch_all = not requested
    internal = internal_topics(release_of(served, listener))
    topic_operations = authorized_operations("TOPIC", release_of(served, listener))  # (always answered)
    names = ([t.name for t in image.topics.sorted_topics()] if image is not None else []) if fetch_all else requested
    chosen = sorted({n for n in names if n >= start_name})
    if cursor is not None and (cursor["PartitionIndex"] < 0 or (not fetch_all and start_name not in chosen)):
        return _invalid(requested)
    remaining = max(min(MAX_PARTITIONS, int(body.get("ResponsePartitionLimit", MAX_PARTITIONS))), 1)
    topics: list[Body] = []
    next_cursor: Body | None = None
    for name in chosen:
        if remaining == 0:
            next_cursor = {"TopicName": name, "PartitionIndex": 0}
            break
        topic = image.topics.get_topic_by_name(name) if image is not None else None
        if topic is None:
            if not fetch_all:
                valid = topic_name_error(name) is None
                topics.append({"ErrorCode": code("UNKNOWN_TOPIC_OR_PARTITION" if valid else "INVALID_TOPIC_EXCEPTION"),
                               "Name": name, "TopicId": Uuid.ZERO, "IsInternal": name in internal,
                               "Partitions": [], "TopicAuthorizedOperations": topic_operations})
            continue
        assert image is not None  # (the topic was found in it)
        first = cursor["PartitionIndex"] if cursor is not None and name == start_name else 0
        parts = dict(topic.sorted_partitions())
        upper = min(len(parts), first + remaining)
        partitions = [_partition(image, index, parts[index]) for index in range(first, upper) if index in parts]
        topics.append({"ErrorCode": 0, "Name": name, "TopicId": topic.id, "IsInternal": name in internal,
                       "Partitions": partitions, "TopicAuthorizedOperations": topic_operations})
        if upper < len(parts):
            next_cursor = {"TopicName": name, "PartitionIndex": upper}
            break
        remaining -= len(partitions)
    return {"Topics": topics, "NextCursor": next_cursor}


def _partition(image: MetadataImage, index: int, p: PartitionRegistration) -> Body:
    """One partition as the broker's metadata cache describes it: every replica, the leader
    when it is a registered broker, offline replicas (unregistered or fenced brokers)."""
    brokers = image.cluster.brokers
    offline = [r for r in p.replicas if r not in brokers or brokers[r].fenced]
    return {"ErrorCode": 0, "PartitionIndex": index, "LeaderId": p.leader if p.leader in brokers else -1,
            "LeaderEpoch": p.leader_epoch, "ReplicaNodes": list(p.replicas), "IsrNodes": list(p.isr),
            "EligibleLeaderReplicas": list(p.elr), "LastKnownElr": list(p.last_known_elr),
            "OfflineReplicas": offline}


def list_partition_reassignments(served: ServedCluster, listener: Listener, version: int,
                                 body: Mapping[str, Any]) -> Body:
    refused = refusal(served, listener)
    if refused is not None:
        return {"ErrorCode": code(refused[0]), "ErrorMessage": refused[1], "Topics": []}
    leader = served.sim.leader()
    image = served.sim.image(leader) if leader is not None else None
    if image is None:
        return {"ErrorCode": code("REQUEST_TIMED_OUT"), "Topics": []}
    wanted = body.get("Topics")
    if wanted is None:
        asked = [(t, [i for i, _ in t.sorted_partitions()]) for t in image.topics.sorted_topics()]
    else:
        asked = []
        for w in wanted:
            t = image.topics.get_topic_by_name(w["Name"])
            if t is not None:
                asked.append((t, list(w.get("PartitionIndexes") or [])))
    topics = []
    for t, indexes in asked:
        parts = dict(t.sorted_partitions())
        ongoing = [{"PartitionIndex": i, "Replicas": list(p.replicas), "AddingReplicas": list(p.adding_replicas),
                    "RemovingReplicas": list(p.removing_replicas)}
                   for i in indexes if (p := parts.get(i)) is not None and (p.adding_replicas or p.removing_replicas)]
        if ongoing:
            topics.append({"Name": t.name, "Partitions": ongoing})
    return {"ErrorCode": 0, "ErrorMessage": None, "Topics": topics}


HANDLERS: dict[int, Handler] = {DESCRIBE_TOPIC_PARTITIONS_KEY: describe_topic_partitions,
                                LIST_PARTITION_REASSIGNMENTS_KEY: list_partition_reassignments}
