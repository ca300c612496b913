"""Kafka 4.3/4.4 records in the image and the writer (kafka-facts §11.3): cordoned log
directories in broker registrations, UnregisterControllerRecord, their MV gates and losses,
and their `log dump --json` view."""

from __future__ import annotations

import pytest

from kraftsim.image import LossReport, UnwritableMetadataException, image_digest, image_from_records, write_image
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.json_view import struct_to_json
from kraftsim.versions import default_catalog
from tests.image.helpers import REGISTRY, rec, replay, uid

CAT = default_catalog()
CORDON_LOSS = "the cordoned log directories of one or more brokers"


CORDONED = (uid(2),)


def cluster(mv: int = 30, cordoned=CORDONED) -> list:
    return [
        rec("FeatureLevelRecord", name="metadata.version", feature_level=mv),
        rec("RegisterBrokerRecord", 4, broker_id=1, incarnation_id=uid(9), broker_epoch=5,
            log_dirs=[uid(1), uid(2)], cordoned_log_dirs=None if cordoned is None else list(cordoned)),
        rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uid(7)),
        rec("RegisterControllerRecord", controller_id=3001, incarnation_id=uid(8)),
    ]


def test_registration_v4_carries_cordoned_dirs_and_change_v3_updates_them():
    img = replay(cluster())
    b = img.cluster.broker(1)
    assert b.cordoned_directories == (uid(2),) and not b.all_directories_cordoned
    # null = no change; a list (even empty) replaces them
    same = replay([rec("BrokerRegistrationChangeRecord", 3, broker_id=1, broker_epoch=5, fenced=-1)], img)
    assert same.cluster.broker(1).cordoned_directories == (uid(2),) and not same.cluster.broker(1).fenced
    everything = replay([rec("BrokerRegistrationChangeRecord", 3, broker_id=1, broker_epoch=5,
                             cordoned_log_dirs=[uid(1), uid(2)])], img)
    assert everything.cluster.broker(1).all_directories_cordoned
    cleared = replay([rec("BrokerRegistrationChangeRecord", 3, broker_id=1, broker_epoch=5, cordoned_log_dirs=[])],
                     everything)
    assert cleared.cluster.broker(1).cordoned_directories == () and not cleared.cluster.broker(1).all_directories_cordoned


def test_unregister_controller_record_removes_the_registration():
    img = replay(cluster())
    after = replay([rec("UnregisterControllerRecord", controller_id=3000)], img)
    assert sorted(after.cluster.controllers) == [3001] and sorted(img.cluster.controllers) == [3000, 3001]
    assert after.opaque.is_empty()  # replayed, not carried as an unknown record


def test_writer_keeps_cordoned_dirs_from_4_3_iv0_and_reads_them_back():
    img = replay(cluster(30))
    out = write_image(img, 30, CAT)
    reg = next(p for p in out if p.record_type.name == "RegisterBrokerRecord")
    assert reg.version == 4 and reg.message.cordoned_log_dirs == [uid(2)]
    assert image_digest(image_from_records(out, catalog=CAT)) == image_digest(img)
    assert write_image(replay(cluster(33)), 33, CAT)[1:] == out[1:]  # the same records at every MV from 30
    # The bytes of the record are Kafka's: the tagged field (tag 1) is the last thing before the end.
    body = encode_metadata_record(reg.record_type, reg.message, 4)
    assert body == encode_metadata_record(reg.record_type, reg.record_type.decode(body[3:], 4), 4)


@pytest.mark.parametrize("level", [29, 23, 17])
def test_writing_cordoned_dirs_below_4_3_iv0_is_a_reported_loss(level):
    img = replay(cluster(30))
    report = LossReport()
    out = write_image(img, level, CAT, loss_handler=report)
    assert report.summaries() == [CORDON_LOSS]
    assert [(x.kind, x.entity, x.path) for x in report] == [
        ("broker cordoned log dirs", "broker 1", ("cluster", "brokers", 1, "cordoned_directories"))]
    reg = next(p for p in out if p.record_type.name == "RegisterBrokerRecord")
    assert reg.version == CAT.record_version("RegisterBrokerRecord", level) < 4
    with pytest.raises(UnwritableMetadataException) as exc:
        write_image(img, level, CAT)
    assert str(exc.value) == ("Metadata has been lost because the following could not be represented in "
                              f"metadata.version {CAT.metadata_version(level)}: {CORDON_LOSS}")


@pytest.mark.parametrize("cordoned", [None, ()])
def test_no_cordoned_dirs_is_no_loss(cordoned):
    report = LossReport()
    write_image(replay(cluster(30, cordoned)), 29, CAT, loss_handler=report)
    assert report.lossless


