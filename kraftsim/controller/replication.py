"""Partition state driven by brokers: Kafka's ReplicationControlManager for ISR and ELR.

Every public function reads a `ControllerContext` (the committed image) and a request and
returns records or a `ControllerResult`; nothing here touches a log. Cluster control
(fencing, unfencing, controlled shutdown, unregistration, offline directories) changes
leaders and ISRs through `leader_and_isr_updates`; brokers shrink and expand ISRs through
AlterPartition. Both go through `PartitionChangeBuilder` (partition_change.py).

Kafka iterates partitions in Java hash-map order; kraftsim visits topics by name and
partitions by id, so the same request always gives the same records in the same order.
"""

from __future__ import annotations

from itertools import islice
from typing import Callable, Iterable

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import ControllerContext, metadata_version_of, registry_of, replica_index
from kraftsim.controller.replica_index import IndexedPartitions
from kraftsim.controller.partition_change import (
    PartitionAt,
    NO_LEADER_CHANGE,
    Election,
    ChangeFields,
    PartitionChangeBuilder,
    TopicRules,
    builder_gates,
    dir_is_online,
    elr_enabled,
    has_leaderships,
    iter_partitions,
    leader_acceptor,
    simple_change,
)
from kraftsim.controller.result import (
    NO_METADATA_VERSION,
    ControllerResult,
    accepted,
    make_payload,
    refused,
)
from kraftsim.image import (
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from kraftsim.image.intern import MIGRATING
from kraftsim.image.pmap import CHUNK_BITS, CHUNK_MASK
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import MetadataVersion

# --------------------------------------------------------------------------- shared helpers

#: A simple change as leader_and_isr_updates writes it: () for none, else (leader, new ISR or None).
_Fields = tuple[()] | tuple[int, "tuple[int, ...] | None"]
_UNSEEN: _Fields = (NO_LEADER_CHANGE, None)  # (a shape not worked out yet: told apart by identity)


def leader_and_isr_updates(ctx: ControllerContext, mv: MetadataVersion,
                           partitions: Iterable[tuple[TopicImage, int, PartitionRegistration]], *,
                           broker_to_remove: int = NO_LEADER, broker_to_add: int = NO_LEADER,
                           unclean_shutdown_broker: int = NO_LEADER, quick: bool = True) -> list[Payload]:
    """Kafka's generateLeaderAndIsrUpdates: for each partition, take `broker_to_remove` and
    `unclean_shutdown_broker` out of the ISR and elect a leader among the acceptable
    brokers (active ones, plus `broker_to_add` even while still fenced, never
    `broker_to_remove`), with unclean election where the topic allows it.

    Partitions of the common shape take `simple_change` (the same records); given an index
    answer (IndexedPartitions), those whose shape is already worked out are written for the
    whole answer in C (IndexedPartitions.records_walk), the rest here. `quick=False` sends every
    partition through the builder (the reference the tests compare with)."""
    image = ctx.image
    elr = elr_enabled(ctx, mv)
    out: list[Payload] = []
    rules = TopicRules(ctx)

    gates = builder_gates(ctx, mv)
    version, _, shrink_keeps_epoch = gates
    record_type = registry_of(ctx)["PartitionChangeRecord"]
    # What leader_acceptor(image, part, base) asks of the image, per broker once: it does not
    # change here (base: not `broker_to_remove`, and `broker_to_add` or active).
    regs: dict[int, BrokerRegistration | None] = {}
    active: dict[int, bool] = {}

    def registration(r: int) -> BrokerRegistration | None:
        if r not in regs:
            regs[r] = image.cluster.broker(r)
        return regs[r]

    def base(r: int) -> bool:
        if r == broker_to_remove:
            return False
        if r == broker_to_add:
            return True
        found = active.get(r)
        if found is None:
            reg = registration(r)
            found = active[r] = reg is not None and not reg.fenced and not reg.in_controlled_shutdown
        return found

    def accept_in(r: int, directory: Uuid) -> bool:
        if not base(r):
            return False
        reg = registration(r)
        return reg is not None and dir_is_online(reg, directory)

    def acceptor(part: PartitionRegistration) -> Callable[[int], bool]:
        dirs = dict(zip(part.replicas, part.directories))
        return lambda r: accept_in(r, dirs.get(r, MIGRATING))

    # simple_change depends on the partition's replicas, directories, ISR and leader (interned
    # tuples, shared by many partitions) and its topic's rules only, when the partition has no
    # reassignment, ELR or last known leader (else the builder decides): worked out once per
    # distinct shape in this call, as the record's fields (leader, ISR: None when unchanged).
    new = record_type.cls
    blank = new(partition_id=0, topic_id=Uuid.ZERO)  # (a record's defaults: the C loop copies them)
    unchanged = blank.leader  # (the leader field of a record that leaves it)
    made_by_rules: dict[tuple[int, bool], dict[tuple[object, ...], _Fields | None]] = {}
    made: dict[tuple[object, ...], _Fields | None] = {}
    topic: TopicImage | None = None
    tid, min_isr, unclean = Uuid.ZERO, 0, False

    def enter(t: TopicImage) -> dict[tuple[object, ...], _Fields | None]:
        """Make `t` the topic of the partitions visited next; its memo."""
        nonlocal topic, tid, min_isr, unclean, made
        topic, tid = t, t.id
        topic_rules = rules.for_election(t, elr)
        min_isr, unclean = topic_rules
        made = made_by_rules.get(topic_rules) or made_by_rules.setdefault(topic_rules, {})
        return made

    def visit(pid: int, part: PartitionRegistration) -> None:
        """Append the record of partition `pid` of the current topic, if it changes."""
        if quick and not (part.removing_replicas or part.adding_replicas or part.elr or part.last_known_elr):
            shape = (part.replicas, part.directories, part.isr, part.leader)
            fields = made.get(shape, _UNSEEN)
            if fields is _UNSEEN:
                target_isr = [r for r in part.isr if r != broker_to_remove and r != unclean_shutdown_broker]
                simple = simple_change(part, target_isr, accept_in, min_isr=min_isr, elr=elr, unclean=unclean,
                                       shrink_keeps_epoch=shrink_keeps_epoch)
                fields = made[shape] = None if simple is None else _record_fields(simple, unchanged)
            if fields is not None:
                if fields:
                    leader, isr = fields
                    out.append(make_payload(Payload, (record_type, version, new(
                        partition_id=pid, topic_id=tid, leader=leader, isr=None if isr is None else list(isr)))))
                return
        assert topic is not None
        target_isr = [r for r in part.isr if r != broker_to_remove and r != unclean_shutdown_broker]
        b = PartitionChangeBuilder(ctx, mv, topic, pid, part, acceptor(part), min_isr=min_isr, elr=elr, gates=gates)
        if unclean:
            b.election = Election.UNCLEAN
        if unclean_shutdown_broker != NO_LEADER:
            b.unclean_shutdown = (unclean_shutdown_broker,)
        b.target_isr = target_isr
        change = b.build()
        if change is not None:
            out.append(change)

    # Without ELR, every topic without configs of its own has the cluster's rules (min ISR 0, the
    # cluster's unclean election): the C walk gives it their memo without entering it.
    plain = None
    if not elr:
        configured, cluster_unclean = rules.cluster_unclean()
        plain = (made_by_rules.setdefault((0, cluster_unclean), {}), configured)
    walk = partitions.records_walk(plain) if quick and isinstance(partitions, IndexedPartitions) else None
    if walk is None:
        for t, pid, part in partitions:
            if t is not topic:  # (partitions come topic by topic)
                enter(t)
            visit(pid, part)
        return out
    assert isinstance(partitions, IndexedPartitions)
    fixed = (blank, record_type, version, Payload, CHUNK_BITS)
    place = start = 0
    while True:  # (C walks the topics and writes their partitions, up to one it leaves to `visit`)
        stop = walk(out, fixed, enter, place, start)
        if stop is None:
            return out
        place, t, chunks, mask, pid, in_c = stop
        if not in_c:  # (it cannot build these classes: the rest here, from this partition on)
            enter(t)
            _visit_mask(visit, t, chunks, mask >> pid << pid)
            for t, chunks, mask in islice(partitions.by_topic(), place + 1, None):
                enter(t)
                _visit_mask(visit, t, chunks, mask)
            return out
        if t is not topic:  # (a topic the walk gave the cluster's memo without entering it)
            enter(t)
        visit(pid, chunks[pid >> CHUNK_BITS][pid & CHUNK_MASK] if chunks is not None else t.partitions[pid])
        start = pid + 1


def _visit_mask(visit: Callable[[int, PartitionRegistration], None], t: TopicImage,
                chunks: "tuple[tuple[PartitionRegistration, ...], ...] | None", mask: int) -> None:
    """`visit` the partitions of `t` whose ids are in `mask`, in order (`chunks`: its dense value chunks or None)."""
    parts = t.partitions
    while mask:
        low = mask & -mask
        pid = low.bit_length() - 1
        visit(pid, chunks[pid >> CHUNK_BITS][pid & CHUNK_MASK] if chunks is not None else parts[pid])
        mask ^= low


def _record_fields(change: ChangeFields, unchanged: int) -> _Fields:
    """`simple_change`'s fields as leader_and_isr_updates writes them many times: () for no
    change, else the leader (`unchanged`: the field's default) and the new ISR (None: kept;
    copied into each record, as messages hold lists)."""
    if not change:
        return ()
    isr = change.get("isr")
    return change.get("leader", unchanged), (None if isr is None else tuple(isr))


def partitions_with_isr_member(image: MetadataImage, broker_id: int) -> list[PartitionAt]:
    """The scan `isr_partitions` answers from the index when it can (its reference)."""
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if broker_id in p.isr]


