"""Properties of CreateTopics' per-request shortcuts: placement writes the classic striping
out as one sum per follower (checked against the rule written plainly), the brokers and
topic ids are read once per request or one id at a time (checked against a request made
topic by topic, and against an image that already holds the id a name would draw)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller import CreatableTopic, CreateTopicsRequest, UsableBroker, create_topics, place_replicas
from kraftsim.controller.partition_change import default_dir, is_active
from kraftsim.controller.replica_placement import PlacementMemo, usable_brokers
from kraftsim.controller.result import accepted
from kraftsim.controller.topics import _Collisions
from kraftsim.javacompat import random_uuid
from tests.controller.cluster_support import RuleCluster, replay, to_json
from tests.controller.conftest import payload


def plain_placement(brokers: list[UsableBroker], num_partitions: int, rf: int, rng: random.Random) -> list[list[int]]:
    """place_replicas without racks, one follower position at a time (Kafka's classic rule)."""
    unfenced = sorted((b for b in brokers if not b.fenced), key=lambda b: b.id)
    fenced = sorted((b for b in brokers if b.fenced), key=lambda b: b.id)
    n = len(unfenced)
    start, shift = rng.randrange(n), rng.randrange(n)
    rng.randrange(n)  # (the one rack's cursor)
    take = min(rf, n)
    out = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        chosen = [unfenced[first]]
        for j in range(take - 1):
            chosen.append(unfenced[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append([b.id for b in chosen] + [fenced[(p + k) % len(fenced)].id for k in range(rf - take)])
    return out


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True), data=st.data(),
       partitions=st.integers(1, 40), seed=st.integers(0, 2**32))
def test_placement_without_racks_is_the_classic_rule(ids, data, partitions, seed) -> None:
    fenced = data.draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    if all(fenced):
        fenced[0] = False
    brokers = [UsableBroker(b, None, f) for b, f in zip(ids, fenced)]
    rf = data.draw(st.integers(1, len(ids)))
    assert place_replicas(brokers, partitions, rf, random.Random(seed)) == plain_placement(
        brokers, partitions, rf, random.Random(seed))


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=1, max_size=8, unique=True), data=st.data(),
       calls=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 8), st.integers(0, 2**32), st.booleans()),
                      min_size=1, max_size=8))
def test_placement_kept_across_topics_is_the_placement_made_afresh(ids, data, calls) -> None:
    """A PlacementMemo shared by many topics (replication factors, partition counts and seeds
    mixed; sometimes another brokers list, equal or not) gives what placing each afresh gives."""
    fenced = data.draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    if all(fenced):
        fenced[0] = False
    brokers = [UsableBroker(b, None, f) for b, f in zip(ids, fenced)]
    memo = PlacementMemo()
    for partitions, rf, seed, other in calls:
        if other:  # a new list: the same brokers, or all of them but the last unfenced one
            unfenced = [b for b in brokers if not b.fenced]
            brokers = list(brokers) if len(unfenced) == 1 else [b for b in brokers if b != unfenced[-1]]
        rf = min(rf, len(brokers))
        assert place_replicas(brokers, partitions, rf, random.Random(seed), memo) == place_replicas(
            brokers, partitions, rf, random.Random(seed))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states=st.lists(st.sampled_from(("active", "active", "fenced", "shutdown")), min_size=3, max_size=6),
       racks=st.booleans(), topics=st.lists(st.tuples(st.sampled_from("abc.-_"), st.integers(1, 5), st.integers(1, 3)),
                                            min_size=1, max_size=5),
       existing=st.lists(st.sampled_from(("a.0", "a_0", "._1", "b-0")), max_size=2, unique=True))
