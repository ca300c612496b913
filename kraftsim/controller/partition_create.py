"""CreatePartitions (`kafka-topics --alter --partitions N`): more partitions for existing topics.

The controller's API layer answers a name given twice with INVALID_REQUEST "Duplicate topic
name." and passes the others on in the order of a Java HashSet of their names; per topic the
count must be an increase, manual assignments (one per new partition) are checked as
CreateTopics checks them, and new replicas are placed like a new topic's. The records of all
topics commit atomically; each topic has its own answer.

How large a request may be is the release's (policy `user_op_limits`): unbounded before 3.5;
from 3.5 the controller keeps at most 10,000 records per request, and the topic whose records
overflow, and every later one, is answered UNKNOWN_SERVER_ERROR while the records made before
the overflow (a part of that topic's partitions included) are still written, as the released
code does; from 4.4 a request adding more than 10,000 partitions in all is refused whole
(POLICY_VIOLATION) before anything is made. Where no limit applies, a topic asking for more than
UNBOUNDED_PARTITIONS_CAP new partitions is UNKNOWN_SERVER_ERROR (bounded work on hostile input).
"""

from __future__ import annotations

import random
import msgspec

from kraftsim.controller.api_errors import ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of
from kraftsim.controller.partition_change import is_active
from kraftsim.controller.replica_placement import InvalidReplicationFactor, placed_replicas
from kraftsim.controller.result import (
    MAX_RECORDS_PER_USER_OP, NO_METADATA_VERSION, UNBOUNDED_PARTITIONS_CAP, ControllerResult, accepted, refused,
)
from kraftsim.controller.topics import PartitionRecords, RequestBrokers, manual_assignment_error
from kraftsim.gcpause import collector_paused
from kraftsim.javacompat import string_hash_order
from kraftsim.protocol.entries import Payload

#: The 4.4 controller's limit on the partitions one CreatePartitions request adds in all.
MAX_ADDITIONAL_PARTITIONS = 10_000


