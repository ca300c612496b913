"""Topics and partitions: Kafka's ReplicationControlManager rules as pure decisions.

Every public function reads a `ControllerContext` (the committed image) and a request and
returns a `ControllerResult`; nothing here touches a log. The one place partition state
changes are worked out is `PartitionChangeBuilder`: it decides the new ISR, ELR, leader
and assignment of one partition and writes a PartitionChangeRecord holding only the
fields that change, at the record version the metadata.version allows. Cluster control
(fencing, unfencing, controlled shutdown, unregistration, offline directories) uses the
same builder through `leader_and_isr_updates`.

Kafka iterates partitions in Java hash-map order; kraftsim visits topics by name and
partitions by id, so the same request always gives the same records in the same order.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.controller.context import MIN_INSYNC_REPLICAS, ControllerContext, metadata_version_of, registry_of
from kraftsim.controller.result import NO_METADATA_VERSION, ControllerResult, accepted, payload, refused
from kraftsim.image import MetadataImage, PartitionRegistration, TopicImage
from kraftsim.image.cluster import BrokerRegistration
from kraftsim.image.configs import BROKER, TOPIC
from kraftsim.image.features import ELR_FEATURE
from kraftsim.image.intern import LOST, MIGRATING, UNASSIGNED
from kraftsim.image.partition import RECOVERED, RECOVERING
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.storage.formatter import random_uuid
from kraftsim.versions import MetadataVersion

NO_LEADER = -1
NO_LEADER_CHANGE = -2
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
#: Kafka's MAX_PARTITIONS_PER_BATCH for one CreateTopics request.
MAX_PARTITIONS_PER_BATCH = 10_000
#: Kafka's Topic.MAX_NAME_LENGTH.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

#: Kafka's default texts (Errors.message()) for errors the controller returns without one.
DEFAULT_MESSAGES = {
    "UNKNOWN_TOPIC_ID": "This server does not host this topic ID.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "ELECTION_NOT_NEEDED": "Leader election not needed for topic partition.",
    "PREFERRED_LEADER_NOT_AVAILABLE": "The preferred leader was not available.",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "Eligible topic partition leaders are not available.",
}


def default_error(name: str) -> ApiError:
    """Kafka's `new ApiError(error)`: the error with its default text."""
    return ApiError(name, DEFAULT_MESSAGES.get(name))


# --------------------------------------------------------------------------- context helpers


def is_active(image: MetadataImage, broker_id: int) -> bool:
    """Kafka's ClusterControlManager.isActive: registered, unfenced and not shutting down."""
    reg = image.cluster.broker(broker_id)
    return reg is not None and not reg.fenced and not reg.in_controlled_shutdown


def elr_enabled(ctx: ControllerContext, mv: MetadataVersion) -> bool:
    """Whether partitions track eligible leader replicas, as the catalog's line decides it
    (policy `elr_fields_gate`: the ELR feature on 4.x, the metadata.version before)."""
    if ctx.catalog.policy("elr_fields_gate") == "feature":
        return ctx.image.features.level(ELR_FEATURE) >= 1
    return ctx.catalog.supports("elr", mv)


def _config(ctx: ControllerContext, topic_name: str, key: str) -> str | None:
    """A topic config as the controller sees it: the topic's own value, else the
    cluster-level dynamic default (BROKER resource "")."""
    value = ctx.image.configs.config(TOPIC, topic_name).get(key)
    if value is None:
        value = ctx.image.configs.config(BROKER, "").get(key)
    return value


def effective_min_isr(ctx: ControllerContext, topic: TopicImage) -> int:
    """Kafka's getTopicEffectiveMinIsr: min.insync.replicas (topic, cluster, static), capped
    at the topic's replication factor."""
    value = _config(ctx, topic.name, MIN_INSYNC_REPLICAS)
    try:
        min_isr = int(value) if value is not None else ctx.config.min_insync_replicas
    except ValueError:
        min_isr = ctx.config.min_insync_replicas
    first = topic.partitions.get(0)
    if first is None and topic.partitions:
        first = topic.partitions[min(topic.partitions)]
    return min(min_isr, len(first.replicas)) if first is not None else min_isr


