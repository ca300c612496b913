"""Broker and controller registration (kafka-facts §5.5): every check in Kafka's order with
its exact text and code, the records and their versions per metadata.version, and the
real records of Kafka 3.4, 3.7 and 4.1 (../shared/oracle) reproduced field for field."""

from __future__ import annotations

import msgspec
import pytest

from kraftsim.controller.cluster_control import (
    BrokerHeartbeats,
    BrokerRegistrationRequest,
    ControllerRegistrationRequest,
    Listener,
    SupportedFeature,
    register_broker,
    register_controller,
)
from kraftsim.controller.context import ControllerConfig, ControllerContext
from kraftsim.image import MetadataImage
from kraftsim.image.intern import LOST, MIGRATING, UNASSIGNED
from kraftsim.versions import load_catalog
from tests.conftest import ORACLE
from tests.controller.cluster_support import CATALOG, CLUSTER_ID, RuleCluster, replay, to_json, types, uid
from tests.image.helpers import data_records, read_entries

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


def refusal(result) -> tuple[str, int, str]:
    assert not result.records
    return result.error.name, result.error.code, result.error.message


# --------------------------------------------------------------------------- checks, in order


def test_cluster_id_mismatch_is_refused_first():
    c = RuleCluster("4.1-IV1")
    req = msgspec.structs.replace(c.registration(1, dirs=0), cluster_id="other", is_migrating_zk_broker=True)
    assert refusal(register_broker(c.ctx(), req, c.heartbeats)) == (
        "INCONSISTENT_CLUSTER_ID", 104, f"Expected cluster ID {CLUSTER_ID}, but got cluster ID other")


def test_a_new_incarnation_is_refused_while_the_old_session_lives_and_accepted_after_it_expires():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1])  # the heartbeat opens a session for (1, epoch)
    other = c.registration(1, incarnation=99, is_migrating_zk_broker=True)  # the ZK check comes later
    text = ("Another broker is registered with that broker id. If the broker was recently restarted this should "
            "self-resolve once the heartbeat manager expires the broker's session.")
    assert refusal(register_broker(c.ctx(), other, c.heartbeats)) == ("DUPLICATE_BROKER_REGISTRATION", 101, text)
    # still live exactly at the timeout, expired one millisecond later
    c.now_ms += c.config.broker_session_timeout_ms
    assert register_broker(c.ctx(), other, c.heartbeats).error.name == "DUPLICATE_BROKER_REGISTRATION"
    c.now_ms += 1
    assert register_broker(c.ctx(), other, c.heartbeats).error.name == "BROKER_ID_NOT_REGISTERED"


SHORT_DUPLICATE = "Another broker is registered with that broker id."


@pytest.mark.parametrize("release, mv, fenced_holds_session, text", [
    ("3.7", "3.7-IV4", False, SHORT_DUPLICATE),
    ("3.9", "3.9-IV0", False, SHORT_DUPLICATE),
    ("4.0", "4.0-IV3", True, SHORT_DUPLICATE),
    ("4.1", "4.1-IV1", True, SHORT_DUPLICATE + " If the broker was recently restarted this should self-resolve once "
                              "the heartbeat manager expires the broker's session."),
])
def test_a_cleanly_stopped_broker_may_come_back_at_once_only_before_4_0(release, mv, fenced_holds_session, text):
    """3.x's BrokerHeartbeatManager gives a fenced broker no session; 4.x's tracker keeps the
    epoch's session, fenced or not, until it expires (policy broker_session)."""
    c = RuleCluster(mv, catalog=CATALOG.at_release(release))
    c.start_brokers([1])
    other = c.registration(1, incarnation=99)
    # unfenced, with a live session: refused by every release, in its own words
    assert refusal(register_broker(c.ctx(), other, c.heartbeats)) == ("DUPLICATE_BROKER_REGISTRATION", 101, text)
    # a controlled shutdown with nothing to move: SHUTDOWN_NOW, the broker is fenced
    c.now_ms += 500
    reply = c.heartbeat(1, want_shut_down=True)
    assert reply.response.should_shut_down and c.image.cluster.broker(1).fenced
    c.now_ms += 10
    result = register_broker(c.ctx(), other, c.heartbeats)
    if not fenced_holds_session:
        assert result.ok and result.response.broker_epoch == c.next_offset
        return
    assert refusal(result) == ("DUPLICATE_BROKER_REGISTRATION", 101, text)
    # until the session of the last heartbeat expires
    c.now_ms += c.config.broker_session_timeout_ms - 10
    assert register_broker(c.ctx(), other, c.heartbeats).error.name == "DUPLICATE_BROKER_REGISTRATION"
    c.now_ms += 1
    assert register_broker(c.ctx(), other, c.heartbeats).ok


