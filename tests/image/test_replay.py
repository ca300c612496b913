"""Replay semantics of every metadata record type, as Kafka's MetadataDelta has them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import (
    EMPTY_IMAGE,
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    MetadataReplayError,
    UnsupportedMetadataVersionError,
)
from kraftsim.image.intern import MIGRATING, UNASSIGNED
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY, delta_of, rec, replay, uid

T1, T2 = uid(1), uid(2)
D1, D2, D3 = uid(101, 7), uid(102, 7), uid(103, 7)


def broker(bid: int, epoch: int = 10, fenced: bool = True, **kw):
    ep = REGISTRY["RegisterBrokerRecord"].nested["BrokerEndpoint"]
    return rec("RegisterBrokerRecord", broker_id=bid, broker_epoch=epoch, incarnation_id=uid(900 + bid),
               end_points=[ep(name="PLAINTEXT", host=f"b{bid}", port=9092, security_protocol=0)], fenced=fenced, **kw)


def topic(name: str, tid: Uuid):
    return rec("TopicRecord", name=name, topic_id=tid)


def part(tid: Uuid, pid: int, replicas=(1, 2, 3), isr=None, leader=1, **kw):
    return rec("PartitionRecord", topic_id=tid, partition_id=pid, replicas=list(replicas),
               isr=list(replicas if isr is None else isr), leader=leader, leader_epoch=kw.pop("leader_epoch", 0),
               partition_epoch=kw.pop("partition_epoch", 0), **kw)


def change(tid: Uuid, pid: int, **kw):
    return rec("PartitionChangeRecord", topic_id=tid, partition_id=pid, **kw)


def feature(name: str, level: int):
    return rec("FeatureLevelRecord", name=name, feature_level=level)


BASE = [feature("metadata.version", 25), broker(1), broker(2), broker(3), topic("foo", T1), part(T1, 0), part(T1, 1)]


def base_image() -> MetadataImage:
    return replay(BASE)


# ----------------------------------------------------------------------------- partitions


def test_partition_record_defaults_directories_to_migrating_and_interns() -> None:
    img = base_image()
    p0 = img.topics.get_topic(T1).partitions[0]
    p1 = img.topics.get_topic(T1).partitions[1]
    assert p0.directories == (MIGRATING,) * 3
    assert p0.replicas is p1.replicas and p0.directories is p1.directories  # interned
    assert p0.elr == () and p0.last_known_elr == ()


def test_partition_change_sentinels_leave_fields_unchanged() -> None:
    img = replay([change(T1, 0)], base=base_image())  # everything at its "no change" default
    p = img.topics.get_topic(T1).partitions[0]
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.leader_recovery_state) == ((1, 2, 3), (1, 2, 3), 1, 0, 0)
    assert p.partition_epoch == 1  # always bumped


def test_partition_change_isr_shrink_without_leader_keeps_leader_epoch() -> None:
    img = replay([change(T1, 0, isr=[1, 2])], base=base_image())
    p = img.topics.get_topic(T1).partitions[0]
    assert p.isr == (1, 2) and p.leader == 1 and p.leader_epoch == 0 and p.partition_epoch == 1


def test_partition_change_leader_bumps_leader_epoch_even_for_same_leader() -> None:
    img = replay([change(T1, 0, leader=2), change(T1, 0, leader=2), change(T1, 0, leader=-1)], base=base_image())
    p = img.topics.get_topic(T1).partitions[0]
    assert p.leader == -1 and p.leader_epoch == 3 and p.partition_epoch == 3


def test_partition_change_recovery_state_and_lists() -> None:
    img = replay([change(T1, 0, leader_recovery_state=1, removing_replicas=[3], adding_replicas=[4])],
                 base=base_image())
    p = img.topics.get_topic(T1).partitions[0]
    assert p.leader_recovery_state == 1 and p.removing_replicas == (3,) and p.adding_replicas == (4,)
    img = replay([change(T1, 0, leader_recovery_state=-1, removing_replicas=[])], base=img)
    p = img.topics.get_topic(T1).partitions[0]
    assert p.leader_recovery_state == 1 and p.removing_replicas == () and p.adding_replicas == (4,)
    with pytest.raises(MetadataReplayError):
        replay([change(T1, 0, leader_recovery_state=7)], base=img)


def test_partition_change_directories() -> None:
    img = replay([change(T1, 0, directories=[D1, D2, D3])], base=base_image())
    assert img.topics.get_topic(T1).partitions[0].directories == (D1, D2, D3)
    # new replicas without directories (null): the directories stay as they are (3.7.1 on,
    # KAFKA-16583; 3.7.0 gave survivors theirs and newcomers UNASSIGNED), refused when the
    # count no longer matches
    img = replay([change(T1, 0, replicas=[3, 4, 1])], base=img)
    assert img.topics.get_topic(T1).partitions[0].directories == (D1, D2, D3)
    with pytest.raises(MetadataReplayError, match="The lengths for replicas and directories do not match."):
        replay([change(T1, 0, replicas=[3, 4])], base=img)
    with pytest.raises(MetadataReplayError, match="do not match in PartitionChangeRecord"):
        replay([change(T1, 0, replicas=[1, 2], directories=[D1])], base=img)
    # an empty list is not null: it replaces them, and none at all means MIGRATING
    img2 = replay([change(T1, 0, directories=[])], base=img)
    assert img2.topics.get_topic(T1).partitions[0].directories == (MIGRATING,) * 3


def test_a_reassignment_below_3_7_iv2_leaves_every_replica_migrating() -> None:
    """Below 3.7-IV2 the controller writes no directories: whatever the replicas become,
    every one is MIGRATING (so a snapshot at that version loses nothing), also when the
    replica count changes."""
    base = base_image()
    assert base.topics.get_topic(T1).partitions[0].directories == (MIGRATING,) * 3
    img = replay([change(T1, 0, replicas=[1, 2, 3, 4], adding_replicas=[4]),
                  change(T1, 0, replicas=[2, 4], adding_replicas=[], isr=[2, 4], leader=2)], base=base)
    p = img.topics.get_topic(T1).partitions[0]
    assert p.replicas == (2, 4) and p.directories == (MIGRATING, MIGRATING)
    assert UNASSIGNED not in p.directories


@pytest.mark.parametrize("bulk", [False, True], ids=["replay", "replay_all"])
@pytest.mark.parametrize("release,grown", [("3.7.0", (MIGRATING, MIGRATING, MIGRATING, UNASSIGNED)),
                                           ("3.7.1", (MIGRATING,) * 4), ("3.6.2", (MIGRATING,) * 4),
                                           ("4.2", (MIGRATING,) * 4)])
def test_each_release_merges_new_replicas_as_its_code_does(release: str, grown: tuple[Uuid, ...], bulk: bool) -> None:
    """3.7.0 alone gives a replica added without directories UNASSIGNED (KAFKA-16583 came
    with 3.7.1); a change with directories is taken as it is by every release."""
    catalog = default_catalog().at_release(release)
    records = [change(T1, 0, replicas=[1, 2, 3, 4], adding_replicas=[4]), change(T1, 1, isr=[1, 2])]
    delta = MetadataDelta(base_image(), catalog)
    if bulk:
        delta.replay_all(records)
    else:
        for r in records:
            delta.replay(r)
    parts = delta.apply(MetadataProvenance(9, 1, 0)).topics.get_topic(T1).partitions
    assert parts[0].directories == grown and parts[1].directories == (MIGRATING,) * 3
    moved = MetadataDelta(base_image(), catalog)
    moved.replay(change(T1, 0, replicas=[1, 2], directories=[D1, D2]))
    assert moved.apply(MetadataProvenance(9, 1, 0)).topics.get_topic(T1).partitions[0].directories == (D1, D2)


def test_partition_change_elr_null_vs_empty() -> None:
    img = replay([change(T1, 0, eligible_leader_replicas=[2, 3], last_known_elr=[1])], base=base_image())
    p = img.topics.get_topic(T1).partitions[0]
    assert p.elr == (2, 3) and p.last_known_elr == (1,)
    img = replay([change(T1, 0, isr=[1])], base=img)  # null ELR: unchanged
    assert img.topics.get_topic(T1).partitions[0].elr == (2, 3)
    img = replay([change(T1, 0, eligible_leader_replicas=[])], base=img)
    assert img.topics.get_topic(T1).partitions[0].elr == () and img.topics.get_topic(T1).partitions[0].last_known_elr == (1,)


def test_partition_change_of_unknown_partition_or_topic_fails() -> None:
    with pytest.raises(MetadataReplayError, match=r"Unable to find partition .*:7"):
        replay([change(T1, 7, isr=[1])], base=base_image())
    with pytest.raises(MetadataReplayError, match="Unable to find partition"):
        replay([change(T2, 0, isr=[1])], base=base_image())
    with pytest.raises(MetadataReplayError):
        replay([part(T2, 0)], base=base_image())


def test_partition_record_replaces_partition() -> None:
    img = replay([part(T1, 0, replicas=(2, 3), leader=2, leader_epoch=9, partition_epoch=12)], base=base_image())
    p = img.topics.get_topic(T1).partitions[0]
    assert (p.replicas, p.leader_epoch, p.partition_epoch) == ((2, 3), 9, 12)


# ----------------------------------------------------------------------------- topics


def test_topic_record_starts_topic_afresh() -> None:
    img = replay([topic("foo", T1), part(T1, 5)], base=base_image())
    assert set(img.topics.get_topic(T1).partitions) == {5}


def test_remove_topic_also_removes_its_configs() -> None:
    cfg = [rec("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value="1000"),
           rec("ConfigRecord", resource_type=2, resource_name="bar", name="retention.ms", value="5")]
    img = replay(cfg, base=base_image())
    img2 = replay([rec("ConfigRecord", resource_type=2, resource_name="foo", name="cleanup.policy", value="compact"),
                   rec("RemoveTopicRecord", topic_id=T1)], base=img)
    assert img2.topics.get_topic(T1) is None and img2.topics.get_topic_by_name("foo") is None
    assert img2.configs.config(2, "foo") == {} and dict(img2.configs.config(2, "bar")) == {"retention.ms": "5"}
    with pytest.raises(MetadataReplayError, match="Unable to delete topic with id .*: no such topic found."):
        replay([rec("RemoveTopicRecord", topic_id=T2)], base=img)


def test_topic_created_and_removed_in_one_delta_leaves_no_trace() -> None:
    base = base_image()
    img = replay([topic("bar", T2), part(T2, 0), rec("RemoveTopicRecord", topic_id=T2)], base=base)
    assert img.topics is base.topics or img.topics.by_id == base.topics.by_id
    assert img.topics.get_topic_by_name("bar") is None


def test_topic_deleted_then_name_reused() -> None:
    img = replay([rec("RemoveTopicRecord", topic_id=T1), topic("foo", T2), part(T2, 0)], base=base_image())
    assert img.topics.get_topic_by_name("foo").id == T2 and img.topics.get_topic(T1) is None
    assert len(img.topics) == 1


def test_clear_elr_by_name_all_and_unknown() -> None:
    elr = [feature("eligible.leader.replicas.version", 1), topic("bar", T2), part(T2, 0, eligible_leader_replicas=[2]),
           change(T1, 0, eligible_leader_replicas=[3], last_known_elr=[2]), change(T1, 1, last_known_elr=[1])]
    img = replay(elr, base=base_image())
    one = replay([rec("ClearElrRecord", topic_name="foo")], base=img)
    assert all(not p.has_elr() for p in one.topics.get_topic(T1).partitions.values())
    assert one.topics.get_topic(T1).partitions[0].partition_epoch == img.topics.get_topic(T1).partitions[0].partition_epoch + 1
    assert one.topics.get_topic(T2) is img.topics.get_topic(T2)  # untouched topic shared
    every = replay([rec("ClearElrRecord", topic_name="")], base=img)
    assert not any(p.has_elr() for t in every.topics.by_id.values() for p in t.partitions.values())
    # a topic created earlier in the same delta is found by name
    T3 = uid(3)
    d = replay([topic("baz", T3), part(T3, 0, eligible_leader_replicas=[1]), rec("ClearElrRecord", topic_name="baz")],
               base=img)
    assert not d.topics.get_topic(T3).partitions[0].has_elr()
    with pytest.raises(MetadataReplayError, match="Unable to clear elr for topic with name nope: no such topic found."):
        replay([rec("ClearElrRecord", topic_name="nope")], base=img)
    with pytest.raises(MetadataReplayError):  # deleted earlier in the delta
        replay([rec("RemoveTopicRecord", topic_id=T1), rec("ClearElrRecord", topic_name="foo")], base=img)


# ----------------------------------------------------------------------------- cluster


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 40), st.sampled_from(["eligible_leader_replicas", "last_known_elr"]),
                          st.sampled_from([[], [2], [1, 3]])), max_size=6))
def test_topics_hold_elr_when_a_partition_does(changes: list[tuple[int, int, str, list[int]]]) -> None:
    """`holds_elr` (topics and each topic, tested field by field in C) says what asking every
    partition says, over topics of many partitions (chunked) where some hold ELR fields."""
    tids = [uid(10 + i) for i in range(3)]
    records = [feature("eligible.leader.replicas.version", 1)]
    for i, tid in enumerate(tids):
        records += [topic(f"t{i}", tid), *(part(tid, p) for p in range(41))]
    records += [change(tids[t], p, **{field: value}) for t, p, field, value in changes]
    img = replay(records, base=base_image())
    for t in img.topics.by_id.values():
        assert t.holds_elr() == any(p.has_elr() for p in t.partitions.values())
    assert img.topics.holds_elr() == any(p.has_elr() for t in img.topics.by_id.values() for p in t.partitions.values())


def test_broker_registration_change_fencing_and_shutdown() -> None:
    img = base_image()
    assert img.cluster.broker(1).fenced
    img = replay([rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=-1)], base=img)
    assert not img.cluster.broker(1).fenced
    img = replay([rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, in_controlled_shutdown=1)], base=img)
    b = img.cluster.broker(1)
    assert b.in_controlled_shutdown and not b.fenced
    img = replay([rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=1)], base=img)
    assert img.cluster.broker(1).fenced and img.cluster.broker(1).in_controlled_shutdown
    with pytest.raises(MetadataReplayError, match="unknown value for fenced field: 2"):
        replay([rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=2)], base=img)
    with pytest.raises(MetadataReplayError, match=r"Tried to change broker 1, but the given epoch, 9, did not match"
                                                  r" the current broker epoch, 10"):
        replay([rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=9, fenced=1)], base=img)
    with pytest.raises(MetadataReplayError, match="Tried to change broker 9, but that broker was not registered."):
        replay([rec("BrokerRegistrationChangeRecord", broker_id=9, broker_epoch=9)], base=img)


def test_broker_registration_change_log_dirs_empty_means_no_change() -> None:
    img = replay([broker(4, log_dirs=[D2, D1])], base=base_image())
    assert img.cluster.broker(4).directories == tuple(sorted([D1, D2], key=lambda u: (u.msb, u.lsb)))
    same = replay([rec("BrokerRegistrationChangeRecord", broker_id=4, broker_epoch=10, log_dirs=[])], base=img)
    assert same.cluster is img.cluster  # no change at all: the component is reused
    fewer = replay([rec("BrokerRegistrationChangeRecord", broker_id=4, broker_epoch=10, log_dirs=[D2])], base=img)
    assert fewer.cluster.broker(4).directories == (D2,)


def test_legacy_fence_and_unfence_records() -> None:
    img = replay([rec("UnfenceBrokerRecord", id=2, epoch=10)], base=base_image())
    assert not img.cluster.broker(2).fenced
    img = replay([rec("FenceBrokerRecord", id=2, epoch=10)], base=img)
    assert img.cluster.broker(2).fenced
    with pytest.raises(MetadataReplayError, match="Tried to fence broker 2, but the given epoch, 3"):
        replay([rec("FenceBrokerRecord", id=2, epoch=3)], base=img)
    with pytest.raises(MetadataReplayError, match="Tried to unfence broker 8, but that broker was not registered."):
        replay([rec("UnfenceBrokerRecord", id=8, epoch=3)], base=img)


def test_unregister_broker_and_controllers() -> None:
    cep = REGISTRY["RegisterControllerRecord"].nested["ControllerEndpoint"]
    img = replay([rec("UnregisterBrokerRecord", broker_id=2, broker_epoch=10),
                  rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(5),
                      end_points=[cep(name="CONTROLLER", host="c", port=9093, security_protocol=0)])],
                 base=base_image())
    assert sorted(img.cluster.brokers) == [1, 3] and img.cluster.controller(3000).listeners[0].name == "CONTROLLER"


# ----------------------------------------------------------------------------- features


def test_feature_levels() -> None:
    img = replay([feature("group.version", 1), feature("kraft.version", 1), feature("transaction.version", 2)],
                 base=base_image())
    assert img.features.finalized_map() == {"group.version": 1, "transaction.version": 2}
    assert img.features.metadata_version == 25
    img = replay([feature("group.version", 0), feature("metadata.version", 27)], base=img)
    assert img.features.finalized_map() == {"transaction.version": 2} and img.features.metadata_version == 27


def test_unknown_metadata_version_level_is_refused_with_kafka_text() -> None:
    text = ("Unsupported metadata version - if you are currently upgrading your cluster, please ensure the metadata "
            "version is set to 3.3-IV3 (or higher) before updating the software version. The metadata version can "
            "be updated via the kafka-features command-line tool.")
    for level in (0, 3, 999):
        with pytest.raises(UnsupportedMetadataVersionError) as e:
            replay([feature("metadata.version", level)])
        assert str(e.value) == text
    # a 3.x line still knows the pre-4.0 levels
    d = MetadataDelta(EMPTY_IMAGE, default_catalog().at_release("3.3"))
    d.replay(feature("metadata.version", 3))
    assert d.apply().features.metadata_version == 3


def test_noop_and_zk_migration_are_no_ops_and_transactions_are_refused() -> None:
    base = base_image()
    img = replay([rec("NoOpRecord"), rec("ZkMigrationStateRecord", zk_migration_state=3)], base=base)
    assert img.same_content(base) and img.features is base.features
    for name, type_name in (("BeginTransactionRecord", "BEGIN_TRANSACTION_RECORD"),
                            ("EndTransactionRecord", "END_TRANSACTION_RECORD"),
                            ("AbortTransactionRecord", "ABORT_TRANSACTION_RECORD")):
        with pytest.raises(MetadataReplayError, match=f"^Unknown metadata record type {type_name}$"):
            replay([rec(name)], base=base)


# ----------------------------------------------------------------------------- other components


def test_configs_quotas_producer_ids() -> None:
    ed = REGISTRY["ClientQuotaRecord"].nested["EntityData"]
    recs = [rec("ConfigRecord", resource_type=4, resource_name="", name="min.insync.replicas", value="2"),
            rec("ConfigRecord", resource_type=4, resource_name="", name="x", value="1"),
            rec("ConfigRecord", resource_type=4, resource_name="", name="x", value=None),
            rec("ClientQuotaRecord", entity=[ed(entity_type="user", entity_name="alice"),
                                             ed(entity_type="client-id", entity_name=None)],
                key="producer_byte_rate", value=1024.0),
            rec("ClientQuotaRecord", entity=[ed(entity_type="client-id", entity_name=None),
                                             ed(entity_type="user", entity_name="alice")],
                key="consumer_byte_rate", value=2048.0),
            rec("ProducerIdsRecord", broker_id=1, broker_epoch=5, next_producer_id=5000)]
    img = replay(recs)
    assert dict(img.configs.config(4, "")) == {"min.insync.replicas": "2"}
    entity = (("client-id", None), ("user", "alice"))
    assert dict(img.client_quotas.quotas(entity)) == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert img.producer_ids.next_producer_id == 5000
    img = replay([rec("ClientQuotaRecord", entity=[ed(entity_type="user", entity_name="alice"),
                                                  ed(entity_type="client-id", entity_name=None)],
                      key=k, remove=True) for k in ("producer_byte_rate", "consumer_byte_rate")]
                 + [rec("ConfigRecord", resource_type=4, resource_name="", name="min.insync.replicas", value=None)],
                 base=img)
    assert img.client_quotas.is_empty() and img.configs.is_empty()


def test_acls_scram_tokens() -> None:
    acl = dict(resource_type=2, resource_name="foo", pattern_type=3, principal="User:alice", host="*", operation=3,
               permission_type=3)
    recs = [rec("AccessControlEntryRecord", id=uid(50), **acl),
            rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
                iterations=4096),
            rec("DelegationTokenRecord", owner="User:alice", requester="User:alice", renewers=["User:bob"],
                issue_timestamp=1, max_timestamp=3, expiration_timestamp=2, token_id="tok1")]
    img = replay(recs)
    assert img.acls.acls[uid(50)].principal == "User:alice"
    assert img.scram.credentials[(1, "alice")].iterations == 4096
    assert img.delegation_tokens.tokens["tok1"].renewers == ("User:bob",)
    img = replay([rec("RemoveAccessControlEntryRecord", id=uid(50)),
                  rec("RemoveUserScramCredentialRecord", name="alice", mechanism=1),
                  rec("RemoveDelegationTokenRecord", token_id="tok1")], base=img)
    assert img.acls.is_empty() and img.scram.is_empty() and img.delegation_tokens.is_empty()
    with pytest.raises(MetadataReplayError, match="Failed to find existing acl with id"):
        replay([rec("RemoveAccessControlEntryRecord", id=uid(51))], base=img)
    # created and removed within one delta
    img2 = replay([rec("AccessControlEntryRecord", id=uid(52), **acl), rec("RemoveAccessControlEntryRecord", id=uid(52))],
                  base=img)
    assert img2.acls.is_empty()


# ----------------------------------------------------------------------------- snapshot load and apply


def test_finish_snapshot_is_a_full_replacement() -> None:
    ed = REGISTRY["ClientQuotaRecord"].nested["EntityData"]
    full = replay(BASE + [topic("bar", T2), part(T2, 0),
                          feature("group.version", 1),
                          rec("ConfigRecord", resource_type=2, resource_name="foo", name="a", value="1"),
                          rec("ConfigRecord", resource_type=2, resource_name="foo", name="b", value="2"),
                          rec("ClientQuotaRecord", entity=[ed(entity_type="user", entity_name="u")], key="k", value=1.0),
                          rec("ProducerIdsRecord", broker_id=1, broker_epoch=5, next_producer_id=5000),
                          rec("AccessControlEntryRecord", id=uid(50), resource_type=2, resource_name="foo",
                              pattern_type=3, principal="User:a", host="*", operation=3, permission_type=3),
                          rec("UserScramCredentialRecord", name="a", mechanism=1, salt=b"s", stored_key=b"k",
                              server_key=b"v", iterations=1),
                          rec("DelegationTokenRecord", token_id="t", owner="User:a", requester="User:a")])
    snapshot = [feature("metadata.version", 25), broker(1), topic("foo", T1), part(T1, 0),
                rec("ConfigRecord", resource_type=2, resource_name="foo", name="a", value="1")]
    loaded = replay(snapshot, base=full, snapshot=True)
    assert loaded.same_content(replay(snapshot))
    assert sorted(loaded.cluster.brokers) == [1] and set(loaded.topics.get_topic(T1).partitions) == {0}
    assert loaded.producer_ids.next_producer_id == -1 and loaded.features.finalized == ()
    # without finish_snapshot the same records only add
    assert replay(snapshot, base=full).topics.get_topic(T2) is not None
    # an empty snapshot keeps the metadata.version (kafka-facts §10) and drops the rest
    empty = replay([], base=full, snapshot=True)
    assert empty.features.metadata_version == 25 and empty.topics.is_empty() and empty.cluster.is_empty()


def test_apply_reuses_untouched_components_and_sets_provenance() -> None:
    base = base_image().with_provenance(MetadataProvenance(10, 1, 1000, True))
    d = delta_of([rec("ConfigRecord", resource_type=4, resource_name="1", name="x", value="y")], base=base)
    img = d.apply(MetadataProvenance(11, 1, 1001, True))
    assert img.provenance == MetadataProvenance(11, 1, 1001, True)
    for c in ("features", "cluster", "topics", "client_quotas", "producer_ids", "acls", "scram", "delegation_tokens",
              "opaque"):
        assert getattr(img, c) is getattr(base, c), c
    assert img.configs is not base.configs
    assert d.apply().provenance == base.provenance
    assert MetadataProvenance.EMPTY == MetadataProvenance(-1, -1, -1, False)
    assert MetadataImage().provenance == MetadataProvenance.EMPTY and MetadataImage().is_empty()


def test_replay_accepts_log_entries_and_refuses_control_records() -> None:
    from kraftsim.protocol.entries import LogEntry
    p = feature("metadata.version", 21)
    img = replay([LogEntry(5, 1, 0, False, p.record_type, p.version, p.message)])
    assert img.features.metadata_version == 21
    lc = REGISTRY["LeaderChangeMessage"]
    with pytest.raises(MetadataReplayError, match="Unknown metadata record type"):
        replay([LogEntry(6, 1, 0, True, lc, 0, lc.new())])