def partitions_with_elr_member(image: MetadataImage, broker_id: int) -> list[PartitionAt]:
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if broker_id in p.elr]


def leaderless_partitions(image: MetadataImage) -> list[PartitionAt]:
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if p.leader == NO_LEADER]


def isr_partitions(ctx: ControllerContext, broker_id: int) -> Iterable[PartitionAt]:
    """The partitions whose ISR holds `broker_id`, in iter_partitions order (from the index:
    one at a time, so read them before the context's image moves on)."""
    index = replica_index(ctx)
    return partitions_with_isr_member(ctx.image, broker_id) if index is None else index.iter_isr_member(broker_id)


def elr_partitions(ctx: ControllerContext, broker_id: int) -> Iterable[PartitionAt]:
    """The partitions whose ELR holds `broker_id`, in iter_partitions order."""
    index = replica_index(ctx)
    return partitions_with_elr_member(ctx.image, broker_id) if index is None else index.iter_elr_member(broker_id)


def leaderless(ctx: ControllerContext) -> Iterable[PartitionAt]:
    """The partitions without a leader, in iter_partitions order."""
    index = replica_index(ctx)
    return leaderless_partitions(ctx.image) if index is None else index.iter_without_leader()


def leads_partitions(ctx: ControllerContext, broker_id: int) -> bool:
    """Whether `broker_id` leads at least one partition."""
    index = replica_index(ctx)
    return has_leaderships(ctx.image, broker_id) if index is None else index.leads_any(broker_id)


