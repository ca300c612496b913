"""DescribeProducers (KIP-664: `kafka-transactions describe-producers` and `find-hanging`),
answered as a broker answers it for logs nobody produced to: no active producers.

A topic is judged first, as KafkaApis does: an illegal name INVALID_TOPIC_EXCEPTION with
Topic.validate's text, a name unknown to the node's image UNKNOWN_TOPIC_OR_PARTITION with the
error's default text; each of its partitions then answers that error. Otherwise each partition
is judged by the replica manager, without a text: an index the topic lacks
UNKNOWN_TOPIC_OR_PARTITION, a node with no replica of it NOT_LEADER_OR_FOLLOWER; a replica,
leader or follower, holds a log and answers its producers, none. The answer follows the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.controller import code_text
from kraftsim.storage import topic_name_error
from kraftsim.wire.handlers import Body, Handler, code
from kraftsim.wire.served import Listener, ServedCluster

DESCRIBE_PRODUCERS_KEY = 61


def _partition(index: int, error: str | None, text: str | None = None) -> Body:
    return {"PartitionIndex": index, "ErrorCode": code(error) if error else 0, "ErrorMessage": text,
            "ActiveProducers": []}


def describe_producers(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    topics: list[Body] = []
    for asked in body.get("Topics") or []:
        name, indexes = asked["Name"], [int(i) for i in asked.get("PartitionIndexes") or []]
        invalid = topic_name_error(name)
        topic = image.topics.get_topic_by_name(name) if image is not None and invalid is None else None
        if invalid is not None or topic is None:
            error = "INVALID_TOPIC_EXCEPTION" if invalid is not None else "UNKNOWN_TOPIC_OR_PARTITION"
            text = invalid if invalid is not None else code_text(code(error))
            partitions = [_partition(i, error, text) for i in indexes]
        else:
            partitions = []
            for i in indexes:
                p = topic.partitions.get(i)
                held = p is not None and listener.node_id in p.replicas
                partitions.append(_partition(i, None if held else
                                             "UNKNOWN_TOPIC_OR_PARTITION" if p is None else "NOT_LEADER_OR_FOLLOWER"))
        topics.append({"Name": name, "Partitions": partitions})
    return {"Topics": topics}


HANDLERS: dict[int, Handler] = {DESCRIBE_PRODUCERS_KEY: describe_producers}