def unclean_election_enabled(ctx: ControllerContext, topic_name: str) -> bool:
    """unclean.leader.election.enable for the topic (topic, cluster default, else false)."""
    value = _config(ctx, topic_name, UNCLEAN_LEADER_ELECTION_ENABLE)
    return value is not None and value.strip().lower() == "true"


def default_dir(ctx: ControllerContext, mv: MetadataVersion, broker_id: int) -> Uuid:
    """The directory a new replica on `broker_id` gets (Kafka's ClusterDescriber.defaultDir):
    the broker's only directory, UNASSIGNED when it has several (the broker then picks and
    reports it), MIGRATING before directory assignment exists."""
    if not ctx.catalog.supports("directory_assignment", mv):
        return MIGRATING
    reg = ctx.image.cluster.broker(broker_id)
    if reg is None:
        return UNASSIGNED
    if not reg.directories:
        return MIGRATING
    if len(reg.directories) == 1:
        return reg.directories[0]
    return UNASSIGNED


def dir_is_online(reg: BrokerRegistration, directory: Uuid) -> bool:
    """Kafka's DirectoryId.isOnline against a broker's registered (online) directories."""
    if directory == UNASSIGNED or directory == MIGRATING:
        return True
    if directory == LOST:
        return False
    return not reg.directories or directory in reg.directories


def leader_acceptor(image: MetadataImage, partition: PartitionRegistration,
                    base: Callable[[int], bool] | None = None) -> Callable[[int], bool]:
    """Kafka's LeaderAcceptor: `base` (by default `is_active`) accepts the broker and the
    replica's directory is online."""
    dirs = dict(zip(partition.replicas, partition.directories))

    def accept(broker_id: int) -> bool:
        if not (is_active(image, broker_id) if base is None else base(broker_id)):
            return False
        reg = image.cluster.broker(broker_id)
        return reg is not None and dir_is_online(reg, dirs.get(broker_id, MIGRATING))

    return accept


def iter_partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    """Every partition: topics by name, partitions by id."""
    for topic in image.topics.sorted_topics():
        for pid, part in topic.sorted_partitions():
            yield topic, pid, part


def has_leaderships(image: MetadataImage, broker_id: int) -> bool:
    """Whether `broker_id` leads at least one partition."""
    return any(p.leader == broker_id for t in image.topics.by_id.values() for p in t.partitions.values())


# --------------------------------------------------------------------------- the builder


class Election(enum.Enum):
    """How a new leader may be chosen (Kafka's PartitionChangeBuilder.Election)."""

    PREFERRED = "preferred"  # the first replica if it is eligible, else keep the partition online
    ONLINE = "online"  # any eligible replica (ISR, or ELR when the ISR is empty)
    UNCLEAN = "unclean"  # as ONLINE, else any live replica, accepting data loss


def _complete_reassignment(replicas: list[int], isr: list[int], removing: list[int],
                           adding: list[int]) -> tuple[list[int], list[int]] | None:
    """(replicas, isr) once a reassignment can complete: every adding replica is in the ISR
    that remains after the removing replicas leave it."""
    if not removing and not adding:
        return None
    new_isr = [r for r in isr if r not in removing]
    new_replicas = [r for r in replicas if r not in removing]
    if not new_isr or not new_replicas or not set(adding) <= set(new_isr):
        return None
    return new_replicas, new_isr


def java_int_set_order(*groups: Iterable[int]) -> list[int]:
    """The iteration order of a Java HashSet<Integer> built from `groups[0]` and then added
    to from each later group: by bucket of the spread hash, ties in insertion order.
    Kafka builds ELR lists this way, so kraftsim lists them in the same order."""
    first = list(groups[0]) if groups else []
    cap = 1
    while cap < max(int(len(first) / 0.75) + 1, 16):
        cap <<= 1
    seen: dict[int, int] = {}
    for group in (first, *groups[1:]):
        for v in group:
            if v not in seen:
                seen[v] = len(seen)
                while len(seen) > cap * 0.75:
                    cap <<= 1

    def bucket(v: int) -> int:
        h = v & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(seen, key=lambda v: (bucket(v), seen[v]))


