"""CreateTopics and DeleteTopics, with Kafka's topic-name rules (ReplicationControlManager).

Topics are visited by name, so the same request always gives the same records in the
same order; replicas are placed by replica_placement.py.
"""

from __future__ import annotations

import random
from typing import Sequence

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError, default_error
from kraftsim.controller.context import (
    MIN_INSYNC_REPLICAS,
    ControllerContext,
    metadata_version_of,
    registry_of,
)
from kraftsim.controller.partition_change import (
    default_dir,
    elr_enabled,
    is_active,
)
from kraftsim.controller.replica_placement import (
    InvalidReplicationFactor,
    PlacementMemo,
    UsableBroker,
    placed_replicas,
    usable_brokers,
)
from kraftsim.controller.topic_configs import topic_config_error
from kraftsim.javacompat import string_hash_order
from kraftsim.controller.result import (
    MAX_RECORDS_PER_USER_OP,
    NO_METADATA_VERSION,
    TOO_MANY_RECORDS,
    UNBOUNDED_PARTITIONS_CAP,
    ControllerResult,
    accepted,
    make_payload,
    payload,
    refused,
)
from kraftsim.gcpause import collector_paused
from kraftsim.image import RECOVERED, TOPIC, MetadataImage
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.javacompat import random_uuid
from kraftsim.versions import MetadataVersion
from kraftsim.storage import MAX_TOPIC_NAME_LENGTH, topic_name_error  # noqa: F401 (Kafka's Topic.validate, here as before)

#: Kafka's MAX_PARTITIONS_PER_BATCH for one CreateTopics request (from 3.9.1: policy `user_op_limits`).
MAX_PARTITIONS_PER_BATCH = 10_000


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


#: A name with at most this many dots and underscores is checked for collisions by looking up
#: each name it collides with (2**n of them); one with more, against every topic.
MAX_COLLISION_MARKS = 8


class _Collisions:
    """The existing topic each name collides with (the same name but for dots and
    underscores; the first such topic by name, as Kafka names it in the error), found by
    looking up the few names a name can collide with rather than by reading every topic of
    the cluster for each request."""

    def __init__(self, image: MetadataImage, max_marks: int = MAX_COLLISION_MARKS):
        self.image = image
        self.max_marks = max_marks
        self._by_key: dict[str, str] | None = None

    def of(self, name: str) -> str | None:
        marks = [i for i, ch in enumerate(name) if ch in "._"]
        if len(marks) > self.max_marks:
            return self.by_key().get(_collision_key(name))
        found: str | None = None
        chars = list(name)
        for choice in range(1 << len(marks)):
            for bit, i in enumerate(marks):
                chars[i] = "_" if choice >> bit & 1 else "."
            other = "".join(chars)
            if (found is None or other < found) and self.image.topics.get_topic_by_name(other) is not None:
                found = other
        return found

    def by_key(self) -> dict[str, str]:
        """Collision key -> the first topic by name with it, read from every topic once."""
        if self._by_key is None:
            self._by_key = {}
            for topic in self.image.topics.sorted_topics():
                self._by_key.setdefault(_collision_key(topic.name), topic.name)
        return self._by_key


# --------------------------------------------------------------------------- CreateTopics


class CreatableReplicaAssignment(msgspec.Struct, frozen=True):
    partition_index: int
    broker_ids: tuple[int, ...]


class CreatableTopicConfig(msgspec.Struct, frozen=True):
    name: str
    value: str | None


class CreatableTopic(msgspec.Struct, frozen=True):
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignments: tuple[CreatableReplicaAssignment, ...] = ()
    configs: tuple[CreatableTopicConfig, ...] = ()


class CreateTopicsRequest(msgspec.Struct, frozen=True):
    """Kafka's CreateTopicsRequest; `seed` (kraftsim's) makes topic ids and placement reproducible."""

    topics: tuple[CreatableTopic, ...]
    validate_only: bool = False
    seed: int = 0


class CreatableTopicResult(msgspec.Struct, frozen=True):
    name: str
    topic_id: Uuid = Uuid.ZERO
    error_code: int = 0
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