def test_a_3x_session_also_ends_when_it_expires():
    """3.x: an unfenced broker that stopped heartbeating holds its session for exactly the timeout."""
    c = RuleCluster("3.9-IV0", catalog=CATALOG.at_release("3.9"))
    c.start_brokers([1])
    other = c.registration(1, incarnation=99)
    c.now_ms += c.config.broker_session_timeout_ms
    assert register_broker(c.ctx(), other, c.heartbeats).error.name == "DUPLICATE_BROKER_REGISTRATION"
    c.now_ms += 1
    assert register_broker(c.ctx(), other, c.heartbeats).ok


def test_without_a_heartbeat_there_is_no_session_and_a_new_incarnation_may_register():
    c = RuleCluster("4.1-IV1")
    c.register(1)
    r = c.register(1, incarnation=42)
    assert r.ok and c.image.cluster.broker(1).incarnation_id == uid(42, hi=0x77)


def test_zk_brokers_are_refused_before_directories_are_looked_at():
    c = RuleCluster("4.1-IV1")
    req = c.registration(1, dirs=0, is_migrating_zk_broker=True)
    assert refusal(register_broker(c.ctx(), req, c.heartbeats)) == (
        "BROKER_ID_NOT_REGISTERED", 102, "Controller does not support registering ZK brokers.")


@pytest.mark.parametrize("dirs, text", [
    ((), "No directories specified in request"),
    ((uid(1), UNASSIGNED), "Reserved directory ID in request"),
    ((MIGRATING,), "Reserved directory ID in request"),
    ((LOST,), "Reserved directory ID in request"),
    ((uid(1), uid(1)), "Duplicate directory ID in request"),
])
def test_directory_checks_from_3_7_iv2(dirs, text):
    c = RuleCluster("3.7-IV2")
    req = msgspec.structs.replace(c.registration(1), log_dirs=dirs, features=())  # the feature checks come later
    assert refusal(register_broker(c.ctx(), req, c.heartbeats)) == ("INVALID_REGISTRATION", 119, text)


def test_a_directory_of_another_broker_is_refused_and_the_broker_may_keep_its_own():
    c = RuleCluster("3.7-IV2")
    c.register(1, dirs=2)
    taken = c.image.cluster.broker(1).directories[1]
    req = msgspec.structs.replace(c.registration(2), log_dirs=(uid(7), taken))
    assert refusal(register_broker(c.ctx(), req, c.heartbeats)) == (
        "INVALID_REGISTRATION", 119, f"Broker 1 is already registered with directory {taken}")
    assert c.register(1, dirs=2, incarnation=5).ok


def test_directories_are_neither_checked_nor_written_before_3_7_iv2():
    c = RuleCluster("3.7-IV1")
    r = register_broker(c.ctx(), c.registration(1, dirs=0), c.heartbeats)
    assert r.ok and types(r) == [("RegisterBrokerRecord", 2)] and r.records[0].message.log_dirs == []


def test_an_advertised_range_that_excludes_the_finalized_level_is_refused_with_kafkas_text():
    c = RuleCluster("4.1-IV1", levels={"transaction.version": 2})
    feats = {"metadata.version": (7, 27), "transaction.version": (0, 1)}
    r = register_broker(c.ctx(), c.registration(1, features=feats), c.heartbeats)
    assert refusal(r) == ("UNSUPPORTED_VERSION", 35, "Unable to register because the broker does not support "
                          "finalized version 2 of transaction.version. The broker wants a version between 0 and 1, "
                          "inclusive.")
    r = register_broker(c.ctx(), c.registration(1, features={"metadata.version": (7, 26)}), c.heartbeats)
    assert refusal(r)[2].startswith("Unable to register because the broker does not support finalized version 27 "
                                    "of metadata.version.")