class PartitionChangeBuilder:
    """Works out one partition's next state and the PartitionChangeRecord that gets there.

    Set targets (`target_isr`, `target_replicas`, ...), the election type and the brokers
    whose shutdown was unclean, then call `build()`. The record carries only the fields
    that change and only fields that exist at the record version of the metadata.version;
    `build()` returns None when nothing changes.
    """

    def __init__(self, ctx: ControllerContext, mv: MetadataVersion, topic: TopicImage, partition_id: int,
                 partition: PartitionRegistration, acceptable: Callable[[int], bool], *,
                 min_isr: int | None = None, elr: bool | None = None):
        self.ctx = ctx
        self.mv = mv
        self.topic = topic
        self.partition_id = partition_id
        self.partition = partition
        self.acceptable = acceptable
        self.min_isr = effective_min_isr(ctx, topic) if min_isr is None else min_isr
        self.elr = elr_enabled(ctx, mv) if elr is None else elr
        self.version = ctx.catalog.record_version("PartitionChangeRecord", mv)
        self.election = Election.ONLINE
        self.unclean_shutdown: tuple[int, ...] = ()
        self.target_isr = list(partition.isr)
        self.target_replicas = list(partition.replicas)
        self.target_removing = list(partition.removing_replicas)
        self.target_adding = list(partition.adding_replicas)
        self.target_elr = list(partition.elr)
        self.target_last_known_elr = list(partition.last_known_elr)
        self.target_recovery_state = partition.leader_recovery_state
        self.target_dirs = dict(zip(partition.replicas, partition.directories))

    # --- the steps of build(), in Kafka's order

    def _populate_target_elr(self) -> None:
        if not self.elr:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr, self.target_last_known_elr = [], []
            return
        isr = set(self.target_isr)
        old_elr = self.target_elr
        candidates = java_int_set_order(old_elr, self.partition.isr)
        self.target_elr = [r for r in candidates if r not in isr and r not in self.unclean_shutdown]
        candidates = java_int_set_order(old_elr, self.partition.isr, self.target_last_known_elr)
        elr = set(self.target_elr)
        self.target_last_known_elr = [r for r in candidates if r not in isr and r not in elr]

    def _valid_new_leader(self, replica: int) -> bool:
        eligible = replica in self.target_isr or (not self.target_isr and replica in self.target_elr)
        return eligible and self.acceptable(replica)

    def _can_elect_last_known_leader(self) -> bool:
        # Kafka 4.1+ (KAFKA-19522): only a live last known leader, never a fenced one.
        last = self.partition.last_known_elr
        return (self.elr and not self.target_elr and not self.target_isr and len(last) == 1
                and self.acceptable(last[0]))

    def _elect(self) -> tuple[int, bool]:
        """(leader, unclean)."""
        current = self.partition.leader
        if self.election is Election.PREFERRED:
            preferred = self.target_replicas[0] if self.target_replicas else NO_LEADER
            if self.target_replicas and self._valid_new_leader(preferred):
                return preferred, False
            if self._valid_new_leader(current):
                return current, False
            for r in self.target_replicas[1:]:
                if self._valid_new_leader(r):
                    return r, False
            if self._can_elect_last_known_leader():
                return self.partition.last_known_elr[0], True
            return NO_LEADER, False
        if self._valid_new_leader(current):
            return current, False
        for r in self.target_replicas:
            if self._valid_new_leader(r):
                return r, False
        if self._can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
        if self.election is Election.UNCLEAN:
            for r in self.target_replicas:
                if self.acceptable(r):
                    return r, True
        return NO_LEADER, False

    def _try_election(self, rec: dict) -> None:
        leader, unclean = self._elect()
        if leader == self.partition.leader:
            return
        if leader in self.target_elr:
            self.target_isr = [leader]
            self.target_elr = [r for r in self.target_elr if r != leader]
        rec["leader"] = leader
        if unclean:
            rec["isr"] = [leader]
            if self.partition.leader_recovery_state != RECOVERING:
                rec["leader_recovery_state"] = RECOVERING

    def _update_record_elr(self, rec: dict) -> None:
        if "isr" in rec or not self.elr:  # an unclean election, or ELR off: ELR is cleared
            self.target_elr, self.target_last_known_elr = [], []
        if self.target_elr != list(self.partition.elr):
            rec["eligible_leader_replicas"] = self.target_elr
        # LastKnownElr holds the last known leader (useLastKnownLeaderInBalancedRecovery,
        # on by default): it is written by _update_last_known_leader only.

    def _update_last_known_leader(self, rec: dict) -> None:
        if not self.elr:
            return
        p = self.partition
        leader = rec.get("leader", NO_LEADER_CHANGE)
        isr = rec.get("isr")
        if isr is not None and not isr and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader):
            rec["last_known_elr"] = [p.leader]  # the partition just became leaderless
        elif (leader >= 0 or (p.leader != NO_LEADER and leader != NO_LEADER)) and p.last_known_elr:
            rec["last_known_elr"] = []  # it has, or keeps, a leader

    def _set_assignment_changes(self, rec: dict) -> None:
        p = self.partition
        if self.target_replicas:
            if self.ctx.catalog.supports("directory_assignment", self.mv):
                dirs = [self.target_dirs.get(r) or default_dir(self.ctx, self.mv, r) for r in self.target_replicas]
                if dirs != list(p.directories):
                    rec["directories"] = dirs
            if self.target_replicas != list(p.replicas):
                rec["replicas"] = self.target_replicas
        if self.target_removing != list(p.removing_replicas):
            rec["removing_replicas"] = self.target_removing
        if self.target_adding != list(p.adding_replicas):
            rec["adding_replicas"] = self.target_adding

    def build(self) -> Payload | None:
        """The PartitionChangeRecord that moves the partition to its targets, or None."""
        p = self.partition
        rec: dict = {}
        done = _complete_reassignment(self.target_replicas, self.target_isr, self.target_removing,
                                      self.target_adding)
        if done is not None:
            self.target_replicas, self.target_isr = done
            self.target_removing, self.target_adding = [], []
        self._populate_target_elr()
        self._try_election(rec)
        if "leader" not in rec and not set(p.replicas) <= set(self.target_replicas):
            rec["leader"] = p.leader  # a replica leaves: bump the leader epoch
        self._update_record_elr(rec)
        # With ELR on, the ISR may become empty.
        if "isr" not in rec and (self.target_isr or self.elr) and self.target_isr != list(p.isr):
            rec["isr"] = self.target_isr
        if (not self.ctx.catalog.supports("isr_shrink_without_leader_epoch_bump", self.mv)
                and "leader" not in rec and rec.get("isr") is not None and not set(p.isr) <= set(rec["isr"])):
            rec["leader"] = p.leader  # before 3.6-IV0 an ISR shrink bumps the leader epoch (KAFKA-15021)
        self._update_last_known_leader(rec)
        self._set_assignment_changes(rec)
        if self.target_recovery_state != p.leader_recovery_state:
            rec["leader_recovery_state"] = self.target_recovery_state
        if self.version < 2:
            rec.pop("eligible_leader_replicas", None)
            rec.pop("last_known_elr", None)
        if self.version < 1:
            rec.pop("directories", None)
        if not rec:
            return None
        return payload(registry_of(self.ctx), "PartitionChangeRecord", self.version,
                       partition_id=self.partition_id, topic_id=self.topic.id, **rec)