def remove_from_isrs(ctx: ControllerContext, mv: MetadataVersion, broker_id: int, *,
                     include_elr: bool = False) -> list[Payload]:
    """Take `broker_id` out of every ISR it is in (fencing, controlled shutdown), and with
    `include_elr` also re-examine the partitions whose ELR holds it (unregistration).

    With ELR on, a replica that leaves an ISR which falls below min.insync.replicas moves
    to the ELR; a partition left without an eligible leader gets leader -1."""
    out = leader_and_isr_updates(ctx, mv, isr_partitions(ctx, broker_id), broker_to_remove=broker_id)
    if include_elr:
        out += leader_and_isr_updates(ctx, mv, elr_partitions(ctx, broker_id), broker_to_remove=broker_id)
    return out


def shutdown_cleanup(ctx: ControllerContext, mv: MetadataVersion, broker_id: int,
                     clean_shutdown: bool) -> list[Payload]:
    """Kafka's handleBrokerShutdown, run when a new incarnation of a broker registers: with
    ELR on and an unclean shutdown, the broker leaves every ISR and ELR; otherwise it
    leaves the ISRs as if fenced."""
    if elr_enabled(ctx, mv) and not clean_shutdown:
        return (leader_and_isr_updates(ctx, mv, isr_partitions(ctx, broker_id), unclean_shutdown_broker=broker_id)
                + leader_and_isr_updates(ctx, mv, elr_partitions(ctx, broker_id), unclean_shutdown_broker=broker_id))
    return remove_from_isrs(ctx, mv, broker_id)


def elect_for_unfenced(ctx: ControllerContext, mv: MetadataVersion, broker_id: int) -> list[Payload]:
    """Leader elections for leaderless partitions once `broker_id` is unfenced."""
    return leader_and_isr_updates(ctx, mv, leaderless(ctx), broker_to_add=broker_id)