@pytest.mark.parametrize("line, text", [
    ("3.8", "Unable to register because the broker does not support version 20 of metadata.version. It wants a "
            "version between 1 and 19, inclusive."),
    ("3.9", "Unable to register because the broker does not support finalized version 20 of metadata.version. "
            "The broker wants a version between 1 and 19, inclusive."),
])
def test_the_refusal_is_worded_as_the_controllers_release_words_it(line, text):
    """Seen live: a 3.8.1 controller refusing a 3.7.2 broker, a 4.0.2 one refusing a 3.9.1 broker
    (policy registration_feature_text)."""
    c = RuleCluster("3.8-IV0", catalog=load_catalog(None, line=line))
    r = register_broker(c.ctx(), c.registration(1, features={"metadata.version": (1, 19)}), c.heartbeats)
    assert refusal(r) == ("UNSUPPORTED_VERSION", 35, text)


def test_the_first_failing_feature_in_request_order_is_reported():
    c = RuleCluster("4.1-IV1", levels={"transaction.version": 2, "group.version": 1})
    feats = {"group.version": (0, 0), "transaction.version": (0, 0), "metadata.version": (7, 27)}
    r = register_broker(c.ctx(), c.registration(1, features=feats), c.heartbeats)
    assert "finalized version 1 of group.version" in r.error.message


def test_a_missing_metadata_version_is_reported_only_after_the_advertised_features_pass():
    c = RuleCluster("4.1-IV1", levels={"group.version": 1})
    bad = register_broker(c.ctx(), c.registration(1, features={"group.version": (0, 0)}), c.heartbeats)
    assert "finalized version 1 of group.version" in bad.error.message
    missing = register_broker(c.ctx(), c.registration(1, features={"group.version": (0, 1)}), c.heartbeats)
    assert refusal(missing) == ("INVALID_REGISTRATION", 119, "Request features do not contain 'metadata.version'")


def test_a_finalized_feature_the_broker_omits_counts_as_supporting_only_0_0():
    c = RuleCluster("4.1-IV1", levels={"group.version": 1})
    r = register_broker(c.ctx(), c.registration(1, features={"metadata.version": (7, 27)}), c.heartbeats)
    assert refusal(r) == ("UNSUPPORTED_VERSION", 35, "Unable to register because the broker does not support "
                          "finalized version 1 of group.version. The broker wants a version between 0 and 0, "
                          "inclusive.")


def test_kraft_version_comes_from_the_raft_layer():
    c = RuleCluster("4.1-IV1")
    feats = {"metadata.version": (7, 27)}
    assert register_broker(c.ctx(kraft_version=0), c.registration(1, features=feats), c.heartbeats).ok
    r = register_broker(c.ctx(kraft_version=1), c.registration(1, features=feats), c.heartbeats)
    assert r.error.message.endswith("finalized version 1 of kraft.version. The broker wants a version between 0 "
                                    "and 0, inclusive.")
    ok = register_broker(c.ctx(kraft_version=1), c.registration(1, features={**feats, "kraft.version": (0, 1)}),
                         c.heartbeats)
    assert ok.ok


# --------------------------------------------------------------------------- outcomes


@pytest.mark.parametrize("mv, version", [("3.3-IV3", 1), ("3.4-IV0", 2), ("3.7-IV1", 2), ("3.7-IV2", 3), ("4.1-IV1", 3)])
def test_a_new_incarnation_is_fenced_with_the_next_write_offset_as_epoch(mv, version):
    c = RuleCluster(mv)
    c.next_offset = 1234
    r = c.register(1, rack="r1", dirs=2)
    assert r.ok and not r.atomic and types(r) == [("RegisterBrokerRecord", version)]
    assert r.response.broker_epoch == 1234
    reg = c.image.cluster.broker(1)
    assert (reg.epoch, reg.fenced, reg.in_controlled_shutdown, reg.rack) == (1234, True, False, "r1")
    assert len(reg.directories) == (2 if version == 3 else 0)
    assert c.heartbeats.register_offset(1) == 1234