def test_unregister_controller_record_is_gated_at_4_4_iv2():
    assert CAT.record_version("UnregisterControllerRecord", 33) == 0
    with pytest.raises(Exception) as exc:
        CAT.record_version("UnregisterControllerRecord", 32)
    assert str(exc.value) == "The current MetadataVersion is too old to support controller unregistration."
    losses = CAT.downgrade_losses(33, 32)
    assert "  record type UnregisterControllerRecord cannot be written" in "\n".join(losses.lines())


def test_log_dump_json_of_the_new_records():
    # contract 2: tagged fields only when they differ from their default (null here)
    rb = REGISTRY["RegisterBrokerRecord"]
    with_dirs = struct_to_json(rb.schema.body, rb.new(broker_id=1, incarnation_id=uid(9), cordoned_log_dirs=[uid(2)]), 4, True)
    assert with_dirs["cordonedLogDirs"] == [str(uid(2))] and list(with_dirs)[-1] == "cordonedLogDirs"
    without = struct_to_json(rb.schema.body, rb.new(broker_id=1, incarnation_id=uid(9)), 4, True)
    assert "cordonedLogDirs" not in without
    at_v3 = struct_to_json(rb.schema.body, rb.new(broker_id=1, incarnation_id=uid(9), cordoned_log_dirs=[uid(2)]), 3, True)
    assert "cordonedLogDirs" not in at_v3
    ch = REGISTRY["BrokerRegistrationChangeRecord"]
    empty = struct_to_json(ch.schema.body, ch.new(broker_id=1, broker_epoch=5, cordoned_log_dirs=[]), 3, True)
    assert empty["cordonedLogDirs"] == []
    uc = REGISTRY["UnregisterControllerRecord"]
    assert struct_to_json(uc.schema.body, uc.new(controller_id=3000), 0, True) == {"controllerId": 3000}


def test_log_entry_type_name_of_unregister_controller_record():
    p = rec("UnregisterControllerRecord", controller_id=3)
    entry = LogEntry(offset=7, epoch=2, control=False, record_type=p.record_type, version=0, message=p.message,
                     timestamp=0)
    view = entry.to_json()
    assert (view["type"], view["version"], view["data"]) == ("UNREGISTER_CONTROLLER_RECORD", 0, {"controllerId": 3})


def test_4_3_replay_drops_configs_kafka_removed():
    # KAFKA-19851 (4.3): a topic's message.format.version, left by a 3.x cluster, is ignored on replay.
    records = [rec("FeatureLevelRecord", name="metadata.version", feature_level=29),
               rec("ConfigRecord", resource_type=2, resource_name="t", name="message.format.version", value="2.8"),
               rec("ConfigRecord", resource_type=2, resource_name="t", name="retention.ms", value="1000"),
               rec("ConfigRecord", resource_type=4, resource_name="", name="message.format.version", value="2.8")]
    on_43 = image_from_records(records, catalog=CAT.at_release("4.3.0"))
    on_42 = image_from_records(records, catalog=CAT.at_release("4.2.0"))
    assert dict(on_43.configs.config(2, "t")) == {"retention.ms": "1000"}
    assert dict(on_42.configs.config(2, "t")) == {"message.format.version": "2.8", "retention.ms": "1000"}
    # a broker keeps every config; topics, client metrics and groups only what the release defines
    assert dict(on_43.configs.config(4, "")) == {"message.format.version": "2.8"}
    assert CAT.at_release("4.2.0").config_replay_filter() is None
    # 4.2.1 and 4.2.2 (KAFKA-19851 picked onto 4.2) drop it too, with their own lists
    on_421 = image_from_records(records, catalog=CAT.at_release("4.2.1"))
    assert dict(on_421.configs.config(2, "t")) == {"retention.ms": "1000"}


@pytest.mark.parametrize("release", ["4.3.0", "4.3.1", "4.4.0"])
def test_the_replay_filter_is_kafkas_whitelist_by_resource_type(release: str) -> None:
    # DefaultSupportedConfigChecker (KAFKA-19851): BROKER keeps all; TOPIC/CLIENT_METRICS/GROUP keep
    # the names the release's LogConfig, ClientMetricsConfigs and GroupConfig define; others drop.
    f = CAT.at_release(release).config_replay_filter()
    assert f is not None
    keeps = f.keeps
    assert keeps("BROKER", "anything.at.all") and keeps("BROKER", "message.format.version")
    assert keeps("TOPIC", "retention.ms") and keeps("TOPIC", "cleanup.policy")
    assert not keeps("TOPIC", "message.format.version") and not keeps("TOPIC", "message.downconversion.enable")
    assert keeps("CLIENT_METRICS", "interval.ms") and not keeps("CLIENT_METRICS", "retention.ms")
    assert keeps("GROUP", "consumer.session.timeout.ms") and not keeps("GROUP", "retention.ms")
    assert not keeps("BROKER_LOGGER", "kafka.server")
    # 4.4 defines topic configs 4.3 does not (KIP-1191's errors.deadletterqueue.group.enable)
    assert keeps("TOPIC", "errors.deadletterqueue.group.enable") is (release == "4.4.0")