# --------------------------------------------------------------------------- shared helpers


def leader_and_isr_updates(ctx: ControllerContext, mv: MetadataVersion,
                           partitions: Iterable[tuple[TopicImage, int, PartitionRegistration]], *,
                           broker_to_remove: int = NO_LEADER, broker_to_add: int = NO_LEADER,
                           unclean_shutdown_broker: int = NO_LEADER) -> list[Payload]:
    """Kafka's generateLeaderAndIsrUpdates: for each partition, take `broker_to_remove` and
    `unclean_shutdown_broker` out of the ISR and elect a leader among the acceptable
    brokers (active ones, plus `broker_to_add` even while still fenced, never
    `broker_to_remove`), with unclean election where the topic allows it."""
    image = ctx.image
    elr = elr_enabled(ctx, mv)
    out: list[Payload] = []
    min_isr_cache: dict[bytes, int] = {}
    unclean_cache: dict[str, bool] = {}

    def base(r: int) -> bool:
        return r != broker_to_remove and (r == broker_to_add or is_active(image, r))

    for topic, pid, part in partitions:
        if topic.id not in min_isr_cache:
            min_isr_cache[topic.id] = effective_min_isr(ctx, topic)
            unclean_cache[topic.name] = unclean_election_enabled(ctx, topic.name)
        b = PartitionChangeBuilder(ctx, mv, topic, pid, part, leader_acceptor(image, part, base),
                                   min_isr=min_isr_cache[topic.id], elr=elr)
        if unclean_cache[topic.name]:
            b.election = Election.UNCLEAN
        if unclean_shutdown_broker != NO_LEADER:
            b.unclean_shutdown = (unclean_shutdown_broker,)
        b.target_isr = [r for r in part.isr if r != broker_to_remove and r != unclean_shutdown_broker]
        change = b.build()
        if change is not None:
            out.append(change)
    return out


