"""The image writer: order, versions, lossless round trips and every loss case."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kraftsim.versions
from kraftsim.javacompat import signed32, uuid_hash
from kraftsim.image import (
    LossReport,
    MetadataDelta,
    MetadataImage,
    UnwritableMetadataException,
    image_digest,
    image_from_records,
    write_image,
)
from kraftsim.image.intern import EMPTY, MIGRATING, migrating
from kraftsim.image.pmap import DELETE
from kraftsim.image import WRITER_3X
from kraftsim.protocol.entries import Payload
from kraftsim.versions import default_catalog, load_catalog
from tests.image.helpers import REGISTRY, rec, replay, uid
from tests.image.strategies import image_groups, mv_record

CAT = default_catalog()
KIP778 = Path(kraftsim.versions.__file__).parent / "data" / "examples" / "kip778.toml"

# capability an image needs -> predicate on the image
NEEDS = {
    "scram": lambda img: not img.scram.is_empty(),
    "delegation_tokens": lambda img: not img.delegation_tokens.is_empty(),
    "controller_registration": lambda img: bool(img.cluster.controllers),
    "directory_assignment": lambda img: any(b.directories for b in img.cluster.brokers.values()) or any(
        d != MIGRATING for t in img.topics.by_id.values() for p in t.partitions.values() for d in p.directories),
    "elr": lambda img: any(p.has_elr() for t in img.topics.by_id.values() for p in t.partitions.values()),
    "migration": lambda img: any(b.is_migrating_zk_broker for b in img.cluster.brokers.values()),
    "cordoned_log_dirs": lambda img: any(b.cordoned_directories for b in img.cluster.brokers.values()),
}


def lowest_lossless_mv(img: MetadataImage, cat=CAT):
    needed = [c for c, pred in NEEDS.items() if pred(img)]
    return next(mv for mv in cat.metadata_versions if all(cat.supports(c, mv) for c in needed))


def with_mv(img: MetadataImage, level: int) -> MetadataImage:
    return img.__class__(**{**{f: getattr(img, f) for f in img.__struct_fields__},
                            "features": msgspec.structs.replace(img.features, metadata_version=level)})


def read_back(payloads, cat=CAT) -> MetadataImage:
    return image_from_records(payloads, catalog=cat)


# ----------------------------------------------------------------------------- order and versions


def test_order_and_versions_follow_kafka() -> None:
    groups = [[mv_record(27)],
              [rec("DelegationTokenRecord", token_id="t1", owner="User:a", requester="User:a")],
              [rec("UserScramCredentialRecord", name="u", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
                   iterations=1)],
              [rec("AccessControlEntryRecord", id=uid(9), resource_type=2, resource_name="t", pattern_type=3,
                   principal="User:a", host="*", operation=2, permission_type=3)],
              [rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=42)],
              [rec("ClientQuotaRecord", entity=[REGISTRY["ClientQuotaRecord"].nested["EntityData"](entity_type="user")],
                   key="k", value=1.0)],
              [rec("ConfigRecord", resource_type=2, resource_name="b", name="retention.ms", value="1")],
              [rec("TopicRecord", name="b", topic_id=uid(2)), rec("PartitionRecord", topic_id=uid(2), partition_id=1,
                                                                   replicas=[1], isr=[1], leader=1),
               rec("PartitionRecord", topic_id=uid(2), partition_id=0, replicas=[1], isr=[1], leader=1)],
              [rec("TopicRecord", name="a", topic_id=uid(1))],
              [rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(3))],
              [rec("RegisterBrokerRecord", broker_id=2, incarnation_id=uid(4), log_dirs=[uid(5)])],
              [rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(6), log_dirs=[uid(7)])],
              [rec("FeatureLevelRecord", name="transaction.version", feature_level=2)],
              [rec("FeatureLevelRecord", name="group.version", feature_level=1)]]
    img = replay([r for g in groups for r in g])
    out = write_image(img, "4.1-IV1", CAT)
    got = [(p.record_type.name, p.version) for p in out]
    assert got == [("FeatureLevelRecord", 0)] * 3 + [("RegisterBrokerRecord", 3)] * 2 + [
        ("RegisterControllerRecord", 0), ("TopicRecord", 0), ("PartitionRecord", 2), ("PartitionRecord", 2),
        ("TopicRecord", 0), ("ConfigRecord", 0), ("ClientQuotaRecord", 0), ("ProducerIdsRecord", 0),
        ("AccessControlEntryRecord", 0), ("UserScramCredentialRecord", 0), ("DelegationTokenRecord", 0)]
    assert [p.message.name for p in out[:3]] == ["metadata.version", "group.version", "transaction.version"]
    assert out[0].message.feature_level == 27
    assert [p.message.broker_id for p in out[3:5]] == [1, 2]
    # topics in the order of Kafka's persistent map: by the ids' hash codes, as signed ints
    assert sorted([(signed32(uuid_hash(uid(1))), "a"), (signed32(uuid_hash(uid(2))), "b")])[0][1] == "b"
    assert [p.message.name for p in out if p.record_type.name == "TopicRecord"] == ["b", "a"]
    assert [p.message.partition_id for p in out if p.record_type.name == "PartitionRecord"] == [0, 1]
    pid = next(p for p in out if p.record_type.name == "ProducerIdsRecord").message
    assert (pid.broker_id, pid.broker_epoch, pid.next_producer_id) == (-1, -1, 42)
    assert write_image(img, 27, CAT) == out  # deterministic, and MV by level works too


def test_record_versions_come_from_the_catalog() -> None:
    img = replay([mv_record(25), rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1)),
                  rec("TopicRecord", name="a", topic_id=uid(1)),
                  rec("PartitionRecord", topic_id=uid(1), partition_id=0, replicas=[1], isr=[1], leader=1)])
    for mv in CAT.metadata_versions:
        out = write_image(img, mv, CAT)
        versions = {p.record_type.name: p.version for p in out}
        assert versions["RegisterBrokerRecord"] == CAT.record_version("RegisterBrokerRecord", mv)
        assert versions["PartitionRecord"] == CAT.record_version("PartitionRecord", mv)


def test_zk_migration_state_record_on_3x_line_only() -> None:
    img = replay([mv_record(14)])
    three = write_image(img, 14, CAT.at_release("3.6"))
    assert [p.record_type.name for p in three] == ["FeatureLevelRecord", "ZkMigrationStateRecord"]
    assert three[1].message.zk_migration_state == 0
    assert [p.record_type.name for p in write_image(img, 14, CAT)] == ["FeatureLevelRecord"]  # 4.x catalog
    assert [p.record_type.name for p in write_image(img, 14, CAT, writer_line="3.x")][-1] == "ZkMigrationStateRecord"
    assert len(write_image(img, 14, CAT, writer_line="4.0")) == 1
    assert len(write_image(img, 7, CAT, writer_line=WRITER_3X)) == 1  # 3.3-IV3 has no migration


# ----------------------------------------------------------------------------- ELR gating


def elr_image(feature_on: bool) -> MetadataImage:
    recs = [mv_record(25), rec("TopicRecord", name="a", topic_id=uid(1)),
            rec("PartitionRecord", topic_id=uid(1), partition_id=0, replicas=[1, 2], isr=[1], leader=1,
                eligible_leader_replicas=[2], last_known_elr=[]),
            rec("PartitionRecord", topic_id=uid(1), partition_id=1, replicas=[1, 2], isr=[1, 2], leader=1)]
    if feature_on:
        recs.append(rec("FeatureLevelRecord", name="eligible.leader.replicas.version", feature_level=1))
    return replay(recs)


def partitions_of(out):
    return [p.message for p in out if p.record_type.name == "PartitionRecord"]


def test_elr_fields_gated_by_feature_on_4x_and_by_mv_on_3x() -> None:
    on, off = elr_image(True), elr_image(False)
    p0, p1 = partitions_of(write_image(on, 25, CAT))
    assert p0.eligible_leader_replicas == [2] and p0.last_known_elr is None  # empty lists are not written
    assert p1.eligible_leader_replicas is None and p1.last_known_elr is None
    report = LossReport()
    p0, _ = partitions_of(write_image(off, 25, CAT, loss_handler=report))
    assert p0.eligible_leader_replicas is None  # Kafka drops them silently...
    assert write_image(off, 25, CAT) is not None  # ...so the default handler does not raise
    assert report.summaries() == [] and report.by_kind() == {"partition ELR (ELR disabled)": ["topic a partition 0"]}
    # 3.x line: the MV decides
    p0, _ = partitions_of(write_image(off, 25, CAT, writer_line="3.x"))
    assert p0.eligible_leader_replicas == [2]
    p0, _ = partitions_of(write_image(on, 25, CAT, elr_enabled=False))
    assert p0.eligible_leader_replicas is None


# ----------------------------------------------------------------------------- losses


def test_default_loss_handler_raises_kafka_text() -> None:
    scram = replay([mv_record(25), rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s",
                                       stored_key=b"k", server_key=b"v", iterations=1),
                    rec("UserScramCredentialRecord", name="bob", mechanism=1, salt=b"s", stored_key=b"k",
                        server_key=b"v", iterations=1)])
    with pytest.raises(UnwritableMetadataException) as e:
        write_image(scram, "3.4-IV0", CAT)
    assert str(e.value) == ("Metadata has been lost because the following could not be represented in "
                            "metadata.version 3.4-IV0: ScramImage({SCRAM_SHA_256:alice, bob},{})")
    tokens = replay([mv_record(25), rec("DelegationTokenRecord", token_id="t1"), rec("DelegationTokenRecord", token_id="t2")])
    with pytest.raises(UnwritableMetadataException, match=r"metadata.version 3.6-IV1: DelegationTokenImage\(t1, t2\)$"):
        write_image(tokens, 13, CAT)
    cases = [
        ([rec("RegisterControllerRecord", controller_id=1, incarnation_id=uid(1))], 14, "controller registration data"),
        ([rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1), log_dirs=[uid(2)])], 16,
         "the online log directories of one or more brokers"),
        ([rec("TopicRecord", name="a", topic_id=uid(1)),
          rec("PartitionRecord", topic_id=uid(1), partition_id=0, replicas=[1], isr=[1], directories=[uid(3)])], 16,
         "the directory assignment state of one or more replicas"),
    ]
    for records, level, text in cases:
        img = replay([mv_record(25)] + records)
        with pytest.raises(UnwritableMetadataException) as e:
            write_image(img, level, CAT)
        assert str(e.value) == (f"Metadata has been lost because the following could not be represented in "
                                f"metadata.version {CAT.metadata_version(level).version}: {text}")
        write_image(img, level + 1, CAT)  # one level up it fits


def test_pre_kraft_losses_on_a_3x_catalog() -> None:
    """Loss cases that only exist on catalogs that still know levels below 3.3-IV3."""
    cat = CAT.at_release("3.3")
    img = image_from_records([rec("FeatureLevelRecord", name="metadata.version", feature_level=7),
                              rec("FeatureLevelRecord", name="group.version", feature_level=1),
                              rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1),
                                  in_controlled_shutdown=True)], catalog=cat)
    report = LossReport()
    out = write_image(img, 3, cat, loss_handler=report)
    assert report.summaries() == ["feature flag(s): group.version", "the inControlledShutdown state of one or more brokers"]
    assert [p.record_type.name for p in out] == ["RegisterBrokerRecord"] and out[0].version == 0
    zk = image_from_records([rec("FeatureLevelRecord", name="metadata.version", feature_level=8),
                             rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1),
                                 is_migrating_zk_broker=True)], catalog=cat.at_release("3.4"))
    with pytest.raises(UnwritableMetadataException, match="the isMigratingZkBroker state of one or more brokers"):
        write_image(zk, 7, cat.at_release("3.4"))


def strip(img: MetadataImage, report: LossReport, target_level: int) -> MetadataImage:
    """The image minus everything the report lists, computed from the report alone."""
    fields = {f: getattr(img, f) for f in img.__struct_fields__}
    brokers, controllers, topics = {}, {}, {}
    scram, tokens = {}, {}
    for loss in report:
        p = loss.path
        if p[:2] == ("cluster", "brokers"):
            b = brokers.get(p[2], img.cluster.brokers[p[2]])
            value = EMPTY if p[3] == "directories" else False
            brokers[p[2]] = msgspec.structs.replace(b, **{p[3]: value})
        elif p[:2] == ("cluster", "controllers"):
            controllers[p[2]] = DELETE
        elif p[0] == "topics":
            tid, pid, what = p[1:]
            t = topics.get(tid, img.topics.by_id[tid])
            part = t.partitions[pid]
            if what == "directories":
                part = msgspec.structs.replace(part, directories=migrating(len(part.replicas)))
            else:
                part = msgspec.structs.replace(part, elr=EMPTY, last_known_elr=EMPTY)
            topics[tid] = msgspec.structs.replace(t, partitions=MappingProxyType({**t.partitions, pid: part}))
        elif p[0] == "scram":
            scram[(p[1], p[2])] = DELETE
        elif p[0] == "delegation_tokens":
            tokens[p[1]] = DELETE
        else:
            raise AssertionError(f"unexpected loss path {p}")
    fields["cluster"] = msgspec.structs.replace(img.cluster, brokers=img.cluster.brokers.update(brokers),
                                                controllers=img.cluster.controllers.update(controllers))
    fields["topics"] = msgspec.structs.replace(img.topics, by_id=img.topics.by_id.update(topics))
    fields["scram"] = msgspec.structs.replace(img.scram, credentials=img.scram.credentials.update(scram))
    fields["delegation_tokens"] = msgspec.structs.replace(img.delegation_tokens,
                                                          tokens=img.delegation_tokens.tokens.update(tokens))
    return with_mv(MetadataImage(**fields), target_level)


def test_lossy_write_drops_exactly_what_the_report_lists() -> None:
    cep = REGISTRY["RegisterControllerRecord"].nested["ControllerEndpoint"]
    img = replay([
        mv_record(25), rec("FeatureLevelRecord", name="eligible.leader.replicas.version", feature_level=1),
        rec("RegisterBrokerRecord", broker_id=1, incarnation_id=uid(1), log_dirs=[uid(11), uid(12)]),
        rec("RegisterBrokerRecord", broker_id=2, incarnation_id=uid(2)),
        rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(3),
            end_points=[cep(name="CONTROLLER", host="c", port=1, security_protocol=0)]),
        rec("TopicRecord", name="t", topic_id=uid(20)),
        rec("PartitionRecord", topic_id=uid(20), partition_id=0, replicas=[1, 2], isr=[1, 2], leader=1,
            directories=[uid(11), MIGRATING]),
        rec("PartitionRecord", topic_id=uid(20), partition_id=1, replicas=[1, 2], isr=[1], leader=1,
            eligible_leader_replicas=[2]),
        rec("UserScramCredentialRecord", name="alice", mechanism=2, salt=b"s", stored_key=b"k", server_key=b"v",
            iterations=1),
        rec("DelegationTokenRecord", token_id="tok", owner="User:alice"),
        rec("ConfigRecord", resource_type=2, resource_name="t", name="retention.ms", value="1"),
    ])
    for level in (8, 11, 14, 15, 17, 22):
        report = LossReport()
        out = write_image(img, level, CAT, loss_handler=report)
        back = read_back(out)
        expected = strip(img, report, level)
        assert image_digest(back) == image_digest(expected), (level, report.text())
    report = LossReport()
    write_image(img, 8, CAT, loss_handler=report)
    assert report.by_kind() == {
        "broker log dirs": ["broker 1"],
        "controller registration": ["controller 3000"],
        "replica directory assignment": ["topic t partition 0"],
        "partition ELR": ["topic t partition 1"],
        "SCRAM credential": ["SCRAM-SHA-512 user alice"],
        "delegation token": ["delegation token tok"],
    }
    assert report.summaries() == [
        "the online log directories of one or more brokers", "controller registration data",
        "the directory assignment state of one or more replicas",
        "the eligible leader replicas of one or more partitions", "ScramImage({SCRAM_SHA_512:alice},{})",
        "DelegationTokenImage(tok)"]
    assert "broker log dirs: broker 1" in report.lines()
    full = LossReport()
    write_image(img, 25, CAT, loss_handler=full)
    assert full.lossless and full.text() == "nothing was lost"


# ----------------------------------------------------------------------------- round trips


FLAGS = st.fixed_dictionaries({k: st.booleans() for k in ("dirs", "elr", "scram", "tokens", "controllers",
                                                          "shutdown", "zk")})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLAGS.flatmap(lambda flags: image_groups(**flags)))
def test_lossless_round_trip_at_every_sufficient_mv(groups) -> None:
    img = replay([mv_record(CAT.latest_testing.level)] + [r for g in groups for r in g])
    lowest = lowest_lossless_mv(img)
    for mv in CAT.metadata_versions:
        if mv.level < lowest.level:
            continue
        report = LossReport()
        out = write_image(img, mv, CAT, loss_handler=report, elr_enabled=True if NEEDS["elr"](img) else None)
        assert report.lossless, (mv, report.text())
        back = read_back(out)
        assert image_digest(back) == image_digest(with_mv(img, mv.level)), mv
    # one level lower than needed always loses something
    if lowest.level > CAT.minimum.level:
        report = LossReport()
        write_image(img, lowest.level - 1, CAT, loss_handler=report, elr_enabled=True)
        assert not report.lossless


@settings(max_examples=60, deadline=None)
@given(FLAGS.flatmap(lambda flags: image_groups(**flags)), st.sampled_from([7, 8, 11, 13, 14, 15, 17, 21, 25]))
def test_lossy_round_trip_matches_image_minus_report(groups, level) -> None:
    img = replay([mv_record(29)] + [r for g in groups for r in g])
    report = LossReport()
    out = write_image(img, level, CAT, loss_handler=report)
    assert image_digest(read_back(out)) == image_digest(strip(img, report, level)), report.text()


# ----------------------------------------------------------------------------- opaque records (KIP-778's Bar)


def bar_setup():
    cat = load_catalog(KIP778)
    reg = cat.record_registry()
    bar = reg["BarRecord"]
    return cat, reg, bar


def test_unmodelled_record_types_are_carried_and_reported_lost() -> None:
    cat, reg, bar = bar_setup()
    fl = reg["FeatureLevelRecord"]
    recs = [Payload(fl, 0, fl.new(name="metadata.version", feature_level=38)),
            Payload(bar, 0, bar.new(bar_id=uid(1), value="x")), Payload(bar, 0, bar.new(bar_id=uid(2), value="y"))]
    d = MetadataDelta(MetadataImage(), cat)
    d.replay_all(recs)
    img = d.apply()
    assert len(img.opaque.records) == 2 and img.summary()["opaque records"] == 2
    out = write_image(img, "4.9-IV3", cat)
    assert [p.record_type.name for p in out] == ["FeatureLevelRecord", "BarRecord", "BarRecord"]
    assert image_digest(image_from_records(out, catalog=cat)) == image_digest(img)
    # V4 -> V3 drops every Bar: reported, and raised by default
    report = LossReport()
    out = write_image(img, "4.9-IV2", cat, loss_handler=report)
    assert [p.record_type.name for p in out] == ["FeatureLevelRecord"]
    assert report.summaries() == ["records of type BarRecord"] and len(report) == 2
    with pytest.raises(UnwritableMetadataException, match="metadata.version 4.9-IV2: records of type BarRecord"):
        write_image(img, "4.9-IV2", cat)
    # V5 -> V4 keeps them
    assert write_image(img, "4.9-IV4", cat)[1:] == write_image(img, "4.9-IV3", cat)[1:]
    # a snapshot without them removes them
    assert image_from_records(out, base=img, catalog=cat, snapshot=True).opaque.is_empty()


def test_opaque_records_keyed_by_map_key_fields(tmp_path: Path) -> None:
    schemas = tmp_path / "records"
    schemas.mkdir()
    (schemas / "BazRecord.toml").write_text(
        'name = "BazRecord"\nkind = "metadata"\napi_key = 31\nversions = "0"\nflexible_versions = "0+"\n'
        '[[fields]]\nname = "BazId"\ntype = "int32"\nversions = "0+"\nmap_key = true\n'
        '[[fields]]\nname = "Value"\ntype = "string"\nversions = "0+"\n')
    (tmp_path / "cat.toml").write_text('record_schema_dirs = ["records"]\n'
                                       '[records.BazRecord]\nsince = "4.0-IV1"\n')
    cat = load_catalog(tmp_path / "cat.toml")
    reg = cat.record_registry()
    baz = reg["BazRecord"]
    img = image_from_records([Payload(baz, 0, baz.new(baz_id=1, value="a")), Payload(baz, 0, baz.new(baz_id=1, value="b")),
                              Payload(baz, 0, baz.new(baz_id=2, value="c"))], catalog=cat)
    values = sorted(r.message.value for r in img.opaque.records.values())
    assert values == ["b", "c"]  # the later record with key 1 replaced the earlier
    report = LossReport()
    write_image(img, 22, cat, loss_handler=report)
    assert report.by_kind() == {"BazRecord record": ["BazRecord baz_id=1", "BazRecord baz_id=2"]}


def test_every_component_has_its_writer_in_kafkas_order() -> None:
    """writer/components names one writer per MetadataImage field, as writer_components.toml does."""
    from kraftsim.image.image import COMPONENTS
    from kraftsim.image.writer.components import WRITERS
    from kraftsim.image.writer.mv_change import writer_components

    assert tuple(WRITERS) == COMPONENTS == tuple(writer_components())