def test_one_request_writes_what_requests_topic_by_topic_write(states, racks, topics, existing) -> None:
    """What a request reads once (usable and active brokers, ids in use, names that collide)
    is read afresh for every topic when each goes in a request of its own."""
    c = RuleCluster("3.9-IV0")
    c.start_brokers(range(len(states)), racks={b: f"r{b % 2}" for b in range(len(states))} if racks else None)
    for b, state in enumerate(states):
        change = {"fenced": {"fenced": 1}, "shutdown": {"in_controlled_shutdown": 1}}.get(state)
        if change is not None:
            epoch = c.image.cluster.broker(b).epoch
            c.apply(accepted([payload("BrokerRegistrationChangeRecord", 1, broker_id=b, broker_epoch=epoch, **change)],
                             None))
    for name in existing:
        c.create(name, 1, 1)
    wanted = tuple(CreatableTopic(f"{name}{i}", n, rf) for i, (name, n, rf) in enumerate(topics))
    whole = create_topics(c.ctx(), CreateTopicsRequest(wanted, seed=7))
    one_by_one = [create_topics(c.ctx(), CreateTopicsRequest((t,), seed=7)) for t in wanted]
    assert [to_json(p) for p in whole.records] == [to_json(p) for r in one_by_one for p in r.records]
    assert list(whole.response.topics) == [t for r in one_by_one for t in r.response.topics]
    for p in whole.records:  # the ISR as the image answers broker by broker
        if p.record_type.name == "PartitionRecord":
            m = p.message
            assert m.isr == [b for b in m.replicas if is_active(c.image, b)] and m.leader == m.isr[0]


def test_a_topic_id_the_image_holds_is_not_given_again() -> None:
    c = RuleCluster("3.9-IV0")
    c.start_brokers([0, 1, 2])
    draws = random.Random("kraftsim-topic-id:3:t")
    first, second = random_uuid(draws), random_uuid(draws)
    c.image = replay(c.image, [payload("TopicRecord", name="other", topic_id=first)])
    r = create_topics(c.ctx(), CreateTopicsRequest((CreatableTopic("t", 1, 1),), seed=3))
    assert r.response.topics[0].topic_id == second


def plain_partition_fields(c: RuleCluster, request: CreateTopicsRequest) -> list[dict]:
    """Each created partition's replicas, ISR, leader and directories, worked out partition by
    partition from the image (placement made afresh per topic, no list kept for another)."""
    ctx = c.ctx()
    mv = c.mv
    usable = usable_brokers(c.image)
    out = []
    for t in request.topics:
        rng = random.Random(f"kraftsim-placement:{request.seed}:{t.name}")
        for replicas in place_replicas(usable, t.num_partitions, t.replication_factor, rng):
            isr = [b for b in replicas if is_active(c.image, b)]
            out.append({"replicas": replicas, "isr": isr, "leader": isr[0],
                        "directories": [default_dir(ctx, mv, b) for b in replicas]})
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states=st.lists(st.tuples(st.sampled_from(("active", "active", "fenced", "shutdown")), st.integers(1, 2)),
                       min_size=3, max_size=7),
       racks=st.booleans(), mv=st.sampled_from(("3.6-IV2", "3.9-IV0")), seed=st.integers(0, 2**16),
       topics=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 3)), min_size=1, max_size=6))
