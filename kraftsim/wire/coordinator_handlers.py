"""A broker's group and transaction coordinators, as they answer on a cluster that never served
a group or a transaction: ListGroups and ListTransactions (`kafka-consumer-groups --list`,
`kafka-transactions list`), FindCoordinator, DescribeGroups, ConsumerGroupDescribe,
OffsetFetch (`kafka-consumer-groups --describe`) and DeleteGroups (`--delete`).

A served cluster carries metadata only: it serves no request that makes a group or a
transaction (JoinGroup, ConsumerGroupHeartbeat, OffsetCommit, InitProducerId, ...), so every
group is one its coordinator does not know. What the metadata does hold is the coordinators'
topic: the first FindCoordinator of a group key on a cluster without `__consumer_offsets` makes
the broker ask the controller to create it (offsets.topic.num.partitions, offsets.topic.
replication.factor, and the group coordinator's three topic configs) and answer
COORDINATOR_NOT_AVAILABLE; once it exists, a group's coordinator is the leader of partition
abs(hash(group id)) % partitions. A one-broker cluster needs `--config
offsets.topic.replication.factor=1` (Kafka's default, 3, cannot be placed there: every lookup
then answers COORDINATOR_NOT_AVAILABLE until the client gives up, as on a real one).

Releases before 4.0 run the old group coordinator (ConsumerGroupDescribe refused with
UNSUPPORTED_VERSION); 4.0 on the new one. Unknown groups are described Dead, with no
offsets, and cannot be deleted (GROUP_ID_NOT_FOUND); a node that does not lead a group's
partition answers NOT_COORDINATOR for it.
Not carried out: transaction and share-group coordinators (FindCoordinator of those keys), a
transaction listing Kafka would judge further (state names, which it checks against its own
TransactionState names per release, and a transactional-id pattern, which it compiles with
RE2/J, whose refusal text kraftsim cannot reproduce), and OffsetFetch of named topics by id
(v10).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kraftsim.controller import CreatableTopic, CreatableTopicConfig
from kraftsim.javacompat import (
    compute_if_absent_order, concurrent_hash_map_order, scala_hash_map_order, signed32, string_hash,
    topic_partition_hash,
)
from kraftsim.storage import OFFSETS_TOPIC_PARTITIONS, OFFSETS_TOPIC_REPLICATION_FACTOR, group_coordinator_config
from kraftsim.versions import release_name_key
from kraftsim.wire.admin_handlers import record_created, refusal
from kraftsim.wire.authorized_operations import NOT_ASKED, authorized_operations
from kraftsim.wire.handlers import Body, Handler, NotCarriedOut, code, release_of
from kraftsim.wire.served import BROKER, Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage, TopicImage

LIST_GROUPS_KEY, LIST_TRANSACTIONS_KEY, FIND_COORDINATOR_KEY = 16, 66, 10
OFFSET_FETCH_KEY, DESCRIBE_GROUPS_KEY, CONSUMER_GROUP_DESCRIBE_KEY, DELETE_GROUPS_KEY = 9, 15, 69, 42
GROUP_METADATA_TOPIC = "__consumer_offsets"
#: FindCoordinator's KeyType of a group (1: a transactional id, 2: a share group).
GROUP_KEY_TYPE = 0
#: The configs the group coordinator gives `__consumer_offsets` (the same 3.3 to 4.4), in the
#: order of the java.util.Properties it builds them in.
GROUP_METADATA_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer",
                                "segment.bytes": "104857600"}
#: Errors.message() of the errors answered here in FindCoordinator before v4 (Errors.NONE's is its name).
_ERROR_MESSAGES = {"NONE": "NONE", "COORDINATOR_NOT_AVAILABLE": "The coordinator is not available."}
#: OffsetFetch's CommittedOffset and CommittedLeaderEpoch of a partition without an offset.
_NO_OFFSET = -1


def list_groups(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    return {"ErrorCode": 0, "Groups": []}


def list_transactions(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    if body.get("StateFilters"):
        raise NotCarriedOut("ListTransactions with state filters")
    if body.get("TransactionalIdPattern"):
        raise NotCarriedOut("ListTransactions with a transactional-id pattern")
    return {"ErrorCode": 0, "UnknownStateFilters": [], "TransactionStates": []}


def _new_coordinator(served: ServedCluster, listener: Listener) -> bool:
    """Whether the node runs the group coordinator of KIP-848 (its default from 4.0)."""
    return release_name_key(release_of(served, listener)) >= (4, 0, 0)


def _group_metadata_topic(image: MetadataImage | None) -> TopicImage | None:
    """`__consumer_offsets` in a node's image (None: no image, or no such topic yet)."""
    return image.topics.get_topic_by_name(GROUP_METADATA_TOPIC) if image is not None else None