def partitions_with_isr_member(image: MetadataImage, broker_id: int):
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if broker_id in p.isr]


def partitions_with_elr_member(image: MetadataImage, broker_id: int):
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if broker_id in p.elr]


def leaderless_partitions(image: MetadataImage):
    return [(t, pid, p) for t, pid, p in iter_partitions(image) if p.leader == NO_LEADER]


def remove_from_isrs(ctx: ControllerContext, mv: MetadataVersion, broker_id: int, *,
                     include_elr: bool = False) -> list[Payload]:
    """Take `broker_id` out of every ISR it is in (fencing, controlled shutdown), and with
    `include_elr` also re-examine the partitions whose ELR holds it (unregistration).

    With ELR on, a replica that leaves an ISR which falls below min.insync.replicas moves
    to the ELR; a partition left without an eligible leader gets leader -1."""
    out = leader_and_isr_updates(ctx, mv, partitions_with_isr_member(ctx.image, broker_id),
                                 broker_to_remove=broker_id)
    if include_elr:
        out += leader_and_isr_updates(ctx, mv, partitions_with_elr_member(ctx.image, broker_id),
                                      broker_to_remove=broker_id)
    return out


def shutdown_cleanup(ctx: ControllerContext, mv: MetadataVersion, broker_id: int,
                     clean_shutdown: bool) -> list[Payload]:
    """Kafka's handleBrokerShutdown, run when a new incarnation of a broker registers: with
    ELR on and an unclean shutdown, the broker leaves every ISR and ELR; otherwise it
    leaves the ISRs as if fenced."""
    if elr_enabled(ctx, mv) and not clean_shutdown:
        image = ctx.image
        return (leader_and_isr_updates(ctx, mv, partitions_with_isr_member(image, broker_id),
                                       unclean_shutdown_broker=broker_id)
                + leader_and_isr_updates(ctx, mv, partitions_with_elr_member(image, broker_id),
                                         unclean_shutdown_broker=broker_id))
    return remove_from_isrs(ctx, mv, broker_id)


def elect_for_unfenced(ctx: ControllerContext, mv: MetadataVersion, broker_id: int) -> list[Payload]:
    """Leader elections for leaderless partitions once `broker_id` is unfenced."""
    return leader_and_isr_updates(ctx, mv, leaderless_partitions(ctx.image), broker_to_add=broker_id)


def partitions_in_directories(image: MetadataImage, broker_id: int, directories: Iterable[Uuid]):
    """Partitions whose replica on `broker_id` is assigned to one of `directories`."""
    wanted = set(directories)
    out = []
    for t, pid, p in iter_partitions(image):
        for r, d in zip(p.replicas, p.directories):
            if r == broker_id and d in wanted:
                out.append((t, pid, p))
                break
    return out


# --------------------------------------------------------------------------- topic names


def topic_name_error(name: str) -> str | None:
    """Kafka's Topic.validate text for an illegal topic name, None when it is legal."""
    prefix = "Topic name"
    if not name:
        return f"{prefix} is illegal, it can't be empty"
    if name in (".", ".."):
        return f'{prefix} cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"{prefix} is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, {prefix}: {name}"
    if not set(name) <= _LEGAL_TOPIC_CHARS:
        return f"{prefix} \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