class CreateTopicsResponse(msgspec.Struct, frozen=True):
    topics: tuple[CreatableTopicResult, ...]

    def result(self, name: str) -> CreatableTopicResult:
        return next(t for t in self.topics if t.name == name)


class _TakenIds:
    """The topic ids in use: the image's and those given earlier in the request (asked of
    the image one id at a time, not copied: a request adds few to many)."""

    def __init__(self, image: MetadataImage):
        self.image = image
        self.given: set[bytes] = set()

    def __contains__(self, tid: Uuid) -> bool:
        return tid in self.given or self.image.topics.get_topic(tid) is not None

    def add(self, tid: Uuid) -> None:
        self.given.add(bytes(tid))


def _new_topic_id(seed: int, name: str, taken: _TakenIds) -> Uuid:
    rng = random.Random(f"kraftsim-topic-id:{seed}:{name}")
    while True:
        u = random_uuid(rng)
        if u not in taken:
            return u


def manual_assignment_error(image: MetadataImage, broker_ids: Sequence[int], rf: int | None,
                            cordon: str = "allowed") -> ApiError | None:
    """Why a manual replica list cannot be taken, or None. `cordon`: the release's policy
    `manual_assignment_cordon` ("refused": a broker whose log directories are all cordoned)."""
    if not broker_ids:
        return ApiError("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list.")
    prev = None
    for b in sorted(broker_ids):
        registration = image.cluster.broker(b)
        if registration is None:
            return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {b}, "
                                                          "but no such broker is registered.")
        if cordon == "refused" and registration.all_directories_cordoned:
            return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {b}, "
                                                          "but all its log directories are cordoned.")
        if b == prev:
            return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes the broker "
                                                          f"{prev} more than once.")
        prev = b
    if rf is not None and len(broker_ids) != rf:
        return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes a partition with "
                                                      f"{len(broker_ids)} replica(s), but this is not consistent with "
                                                      f"previous partitions, which have {rf} replica(s).")
    return None


class RequestBrokers:
    """What placing a request's topics reads of the brokers, read once for the request (the
    image does not change while it is decided); and what follows from a replica list alone
    (its ISR, its directories), worked out once per distinct list: placement hands out the
    same few hundred lists for any number of partitions."""

    def __init__(self, image: MetadataImage):
        self.image = image
        self._usable: list[UsableBroker] | None = None
        self._active: dict[int, bool] = {}
        self.placement = PlacementMemo()
        self.isrs: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.directories: dict[tuple[int, ...], tuple[Uuid, ...]] = {}

    def usable(self) -> list[UsableBroker]:
        if self._usable is None:
            self._usable = usable_brokers(self.image)
        return self._usable

    def active(self) -> dict[int, bool]:
        """Whether each usable broker is active (the brokers placement gives replicas to)."""
        if not self._active:
            self._active = {b.id: is_active(self.image, b.id) for b in self.usable()}
        return self._active


