"""AlterPartitionReassignments: Kafka's ReplicationControlManager.alterPartitionReassignments,
with PartitionReassignmentReplicas (a target's adding and removing replicas) and
PartitionReassignmentRevert (what a cancel goes back to).

A target replica list starts a reassignment: one PartitionChangeRecord puts the union of the
target and the replicas it removes in the replica list (the target first, then the removed
ones in id order) and names the adding and removing replicas; the PartitionChangeBuilder
completes it later, once the partition's ISR holds what the release's rule asks (policy
`reassignment_completion`), or at once when the target only reorders the replicas. A null
target cancels: the replicas and ISR lose the adding replicas. Partitions are judged one by
one (each gets its own error) and the records of the whole request are written in one batch,
as Kafka's controller does.
"""

from __future__ import annotations

from typing import Sequence

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of
from kraftsim.controller.partition_change import (
    Election,
    PartitionChangeBuilder,
    leader_acceptor,
    unclean_election_enabled,
)
from kraftsim.controller.result import MAX_RECORDS_PER_USER_OP, NO_METADATA_VERSION, ControllerResult, accepted, refused
from kraftsim.controller.topics import manual_assignment_error
from kraftsim.image import PartitionRegistration, TopicImage
from kraftsim.protocol.entries import Payload
from kraftsim.versions import MetadataVersion


class ReassignablePartition(msgspec.Struct, frozen=True):
    partition_index: int
    #: The target replicas; None cancels the partition's reassignment.
    replicas: tuple[int, ...] | None = None


class ReassignableTopic(msgspec.Struct, frozen=True):
    name: str
    partitions: tuple[ReassignablePartition, ...]


class AlterPartitionReassignmentsRequest(msgspec.Struct, frozen=True):
    """Kafka's AlterPartitionReassignmentsRequest (v1 adds AllowReplicationFactorChange, KIP-860)."""

    topics: tuple[ReassignableTopic, ...]
    allow_replication_factor_change: bool = True


class ReassignablePartitionResponse(msgspec.Struct, frozen=True):
    partition_index: int
    error_code: int = 0
    error_message: str | None = None


class ReassignableTopicResponse(msgspec.Struct, frozen=True):
    name: str
    partitions: tuple[ReassignablePartitionResponse, ...]


class AlterPartitionReassignmentsResponse(msgspec.Struct, frozen=True):
    responses: tuple[ReassignableTopicResponse, ...]
    allow_replication_factor_change: bool = True
    error_code: int = 0
    error_message: str | None = None


class _Refusal(Exception):
    """One partition refused (Kafka throws per partition and answers the error)."""

    def __init__(self, error: ApiError):
        super().__init__(error.message)
        self.error = error