# --------------------------------------------------------------------------- replica placement


class InvalidReplicationFactor(Exception):
    """Raised by `place_replicas` with Kafka's StripedReplicaPlacer text."""


@dataclass(frozen=True)
class UsableBroker:
    id: int
    rack: str | None
    fenced: bool


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """Registered brokers not in controlled shutdown and with a log directory that is not
    cordoned (KIP-1066), by id."""
    return [UsableBroker(b.id, b.rack, b.fenced) for b in image.cluster.sorted_brokers()
            if not b.in_controlled_shutdown and not b.all_directories_cordoned]


def _rack_alternated(by_rack: dict[str, list[UsableBroker]]) -> list[UsableBroker]:
    """Brokers ordered rack by rack in turn (racks sorted, brokers by id within a rack)."""
    lanes = [by_rack[r] for r in sorted(by_rack)]
    out: list[UsableBroker] = []
    for i in range(max((len(lane) for lane in lanes), default=0)):
        out += [lane[i] for lane in lanes if i < len(lane)]
    return out


def _follower_index(first: int, shift: int, j: int, n: int) -> int:
    """The j-th follower position after `first` at `shift` (never `first` itself)."""
    return (first + 1 + (shift + j) % (n - 1)) % n


class _RackCursors:
    """One round-robin cursor per rack, each starting at an offset drawn from `rng`."""

    def __init__(self, by_rack: dict[str, list[UsableBroker]], rng: random.Random):
        self.by_rack = by_rack
        self.pos = {r: rng.randrange(len(lane)) for r, lane in sorted(by_rack.items())}

    def take(self, rack: str, chosen: list[UsableBroker]) -> UsableBroker | None:
        lane = self.by_rack[rack]
        for i in range(len(lane)):
            b = lane[(self.pos[rack] + i) % len(lane)]
            if b not in chosen:
                self.pos[rack] = (self.pos[rack] + i + 1) % len(lane)
                return b
        return None


def place_replicas(brokers: Sequence[UsableBroker], num_partitions: int, replication_factor: int,
                   rng: random.Random) -> list[list[int]]:
    """Deterministic, balanced replica placement.

    Leaders go round robin over the unfenced brokers (racks alternating) from a start
    index drawn from `rng`. Without racks, followers follow at a shift that grows every
    full round (Kafka's classic assignment), so leaders and replicas spread evenly. With
    racks, a partition's followers come from the other racks first, each rack handing out
    its brokers round robin, and the order of those racks rotates every round; so every
    partition spans as many racks as it can and brokers of a rack share its load evenly.
    Fenced brokers are used only when there are not enough unfenced ones, and never as
    the first replica.
    """
    if replication_factor <= 0:
        raise InvalidReplicationFactor(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive.")
    by_rack: dict[str, list[UsableBroker]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        if not b.fenced:
            by_rack.setdefault(b.rack or "", []).append(b)
    unfenced = _rack_alternated(by_rack)
    fenced = sorted((b for b in brokers if b.fenced), key=lambda b: b.id)
    if not unfenced:
        raise InvalidReplicationFactor("All brokers are currently fenced.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered.")
    n = len(unfenced)
    racks = sorted(by_rack)
    start, shift = rng.randrange(n), rng.randrange(n)
    cursors = _RackCursors(by_rack, rng)
    take = min(replication_factor, n)
    out: list[list[int]] = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = unfenced[first]
        chosen = [leader]
        if len(racks) == 1:
            chosen += [unfenced[_follower_index(first, shift, j, n)] for j in range(take - 1)]
        else:
            li = racks.index(leader.rack or "")
            others = [racks[(li + 1 + j) % len(racks)] for j in range(len(racks) - 1)]
            turn = shift % len(others)
            order = others[turn:] + others[:turn] + [racks[li]]
            while len(chosen) < take:
                for rack in order:
                    if len(chosen) == take:
                        break
                    b = cursors.take(rack, chosen)
                    if b is not None:
                        chosen.append(b)
        replicas = [b.id for b in chosen]
        replicas += [fenced[(p + k) % len(fenced)].id for k in range(replication_factor - take)]
        out.append(replicas)
    return out


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


def _new_topic_id(seed: int, name: str, taken: set[bytes]) -> Uuid:
    rng = random.Random(f"kraftsim-topic-id:{seed}:{name}")
    while True:
        u = random_uuid(rng)
        if u not in taken:
            return u


def _manual_assignment_error(image: MetadataImage, broker_ids: Sequence[int], rf: int | None) -> ApiError | None:
    if not broker_ids:
        return ApiError("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list.")
    prev = None
    for b in sorted(broker_ids):
        if image.cluster.broker(b) is None:
            return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {b}, "
                                                          "but no such broker is registered.")
        if b == prev:
            return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes the broker "
                                                          f"{prev} more than once.")
        prev = b
    if rf is not None and len(broker_ids) != rf:
        return ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes a partition with "
                                                      f"{len(broker_ids)} replica(s), but this is not consistent with "
                                                      f"previous partitions, which have {rf} replica(s).")
    return None