def test_partition_records_are_those_made_partition_by_partition(states, racks, mv, seed, topics) -> None:
    """The ISR and directories a request works out once per distinct replica list are what
    each partition's own replicas give (brokers fenced, shutting down, with one or two
    directories; racks or none; before and with directory assignment)."""
    c = RuleCluster(mv)
    for b, (_, dirs) in enumerate(states):
        c.register(b, rack=f"r{b % 3}" if racks else None, dirs=dirs)
    for b in range(len(states)):
        c.heartbeat(b)
    for b, (state, _) in enumerate(states):
        change = {"fenced": {"fenced": 1}, "shutdown": {"in_controlled_shutdown": 1}}.get(state)
        if change is not None:
            epoch = c.image.cluster.broker(b).epoch
            c.apply(accepted([payload("BrokerRegistrationChangeRecord", 1, broker_id=b, broker_epoch=epoch, **change)],
                             None))
    active = sum(1 for state, _ in states if state == "active")
    if active == 0:
        return
    request = CreateTopicsRequest(tuple(CreatableTopic(f"t{i}", n, min(rf, active))
                                        for i, (n, rf) in enumerate(topics)), seed=seed)
    result = create_topics(c.ctx(), request)
    assert all(t.error_code == 0 for t in result.response.topics)
    made = [p.message for p in result.records if p.record_type.name == "PartitionRecord"]
    plain = plain_partition_fields(c, request)
    if c.catalog.record_version("PartitionRecord", c.mv) == 0:  # (no directories written)
        plain = [dict(p, directories=[]) for p in plain]
    assert [{"replicas": m.replicas, "isr": m.isr, "leader": m.leader, "directories": m.directories}
            for m in made] == plain
    lists = [x for m in made for x in (m.replicas, m.isr, m.directories)]
    assert len({id(x) for x in lists}) == len(lists)  # no record shares a list with another


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=2, max_size=9, unique=True), data=st.data(),
       calls=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 6), st.integers(0, 2**32), st.booleans()),
                      min_size=1, max_size=8))
def test_layout_kept_across_topics_is_the_layout_made_afresh(ids, data, calls) -> None:
    """The brokers' layout a PlacementMemo keeps (racks, their order, fenced brokers) gives
    what placing afresh gives, racks or not; a new brokers list (one broker fenced or
    unfenced, or taken away) is laid out again."""
    racks = data.draw(st.sampled_from((None, 2, 3)))
    fenced = data.draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    if all(fenced):
        fenced[0] = False
    brokers = [UsableBroker(b, None if racks is None else f"r{b % racks}", f) for b, f in zip(ids, fenced)]
    memo = PlacementMemo()
    for partitions, rf, seed, other in calls:
        if other:
            i = seed % len(brokers)
            flipped = UsableBroker(brokers[i].id, brokers[i].rack, not brokers[i].fenced)
            brokers = brokers[:i] + [flipped] + brokers[i + 1:]
            if all(b.fenced for b in brokers) and len(brokers) > 1:
                brokers = brokers[:i] + brokers[i + 1:]
            if all(b.fenced for b in brokers):
                brokers = [UsableBroker(b.id, b.rack, False) for b in brokers]
        rf = min(rf, len(brokers))
        assert place_replicas(brokers, partitions, rf, random.Random(seed), memo) == place_replicas(
            brokers, partitions, rf, random.Random(seed))


def _marks_flipped(name: str, flips: list[bool]) -> str:
    return "".join({".": "_", "_": "."}[ch] if ch in "._" and flip else ch for ch, flip in zip(name, flips))


@settings(max_examples=300, deadline=None)
@given(stems=st.lists(st.text("a._", min_size=1, max_size=7), min_size=1, max_size=4, unique=True),
       data=st.data())
def test_collisions_looked_up_are_those_every_topic_gives(stems, data) -> None:
    """The topic a name collides with, found by looking up the names it collides with, is the
    first by name of every topic with its collision key (as reading them all gives); names
    with more marks than the limit are checked against every topic."""
    flips = st.lists(st.booleans(), min_size=7, max_size=7)
    existing = sorted({_marks_flipped(s, data.draw(flips)) for s in stems for _ in range(data.draw(st.integers(0, 3)))})
    names = [_marks_flipped(data.draw(st.sampled_from(stems)), data.draw(flips)) for _ in range(3)]
    names.append(data.draw(st.text("a._", min_size=1, max_size=11)))
    image = replay(RuleCluster("3.9-IV0").image,
                   [payload("TopicRecord", name=n, topic_id=random_uuid(random.Random(n))) for n in existing])
    for name in names:
        key = name.replace(".", "_")
        plain = min((n for n in existing if n.replace(".", "_") == key), default=None)
        assert _Collisions(image).of(name) == plain
        assert _Collisions(image, max_marks=0).of(name) == plain