class PartitionRecords:
    """PartitionRecords of new partitions as the controller writes them at a metadata.version
    (with their replicas' default directories from the version that has them): for
    CreateTopics and CreatePartitions alike. The leader is the first replica in the ISR."""

    def __init__(self, ctx: ControllerContext, mv: MetadataVersion, brokers: RequestBrokers):
        self.ctx, self.mv = ctx, mv
        self.record = registry_of(ctx)["PartitionRecord"]
        self.version = ctx.catalog.record_version("PartitionRecord", mv)
        self.dirs: dict[int, Uuid] = {}  # broker -> its default directory (the same for the whole request)
        self.dir_rows = brokers.directories  # replicas -> their default directories

    def extend(self, records: list[Payload], tid: Uuid, first: int,
               plan: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
        """Append to `records` one PartitionRecord per (replicas, isr) of `plan`, numbered from `first`."""
        ctx, mv, dirs, dir_rows = self.ctx, self.mv, self.dirs, self.dir_rows
        partition_record, pr_version, new_partition = self.record, self.version, self.record.cls
        for pid, (replicas, isr) in enumerate(plan, first):
            if pr_version >= 1:
                directories = dir_rows.get(replicas)
                if directories is None:
                    directories = dir_rows[replicas] = tuple(
                        dirs[b] if b in dirs else dirs.setdefault(b, default_dir(ctx, mv, b)) for b in replicas)
                message = new_partition(partition_id=pid, topic_id=tid, replicas=list(replicas), isr=list(isr),
                                        leader=isr[0], leader_recovery_state=RECOVERED, leader_epoch=0,
                                        partition_epoch=0, directories=list(directories))
            else:
                message = new_partition(partition_id=pid, topic_id=tid, replicas=list(replicas), isr=list(isr),
                                        leader=isr[0], leader_recovery_state=RECOVERED, leader_epoch=0,
                                        partition_epoch=0)
            records.append(make_payload(Payload, (partition_record, pr_version, message)))


def _plan_partitions(ctx: ControllerContext, topic: CreatableTopic, seed: int,
                     brokers: RequestBrokers) -> tuple[list[tuple[tuple[int, ...], tuple[int, ...]]], ApiError]:
    """[(replicas, isr)] by partition id, or the topic's error."""
    image = ctx.image
    parts: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    if topic.assignments:
        if topic.replication_factor != -1:
            return [], ApiError("INVALID_REQUEST", "A manual partition assignment was specified, but replication "
                                                   "factor was not set to -1.")
        if topic.num_partitions != -1:
            return [], ApiError("INVALID_REQUEST", "A manual partition assignment was specified, but numPartitions "
                                                   "was not set to -1.")
        rf: int | None = None
        for a in topic.assignments:
            if a.partition_index in parts:
                return [], ApiError("INVALID_REPLICA_ASSIGNMENT", "Found multiple manual partition assignments for "
                                                                  f"partition {a.partition_index}")
            err = manual_assignment_error(image, a.broker_ids, rf, ctx.catalog.policy("manual_assignment_cordon"))
            if err is not None:
                return [], err
            rf = len(a.broker_ids)
            isr = tuple(b for b in a.broker_ids if is_active(image, b))
            if not isr:
                return [], ApiError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition "
                                                                  f"assignment for partition {a.partition_index} are "
                                                                  "fenced or in controlled shutdown.")
            parts[a.partition_index] = (tuple(a.broker_ids), isr)
        if set(parts) != set(range(len(parts))):
            return [], ApiError("INVALID_REPLICA_ASSIGNMENT", "partitions should be a consecutive 0-based integer sequence")
        return [parts[i] for i in range(len(parts))], NONE
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        return [], ApiError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0, or -1 to use "
                                                          "the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        return [], ApiError("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value.")
    num = ctx.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    rf = ctx.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    rng = random.Random(f"kraftsim-placement:{seed}:{topic.name}")
    try:
        placement = placed_replicas(brokers.usable(), num, rf, rng, brokers.placement)
    except InvalidReplicationFactor as e:
        return [], ApiError("INVALID_REPLICATION_FACTOR", f"Unable to replicate the partition {rf} time(s): {e}")
    out = []
    isrs = brokers.isrs
    for replicas in placement:
        kept = isrs.get(replicas)
        if kept is None:
            active = brokers.active()
            kept = isrs[replicas] = tuple(b for b in replicas if active[b])
        if not kept:
            return [], ApiError("INVALID_REPLICATION_FACTOR", f"Unable to replicate the partition {rf} time(s): All "
                                                              "brokers are currently fenced or in controlled shutdown.")
        out.append((replicas, kept))
    return out, NONE


def _requested_partitions(ctx: ControllerContext, topic: CreatableTopic) -> int:
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return ctx.config.num_partitions
    return max(topic.num_partitions, 0)


class TooManyRecords(Exception):
    """A request's records overflow MAX_RECORDS_PER_USER_OP (Kafka's BoundedListTooLongException)."""


