"""Digests are order-independent and tell images apart; diffs name what changed."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kraftsim.image import (
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    component_digests,
    diff_images,
    diff_text,
    image_digest,
    image_digest_with_provenance,
)
from tests.image.helpers import REGISTRY, rec, replay, uid
from tests.image.strategies import image_groups, mv_record

EP = REGISTRY["RegisterBrokerRecord"].nested["BrokerEndpoint"]


@settings(max_examples=60, deadline=None)
@given(image_groups(), st.randoms(use_true_random=False), st.lists(st.integers(0, 200), max_size=4))
def test_digest_independent_of_replay_order_and_delta_boundaries(groups, rnd, cuts) -> None:
    first = replay([mv_record(29)] + [r for g in groups for r in g])
    shuffled = list(groups)
    rnd.shuffle(shuffled)
    records = [mv_record(29)] + [r for g in shuffled for r in g]
    second = replay(records)
    assert image_digest(first) == image_digest(second)
    assert first.same_content(second)
    assert diff_images(first, second) == []
    # the same records split over several deltas
    img = MetadataImage()
    start = 0
    for cut in sorted(set(cuts)) + [len(records)]:
        d = MetadataDelta(img)
        d.replay_all(records[start:cut])
        img = d.apply()
        start = max(start, cut)
    assert image_digest(img) == image_digest(first)


def base() -> MetadataImage:
    return replay([
        mv_record(21),
        rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=uid(1), fenced=False,
            end_points=[EP(name="A", host="h", port=1, security_protocol=0),
                        EP(name="B", host="h", port=2, security_protocol=0)]),
        rec("RegisterBrokerRecord", broker_id=2, broker_epoch=6, incarnation_id=uid(2), fenced=False),
        rec("TopicRecord", name="foo", topic_id=uid(10)),
        rec("PartitionRecord", topic_id=uid(10), partition_id=3, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
            leader_epoch=0, partition_epoch=0),
        rec("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value="1000"),
    ])


def test_digest_ignores_provenance_and_listener_order_but_sees_every_change() -> None:
    a = base()
    assert image_digest(a) == image_digest(a.with_provenance(MetadataProvenance(9, 9, 9, True)))
    assert image_digest_with_provenance(a) != image_digest_with_provenance(a.with_provenance(MetadataProvenance(9, 9, 9, True)))
    swapped = replay([rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=uid(1), fenced=False,
                          end_points=[EP(name="B", host="h", port=2, security_protocol=0),
                                      EP(name="A", host="h", port=1, security_protocol=0)])], base=a)
    assert image_digest(swapped) == image_digest(a) and swapped.cluster.broker(1) == a.cluster.broker(1)
    changes = [
        rec("PartitionChangeRecord", topic_id=uid(10), partition_id=3, isr=[1, 2]),
        rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=6, fenced=1),
        rec("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value="1001"),
        rec("FeatureLevelRecord", name="group.version", feature_level=1),
        rec("ProducerIdsRecord", next_producer_id=0),
        rec("TopicRecord", name="bar", topic_id=uid(11)),
    ]
    digests = {image_digest(a)}
    for c in changes:
        b = replay([c], base=a)
        d = image_digest(b)
        assert d not in digests, c
        digests.add(d)
        changed = [k for k, v in component_digests(b).items() if v != component_digests(a)[k]]
        assert len(changed) == 1, (c, changed)


def test_diff_texts() -> None:
    a = base()
    b = replay([
        rec("PartitionChangeRecord", topic_id=uid(10), partition_id=3, isr=[1, 2]),
        rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=6, fenced=1),
        rec("FeatureLevelRecord", name="metadata.version", feature_level=25),
        rec("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value=None),
    ], base=a)
    assert diff_text(a, b).splitlines() == [
        "feature metadata.version: 21 → 25",
        "broker 2: fenced false → true",
        "topic foo partition 3: isr [1, 2, 3] → [1, 2]",
        "topic foo partition 3: partition_epoch 0 → 1",
        "config TOPIC foo: retention.ms '1000' → null",
    ]
    c = replay([rec("TopicRecord", name="bar", topic_id=uid(11)),
                rec("PartitionRecord", topic_id=uid(11), partition_id=0, replicas=[2], isr=[2], leader=2),
                rec("RemoveTopicRecord", topic_id=uid(10)),
                rec("UnregisterBrokerRecord", broker_id=1, broker_epoch=5),
                rec("FeatureLevelRecord", name="group.version", feature_level=1),
                rec("PartitionChangeRecord", topic_id=uid(11), partition_id=0, leader=-1, leader_recovery_state=1)],
               base=a)
    lines = diff_text(a, c).splitlines()
    assert lines[0] == "feature group.version: 0 → 1"
    assert lines[1] == "broker 1: removed"
    assert lines[2] == f"topic bar: added (id {uid(11)}, 1 partitions)"
    assert lines[3] == "topic foo: removed"
    assert lines[4] == "config TOPIC foo: retention.ms '1000' → null"
    kinds = [ch.kind for ch in diff_images(a, c)]
    assert kinds == ["changed", "removed", "added", "removed", "changed"]
    d = replay([rec("PartitionChangeRecord", topic_id=uid(10), partition_id=3, leader=2, leader_recovery_state=1)],
               base=a)
    assert diff_text(a, d).splitlines() == [
        "topic foo partition 3: leader 1 → 2",
        "topic foo partition 3: leader_recovery_state RECOVERED → RECOVERING",
        "topic foo partition 3: leader_epoch 0 → 1",
        "topic foo partition 3: partition_epoch 0 → 1",
    ]
    e = replay([rec("RegisterBrokerRecord", broker_id=1, broker_epoch=7, incarnation_id=uid(1), fenced=False,
                    end_points=[EP(name="A", host="h2", port=1, security_protocol=0)])], base=a)
    assert diff_text(a, e).splitlines() == [
        "broker 1: epoch 5 → 7",
        "broker 1: listener A 'h:1 (security protocol 0)' → 'h2:1 (security protocol 0)'",
        "broker 1: listener B 'h:2 (security protocol 0)' → null",
    ]
    assert diff_images(a, a) == [] and str(diff_images(a, b)[0]) == "feature metadata.version: 21 → 25"


def test_diff_of_the_other_components() -> None:
    ed = REGISTRY["ClientQuotaRecord"].nested["EntityData"]
    a = base()
    b = replay([rec("ClientQuotaRecord", entity=[ed(entity_type="user", entity_name="alice"),
                                                ed(entity_type="client-id", entity_name=None)],
                    key="producer_byte_rate", value=1024.0),
                rec("ProducerIdsRecord", next_producer_id=1000),
                rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s", stored_key=b"k",
                    server_key=b"v", iterations=4096),
                rec("DelegationTokenRecord", token_id="tok", owner="User:alice"),
                rec("AccessControlEntryRecord", id=uid(60), resource_type=2, resource_name="foo", pattern_type=3,
                    principal="User:alice", host="*", operation=2, permission_type=3)], base=a)
    lines = diff_text(a, b).splitlines()
    assert lines[0] == "client quota client-id=<default>,user=alice: producer_byte_rate null → 1024.0"
    assert lines[1] == "producer ids: next producer id -1 → 1000"
    assert lines[2].startswith(f"acl {uid(60)}: added ")
    assert lines[3].startswith("scram SCRAM-SHA-256 user alice: added ")
    assert lines[4].startswith("delegation token tok: added ")
    c = replay([rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s", stored_key=b"k",
                    server_key=b"v", iterations=8192),
                rec("RemoveDelegationTokenRecord", token_id="tok")], base=b)
    assert diff_text(b, c).splitlines() == ["scram SCRAM-SHA-256 user alice: iterations 4096 → 8192",
                                            "delegation token tok: removed"]
