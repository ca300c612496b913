"""Cost proportional to change: checked by structure sharing, never by timing.

A one-record delta on a 20,000-topic image must not copy the topic map: the new image
shares every trie node but one path with the old one, shares every untouched TopicImage,
and reuses every untouched component outright.
"""

from __future__ import annotations

import gc
import tracemalloc

from kraftsim.image import MetadataDelta, MetadataImage, image_digest
from tests.image.helpers import REGISTRY, rec, uid

PR = REGISTRY["PartitionRecord"]
TR = REGISTRY["TopicRecord"]


def build(topics: int, partitions: int = 1, brokers: int = 6) -> MetadataImage:
    from kraftsim.protocol.entries import Payload
    d = MetadataDelta(MetadataImage())
    d.replay(rec("FeatureLevelRecord", name="metadata.version", feature_level=25))
    for b in range(brokers):
        d.replay(rec("RegisterBrokerRecord", broker_id=b, incarnation_id=uid(b + 1), broker_epoch=b))
    for t in range(topics):
        tid = uid(t, hi=0xABCD)
        d.replay(Payload(TR, 0, TR.cls(name=f"topic-{t}", topic_id=tid)))
        for p in range(partitions):
            replicas = [(t + p + i) % brokers for i in range(3)]
            d.replay(Payload(PR, 0, PR.cls(partition_id=p, topic_id=tid, replicas=replicas, isr=replicas,
                                           leader=replicas[0], leader_epoch=0, partition_epoch=0)))
    return d.apply()


def test_one_record_delta_does_not_copy_the_topic_map() -> None:
    base = build(20_000)
    by_id = base.topics.by_id
    assert len(by_id) == 20_000 and by_id.depth() >= 2
    tid = uid(777, hi=0xABCD)
    d = MetadataDelta(base)
    d.replay(rec("PartitionChangeRecord", topic_id=tid, partition_id=0, isr=[1, 2]))
    new = d.apply()
    # untouched components are the very same objects
    for c in ("features", "cluster", "configs", "client_quotas", "producer_ids", "acls", "scram",
              "delegation_tokens", "opaque"):
        assert getattr(new, c) is getattr(base, c)
    assert new.topics.by_name is base.topics.by_name  # no topic created or deleted
    # the id map shares everything but one root-to-leaf path
    fresh = new.topics.by_id.node_ids() - by_id.node_ids()
    assert 1 <= len(fresh) <= by_id.depth() + 1
    # and every other topic is the same TopicImage object
    changed = [k for k, v in new.topics.by_id.items() if by_id[k] is not v]
    assert changed == [tid]
    assert new.topics.get_topic(tid).partitions[0].isr == (1, 2)
    assert base.topics.get_topic(tid).partitions[0].isr != (1, 2)  # the base image is untouched
    # a structural diff visits only the changed path
    assert list(by_id.diff(new.topics.by_id)) == [(tid, by_id[tid], new.topics.get_topic(tid))]


def test_delta_touching_k_topics_copies_o_of_k_nodes() -> None:
    base = build(20_000)
    d = MetadataDelta(base)
    touched = [uid(t, hi=0xABCD) for t in range(0, 20_000, 400)]  # 50 topics
    for tid in touched:
        d.replay(rec("PartitionChangeRecord", topic_id=tid, partition_id=0, leader=-1))
    new = d.apply()
    fresh = new.topics.by_id.node_ids() - base.topics.by_id.node_ids()
    assert len(fresh) <= len(touched) * (base.topics.by_id.depth() + 1)
    assert sum(1 for k, v in new.topics.by_id.items() if base.topics.by_id[k] is not v) == len(touched)


def test_creating_a_topic_touches_the_name_map_only_along_one_path() -> None:
    base = build(20_000)
    d = MetadataDelta(base)
    d.replay(rec("TopicRecord", name="new-topic", topic_id=uid(1, hi=0x7777)))
    new = d.apply()
    assert new.topics.get_topic_by_name("new-topic").id == uid(1, hi=0x7777)
    fresh = new.topics.by_name.node_ids() - base.topics.by_name.node_ids()
    assert len(fresh) <= base.topics.by_name.depth() + 2


def test_partition_objects_are_compact() -> None:
    """Bytes per partition of a 5,000 x 10 image (the 1,000,000-partition figure is in benchmarks)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    img = build(5_000, partitions=10)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_partition = (after - before) / 50_000
    assert img.topics.partition_count() == 50_000
    assert per_partition < 600, per_partition
    assert image_digest(img) == image_digest(build(5_000, partitions=10))
