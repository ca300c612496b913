"""One write of the active controller, as the parts that follow its writes read it (the ISR
expansion and the leader balancing).

What a write changed comes from the controller's replica index (kraftsim.controller.
replica_index), which follows every batch the controller replays: the partitions it changed,
and the topics among them whose partitions came or whose replicas changed. Reading that costs
what the write touched per topic; reading the records costs a Python step per record, millions
of them in a roll at a million partitions. The records are read instead when the index cannot
tell (it was built or rebuilt since the last write), and when the write holds a
ClearElrRecord, which changes partitions without naming them (their leaders have nothing to
look at for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftsim.controller import Changes, Masks, ReplicaIndex
from kraftsim.sim.node.replay_reads import record_type_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kraftsim.controller import ControllerResult
    from kraftsim.image import MetadataImage
    from kraftsim.protocol.entries import Payload
    from kraftsim.protocol.primitives import Uuid

PARTITION_RECORDS = frozenset({"PartitionRecord", "PartitionChangeRecord"})


@dataclass(frozen=True)
class Written:
    """A write: its records and their type names, the controller's image and replica index
    after it, the partitions it changed (topic id -> mask of partition ids) and the topics
    among them that gained partitions or whose partitions' replicas changed."""

    records: Sequence[Payload]
    names: set[str]
    image: MetadataImage
    index: ReplicaIndex
    touched: Masks
    reshaped: set[Uuid]


def describing(index: ReplicaIndex | None, image: MetadataImage) -> ReplicaIndex:
    """`index` (the active controller's) made to describe `image`, the controller's own; an
    index of its own, built afresh, in the case that cannot be (not expected)."""
    if index is None or not index.ensure(image.topics):
        index = ReplicaIndex()
        index.ensure(image.topics)
    return index


def written(result: ControllerResult, image: MetadataImage, index: ReplicaIndex) -> Written:
    """What `result`, just written and replayed into `image`, changed (`index` describes `image`)."""
    records = result.records
    names = record_type_names(records)
    changes = index.take_changes()
    if changes is None or "ClearElrRecord" in names:
        changes = _named(records) if not PARTITION_RECORDS.isdisjoint(names) else Changes({}, set())
    return Written(records, names, image, index, changes.touched, changes.reshaped)


def _named(records: Sequence[Payload]) -> Changes:
    """The partitions the partition records of `records` name, and the topics of those that
    make a partition or set replicas."""
    touched: Masks = {}
    reshaped: set[Uuid] = set()
    for payload in records:
        name = payload.record_type.name
        if name in PARTITION_RECORDS:
            msg = payload.message
            touched[msg.topic_id] = touched.get(msg.topic_id, 0) | 1 << msg.partition_id
            if name == "PartitionRecord" or msg.replicas is not None:
                reshaped.add(msg.topic_id)
    return Changes(touched, reshaped)
