"""ElectLeaders: preferred and unclean leader elections (ReplicationControlManager.electLeaders)."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError, default_error
from kraftsim.controller.context import ControllerContext, metadata_version_of
from kraftsim.controller.partition_change import (
    Election,
    PartitionChangeBuilder,
    leader_acceptor,
    unclean_config_read,
    unclean_election_enabled,
)
from kraftsim.image import NO_LEADER
from kraftsim.controller.result import (
    MAX_RECORDS_PER_USER_OP,
    NO_METADATA_VERSION,
    TOO_MANY_RECORDS,
    ControllerResult,
    accepted,
    refused,
)
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import MetadataVersion

# --------------------------------------------------------------------------- ElectLeaders

PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1
#: The most partitions one request may name: kraftsim's bound on the work a hostile request asks
#: for (Kafka's is only its 100 MiB frame: 25 million ids); beyond it the whole request is
#: UNKNOWN_SERVER_ERROR. One million takes the controller about a second.
MAX_ELECTION_PARTITIONS = 1_000_000
#: Kafka's ElectionType by the name its tools take (`kafka-leader-election --election-type`).
ELECTION_TYPES = {"preferred": PREFERRED_ELECTION, "unclean": UNCLEAN_ELECTION}


class TopicPartitions(msgspec.Struct, frozen=True):
    topic: str
    partitions: tuple[int, ...]


class ElectLeadersRequest(msgspec.Struct, frozen=True):
    """Kafka's ElectLeadersRequest; `topic_partitions` None means every partition."""

    election_type: int = PREFERRED_ELECTION
    topic_partitions: tuple[TopicPartitions, ...] | None = None


class PartitionElectionResult(msgspec.Struct, frozen=True):
    partition_id: int
    error_code: int = 0
    error_message: str | None = None


class ReplicaElectionResult(msgspec.Struct, frozen=True):
    topic: str
    partition_result: tuple[PartitionElectionResult, ...]


class ElectLeadersResponse(msgspec.Struct, frozen=True):
    replica_election_results: tuple[ReplicaElectionResult, ...]


def _elect_one(ctx: ControllerContext, mv: MetadataVersion, topic_name: str, pid: int, unclean: bool,
               records: list[Payload]) -> ApiError:
    image = ctx.image
    topic = image.topics.get_topic_by_name(topic_name)
    if topic is None:
        return ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {topic_name}")
    part = topic.partitions.get(pid)
    if part is None:
        return ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {topic_name}-{pid}")
    preferred = part.replicas[0] if part.replicas else NO_LEADER
    if (not unclean and part.leader == preferred) or (unclean and part.leader != NO_LEADER):
        return default_error("ELECTION_NOT_NEEDED")
    b = PartitionChangeBuilder(ctx, mv, topic, pid, part, leader_acceptor(image, part))
    b.election = Election.UNCLEAN if unclean else Election.PREFERRED
    change = b.build()
    if change is None:
        return default_error("ELIGIBLE_LEADERS_NOT_AVAILABLE" if unclean else "PREFERRED_LEADER_NOT_AVAILABLE")
    records.append(change)
    return NONE


def elect_leaders(ctx: ControllerContext, req: ElectLeadersRequest) -> ControllerResult:
    """Kafka's ElectLeaders: preferred (the first replica, if it is in the ISR and alive) or
    unclean (any live replica for a leaderless partition). Non-atomic, as in Kafka.

    Asked for every partition, only those that needed an election are answered (topics in name
    order: Kafka's follow its controller's hash table, and its tools print sets). From 3.5 a
    request that would write more than 10,000 records is refused whole (policy
    `user_op_limits`), as Kafka's bounded list of records refuses it; so is one that names more
    than MAX_ELECTION_PARTITIONS (kraftsim's bound)."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    if req.election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        return refused(ApiError("INVALID_REQUEST", f"Unknown election type {req.election_type}"))
    if req.topic_partitions is not None and sum(len(t.partitions) for t in req.topic_partitions) > MAX_ELECTION_PARTITIONS:
        return refused(default_error("UNKNOWN_SERVER_ERROR"))
    unclean = req.election_type == UNCLEAN_ELECTION
    records: list[Payload] = []
    results = []
    if req.topic_partitions is None:
        for topic in ctx.image.topics.sorted_topics():
            parts = []
            for pid, _ in topic.sorted_partitions():
                e = _elect_one(ctx, mv, topic.name, pid, unclean, records)
                if e.name != "ELECTION_NOT_NEEDED":  # not reported when electing everything
                    parts.append(PartitionElectionResult(pid, e.code, e.message))
            results.append(ReplicaElectionResult(topic.name, tuple(parts)))
    else:
        for tp in req.topic_partitions:
            parts = []
            for pid in tp.partitions:
                e = _elect_one(ctx, mv, tp.topic, pid, unclean, records)
                parts.append(PartitionElectionResult(pid, e.code, e.message))
            results.append(ReplicaElectionResult(tp.topic, tuple(parts)))
    if ctx.catalog.policy("user_op_limits") != "none" and len(records) > MAX_RECORDS_PER_USER_OP:
        return refused(TOO_MANY_RECORDS)
    return accepted(records, ElectLeadersResponse(tuple(results)), atomic=False)


# --------------------------------------------------------------------------- leader balancing

#: Kafka's MAX_ELECTIONS_PER_IMBALANCE: the most preferred-leader changes one balancing writes.
MAX_ELECTIONS_PER_IMBALANCE = 1_000


def balance_partition_leaders(ctx: ControllerContext, partitions: Iterable[tuple[Uuid, int]]) -> ControllerResult:
    """Kafka's maybeBalancePartitionLeaders (auto.leader.rebalance.enable): a preferred election
    for each partition of `partitions` (those not led by their first replica), until
    MAX_ELECTIONS_PER_IMBALANCE changes are written; the response says whether it stopped there
    (Kafka then balances again at once, else after leader.imbalance.check.interval.seconds)."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    image = ctx.image
    records: list[Payload] = []
    for tid, pid in partitions:  # (taken one at a time: none past the last one looked at)
        topic = image.topics.get_topic(tid)
        part = topic.partitions.get(pid) if topic is not None else None
        if topic is None or part is None:
            continue
        b = PartitionChangeBuilder(ctx, mv, topic, pid, part, leader_acceptor(image, part))
        b.election = Election.PREFERRED
        change = b.build()
        if change is not None:
            records.append(change)
            if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                break
    return accepted(records, len(records) >= MAX_ELECTIONS_PER_IMBALANCE)


# --------------------------------------------------------------------------- unclean elections by the controller


def elect_unclean_leaders(ctx: ControllerContext, partitions: Iterable[tuple[Uuid, int]]) -> ControllerResult:
    """Kafka's maybeElectUncleanLeaders (3.9+): an unclean election for each partition of
    `partitions` (those without a leader) whose topic has unclean.leader.election.enable,
    until MAX_ELECTIONS_PER_IMBALANCE changes are written; the response says whether it stopped
    there (Kafka then looks again at once, else after unclean.leader.election.interval.ms).
    A release before 3.9 never does (the config is not read): nothing is written."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    records: list[Payload] = []
    if not unclean_config_read(ctx):
        return accepted(records, False)
    image = ctx.image
    for tid, pid in partitions:  # (taken one at a time, as balance_partition_leaders)
        topic = image.topics.get_topic(tid)
        if topic is None or pid not in topic.partitions or not unclean_election_enabled(ctx, topic.name):
            continue
        _elect_one(ctx, mv, topic.name, pid, True, records)
        if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
            break
    return accepted(records, len(records) >= MAX_ELECTIONS_PER_IMBALANCE)
