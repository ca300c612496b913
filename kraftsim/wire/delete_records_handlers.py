"""DeleteRecords (`kafka-delete-records`, Admin.deleteRecords), answered as a broker of the
node's release answers it for partitions whose logs are empty: a served cluster carries
metadata only, so every log starts and ends at offset 0 and nothing can be deleted.

Each partition is judged as KafkaApis and ReplicaManager judge it: unknown to the node's image,
UNKNOWN_TOPIC_OR_PARTITION; an internal topic, INVALID_TOPIC_EXCEPTION; the node no replica of
it or not its leader, NOT_LEADER_OR_FOLLOWER; a cleanup.policy without `delete`,
POLICY_VIOLATION; an offset past the high watermark (0) or below 0 (-1 stands for the high
watermark), OFFSET_OUT_OF_RANGE. A failed partition's low watermark is -1. Otherwise the log
start offset stays at 0, the low watermark every replica on an alive broker agrees on, which
is also when Kafka's delayed answer completes: it answers at once.

The answer comes in the broker's order: the partitions gathered in a Scala mutable.HashMap
(found ones first, then unknown ones) grouped by topic; when none was found, an immutable Map
(`grouped_by_topic`). A partition asked for twice is answered once, with the last offset.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kraftsim.controller import describe_topic_configs
from kraftsim.image import BROKER, TOPIC
from kraftsim.javacompat import scala_hash_map_order, topic_partition_hash
from kraftsim.storage import internal_topics
from kraftsim.wire.handlers import Body, Handler, code, release_of
from kraftsim.wire.scala_grouping import grouped_by_topic
from kraftsim.wire.served import Listener, ServedCluster

if TYPE_CHECKING:
    from kraftsim.image import MetadataImage, PartitionRegistration

DELETE_RECORDS_KEY = 21
#: The Offset that stands for the partition's high watermark.
HIGH_WATERMARK = -1
#: Where an empty log starts and ends.
EMPTY_LOG_END = 0


def _result(index: int, error: str | None) -> Body:
    return {"PartitionIndex": index, "LowWatermark": -1 if error else EMPTY_LOG_END,
            "ErrorCode": code(error) if error else 0}


def _deletes(image: MetadataImage, node_id: int, release: str, topic: str) -> bool:
    """Whether the topic's logs on the node let records be deleted: a cleanup.policy (its own,
    the node's dynamic one or the release's default) that includes `delete`."""
    configs = describe_topic_configs(release, image.configs.config(TOPIC, topic),
                                     image.configs.config(BROKER, str(node_id)), image.configs.config(BROKER, ""))
    policy = next((c.value for c in configs if c.name == "cleanup.policy"), None) or ""
    return "delete" in [part.strip() for part in policy.split(",")]


def _error(p: PartitionRegistration, node_id: int, topic: str, internal: frozenset[str],
           deletes: Callable[[str], bool], offset: int) -> str | None:
    """Why the node refuses to delete the records of partition `p` of `topic` up to `offset`
    (None: it does not); `internal` names the release's internal topics, `deletes` tells
    whether a topic's cleanup.policy lets it."""
    if topic in internal:
        return "INVALID_TOPIC_EXCEPTION"
    if p.leader != node_id:
        return "NOT_LEADER_OR_FOLLOWER"  # (a topic it knows: no replica here, or a follower)
    if not deletes(topic):
        return "POLICY_VIOLATION"
    upto = EMPTY_LOG_END if offset == HIGH_WATERMARK else offset
    if upto < 0 or upto > EMPTY_LOG_END:
        return "OFFSET_OUT_OF_RANGE"
    return None


def delete_records(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    release = release_of(served, listener)
    asked: dict[tuple[str, int], int] = {}
    for t in body.get("Topics") or []:
        for p in t.get("Partitions") or []:
            asked[(t["Name"], int(p["PartitionIndex"]))] = int(p["Offset"])

    def partition(tp: tuple[str, int]) -> PartitionRegistration | None:
        t = image.topics.get_topic_by_name(tp[0]) if image is not None else None
        return t.partitions.get(tp[1]) if t is not None else None

    found = {tp: (p, offset) for tp, offset in asked.items() if (p := partition(tp)) is not None}
    unknown = [tp for tp in asked if tp not in found]
    answers: dict[tuple[str, int], Body] = {}
    if found:
        assert image is not None  # (they were found in it)
        deletes = functools.cache(functools.partial(_deletes, image, listener.node_id, release))  # (once a topic)
        for (topic, index), (p, offset) in found.items():
            answers[(topic, index)] = _result(index, _error(p, listener.node_id, topic, internal_topics(release), deletes, offset))
    else:  # (an empty immutable Map plus the unknown ones, added in their mutable.HashMap's order)
        unknown = scala_hash_map_order(unknown, topic_partition_hash)
    for topic, index in unknown:
        answers[(topic, index)] = _result(index, "UNKNOWN_TOPIC_OR_PARTITION")
    return {"Topics": grouped_by_topic(answers, mutable=bool(found))}


HANDLERS: dict[int, Handler] = {DELETE_RECORDS_KEY: delete_records}