def reassignment_replicas(current: Sequence[int], target: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Kafka's PartitionReassignmentReplicas(current, target): (removing, adding, replicas),
    removing and adding in id order, replicas the target then the removing ones."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return removing, adding, [*target, *removing]


def in_progress(p: PartitionRegistration) -> bool:
    """Whether a reassignment is under way (replicas being added or removed)."""
    return bool(p.adding_replicas or p.removing_replicas)


def revert(p: PartitionRegistration) -> tuple[list[int], list[int], bool]:
    """Kafka's PartitionReassignmentRevert: (replicas, ISR, unclean) once the adding replicas
    are taken out; an ISR left empty gets the first remaining replica (an unclean election)."""
    adding = set(p.adding_replicas)
    replicas = [r for r in p.replicas if r not in adding]
    isr = [r for r in p.isr if r not in adding]
    if isr:
        return replicas, isr, False
    if not replicas:
        raise _Refusal(ApiError("INVALID_REPLICA_ASSIGNMENT",
                                "Invalid replica assignment: addingReplicas contains all replicas."))
    return replicas, [replicas[0]], True


def _current_replication_factor(p: PartitionRegistration) -> int:
    """The replication factor a KIP-860 check compares with: with a reassignment under way,
    the replicas and adding ones without the removing ones (as a set)."""
    if not in_progress(p):
        return len(p.replicas)
    return len((set(p.replicas) | set(p.adding_replicas)) - set(p.removing_replicas))


def _cancel(ctx: ControllerContext, mv: MetadataVersion, topic: TopicImage, pid: int,
            p: PartitionRegistration) -> Payload | None:
    if not in_progress(p):
        # (Kafka throws it with the error's default text, which ApiError.fromThrowable leaves out of
        # the answer: the message is null and clients show the default)
        raise _Refusal(ApiError("NO_REASSIGNMENT_IN_PROGRESS"))
    replicas, isr, unclean = revert(p)
    allowed = unclean_election_enabled(ctx, topic.name)
    if unclean and not allowed:
        raise _Refusal(ApiError("INVALID_REPLICA_ASSIGNMENT", f"Unable to revert partition assignment for "
                                f"{topic.name}:{pid} because it would require an unclean leader election."))
    b = PartitionChangeBuilder(ctx, mv, topic, pid, p, leader_acceptor(ctx.image, p))
    if allowed:
        b.election = Election.UNCLEAN
    b.target_isr, b.target_replicas, b.target_removing, b.target_adding = isr, replicas, [], []
    return b.build()


def _change(ctx: ControllerContext, mv: MetadataVersion, topic: TopicImage, pid: int, p: PartitionRegistration,
            target: Sequence[int], allow_rf_change: bool) -> Payload | None:
    err = manual_assignment_error(ctx.image, list(target), None, ctx.catalog.policy("manual_assignment_cordon"))
    if err is not None:
        raise _Refusal(err)
    if not allow_rf_change and ctx.catalog.policy("reassignment_replication_factor") == "checked":
        rf = _current_replication_factor(p)
        if rf != len(target):
            raise _Refusal(ApiError("INVALID_REPLICATION_FACTOR",
                                    f"The replication factor is changed from {rf} to {len(target)}"))
    removing, adding, replicas = reassignment_replicas(p.replicas, target)
    b = PartitionChangeBuilder(ctx, mv, topic, pid, p, leader_acceptor(ctx.image, p))
    if replicas != list(p.replicas):
        b.target_replicas = replicas
    if removing:
        b.target_removing = removing
    if adding:
        b.target_adding = adding
    return b.build()


def _one(ctx: ControllerContext, mv: MetadataVersion, name: str, target: ReassignablePartition,
         allow_rf_change: bool) -> Payload | None:
    topic = ctx.image.topics.get_topic_by_name(name)
    if topic is None:
        raise _Refusal(ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find a topic named {name}."))
    pid = target.partition_index
    p = topic.partitions.get(pid)
    if p is None:
        raise _Refusal(ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find partition {name}:{pid}."))
    if target.replicas is None:
        return _cancel(ctx, mv, topic, pid, p)
    return _change(ctx, mv, topic, pid, p, target.replicas, allow_rf_change)


def alter_partition_reassignments(ctx: ControllerContext, req: AlterPartitionReassignmentsRequest) -> ControllerResult:
    """Each partition's reassignment started, changed or cancelled, or its error; the records
    of every accepted partition in one atomic batch. Each partition is judged against the
    committed image (Kafka's controller, too, reads its state as of the request's start for a
    partition named twice: the second record is built from the same registration)."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    bounded = ctx.catalog.policy("user_op_limits") != "none"
    records: list[Payload] = []
    topics_out = []
    for t in req.topics:
        answers = []
        for target in t.partitions:
            error = NONE
            try:
                record = _one(ctx, mv, t.name, target, req.allow_replication_factor_change)
                if record is not None:
                    if bounded and len(records) >= MAX_RECORDS_PER_USER_OP:
                        raise _Refusal(ApiError("UNKNOWN_SERVER_ERROR"))  # (BoundedListTooLongException)
                    records.append(record)
            except _Refusal as refusal:
                error = refusal.error
            answers.append(ReassignablePartitionResponse(target.partition_index, error.code, error.message))
        topics_out.append(ReassignableTopicResponse(t.name, tuple(answers)))
    return accepted(records, AlterPartitionReassignmentsResponse(tuple(topics_out), req.allow_replication_factor_change))