def _coordinator_of(served: ServedCluster, image: MetadataImage | None, group: str) -> tuple[str, int | None]:
    """(error name, coordinator node) of `group` in the node's image as a request found it:
    the alive leader of its `__consumer_offsets` partition (COORDINATOR_NOT_AVAILABLE without
    the topic or such a leader)."""
    topic = _group_metadata_topic(image)
    if image is None or topic is None:
        return "COORDINATOR_NOT_AVAILABLE", None
    partition = topic.partitions.get(_partition_for(group, len(topic.partitions)))
    leader = partition.leader if partition is not None else -1
    broker = image.cluster.brokers.get(leader)
    if broker is None or broker.fenced or served.port_of(leader, BROKER) is None:
        return "COORDINATOR_NOT_AVAILABLE", None
    return "NONE", leader


def _lookup_image(served: ServedCluster, listener: Listener) -> MetadataImage | None:
    """The node's image a FindCoordinator is answered from; without `__consumer_offsets` in
    it, the topic's creation is asked of the controller (once the broker can reach it), which
    a later request sees: Kafka's broker creates it in the background, so the request that
    asked still answers from the image without it."""
    image = served.sim.image(listener.node_id)
    if _group_metadata_topic(image) is None:
        _create_group_metadata_topic(served, listener)
    return image


def _partition_for(group: str, partitions: int) -> int:
    """Utils.abs(groupId.hashCode()) % partitions (abs of Integer.MIN_VALUE is 0)."""
    h = signed32(string_hash(group))
    return (0 if h == -2**31 else abs(h)) % partitions


def _create_group_metadata_topic(served: ServedCluster, listener: Listener) -> None:
    """`__consumer_offsets` as the broker's AutoTopicCreationManager asks the controller for it
    (with the node's offsets.topic.* configs), recorded as a create-topics step once made."""
    if refusal(served, listener) is not None:
        return
    own = served.sim.node_configs(listener.node_id)
    partitions = group_coordinator_config(own, OFFSETS_TOPIC_PARTITIONS)
    factor = group_coordinator_config(own, OFFSETS_TOPIC_REPLICATION_FACTOR)
    configs = {k: GROUP_METADATA_TOPIC_CONFIGS[k] for k in concurrent_hash_map_order(list(GROUP_METADATA_TOPIC_CONFIGS))}
    at = served.sim.now_ms
    result = served.sim.send_create_topics([CreatableTopic(GROUP_METADATA_TOPIC, partitions, factor, configs=tuple(
        CreatableTopicConfig(k, v) for k, v in configs.items()))])
    served.anchor()
    if result is not None and result.response is not None and all(t.error_code == 0 for t in result.response.topics):
        record_created(served, [GROUP_METADATA_TOPIC], partitions, factor, configs, at)