def test_a_new_incarnation_first_cleans_up_the_old_one():
    c = RuleCluster("3.9-IV0")
    c.start_brokers([1, 2, 3])
    c.create("t", partitions=3, rf=3)
    c.now_ms += 60_000  # every session has expired
    before = c.next_offset
    r = c.register(2, incarnation=77)
    assert r.ok and not r.atomic
    assert [t for t, _ in types(r)] == ["PartitionChangeRecord"] * 3 + ["RegisterBrokerRecord"]
    assert r.response.broker_epoch == before  # the offset of the first record written
    assert c.heartbeats.register_offset(2) == before + 3
    for pid in range(3):
        p = c.partition("t", pid)
        assert 2 not in p.isr and p.leader in (1, 3)


def test_with_elr_an_unclean_restart_leaves_isr_and_elr_and_a_clean_one_only_the_isr():
    def cluster_with_broker_3_in_elr() -> RuleCluster:
        c = RuleCluster("4.1-IV1", elr=True, min_insync_replicas=3)
        c.start_brokers([1, 2, 3])
        c.create("t", partitions=1, rf=3)
        c.heartbeat(3, want_fence=True)
        assert c.partition("t", 0).elr == (3,)
        c.now_ms += 60_000
        return c

    unclean = cluster_with_broker_3_in_elr()
    r = unclean.register(3, incarnation=8, previous_broker_epoch=-1)
    assert types(r)[0] == ("PartitionChangeRecord", 2)
    assert unclean.partition("t", 0).elr == ()

    clean = cluster_with_broker_3_in_elr()
    epoch = clean.image.cluster.broker(3).epoch
    r = clean.register(3, incarnation=8, previous_broker_epoch=epoch)
    assert types(r) == [("RegisterBrokerRecord", 3)]
    assert clean.partition("t", 0).elr == (3,)


def test_the_same_incarnation_amends_and_keeps_epoch_fencing_and_controlled_shutdown():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2])
    c.create("t", partitions=2, rf=2)
    c.heartbeat(1, want_shut_down=True)
    reg = c.image.cluster.broker(1)
    assert reg.in_controlled_shutdown and not reg.fenced
    c.next_offset += 50
    r = c.register(1, rack="moved")
    assert r.ok and types(r) == [("RegisterBrokerRecord", 3)] and r.response.broker_epoch == reg.epoch
    amended = c.image.cluster.broker(1)
    assert (amended.epoch, amended.fenced, amended.in_controlled_shutdown, amended.rack) == (reg.epoch, False, True,
                                                                                              "moved")


@pytest.mark.parametrize("release,mv,kept_epoch,kept_state", [
    ("3.6", "3.6-IV2", False, False),  # renew: a new epoch, fenced, out of controlled shutdown
    ("3.7.0", "3.7-IV4", False, False),  # the same (live 3.7.0: fenced again after the upgrade to 3.7-IV4)
    ("3.7.1", "3.7-IV4", False, True),  # KAFKA-16757: amended, but a new epoch
    ("3.8", "3.8-IV0", False, True),  # the same (live 3.7.2)
    ("3.9", "3.9-IV0", True, True),  # KAFKA-16952: the epoch kept too
])
def test_the_same_incarnation_registering_again_by_release(release: str, mv: str, kept_epoch: bool,
                                                           kept_state: bool) -> None:
    c = RuleCluster(mv, catalog=CATALOG.at_release(release))
    c.start_brokers([1, 2])
    c.create("t", partitions=2, rf=2)  # (leaders to move: the shutdown stays under way)
    c.heartbeat(1, want_shut_down=True)
    reg = c.image.cluster.broker(1)
    assert reg.in_controlled_shutdown and not reg.fenced
    c.next_offset += 50
    offset = c.next_offset
    r = c.register(1)
    assert r.ok and types(r)[-1][0] == "RegisterBrokerRecord"
    again = c.image.cluster.broker(1)
    assert again.epoch == r.response.broker_epoch == (reg.epoch if kept_epoch else offset)
    assert (again.fenced, again.in_controlled_shutdown) == ((False, True) if kept_state else (True, False))


def test_controller_registration_needs_3_7_iv0():
    req = ControllerRegistrationRequest(3000, uid(9), listeners=(Listener("CONTROLLER", "c", 9093),),
                                        features=(SupportedFeature("metadata.version", 7, 27),))
    old = RuleCluster("3.6-IV2")
    assert refusal(register_controller(old.ctx(), req)) == (
        "UNSUPPORTED_VERSION", 35, "The current MetadataVersion is too old to support controller registrations.")
    new = RuleCluster("3.7-IV0")
    r = new.run(register_controller, req)
    assert r.ok and r.atomic and types(r) == [("RegisterControllerRecord", 0)]
    assert new.image.cluster.controller(3000).listeners[0].port == 9093