def _plan_partitions(ctx: ControllerContext, topic: CreatableTopic,
                     seed: int) -> tuple[list[tuple[list[int], list[int]]], ApiError]:
    """[(replicas, isr)] by partition id, or the topic's error."""
    image = ctx.image
    parts: dict[int, tuple[list[int], list[int]]] = {}
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
            err = _manual_assignment_error(image, a.broker_ids, rf)
            if err is not None:
                return [], err
            rf = len(a.broker_ids)
            isr = [b for b in a.broker_ids if is_active(image, b)]
            if not isr:
                return [], ApiError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition "
                                                                  f"assignment for partition {a.partition_index} are "
                                                                  "fenced or in controlled shutdown.")
            parts[a.partition_index] = (list(a.broker_ids), isr)
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
        placement = place_replicas(usable_brokers(image), num, rf, rng)
    except InvalidReplicationFactor as e:
        return [], ApiError("INVALID_REPLICATION_FACTOR", f"Unable to replicate the partition {rf} time(s): {e}")
    out = []
    for replicas in placement:
        isr = [b for b in replicas if is_active(image, b)]
        if not isr:
            return [], ApiError("INVALID_REPLICATION_FACTOR", f"Unable to replicate the partition {rf} time(s): All "
                                                              "brokers are currently fenced or in controlled shutdown.")
        out.append((replicas, isr))
    return out, NONE


def _requested_partitions(ctx: ControllerContext, topic: CreatableTopic) -> int:
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return ctx.config.num_partitions
    return max(topic.num_partitions, 0)