def find_coordinator(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """A group's coordinator (v4 on: each key of the batch in turn); other key types are not
    carried out."""
    key_type = int(body.get("KeyType", GROUP_KEY_TYPE)) if version >= 1 else GROUP_KEY_TYPE
    if key_type != GROUP_KEY_TYPE:
        raise NotCarriedOut(f"FindCoordinator of key type {key_type} (transaction and share coordinators)")
    image = _lookup_image(served, listener)
    if version >= 4:
        coordinators = []
        for key in body.get("CoordinatorKeys", []):
            error, node = _coordinator_of(served, image, key)
            coordinators.append({"Key": key, "ErrorCode": code(error), "ErrorMessage": "",
                                 **_node_fields(served, node)})
        return {"Coordinators": coordinators}
    error, node = _coordinator_of(served, image, body.get("Key") or "")
    return {"ErrorCode": code(error), "ErrorMessage": _ERROR_MESSAGES[error], **_node_fields(served, node)}


def _node_fields(served: ServedCluster, node: int | None) -> Body:
    """NodeId, Host and Port of a coordinator, or of Node.noNode()."""
    port = served.port_of(node, BROKER) if node is not None else None
    if node is None or port is None:
        return {"NodeId": -1, "Host": "", "Port": -1}
    return {"NodeId": node, "Host": served.host, "Port": port}


@dataclass(frozen=True)
class _GroupCoordinator:
    """A node's group coordinator as one request finds it: which `__consumer_offsets`
    partitions the node leads, over how many partitions groups are spread."""

    node_id: int
    topic: TopicImage | None
    partitions: int

    def error(self, group: str) -> str | None:
        """Why the node cannot answer for `group` (NOT_COORDINATOR: it does not lead the
        group's partition), or None."""
        if self.topic is None:
            return "NOT_COORDINATOR"
        p = self.topic.partitions.get(_partition_for(group, self.partitions))
        return None if p is not None and p.leader == self.node_id else "NOT_COORDINATOR"

    def by_partition(self, groups: list[str]) -> list[str]:
        """`groups` in the order the new coordinator answers them: one read per partition of
        `__consumer_offsets`, in the order of the java.util.HashMap of TopicPartition it gathers
        them in (computeIfAbsent), each partition's groups in the order asked."""
        gathered: dict[int, list[str]] = {}
        for g in groups:
            gathered.setdefault(_partition_for(g, self.partitions), []).append(g)
        order = compute_if_absent_order(list(gathered), lambda p: topic_partition_hash((GROUP_METADATA_TOPIC, p)))
        return [g for p in order for g in gathered[p]]


def _coordinator(served: ServedCluster, listener: Listener) -> _GroupCoordinator:
    """The listener's node's group coordinator: its groups are spread over the partitions of
    `__consumer_offsets`, or before it exists over the node's offsets.topic.num.partitions."""
    topic = _group_metadata_topic(served.sim.image(listener.node_id))
    partitions = len(topic.partitions) if topic is not None else \
        group_coordinator_config(served.sim.node_configs(listener.node_id), OFFSETS_TOPIC_PARTITIONS)
    return _GroupCoordinator(listener.node_id, topic, partitions)


def _not_found(group: str) -> str:
    """The new group coordinator's text for a group it does not know."""
    return f"Group {group} not found."


def describe_groups(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """Every group asked for, none of which its coordinator knows: Dead, without members (from
    v6, KIP-1043, also GROUP_ID_NOT_FOUND with the new coordinator's text); the old
    coordinator answers in the order asked, the new one by partition (`_GroupCoordinator.by_partition`)."""
    asked = list(body.get("Groups", []))
    coordinator = _coordinator(served, listener)
    ops = authorized_operations("GROUP", release_of(served, listener)) \
        if version >= 3 and body.get("IncludeAuthorizedOperations") else NOT_ASKED
    groups: list[Body] = []
    for group in coordinator.by_partition(asked) if _new_coordinator(served, listener) else asked:
        error = coordinator.error(group)
        unknown = error is None and version >= 6
        groups.append({"ErrorCode": code(error or ("GROUP_ID_NOT_FOUND" if unknown else "NONE")),
                       "ErrorMessage": _not_found(group) if unknown else None, "GroupId": group,
                       "GroupState": "" if error else "Dead", "ProtocolType": "", "ProtocolData": "", "Members": [],
                       "AuthorizedOperations": NOT_ASKED if error or unknown else ops})  # (described ones only)
    return {"Groups": groups}


def _described(group: str, error: str) -> Body:
    return {"ErrorCode": code(error), "ErrorMessage": _not_found(group) if error == "GROUP_ID_NOT_FOUND" else None,
            "GroupId": group, "GroupState": "", "GroupEpoch": 0, "AssignmentEpoch": 0, "AssignorName": "",
            "Members": [], "AuthorizedOperations": NOT_ASKED}


def consumer_group_describe(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """KIP-848's describe: refused with UNSUPPORTED_VERSION by the old coordinator (before 4.0);
    the new one does not know the group (GROUP_ID_NOT_FOUND; empty ids first, INVALID_GROUP_ID),
    and the admin client falls back to DescribeGroups (measured on live 4.0.2)."""
    asked = list(body.get("GroupIds", []))
    if not _new_coordinator(served, listener):
        return {"Groups": [_described(g, "UNSUPPORTED_VERSION") for g in asked]}
    coordinator = _coordinator(served, listener)
    return {"Groups": [_described(g, "INVALID_GROUP_ID") for g in asked if not g] +
            [_described(g, coordinator.error(g) or "GROUP_ID_NOT_FOUND")
             for g in coordinator.by_partition([g for g in asked if g])]}


def delete_groups(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """Every group named is one its coordinator does not know: GROUP_ID_NOT_FOUND, once per
    name. The old coordinator answers from a Scala mutable.HashMap of the names, the new one by
    partition (`_GroupCoordinator.by_partition`)."""
    asked = list(dict.fromkeys(body.get("GroupsNames", [])))  # (each group answered once, by either)
    coordinator = _coordinator(served, listener)
    order = coordinator.by_partition(asked) if _new_coordinator(served, listener) \
        else scala_hash_map_order(asked, string_hash)
    return {"Results": [{"GroupId": g, "ErrorCode": code(coordinator.error(g) or "GROUP_ID_NOT_FOUND")}
                        for g in order]}


def offset_fetch(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    """A group's committed offsets: none (every partition named, without an offset; no topic
    when all are asked for). v8 on: each group of the batch."""
    coordinator = _coordinator(served, listener)
    if version >= 8:
        return {"Groups": [_group_offsets(coordinator, version, g.get("GroupId") or "", g.get("Topics"))
                           for g in body.get("Groups", [])]}
    answer = _group_offsets(coordinator, version, body.get("GroupId") or "", body.get("Topics"))
    return {"Topics": answer["Topics"], "ErrorCode": answer["ErrorCode"]}


def _group_offsets(coordinator: _GroupCoordinator, version: int, group: str,
                   topics: list[Mapping[str, Any]] | None) -> Body:
    error = coordinator.error(group)
    if error is not None:
        return {"GroupId": group, "Topics": [], "ErrorCode": code(error)}
    if topics and version >= 10:
        raise NotCarriedOut("OffsetFetch of named topics by id (v10)")
    return {"GroupId": group, "ErrorCode": 0, "Topics": [
        {"Name": t.get("Name"), "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": _NO_OFFSET, "CommittedLeaderEpoch": _NO_OFFSET, "Metadata": "",
             "ErrorCode": 0} for p in t.get("PartitionIndexes", [])]} for t in topics or ()]}


HANDLERS: dict[int, Handler] = {LIST_GROUPS_KEY: list_groups, LIST_TRANSACTIONS_KEY: list_transactions,
                                FIND_COORDINATOR_KEY: find_coordinator, DESCRIBE_GROUPS_KEY: describe_groups,
                                CONSUMER_GROUP_DESCRIBE_KEY: consumer_group_describe, OFFSET_FETCH_KEY: offset_fetch,
                                DELETE_GROUPS_KEY: delete_groups}