# --------------------------------------------------------------------------- the real thing

ORACLE_REGISTRATIONS = [
    # set, release line, offset of the RegisterBrokerRecord, kraft.version, version written
    ("kafka-3.4_cooler-SAI", "3.4", 2, 0, 2),
    ("kafka-3.7.0_ldipoc", "3.7", 6, 0, 3),
    ("kafka-4.1_dkoh12", "4.1", 9, 1, 3),
]


@needs_oracle
@pytest.mark.parametrize("folder, release, offset, kraft_version, version", ORACLE_REGISTRATIONS)
def test_registration_and_unfencing_reproduce_kafkas_records(folder, release, offset, kraft_version, version):
    """The broker's own request (read back from its RegisterBrokerRecord), decided on the
    image Kafka had just before, gives the very record Kafka wrote; its first heartbeat
    after catching up gives Kafka's unfencing record."""
    entries = read_entries(ORACLE / folder / "__cluster_metadata-0" / "00000000000000000000.log")
    catalog = CATALOG.at_release(release)
    image = replay(MetadataImage(), [e for e in data_records(entries) if e.offset < offset], catalog, offset)
    written = next(e for e in entries if e.offset == offset)
    m = written.message
    req = BrokerRegistrationRequest(
        broker_id=m.broker_id, cluster_id="cluster", incarnation_id=m.incarnation_id,
        listeners=tuple(Listener(e.name, e.host, e.port, e.security_protocol) for e in m.end_points),
        features=tuple(SupportedFeature(f.name, f.min_supported_version, f.max_supported_version) for f in m.features),
        rack=m.rack, log_dirs=tuple(m.log_dirs))
    ctx = ControllerContext(node_id=1, supported=catalog.supported_features(), image=image, catalog=catalog,
                            config=ControllerConfig(cluster_id="cluster"), next_write_offset=offset,
                            kraft_version=kraft_version)
    hb = BrokerHeartbeats()
    r = register_broker(ctx, req, hb)
    assert r.ok and r.records[0].version == version == written.version
    assert to_json(r.records[0])["data"] == written.to_json()["data"]

    from kraftsim.controller.cluster_control import BrokerHeartbeatRequest, broker_heartbeat
    unfence = next(e for e in entries if e.offset > offset and e.record_type.name == "BrokerRegistrationChangeRecord")
    later = [e for e in data_records(entries) if e.offset < unfence.offset]
    ctx = msgspec.structs.replace(ctx, image=replay(MetadataImage(), later, catalog, unfence.offset),
                                  next_write_offset=unfence.offset)
    epoch = ctx.image.cluster.broker(m.broker_id).epoch
    hb.brokers[m.broker_id].register_offset = unfence.offset - 1
    beat = broker_heartbeat(ctx, BrokerHeartbeatRequest(m.broker_id, epoch, unfence.offset - 1), hb)
    assert [(p.record_type.name, p.version, to_json(p)["data"]) for p in beat.records] == [
        (unfence.record_type.name, unfence.version, unfence.to_json()["data"])]


@needs_oracle
def test_controller_registration_reproduces_kafka_3_7():
    entries = read_entries(ORACLE / "kafka-3.7.0_ldipoc" / "__cluster_metadata-0" / "00000000000000000000.log")
    catalog = CATALOG.at_release("3.7")
    written = next(e for e in entries if e.record_type.name == "RegisterControllerRecord")
    image = replay(MetadataImage(), [e for e in data_records(entries) if e.offset < written.offset], catalog)
    m = written.message
    req = ControllerRegistrationRequest(
        m.controller_id, m.incarnation_id,
        listeners=tuple(Listener(e.name, e.host, e.port, e.security_protocol) for e in m.end_points),
        features=tuple(SupportedFeature(f.name, f.min_supported_version, f.max_supported_version) for f in m.features))
    ctx = ControllerContext(node_id=1, supported=catalog.supported_features(), image=image, catalog=catalog)
    r = register_controller(ctx, req)
    assert [(p.record_type.name, p.version, to_json(p)["data"]) for p in r.records] == [
        ("RegisterControllerRecord", 0, written.to_json()["data"])]