def create_topics(ctx: ControllerContext, req: CreateTopicsRequest) -> ControllerResult:
    """Kafka's CreateTopics: per topic, its name, existence, configs, partitions and
    placement are checked; each created topic writes TopicRecord, its ConfigRecords, then
    one PartitionRecord per partition. All records commit atomically; per-topic errors
    are in the response."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    if sum(_requested_partitions(ctx, t) for t in req.topics) > MAX_PARTITIONS_PER_BATCH:
        return refused(ApiError("POLICY_VIOLATION", "Excessively large number of partitions per request."))
    image = ctx.image
    reg = registry_of(ctx)
    errors: dict[str, ApiError] = {}
    counts: dict[str, int] = {}
    for t in req.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    for name, n in counts.items():
        if n > 1:
            errors[name] = ApiError("INVALID_REQUEST", "Duplicate topic name.")
    existing_collisions: dict[str, str] = {}
    for t in image.topics.sorted_topics():
        existing_collisions.setdefault(_collision_key(t.name), t.name)
    for t in req.topics:
        if t.name in errors:
            continue
        text = topic_name_error(t.name)
        if text is not None:
            errors[t.name] = ApiError("INVALID_TOPIC_EXCEPTION", text)
        if ("." in t.name or "_" in t.name) and _collision_key(t.name) in existing_collisions:
            errors[t.name] = ApiError("INVALID_TOPIC_EXCEPTION", f"Topic '{t.name}' collides with existing topic: "
                                                                 f"{existing_collisions[_collision_key(t.name)]}")
    for t in req.topics:
        if image.topics.get_topic_by_name(t.name) is not None and counts[t.name] == 1:
            errors[t.name] = ApiError("TOPIC_ALREADY_EXISTS", f"Topic '{t.name}' already exists.")
    for t in req.topics:
        if t.name in errors:
            continue
        nulls = [c.name for c in t.configs if c.value is None]
        if nulls:
            errors[t.name] = ApiError("INVALID_CONFIG", f"Null value not supported for topic configs: {','.join(nulls)}")

    elr = elr_enabled(ctx, mv)
    pr_version = ctx.catalog.record_version("PartitionRecord", mv)
    taken = {bytes(tid) for tid in image.topics.by_id}
    records: list[Payload] = []
    results: dict[str, CreatableTopicResult] = {}
    for t in req.topics:
        if t.name in errors:
            continue
        plan, err = _plan_partitions(ctx, t, req.seed)
        if not err.ok:
            errors[t.name] = err
            continue
        tid = _new_topic_id(req.seed, t.name, taken)
        taken.add(bytes(tid))
        results[t.name] = CreatableTopicResult(t.name, tid, num_partitions=len(plan),
                                               replication_factor=len(plan[0][0]))
        records.append(payload(reg, "TopicRecord", 0, name=t.name, topic_id=tid))
        configs = {c.name: c.value for c in t.configs}
        for key, value in configs.items():
            records.append(payload(reg, "ConfigRecord", 0, resource_type=TOPIC, resource_name=t.name, name=key,
                                   value=value))
        if elr and MIN_INSYNC_REPLICAS in configs:
            records.append(payload(reg, "ClearElrRecord", 0, topic_name=t.name))
        for pid, (replicas, isr) in enumerate(plan):
            fields: dict = dict(partition_id=pid, topic_id=tid, replicas=replicas, isr=isr, leader=isr[0],
                                leader_recovery_state=RECOVERED, leader_epoch=0, partition_epoch=0)
            if pr_version >= 1:
                fields["directories"] = [default_dir(ctx, mv, b) for b in replicas]
            records.append(payload(reg, "PartitionRecord", pr_version, **fields))
    out = []
    for t in req.topics:
        if any(r.name == t.name for r in out):
            continue  # a repeated name is answered once
        e = errors.get(t.name)
        if e is not None:
            out.append(CreatableTopicResult(t.name, error_code=e.code, error_message=e.message))
        elif t.name in results:
            out.append(results[t.name])
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


def _alter_partition_error(image: MetadataImage, broker_id: int, part: PartitionRegistration | None,
                           data: AlterPartitionData) -> str:
    """Kafka's validateAlterPartitionData: an error name, NONE when the change is valid."""
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
        reg = image.cluster.broker(s.broker_id)
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
    for td in req.topics:
        topic = image.topics.get_topic(td.topic_id) if td.topic_id != Uuid.ZERO else None
        if topic is None:
            code = ApiError("UNKNOWN_TOPIC_ID").code
            topics_out.append(AlterPartitionTopicResult(td.topic_id, tuple(
                AlterPartitionResult(d.partition_index, code) for d in td.partitions)))
            continue
        parts_out = []
        for d in td.partitions:
            part = topic.partitions.get(d.partition_index)
            name = _alter_partition_error(image, req.broker_id, part, d)
            if name != "NONE":
                parts_out.append(AlterPartitionResult(d.partition_index, ApiError(name).code))
                continue
            assert part is not None
            b = PartitionChangeBuilder(ctx, mv, topic, d.partition_index, part, leader_acceptor(image, part), elr=elr)
            if unclean_election_enabled(ctx, topic.name):
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


# --------------------------------------------------------------------------- ElectLeaders

PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


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
    unclean (any live replica for a leaderless partition). Non-atomic, as in Kafka."""
    mv = metadata_version_of(ctx)
    if mv is None:
        return refused(NO_METADATA_VERSION)
    if req.election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        return refused(ApiError("INVALID_REQUEST", f"Unknown election type {req.election_type}"))
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
    return accepted(records, ElectLeadersResponse(tuple(results)), atomic=False)