def _created_topics(ctx: ControllerContext, req: CreateTopicsRequest, mv: MetadataVersion, limits: str,
                    errors: dict[str, ApiError]) -> tuple[list[Payload], dict[str, CreatableTopicResult]]:
    """The records of the topics without an error so far, and their answers; a topic whose
    partitions cannot be placed gets its error in `errors` instead."""
    image = ctx.image
    reg = registry_of(ctx)
    elr = elr_enabled(ctx, mv)
    taken = _TakenIds(image)
    records: list[Payload] = []
    results: dict[str, CreatableTopicResult] = {}
    brokers = RequestBrokers(image)
    partition_records = PartitionRecords(ctx, mv, brokers)
    bounded = limits != "none"
    for t in req.topics:
        if t.name in errors:
            continue
        requested = _requested_partitions(ctx, t)
        if bounded and len(records) + 1 + len(t.configs) + 1 + requested > MAX_RECORDS_PER_USER_OP:
            # Kafka's list of records would overflow while this topic's are made, if it can be placed
            # at all: the placement's own checks are made on one partition, not on all it asks for.
            _, err = _plan_partitions(ctx, msgspec.structs.replace(t, num_partitions=1) if not t.assignments else t,
                                      req.seed, brokers)
            if not err.ok:
                errors[t.name] = err
                continue
            if len(records) + 1 + len(t.configs) + requested > MAX_RECORDS_PER_USER_OP:
                raise TooManyRecords
        if not bounded and requested > UNBOUNDED_PARTITIONS_CAP:
            errors[t.name] = ApiError("UNKNOWN_SERVER_ERROR")
            continue
        plan, err = _plan_partitions(ctx, t, req.seed, brokers)
        if not err.ok:
            errors[t.name] = err
            continue
        tid = _new_topic_id(req.seed, t.name, taken)
        taken.add(tid)
        results[t.name] = CreatableTopicResult(t.name, tid, num_partitions=len(plan),
                                               replication_factor=len(plan[0][0]))
        records.append(payload(reg, "TopicRecord", 0, name=t.name, topic_id=tid))
        configs = {c.name: c.value for c in t.configs}
        for key in string_hash_order(list(configs)):  # (Kafka's controller puts them into a HashMap)
            value = configs[key]
            records.append(payload(reg, "ConfigRecord", 0, resource_type=TOPIC, resource_name=t.name, name=key,
                                   value=value))
        if elr and MIN_INSYNC_REPLICAS in configs:
            records.append(payload(reg, "ClearElrRecord", 0, topic_name=t.name))
        partition_records.extend(records, tid, 0, plan)
    return records, results