def partitions_in_directories(image: MetadataImage, broker_id: int, directories: Iterable[Uuid]) -> list[PartitionAt]:
    """Partitions whose replica on `broker_id` is assigned to one of `directories`."""
    wanted = set(directories)
    out: list[PartitionAt] = []
    for t, pid, p in iter_partitions(image):
        for r, d in zip(p.replicas, p.directories):
            if r == broker_id and d in wanted:
                out.append((t, pid, p))
                break
    return out


# --------------------------------------------------------------------------- AlterPartition


class BrokerState(msgspec.Struct, frozen=True):
    broker_id: int
    broker_epoch: int = -1  # -1: not checked


class AlterPartitionData(msgspec.Struct, frozen=True):
    partition_index: int
    leader_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    partition_epoch: int
    leader_recovery_state: int = RECOVERED


class AlterPartitionTopic(msgspec.Struct, frozen=True):
    topic_id: Uuid
    partitions: tuple[AlterPartitionData, ...]


class AlterPartitionRequest(msgspec.Struct, frozen=True):
    """Kafka's AlterPartitionRequest (v3+: ISR members with their broker epochs)."""

    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopic, ...]


class AlterPartitionResult(msgspec.Struct, frozen=True):
    partition_index: int
    error_code: int = 0
    leader_id: int = NO_LEADER
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = 0


class AlterPartitionTopicResult(msgspec.Struct, frozen=True):
    topic_id: Uuid
    partitions: tuple[AlterPartitionResult, ...]


class AlterPartitionResponse(msgspec.Struct, frozen=True):
    topics: tuple[AlterPartitionTopicResult, ...]


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> ApiError:
    """Kafka's ClusterControlManager.checkBrokerEpoch."""
    reg = image.cluster.broker(broker_id)
    if reg is None:
        return ApiError("STALE_BROKER_EPOCH", f"No broker registration found for broker id {broker_id}")
    if reg.epoch != broker_epoch:
        return ApiError("STALE_BROKER_EPOCH", f"Expected broker epoch {reg.epoch}, but got broker epoch {broker_epoch}")
    return NONE


def _stale_error(broker_id: int, part: PartitionRegistration | None, data: AlterPartitionData) -> str:
    """Kafka's validateAlterPartitionData, its first checks (the partition, its epochs and its
    leader): an error name, NONE when they pass (`_isr_error` checks the rest)."""
    if part is None:
        return "UNKNOWN_TOPIC_OR_PARTITION"
    if data.leader_epoch > part.leader_epoch or data.partition_epoch > part.partition_epoch:
        return "NOT_CONTROLLER"  # the leader knows a newer state than this controller
    if data.leader_epoch < part.leader_epoch:
        return "FENCED_LEADER_EPOCH"
    if broker_id != part.leader:
        return "INVALID_REQUEST"
    if data.partition_epoch < part.partition_epoch:
        return "INVALID_UPDATE_VERSION"
    return "NONE"


def _isr_error(image: MetadataImage, part: PartitionRegistration, data: AlterPartitionData,
               registration: Callable[[int], BrokerRegistration | None] | None = None) -> str:
    """validateAlterPartitionData's other checks, of the asked ISR against the partition's
    replicas, leader and recovery state and the brokers' registrations (not its epochs)."""
    new_isr = [s.broker_id for s in data.new_isr_with_epochs]
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(part.replicas):
        return "INVALID_REQUEST"
    if part.leader not in new_isr:
        return "INVALID_REQUEST"
    if data.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return "INVALID_REQUEST"
    if part.leader_recovery_state == RECOVERED and data.leader_recovery_state == RECOVERING:
        return "INVALID_REQUEST"
    for s in data.new_isr_with_epochs:
        reg = image.cluster.broker(s.broker_id) if registration is None else registration(s.broker_id)
        if (reg is None or reg.in_controlled_shutdown or reg.fenced
                or (s.broker_epoch != -1 and reg.epoch != s.broker_epoch)):
            return "INELIGIBLE_REPLICA"
    return "NONE"


