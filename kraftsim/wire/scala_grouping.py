"""The order of an answer that a Scala broker builds by gathering per-partition results in a
map keyed by TopicPartition and then grouping it by topic (`groupBy`), as KafkaApis does for
ListOffsets (4.0 on) and DeleteRecords.

`groupBy` returns an immutable.HashMap (a CHAMP trie: topics in the order of their improved
hashes); each topic's partitions are collected by a builder of the gathered map's own kind: a
mutable.HashMap orders them by bucket, an immutable Map keeps up to four in the order they came
(Map1 to Map4) and orders more as its trie does.
"""

from __future__ import annotations

from collections.abc import Mapping

from kraftsim.javacompat import scala_hash_map_order, scala_immutable_hash_map_order, string_hash, topic_partition_hash
from kraftsim.wire.handlers import Body

#: The most entries Scala's immutable Map keeps in insertion order (Map1 to Map4).
_SMALL_MAP = 4

TopicPartition = tuple[str, int]


def _immutable_map_order(keys: list[TopicPartition]) -> list[TopicPartition]:
    """A Scala immutable Map built by adding `keys` in order."""
    return keys if len(keys) <= _SMALL_MAP else scala_immutable_hash_map_order(keys, topic_partition_hash)


def grouped_by_topic(answers: Mapping[TopicPartition, Body], *, mutable: bool = True) -> list[Body]:
    """The topics of `answers` (each partition's answer, in the order they were put in the
    broker's map) as the broker groups them: `mutable` for a mutable.HashMap, else an immutable
    Map built by adding them in that order."""
    keys = list(answers)
    gathered = scala_hash_map_order(keys, topic_partition_hash) if mutable else _immutable_map_order(keys)
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in gathered:
        by_topic.setdefault(tp[0], []).append(tp)

    def partitions(tps: list[TopicPartition]) -> list[TopicPartition]:
        return scala_hash_map_order(tps, topic_partition_hash) if mutable else _immutable_map_order(tps)

    return [{"Name": topic, "Partitions": [answers[tp] for tp in partitions(by_topic[topic])]}
            for topic in scala_immutable_hash_map_order(list(by_topic), string_hash)]
