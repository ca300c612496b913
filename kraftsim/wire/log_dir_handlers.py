"""DescribeLogDirs (`kafka-log-dirs --describe`, and `kafka-reassign-partitions --execute` of
4.2 and later, which writes each replica's log directory into its rollback plan), answered by a
broker for its own log directory.

A served node has one log directory, its directory in the cluster (`node-N`, where its
`__cluster_metadata-0` lives, as Kafka's metadata log lives in the first log directory). It
holds a replica of every partition whose replicas name the broker in the broker's own image;
kraftsim carries no data, so every size and lag is 0, and the volume's total and usable bytes
are -1 ("unknown", Kafka's default) so that the answer does not depend on the disk it runs on.
IsCordoned (v5) is whether the broker's registration has its directory cordoned (KIP-1066).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.wire.handlers import Body, Handler
from kraftsim.wire.served import Listener, ServedCluster

DESCRIBE_LOG_DIRS_KEY = 35


def log_dir(served: ServedCluster, node_id: int) -> str:
    """The path a node's one log directory is described by."""
    return str(served.sim.log_dir(node_id).parent)  # (log_dir: its __cluster_metadata-0)


def describe_log_dirs(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    me = listener.node_id
    asked = body.get("Topics")
    wanted = None if asked is None else {t["Topic"]: set(t.get("Partitions") or []) for t in asked}
    topics = []
    for topic in image.topics.sorted_topics() if image is not None else []:
        if wanted is not None and topic.name not in wanted:
            continue
        parts = [{"PartitionIndex": pid, "PartitionSize": 0, "OffsetLag": 0, "IsFutureKey": False}
                 for pid, p in topic.sorted_partitions()
                 if me in p.replicas and (wanted is None or pid in wanted[topic.name])]
        if parts:
            topics.append({"Name": topic.name, "Partitions": parts})
    reg = image.cluster.broker(me) if image is not None else None
    cordoned = reg is not None and reg.all_directories_cordoned  # (its one directory: KIP-1066, v5)
    return {"ErrorCode": 0, "Results": [{"ErrorCode": 0, "LogDir": log_dir(served, me), "Topics": topics,
                                         "TotalBytes": -1, "UsableBytes": -1, "IsCordoned": cordoned}]}


HANDLERS: dict[int, Handler] = {DESCRIBE_LOG_DIRS_KEY: describe_log_dirs}
