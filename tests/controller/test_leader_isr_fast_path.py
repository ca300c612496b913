"""Property: leader_and_isr_updates gives the same records whether the common partition
shapes take `simple_change` or every partition goes through PartitionChangeBuilder, for
random replicas, ISR, ELR, last known leader, directories, reassignments, min ISR, unclean
election settings, broker states, metadata.versions and ELR on or off."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller.context import ControllerConfig
from kraftsim.controller.partition_change import (
    TopicRules, effective_min_isr, iter_partitions, simple_change, unclean_election_enabled,
)
from kraftsim.controller.replication import leader_and_isr_updates
from kraftsim.image.intern import LOST, MIGRATING, UNASSIGNED
from kraftsim.protocol.primitives import Uuid
from tests.controller.cluster_support import CATALOG, RuleCluster, replay, to_json
from tests.controller.conftest import broker, config, payload

BROKERS = (0, 1, 2, 3, 4)
TOPIC = Uuid(b"\x07" * 16)


def own_dir(b: int) -> Uuid:
    return Uuid((5000 + b).to_bytes(16, "big"))  # the directory conftest.broker registers


ids = st.lists(st.sampled_from(BROKERS), max_size=4)
odd_partition = st.fixed_dictionaries({
    "replicas": st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4),
    "isr": ids, "elr": ids, "last_known_elr": ids, "removing": ids, "adding": ids,
    "leader": st.sampled_from((-1, *BROKERS)),
    "dirs": st.lists(st.sampled_from(("own", "migrating", "unassigned", "lost", "other")), max_size=4),
})


@st.composite
def usual_partition(draw: st.DrawFn) -> dict:
    """Distinct replicas, an ISR among them, a leader in it (mostly), no reassignment or ELR."""
    replicas = draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True))
    isr = draw(st.permutations(replicas).flatmap(lambda rs: st.integers(0, len(rs)).map(lambda n: rs[:n])))
    leader = draw(st.sampled_from(isr) | st.just(-1)) if isr else -1
    dirs = draw(st.just(["own"] * len(replicas)) | st.lists(
        st.sampled_from(("own", "migrating", "unassigned", "lost", "other")), min_size=len(replicas),
        max_size=len(replicas)))
    return {"replicas": replicas, "isr": isr, "elr": [], "last_known_elr": [], "removing": [], "adding": [],
            "leader": leader, "dirs": dirs}


@st.composite
def nearly_usual_partition(draw: st.DrawFn) -> dict:
    """A usual partition with one thing the simple path must leave to the builder."""
    p = dict(draw(usual_partition()))
    odd = draw(st.sampled_from(("elr", "last_known_elr", "removing", "adding", "replicas")))
    if odd == "replicas":
        p["replicas"] = p["replicas"] + p["replicas"][:1]
        p["dirs"] = [*p["dirs"], draw(st.sampled_from(("lost", "unassigned", "own")))]
    else:
        p[odd] = draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=2))
    return p


partition = st.one_of(usual_partition(), usual_partition(), nearly_usual_partition(), odd_partition)
brokers = st.fixed_dictionaries({b: st.sampled_from(("active",) * 5 + ("fenced", "shutdown", "absent"))
                                 for b in BROKERS})


def broker_records(states: dict[int, str]) -> list:
    """The registrations of brokers in `states` ("active", "fenced", "shutdown": in controlled
    shutdown, "absent": none), in id order."""
    supported = CATALOG.supported_features()
    records: list = []
    for b, state in sorted(states.items()):
        if state == "absent":
            continue
        records.append(broker(b, supported, fenced=state == "fenced"))
        if state == "shutdown":
            records.append(payload("BrokerRegistrationChangeRecord", 1, broker_id=b, broker_epoch=10,
                                   in_controlled_shutdown=1))
    return records


def partition_record(pid: int, p: dict) -> object:
    named = {"own": None, "migrating": MIGRATING, "unassigned": UNASSIGNED, "lost": LOST, "other": Uuid(b"\x09" * 16)}
    dirs = [named[d] or own_dir(r) for r, d in zip(p["replicas"], p["dirs"])] if len(p["dirs"]) >= len(
        p["replicas"]) else []
    return payload("PartitionRecord", 2, topic_id=TOPIC, partition_id=pid, replicas=p["replicas"], isr=p["isr"],
                   removing_replicas=p["removing"], adding_replicas=p["adding"], leader=p["leader"], leader_epoch=3,
                   partition_epoch=5, directories=dirs, eligible_leader_replicas=p["elr"],
                   last_known_elr=p["last_known_elr"])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mv=st.sampled_from(("3.5-IV2", "3.6-IV0", "3.7-IV2", "3.9-IV0", "4.0-IV3", "4.1-IV1", "4.1-IV1")),
       elr=st.sampled_from((True, True, False)),
       cluster_min_isr=st.integers(1, 3), topic_min_isr=st.none() | st.integers(1, 4), unclean=st.booleans(),
       states=brokers, parts=st.lists(partition, min_size=1, max_size=6),
       leaders=st.lists(st.sampled_from((-1, *BROKERS)), max_size=3),
       remove=st.sampled_from((-1, *BROKERS)), add=st.sampled_from((-1, *BROKERS)),
       unclean_broker=st.sampled_from((-1, *BROKERS)))
def test_simple_change_writes_what_the_builder_writes(mv, elr, cluster_min_isr, topic_min_isr, unclean, states, parts,
                                                      leaders, remove, add, unclean_broker) -> None:
    parts = parts + [{**parts[0], "leader": leader} for leader in leaders]  # (shapes that differ in the leader only)
    c = RuleCluster(mv, elr=elr if mv >= "4.0" else None, min_insync_replicas=cluster_min_isr)
    records = broker_records(states)
    records.append(payload("TopicRecord", name="t", topic_id=TOPIC))
    records += [partition_record(pid, p) for pid, p in enumerate(parts)]
    if topic_min_isr is not None:
        records.append(config("t", "min.insync.replicas", str(topic_min_isr), resource_type=2))
    if unclean:
        records.append(config("t", "unclean.leader.election.enable", "true", resource_type=2))
    c.image = replay(c.image, records, next_offset=100)
    ctx = c.ctx()
    partitions = list(iter_partitions(ctx.image))

    def updates(quick: bool) -> list:
        return [to_json(p) for p in leader_and_isr_updates(ctx, c.mv, partitions, broker_to_remove=remove,
                                                           broker_to_add=add, unclean_shutdown_broker=unclean_broker,
                                                           quick=quick)]

    assert updates(True) == updates(False)


def test_a_follower_leaving_a_healthy_isr_takes_the_simple_path() -> None:
    c = RuleCluster("4.1-IV1", elr=True, min_insync_replicas=2)
    c.start_brokers([1, 2, 3])
    c.create("t", partitions=1, rf=3)
    (_, _, part), = iter_partitions(c.image)
    follower = next(r for r in part.isr if r != part.leader)
    fields = simple_change(part, [r for r in part.isr if r != follower], lambda r, d: True, min_isr=2, elr=True,
                           unclean=False, shrink_keeps_epoch=True)
    assert fields == {"isr": [r for r in part.isr if r != follower]}
    moved = simple_change(part, [r for r in part.isr if r != part.leader], lambda r, d: True, min_isr=2, elr=True,
                          unclean=False, shrink_keeps_epoch=True)
    assert moved is not None and moved["leader"] == next(r for r in part.replicas if r in part.isr and r != part.leader)


values = st.none() | st.sampled_from(("1", "2", "3", "7", "x", "true", " TRUE ", "false", ""))


@settings(max_examples=150, deadline=None)
@given(topic_min=values, cluster_min=values, topic_unclean=values, cluster_unclean=values, rf=st.integers(0, 4),
       static_min=st.integers(1, 3))
def test_topic_rules_read_the_configs_as_the_single_lookups_do(topic_min, cluster_min, topic_unclean, cluster_unclean,
                                                               rf, static_min) -> None:
    c = RuleCluster("4.1-IV1", config=ControllerConfig(min_insync_replicas=static_min))
    records: list = [payload("TopicRecord", name="t", topic_id=TOPIC)]
    if rf:
        records.append(payload("PartitionRecord", topic_id=TOPIC, partition_id=0, replicas=list(range(rf)), isr=[0],
                               leader=0))
    for resource, name, key, value in (("t", 2, "min.insync.replicas", topic_min),
                                       ("", 4, "min.insync.replicas", cluster_min),
                                       ("t", 2, "unclean.leader.election.enable", topic_unclean),
                                       ("", 4, "unclean.leader.election.enable", cluster_unclean)):
        if value is not None:
            records.append(config(resource, key, value, resource_type=name))
    c.image = replay(c.image, records, next_offset=100)
    ctx = c.ctx()
    topic = ctx.image.topics.get_topic(TOPIC)
    rules = TopicRules(ctx)
    assert rules.unclean(topic) == unclean_election_enabled(ctx, "t")
    assert rules.of(topic) == (effective_min_isr(ctx, topic), unclean_election_enabled(ctx, "t"))