class CreatePartitionsTopic(msgspec.Struct, frozen=True):
    """One topic to grow to `count` partitions; `assignments`: the new partitions' replicas."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


class CreatePartitionsRequest(msgspec.Struct, frozen=True):
    """Kafka's CreatePartitionsRequest; `seed` (kraftsim's) makes placement reproducible."""

    topics: tuple[CreatePartitionsTopic, ...]
    validate_only: bool = False
    seed: int = 0


class CreatePartitionsTopicResult(msgspec.Struct, frozen=True):
    name: str
    error_code: int = 0
    error_message: str | None = None


class CreatePartitionsResponse(msgspec.Struct, frozen=True):
    results: tuple[CreatePartitionsTopicResult, ...]


class _Overflow(Exception):
    """More records than the controller keeps for one request (Kafka's BoundedListTooLongException)."""


class _Refused(Exception):
    def __init__(self, error: ApiError):
        super().__init__(error.message)
        self.error = error


def _answer(name: str, error: ApiError) -> CreatePartitionsTopicResult:
    return CreatePartitionsTopicResult(name, error.code, error.message)


def create_partitions(ctx: ControllerContext, req: CreatePartitionsRequest) -> ControllerResult:
    """Kafka's CreatePartitions on the controller (see the module docstring)."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    limits = ctx.catalog.policy("user_op_limits")
    image = ctx.image
    counts: dict[str, int] = {}
    for t in req.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    wanted = {t.name: t for t in reversed(req.topics)}  # (the first of a repeated name, as Kafka's find gives it)
    out = [_answer(n, ApiError("INVALID_REQUEST", "Duplicate topic name."))
           for n in string_hash_order([n for n, c in counts.items() if c > 1])]
    topics = [wanted[n] for n in string_hash_order(list(counts)) if counts[n] == 1]
    if limits == "additional-partitions":
        additional = 0
        for t in topics:
            current = image.topics.get_topic_by_name(t.name) if t.count >= 0 else None
            if current is not None and t.count > len(current.partitions):
                additional += t.count - len(current.partitions)
                if additional > MAX_ADDITIONAL_PARTITIONS:
                    text = "Excessively large number of additional partitions per request."
                    return refused(ApiError("POLICY_VIOLATION", text))
    bounded = limits != "none"
    records: list[Payload] = []
    brokers = RequestBrokers(image)
    partition_records = PartitionRecords(ctx, mv, brokers)
    with collector_paused():
        for t in topics:
            try:
                _grow(ctx, t, req.seed, brokers, partition_records, records, bounded)
            except _Refused as e:
                out.append(_answer(t.name, e.error))
            except _Overflow:
                out.append(_answer(t.name, ApiError("UNKNOWN_SERVER_ERROR")))
            else:
                out.append(CreatePartitionsTopicResult(t.name))
    return accepted([] if req.validate_only else records, CreatePartitionsResponse(tuple(out)))


def _grow(ctx: ControllerContext, t: CreatePartitionsTopic, seed: int, brokers: RequestBrokers,
          partition_records: PartitionRecords, records: list[Payload], bounded: bool) -> None:
    """Append `t`'s new PartitionRecords to `records`, or raise why not (_Refused, _Overflow:
    then what fitted stays in `records`, as in Kafka's bounded list)."""
    image = ctx.image
    topic = image.topics.get_topic_by_name(t.name)
    if topic is None:
        raise _Refused(ApiError("UNKNOWN_TOPIC_OR_PARTITION"))
    have = len(topic.partitions)
    if t.count == have:
        raise _Refused(ApiError("INVALID_PARTITIONS", f"Topic already has {have} partition(s)."))
    if t.count < have:
        raise _Refused(ApiError("INVALID_PARTITIONS", f"The topic {t.name} currently has {have} partition(s); "
                                                      f"{t.count} would not be an increase."))
    additional = t.count - have
    if t.assignments is not None and len(t.assignments) != additional:
        raise _Refused(ApiError("INVALID_REPLICA_ASSIGNMENT", f"Attempted to add {additional} additional "
                                                              f"partition(s), but only {len(t.assignments)} "
                                                              "assignment(s) were specified."))
    first = next((p for _, p in topic.sorted_partitions()), None)  # (Kafka's first in its map: partition 0)
    if first is None:
        raise _Refused(ApiError("UNKNOWN_SERVER_ERROR"))
    rf = len(first.replicas)
    if not bounded and additional > UNBOUNDED_PARTITIONS_CAP:
        raise _Refused(ApiError("UNKNOWN_SERVER_ERROR"))
    plan: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    if t.assignments is not None:
        for i, replicas in enumerate(t.assignments):
            err = manual_assignment_error(image, replicas, rf, ctx.catalog.policy("manual_assignment_cordon"))
            if err is not None:
                raise _Refused(err)
            isr = tuple(b for b in replicas if is_active(image, b))
            if not isr:
                raise _Refused(ApiError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition "
                                                                      f"assignment for partition {have + i} are fenced "
                                                                      "or in controlled shutdown."))
            plan.append((tuple(replicas), isr))
    else:
        # Only what can be written is placed (placement is the same partition by partition): a
        # request for more overflows the records after them.
        cap = max(MAX_RECORDS_PER_USER_OP - len(records), 0) if bounded else additional
        rng = random.Random(f"kraftsim-placement:{seed}:{t.name}:{have}")
        try:
            placement = placed_replicas(brokers.usable(), min(additional, cap), rf, rng, brokers.placement)
        except InvalidReplicationFactor as e:
            raise _Refused(ApiError("INVALID_REPLICATION_FACTOR", str(e))) from None
        active = brokers.active()
        for replicas in placement:
            isr = tuple(b for b in replicas if active[b])
            if not isr:
                raise _Refused(ApiError("INVALID_REPLICATION_FACTOR", f"Unable to replicate the partition {rf} "
                                                                      "time(s): All brokers are currently fenced or "
                                                                      "in controlled shutdown."))
            plan.append((replicas, isr))
    room = MAX_RECORDS_PER_USER_OP - len(records) if bounded else additional
    partition_records.extend(records, topic.id, have, plan[:max(room, 0)])
    if room < additional:
        raise _Overflow