def alter_partition(ctx: ControllerContext, req: AlterPartitionRequest) -> ControllerResult:
    """Kafka's AlterPartition: the leader asks to shrink or expand its ISR. Each partition is
    checked against the leader and partition epochs the leader holds; valid changes go
    through the PartitionChangeBuilder (non-atomic, as in Kafka)."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    image = ctx.image
    err = check_broker_epoch(image, req.broker_id, req.broker_epoch)
    if not err.ok:
        return refused(err)
    elr = elr_enabled(ctx, mv)
    records: list[Payload] = []
    topics_out = []
    # read once per request, not per partition: a leader back from a restart asks for thousands
    gates = builder_gates(ctx, mv)
    rules = TopicRules(ctx)
    regs: dict[int, BrokerRegistration | None] = {}

    def registration(r: int) -> BrokerRegistration | None:
        if r not in regs:
            regs[r] = image.cluster.broker(r)
        return regs[r]

    def accept_in(r: int, directory: Uuid) -> bool:  # (leader_acceptor's test, with the registrations at hand)
        reg = registration(r)
        return reg is not None and not reg.fenced and not reg.in_controlled_shutdown and dir_is_online(reg, directory)

    registry, version = registry_of(ctx), gates[0]
    change_type = registry["PartitionChangeRecord"]  # (as `payload` makes it, looked up once per request)
    # A leader back from a restart asks for thousands of partitions of a few shapes: what
    # follows from the shape alone (`_isr_error` and `simple_change`, with this request's
    # registrations) is worked out once per shape, for partitions without reassignment or ELR.
    by_shape: dict[tuple[object, ...], tuple[str, ChangeFields | None]] = {}

    def by_shape_of(part: PartitionRegistration, d: AlterPartitionData, min_isr: int,
                    unclean: bool) -> tuple[str, ChangeFields | None]:
        """(`_isr_error`, `simple_change`'s fields or None) of asking `d` of `part`."""
        shape = None if (part.removing_replicas or part.adding_replicas or part.elr or part.last_known_elr) else (
            part.replicas, part.directories, part.isr, part.leader, part.leader_recovery_state,
            d.new_isr_with_epochs, d.leader_recovery_state, min_isr, unclean)
        known = by_shape.get(shape) if shape is not None else None
        if known is None:
            name = _isr_error(image, part, d, registration)
            simple = None if name != "NONE" or d.leader_recovery_state != part.leader_recovery_state else (
                simple_change(part, [s.broker_id for s in d.new_isr_with_epochs], accept_in, min_isr=min_isr,
                              elr=elr, unclean=unclean, shrink_keeps_epoch=gates[2]))
            known = (name, simple)
            if shape is not None:
                by_shape[shape] = known
        return known

    for td in req.topics:
        topic = image.topics.get_topic(td.topic_id) if td.topic_id != Uuid.ZERO else None
        if topic is None:
            code = ApiError("UNKNOWN_TOPIC_ID").code
            topics_out.append(AlterPartitionTopicResult(td.topic_id, tuple(
                AlterPartitionResult(d.partition_index, code) for d in td.partitions)))
            continue
        parts_out = []
        min_isr, unclean = rules.for_election(topic, elr)
        for d in td.partitions:
            part = topic.partitions.get(d.partition_index)
            name, simple = _stale_error(req.broker_id, part, d), None
            if name == "NONE":
                assert part is not None
                name, simple = by_shape_of(part, d, min_isr, unclean)
            if name != "NONE":
                parts_out.append(AlterPartitionResult(d.partition_index, ApiError(name).code))
                continue
            assert part is not None
            if simple is not None:  # (the common shape: only the ISR changes, as the builder would write it)
                fields = simple if "isr" not in simple else {**simple, "isr": list(simple["isr"])}
                change = Payload(change_type, version, change_type.new(
                    partition_id=d.partition_index, topic_id=topic.id, **fields)) if simple else None
            else:
                b = PartitionChangeBuilder(ctx, mv, topic, d.partition_index, part, leader_acceptor(image, part),
                                           min_isr=min_isr, elr=elr, gates=gates)
                if unclean:
                    b.election = Election.UNCLEAN
                b.target_isr = [s.broker_id for s in d.new_isr_with_epochs]
                b.target_recovery_state = d.leader_recovery_state
                change = b.build()
            if change is not None:
                records.append(change)
                part = part.merge(change.message)
                leader = change.message.leader
                if leader != req.broker_id and leader != NO_LEADER_CHANGE:
                    parts_out.append(AlterPartitionResult(d.partition_index, ApiError("NEW_LEADER_ELECTED").code))
                    continue
            parts_out.append(AlterPartitionResult(d.partition_index, 0, part.leader, part.leader_epoch,
                                                  tuple(part.isr), part.leader_recovery_state, part.partition_epoch))
        topics_out.append(AlterPartitionTopicResult(td.topic_id, tuple(parts_out)))
    return accepted(records, AlterPartitionResponse(tuple(topics_out)), atomic=False)
