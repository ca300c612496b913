"""One partition's next state: Kafka's PartitionChangeBuilder and the context it reads.

`PartitionChangeBuilder` is the one place partition state changes are worked out: it
decides the new ISR, ELR, leader and assignment of one partition and writes a
PartitionChangeRecord holding only the fields that change, at the record version the
metadata.version allows. The helpers before it read the committed image (live brokers,
min.insync.replicas, unclean election, default directories).
"""

from __future__ import annotations

import enum
from typing import Callable, Iterable, Iterator, Mapping, TypedDict

from kraftsim.controller.context import (
    MIN_INSYNC_REPLICAS,
    ControllerContext,
    registry_of,
)
from kraftsim.controller.result import payload
from kraftsim.image import (
    BROKER,
    ELR_FEATURE,
    RECOVERING,
    TOPIC,
    BrokerRegistration,
    ConfigurationsImage,
    NO_LEADER,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from kraftsim.image.intern import LOST, MIGRATING, UNASSIGNED
from kraftsim.javacompat import int_set_order as java_int_set_order  # Kafka builds ELR lists in a HashSet
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import MetadataVersion

NO_LEADER_CHANGE = -2
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


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


def _node_defaults(ctx: ControllerContext) -> Mapping[str, str]:
    """The dynamic broker-level configs that stand in for a topic's own: the active
    controller's (BROKER resource of its id) over the cluster's (BROKER resource "")."""
    configs = ctx.image.configs
    cluster, own = configs.config(BROKER, ""), configs.config(BROKER, str(ctx.node_id))
    return {**cluster, **own} if own else cluster


def _config(ctx: ControllerContext, topic_name: str, key: str) -> str | None:
    """A topic config as the controller sees it (KafkaConfigSchema.resolveEffectiveTopicConfig):
    the topic's own value, else the active controller's dynamic one, else the cluster's."""
    value = ctx.image.configs.config(TOPIC, topic_name).get(key)
    if value is None:
        value = _node_defaults(ctx).get(key)
    return value


def _replication_factor(topic: TopicImage) -> int | None:
    """The replica count of the topic's first partition (None: it has none)."""
    first = topic.partitions.get(0)
    if first is None and topic.partitions:
        first = topic.partitions[min(topic.partitions)]
    return len(first.replicas) if first is not None else None


def _configured_min_isr(ctx: ControllerContext, value: str | None) -> int:
    try:
        return int(value) if value is not None else ctx.config.min_insync_replicas
    except ValueError:
        return ctx.config.min_insync_replicas


def _min_isr(ctx: ControllerContext, topic: TopicImage, value: str | None) -> int:
    min_isr = _configured_min_isr(ctx, value)
    rf = _replication_factor(topic)
    return min(min_isr, rf) if rf is not None else min_isr


def _is_true(value: str | None) -> bool:
    """Java's Boolean.parseBoolean: "true" in any case, nothing around it."""
    return value is not None and value.lower() == "true"


def unclean_config_read(ctx: ControllerContext) -> bool:
    """Whether the controller's release reads unclean.leader.election.enable at all (policy
    `unclean_election_config`: from 3.9; before, it never elects uncleanly by itself)."""
    return ctx.catalog.policy("unclean_election_config") == "honoured"


def effective_min_isr(ctx: ControllerContext, topic: TopicImage) -> int:
    """Kafka's getTopicEffectiveMinIsr: min.insync.replicas (topic, cluster, static), capped
    at the topic's replication factor."""
    return _min_isr(ctx, topic, _config(ctx, topic.name, MIN_INSYNC_REPLICAS))


def unclean_election_enabled(ctx: ControllerContext, topic_name: str) -> bool:
    """unclean.leader.election.enable for the topic (topic, controller, cluster, else false),
    from 3.9; false before (see `unclean_config_read`)."""
    return unclean_config_read(ctx) and _is_true(_config(ctx, topic_name, UNCLEAN_LEADER_ELECTION_ENABLE))


class TopicRules:
    """`effective_min_isr` and `unclean_election_enabled` of many topics in one decision:
    the cluster-level defaults are read once, and each topic's own configs only when it has
    some (a broker event asks them of every topic it touches)."""

    def __init__(self, ctx: ControllerContext):
        self.ctx = ctx
        self.cluster = _node_defaults(ctx)
        self._configured = _topics_with_configs(ctx.image.configs)
        self._default_min_isr = _configured_min_isr(ctx, self.cluster.get(MIN_INSYNC_REPLICAS))
        self._unclean_read = unclean_config_read(ctx)
        self._default_unclean = self._unclean_read and _is_true(self.cluster.get(UNCLEAN_LEADER_ELECTION_ENABLE))
        self._known: dict[Uuid, tuple[int, bool]] = {}

    def of(self, topic: TopicImage) -> tuple[int, bool]:
        """(min ISR, unclean election) of `topic`."""
        known = self._known.get(topic.id)
        if known is None:
            if topic.name in self._configured:
                own = self.ctx.image.configs.config(TOPIC, topic.name)
                cluster = self.cluster
                min_isr = own.get(MIN_INSYNC_REPLICAS)
                unclean = own.get(UNCLEAN_LEADER_ELECTION_ENABLE)
                known = (
                    _min_isr(self.ctx, topic, cluster.get(MIN_INSYNC_REPLICAS) if min_isr is None else min_isr),
                    self._unclean_read
                    and _is_true(cluster.get(UNCLEAN_LEADER_ELECTION_ENABLE) if unclean is None else unclean))
            else:
                rf = _replication_factor(topic)
                known = (self._default_min_isr if rf is None else min(self._default_min_isr, rf),
                         self._default_unclean)
            self._known[topic.id] = known
        return known

    def cluster_unclean(self) -> tuple[frozenset[str], bool]:
        """(the names of the topics with configs of their own, the unclean election of every
        other topic): `unclean` of many topics without a call per topic."""
        return self._configured, self._default_unclean

    def unclean(self, topic: TopicImage) -> bool:
        """`of(topic)[1]` without the min ISR (which only ELR reads)."""
        return self._default_unclean if topic.name not in self._configured else self.of(topic)[1]

    def for_election(self, topic: TopicImage, elr: bool) -> tuple[int, bool]:
        """`of(topic)`, with the min ISR only where ELR is on (it alone reads it): 0 otherwise."""
        return self.of(topic) if elr else (0, self.unclean(topic))


#: The configs image `_topics_with_configs` last answered for, and its answer.
_configured_topics: list[tuple[ConfigurationsImage, frozenset[str]]] = []


def _topics_with_configs(configs: ConfigurationsImage) -> frozenset[str]:
    """The names of the topics that have configs of their own. Remembered for the last
    configs image asked (configs change seldom; topic rules are asked on every broker event)."""
    for seen, names in _configured_topics:
        if seen is configs:
            return names
    names = frozenset(name for rtype, name in configs.resources if rtype == TOPIC)
    _configured_topics[:] = [(configs, names)]
    return names


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


#: A partition with its topic and id, as iter_partitions gives it.
PartitionAt = tuple[TopicImage, int, PartitionRegistration]


def iter_partitions(image: MetadataImage) -> Iterator[PartitionAt]:
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


def _complete_reassignment(replicas: list[int], isr: list[int], removing: list[int], adding: list[int],
                           rule: str = "all-in-isr") -> tuple[list[int], list[int]] | None:
    """(replicas, isr) once a reassignment can complete, by the release's rule (policy
    `reassignment_completion`): the ISR without the removing replicas holds every adding
    replica ("adding-in-isr"), every target replica ("all-in-isr"), or the adding ones and,
    when more replicas leave than join, every target replica ("all-in-isr-when-shrinking")."""
    if not removing and not adding:
        return None
    new_isr = [r for r in isr if r not in removing]
    new_replicas = [r for r in replicas if r not in removing]
    if not new_isr or not new_replicas:
        return None
    in_isr = set(new_isr)
    if rule == "all-in-isr":
        done = in_isr.issuperset(new_replicas)
    else:
        done = in_isr.issuperset(adding) and (
            rule == "adding-in-isr" or len(adding) >= len(removing) or in_isr.issuperset(new_replicas))
    return (new_replicas, new_isr) if done else None


def _kept_in_set_order(groups: tuple[Iterable[int], ...], keep: Callable[[int], bool]) -> list[int]:
    """The replicas of `groups` that `keep` accepts, in the order of the HashSet Kafka copies
    them into (java_int_set_order); with one replica or none, no order to work out."""
    kept = {r for g in groups for r in g if keep(r)}
    if len(kept) <= 1:
        return list(kept)
    return [r for r in java_int_set_order(*groups) if keep(r)]


#: What a builder reads from the catalog at one metadata.version: the PartitionChangeRecord
#: version, whether replicas have directories, whether an ISR shrink keeps the leader epoch.
BuilderGates = tuple[int, bool, bool]


def builder_gates(ctx: ControllerContext, mv: MetadataVersion) -> BuilderGates:
    """The catalog's answers every builder at `mv` asks (worked out once for many partitions)."""
    catalog = ctx.catalog
    return (catalog.record_version("PartitionChangeRecord", mv), catalog.supports("directory_assignment", mv),
            catalog.supports("isr_shrink_without_leader_epoch_bump", mv))


class ChangeFields(TypedDict, total=False):
    """The fields of a PartitionChangeRecord that change (a field left out: no change)."""

    leader: int
    isr: list[int]
    eligible_leader_replicas: list[int]
    last_known_elr: list[int]
    replicas: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader_recovery_state: int
    directories: list[Uuid]


def simple_change(partition: PartitionRegistration, target_isr: list[int],
                  acceptable: Callable[[int, Uuid], bool], *, min_isr: int, elr: bool, unclean: bool,
                  shrink_keeps_epoch: bool) -> ChangeFields | None:
    """The fields `PartitionChangeBuilder.build()` writes when only the ISR shrinks to
    `target_isr` and the leader stays or moves to an ISR member (or, with ELR off and
    without unclean election, an emptied ISR leaves the partition leaderless and the ISR as
    it was), or None when the partition is not that simple (the builder must decide).

    Why: a broker event changes up to every partition the broker replicates, and nearly all
    of them are this shape (no reassignment, no ELR or last known leader, an ISR left at or
    above min.insync.replicas); the builder's general steps cost several times more.
    `acceptable(replica, its directory)` is the builder's leader acceptor. An empty result:
    no change.
    """
    p = partition
    if p.removing_replicas or p.adding_replicas or p.elr or p.last_known_elr:
        return None
    replicas, dirs = p.replicas, p.directories
    if len(dirs) != len(replicas) or len(set(replicas)) != len(replicas):
        return None  # (directories the builder would rewrite)
    leader = p.leader
    if not target_isr:
        if elr or unclean:
            return None  # the ELR or an unclean election may give a leader
        return {} if leader == NO_LEADER else {"leader": NO_LEADER}  # (without ELR the ISR is never emptied)
    if elr and len(target_isr) < min_isr:
        return None
    new_leader = NO_LEADER
    if leader in target_isr and acceptable(leader, dirs[replicas.index(leader)] if leader in replicas else MIGRATING):
        new_leader = leader
    else:
        for r, d in zip(replicas, dirs):
            if r in target_isr and acceptable(r, d):
                new_leader = r
                break
        else:
            return None  # no ISR member can lead: the builder's other elections
    rec: ChangeFields = {}
    if new_leader != leader:
        rec["leader"] = new_leader
    if tuple(target_isr) != p.isr:
        rec["isr"] = target_isr
        if not shrink_keeps_epoch and "leader" not in rec and not set(p.isr) <= set(target_isr):
            rec["leader"] = leader  # before 3.6-IV0 an ISR shrink bumps the leader epoch (KAFKA-15021)
    return rec


class PartitionChangeBuilder:
    """Works out one partition's next state and the PartitionChangeRecord that gets there.

    Set targets (`target_isr`, `target_replicas`, ...), the election type and the brokers
    whose shutdown was unclean, then call `build()`. The record carries only the fields
    that change and only fields that exist at the record version of the metadata.version;
    `build()` returns None when nothing changes.
    """

    def __init__(self, ctx: ControllerContext, mv: MetadataVersion, topic: TopicImage, partition_id: int,
                 partition: PartitionRegistration, acceptable: Callable[[int], bool], *,
                 min_isr: int | None = None, elr: bool | None = None, gates: BuilderGates | None = None):
        self.ctx = ctx
        self.mv = mv
        self.topic = topic
        self.partition_id = partition_id
        self.partition = partition
        self.acceptable = acceptable
        self.min_isr = effective_min_isr(ctx, topic) if min_isr is None else min_isr
        self.elr = elr_enabled(ctx, mv) if elr is None else elr
        if gates is None:
            gates = builder_gates(ctx, mv)
        self.version, self._directory_assignment, self._shrink_keeps_epoch = gates
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
        unclean = self.unclean_shutdown
        self.target_elr = _kept_in_set_order((old_elr, self.partition.isr),
                                             lambda r: r not in isr and r not in unclean)
        elr = set(self.target_elr)
        self.target_last_known_elr = _kept_in_set_order((old_elr, self.partition.isr, self.target_last_known_elr),
                                                        lambda r: r not in isr and r not in elr)

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

    def _try_election(self, rec: ChangeFields) -> None:
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

    def _update_record_elr(self, rec: ChangeFields) -> None:
        if "isr" in rec or not self.elr:  # an unclean election, or ELR off: ELR is cleared
            self.target_elr, self.target_last_known_elr = [], []
        if self.target_elr != list(self.partition.elr):
            rec["eligible_leader_replicas"] = self.target_elr
        # LastKnownElr holds the last known leader (useLastKnownLeaderInBalancedRecovery,
        # on by default): it is written by _update_last_known_leader only.

    def _update_last_known_leader(self, rec: ChangeFields) -> None:
        if not self.elr:
            return
        p = self.partition
        leader = rec.get("leader", NO_LEADER_CHANGE)
        isr = rec.get("isr")
        if isr is not None and not isr and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader):
            rec["last_known_elr"] = [p.leader]  # the partition just became leaderless
        elif (leader >= 0 or (p.leader != NO_LEADER and leader != NO_LEADER)) and p.last_known_elr:
            rec["last_known_elr"] = []  # it has, or keeps, a leader

    def _set_assignment_changes(self, rec: ChangeFields) -> None:
        p = self.partition
        if self.target_replicas:
            if self._directory_assignment:
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
        rec: ChangeFields = {}
        done = _complete_reassignment(self.target_replicas, self.target_isr, self.target_removing,
                                      self.target_adding, self.ctx.catalog.policy("reassignment_completion"))
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
        if (not self._shrink_keeps_epoch
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