def create_topics(ctx: ControllerContext, req: CreateTopicsRequest) -> ControllerResult:
    """Kafka's CreateTopics: per topic, its name, existence, configs, partitions and
    placement are checked; each created topic writes TopicRecord, its ConfigRecords, then
    one PartitionRecord per partition. All records commit atomically; per-topic errors
    are in the response."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    limits = ctx.catalog.policy("user_op_limits")
    if limits in ("partitions", "additional-partitions") and \
            sum(_requested_partitions(ctx, t) for t in req.topics) > MAX_PARTITIONS_PER_BATCH:
        return refused(ApiError("POLICY_VIOLATION", "Excessively large number of partitions per request."))
    image = ctx.image
    errors: dict[str, ApiError] = {}
    counts: dict[str, int] = {}
    for t in req.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    for name, n in counts.items():
        if n > 1:
            errors[name] = ApiError("INVALID_REQUEST", "Duplicate topic name.")
    collisions = _Collisions(image)
    for t in req.topics:
        if t.name in errors:
            continue
        text = topic_name_error(t.name)
        if text is not None:
            errors[t.name] = ApiError("INVALID_TOPIC_EXCEPTION", text)
        other = collisions.of(t.name) if "." in t.name or "_" in t.name else None  # (else no name can collide)
        if other is not None:
            errors[t.name] = ApiError("INVALID_TOPIC_EXCEPTION", f"Topic '{t.name}' collides with existing topic: "
                                                                 f"{other}")
    for t in req.topics:
        if image.topics.get_topic_by_name(t.name) is not None and counts[t.name] == 1:
            errors[t.name] = ApiError("TOPIC_ALREADY_EXISTS", f"Topic '{t.name}' already exists.")
    for t in req.topics:
        if t.name in errors:
            continue
        nulls = [c.name for c in t.configs if c.value is None]
        if nulls:
            errors[t.name] = ApiError("INVALID_CONFIG", f"Null value not supported for topic configs: {','.join(nulls)}")
    for t in req.topics:
        if t.name not in errors and t.configs:
            err = topic_config_error(ctx.catalog.release.name, ctx.catalog.latest_production.version,
                                     {c.name: c.value or "" for c in t.configs})
            if not err.ok:
                errors[t.name] = err

    try:
        with collector_paused():  # (records and their lists form no cycle: see gcpause)
            records, results = _created_topics(ctx, req, mv, limits, errors)
    except TooManyRecords:
        return refused(TOO_MANY_RECORDS)  # (Kafka's list of records overflows while they are made, validate-only too)
    if limits != "none" and len(records) > MAX_RECORDS_PER_USER_OP:
        return refused(TOO_MANY_RECORDS)
    out: list[CreatableTopicResult] = []
    answered: set[str] = set()
    for t in req.topics:
        if t.name in answered:
            continue  # a repeated name is answered once
        e = errors.get(t.name)
        if e is not None:
            out.append(CreatableTopicResult(t.name, error_code=e.code, error_message=e.message))
            answered.add(t.name)
        elif t.name in results:
            out.append(results[t.name])
            answered.add(t.name)
    response = CreateTopicsResponse(tuple(out))
    return accepted([] if req.validate_only else records, response)


# --------------------------------------------------------------------------- DeleteTopics


class DeleteTopicState(msgspec.Struct, frozen=True):
    """One topic to delete, by name or (DeleteTopics v6+) by id."""

    name: str | None = None
    topic_id: Uuid = Uuid.ZERO


class DeleteTopicsRequest(msgspec.Struct, frozen=True):
    topics: tuple[DeleteTopicState, ...]


class DeletableTopicResult(msgspec.Struct, frozen=True):
    name: str | None
    topic_id: Uuid
    error_code: int = 0
    error_message: str | None = None


class DeleteTopicsResponse(msgspec.Struct, frozen=True):
    responses: tuple[DeletableTopicResult, ...]


def delete_topics(ctx: ControllerContext, req: DeleteTopicsRequest) -> ControllerResult:
    """Kafka's DeleteTopics: each known topic gets a RemoveTopicRecord (which also drops its
    configs on replay); unknown or repeated topics get an error of their own."""
    image = ctx.image
    reg = registry_of(ctx)
    by_name = [s.name for s in req.topics if s.name is not None]
    by_id = [bytes(s.topic_id) for s in req.topics if s.name is None]
    records: list[Payload] = []
    out: list[DeletableTopicResult] = []
    removed: set[bytes] = set()
    for s in req.topics:
        if s.name is not None:
            topic = image.topics.get_topic_by_name(s.name)
            if by_name.count(s.name) > 1:
                err = ApiError("INVALID_REQUEST", "Duplicate topic name.")
            elif topic is None:
                err = default_error("UNKNOWN_TOPIC_OR_PARTITION")
            else:
                err = NONE
        else:
            topic = image.topics.get_topic(s.topic_id)
            if s.topic_id == Uuid.ZERO:
                err = ApiError("INVALID_REQUEST", f"Attempt to find topic with invalid topicId {s.topic_id}")
            elif by_id.count(bytes(s.topic_id)) > 1:
                err = ApiError("INVALID_REQUEST", "Duplicate topic id.")
            elif topic is None:
                err = default_error("UNKNOWN_TOPIC_ID")
            else:
                err = NONE
        if not err.ok or topic is None:
            out.append(DeletableTopicResult(s.name, s.topic_id, err.code, err.message))
            continue
        if bytes(topic.id) not in removed:
            removed.add(bytes(topic.id))
            records.append(payload(reg, "RemoveTopicRecord", 0, topic_id=topic.id))
        out.append(DeletableTopicResult(topic.name, topic.id))
    return accepted(records, DeleteTopicsResponse(tuple(out)))
