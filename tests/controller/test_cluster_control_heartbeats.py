"""Heartbeats, fencing, controlled shutdown, offline directories, unregistration and session
expiry (kafka-facts §5.5): BrokerHeartbeatManager's state table row by row, the records
each transition writes and their versions, and Kafka's real controlled shutdowns."""

from __future__ import annotations

import json

import msgspec
import pytest

from kraftsim.controller.cluster_control import (
    BrokerControlState,
    BrokerHeartbeatRequest,
    BrokerHeartbeats,
    broker_heartbeat,
    expire_sessions,
    unregister_broker,
)
from kraftsim.controller.context import ControllerConfig, ControllerContext
from kraftsim.image import MetadataImage
from kraftsim.image.intern import UNASSIGNED
from tests.conftest import ORACLE
from tests.controller.cluster_support import CATALOG, RuleCluster, replay, to_json, types
from tests.image.helpers import data_records, read_entries

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")
FENCE = ("BrokerRegistrationChangeRecord", 0)
PCR = ("PartitionChangeRecord", 2)
S = BrokerControlState


def reply_flags(r) -> tuple[bool, bool, bool, bool]:
    x = r.response
    return x.is_caught_up, x.is_fenced, x.in_controlled_shutdown, x.should_shut_down


def three_brokers(mv: str = "4.1-IV1", **kw) -> RuleCluster:
    c = RuleCluster(mv, **kw)
    c.start_brokers([1, 2, 3])
    c.create("t", partitions=3, rf=3)
    return c


# --------------------------------------------------------------------------- the state table


def test_fenced_broker_that_has_not_caught_up_stays_fenced():
    c = RuleCluster("4.1-IV1")
    c.register(1)
    r = c.heartbeat(1, current_metadata_offset=c.heartbeats.register_offset(1) - 1)
    assert r.records == () and reply_flags(r) == (False, True, False, False)
    assert c.heartbeats.state(1) is S.FENCED


def test_fenced_broker_asking_to_stay_fenced_stays_fenced():
    c = RuleCluster("4.1-IV1")
    c.register(1)
    r = c.heartbeat(1, want_fence=True)
    assert r.records == () and reply_flags(r) == (True, True, False, False)


def test_fenced_broker_that_caught_up_is_unfenced_and_leads_leaderless_partitions():
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1])
    c.create("t", partitions=2, rf=1)
    c.heartbeat(1, want_fence=True)
    assert c.partition("t", 0).leader == -1 and c.partition("t", 0).isr == (1,)
    r = c.heartbeat(1)
    assert types(r) == [FENCE, PCR, PCR] and reply_flags(r) == (True, False, False, False)
    assert to_json(r.records[0])["data"]["fenced"] == -1
    assert all(c.partition("t", p).leader == 1 for p in range(2))
    assert c.heartbeats.state(1) is S.UNFENCED


def test_fenced_broker_asking_to_shut_down_is_fenced_again_and_told_to_shut_down():
    c = RuleCluster("4.1-IV1")
    c.register(1)
    r = c.heartbeat(1, want_shut_down=True)
    assert types(r) == [FENCE] and to_json(r.records[0])["data"]["fenced"] == 1
    assert reply_flags(r)[1:] == (True, False, True)


def test_unfenced_broker_asking_to_be_fenced_leaves_every_isr_first():
    c = three_brokers()
    r = c.heartbeat(2, want_fence=True)
    assert types(r) == [PCR, PCR, PCR, FENCE] and reply_flags(r)[1:] == (True, False, False)
    assert all(2 not in c.partition("t", p).isr and c.partition("t", p).leader != 2 for p in range(3))
    assert c.image.cluster.broker(2).fenced and c.heartbeats.state(2) is S.FENCED


def test_unfenced_broker_asking_to_be_fenced_and_to_shut_down_shuts_down_now():
    c = three_brokers()
    r = c.heartbeat(2, want_fence=True, want_shut_down=True)
    assert types(r)[-1] == FENCE and reply_flags(r)[1:] == (True, False, True)


def test_unfenced_leader_asking_to_shut_down_enters_controlled_shutdown():
    c = three_brokers()
    start = c.next_offset
    r = c.heartbeat(1, want_shut_down=True)
    assert types(r)[0] == ("BrokerRegistrationChangeRecord", 1) and set(types(r)[1:]) == {PCR}
    assert to_json(r.records[0])["data"] == {"brokerId": 1, "brokerEpoch": c.image.cluster.broker(1).epoch,
                                             "inControlledShutdown": 1}
    assert reply_flags(r)[1:] == (False, True, False)
    assert c.heartbeats.brokers[1].controlled_shutdown_offset == start + len(r.records) - 1
    assert c.image.cluster.broker(1).in_controlled_shutdown
    assert all(c.partition("t", p).leader not in (1, -1) for p in range(3))


def test_unfenced_broker_without_leaderships_asking_to_shut_down_shuts_down_now():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1])
    r = c.heartbeat(1, want_shut_down=True)
    assert types(r) == [FENCE] and reply_flags(r)[1:] == (True, False, True)


def test_unfenced_broker_heartbeat_changes_nothing():
    c = three_brokers()
    r = c.heartbeat(1)
    assert r.records == () and reply_flags(r) == (True, False, False, False)


def test_controlled_shutdown_waits_until_the_active_brokers_caught_up_then_fences():
    c = three_brokers()
    c.heartbeat(2, current_metadata_offset=5)  # broker 2 reports an old offset
    c.heartbeat(1, want_shut_down=True)
    cs_offset = c.heartbeats.brokers[1].controlled_shutdown_offset
    r = c.heartbeat(1, want_shut_down=True)
    assert r.records == () and reply_flags(r)[1:] == (False, True, False)
    c.heartbeat(2, current_metadata_offset=cs_offset)
    c.heartbeat(3, current_metadata_offset=cs_offset)
    r = c.heartbeat(1, want_shut_down=True)
    assert types(r) == [FENCE] and reply_flags(r)[1:] == (True, False, True)
    assert c.heartbeats.brokers[1].controlled_shutdown_offset == -1


@pytest.mark.parametrize("leads, lowest, expected", [
    (True, None, S.CONTROLLED_SHUTDOWN),
    (False, 9, S.CONTROLLED_SHUTDOWN),  # an active broker is behind the controlled-shutdown offset
    (False, 10, S.SHUTDOWN_NOW),
    (False, None, S.SHUTDOWN_NOW),  # no active broker at all
])
def test_controlled_shutdown_row(leads, lowest, expected):
    hb = BrokerHeartbeats()
    hb.register(1, False)
    hb.enter_controlled_shutdown(1, 10)
    if lowest is not None:
        hb.register(2, False)
        hb.touch(2, False, lowest)
    req = BrokerHeartbeatRequest(1, 5, 100, want_shut_down=True)
    assert hb.next_state(1, req, 0, lambda: leads) == (S.CONTROLLED_SHUTDOWN, expected)


def test_stale_epochs_and_unknown_brokers_are_refused():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1])
    r = c.heartbeat(1, broker_epoch=0)
    epoch = c.image.cluster.broker(1).epoch
    assert (r.error.name, r.error.code, r.error.message) == (
        "STALE_BROKER_EPOCH", 77, f"Expected broker epoch {epoch}, but got broker epoch 0")
    r = c.heartbeat(7, broker_epoch=3)
    assert (r.error.name, r.error.message) == ("STALE_BROKER_EPOCH", "Receive a heartbeat from broker 7 before "
                                                                    "registration")
    # a registration the controller knows of only from the image (no RegisterBrokerRecord offset lost)
    c.heartbeats.brokers[1].register_offset = None
    assert c.heartbeat(1).error.name == "STALE_BROKER_EPOCH"


def test_controlled_shutdown_record_needs_3_3_iv3_and_versions_follow_the_metadata_version():
    c = three_brokers("3.3-IV3")
    r = c.heartbeat(1, want_shut_down=True)
    assert types(r)[0] == ("BrokerRegistrationChangeRecord", 1)
    assert {v for t, v in types(r) if t == "PartitionChangeRecord"} == {0}
    r = c.heartbeat(2, want_fence=True)
    assert types(r)[-1] == FENCE


# --------------------------------------------------------------------------- fencing and ISR / ELR


def test_without_elr_the_last_isr_member_stays_and_the_partition_goes_leaderless():
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1])
    c.create("t", partitions=1, rf=1)
    r = c.heartbeat(1, want_fence=True)
    assert to_json(r.records[0])["data"] == {"partitionId": 0, "topicId": str(c.image.topics.get_topic_by_name("t").id),
                                             "leader": -1}
    p = c.partition("t", 0)
    assert (p.isr, p.leader, p.elr) == ((1,), -1, ())


def test_with_elr_replicas_leaving_an_isr_below_min_isr_become_eligible_leaders():
    c = three_brokers(elr=True, min_insync_replicas=2)
    c.heartbeat(3, want_fence=True)  # ISR 3 -> 2: still at min.insync.replicas, no ELR
    assert all(c.partition("t", p).elr == () for p in range(3))
    c.heartbeat(2, want_fence=True)  # ISR 2 -> 1: broker 2 becomes eligible
    for p in range(3):
        part = c.partition("t", p)
        assert (part.isr, part.elr, part.leader) == ((1,), (2,), 1)
    c.heartbeat(1, want_fence=True)  # the ISR empties: leader -1, last known leader kept
    part = c.partition("t", 0)
    assert (part.isr, part.elr, part.leader, part.last_known_elr) == ((), (1, 2), -1, (1,))
    r = c.heartbeat(2)  # an ELR member comes back: it leads, with an ISR of itself
    assert types(r)[0] == FENCE and len(r.records) == 4
    part = c.partition("t", 0)
    assert (part.isr, part.elr, part.leader, part.last_known_elr) == ((2,), (1,), 2, ())


def test_offline_directories_move_leadership_and_shrink_the_registration():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2], dirs=2)
    c.create("t", partitions=4, rf=2)
    assert c.partition("t", 0).directories == (UNASSIGNED, UNASSIGNED)  # each broker has several dirs
    # the brokers report where their replicas landed: put broker 1's replicas of partitions 0 and 1 in dir A
    dir_a, dir_b = c.image.cluster.broker(1).directories
    from kraftsim.controller.partition_change import PartitionChangeBuilder, leader_acceptor
    recs = []
    for pid in range(4):
        topic = c.image.topics.get_topic_by_name("t")
        part = topic.partitions[pid]
        b = PartitionChangeBuilder(c.ctx(), c.mv, topic, pid, part, leader_acceptor(c.image, part, lambda r: True))
        b.target_dirs[1] = dir_a if pid < 2 else dir_b
        recs.append(b.build())
    from kraftsim.controller.result import accepted
    c.apply(accepted(recs))
    r = c.heartbeat(1, offline_log_dirs=(dir_a,))
    assert types(r) == [PCR, PCR, ("BrokerRegistrationChangeRecord", 2)]
    assert to_json(r.records[-1])["data"]["logDirs"] == [str(dir_b)]
    assert c.image.cluster.broker(1).directories == (dir_b,)
    assert [1 in c.partition("t", p).isr for p in range(4)] == [False, False, True, True]
    assert c.heartbeat(1, offline_log_dirs=(dir_a,)).records == ()  # already known offline


def test_offline_directories_are_ignored_before_3_7_iv2():
    c = RuleCluster("3.7-IV1")
    c.start_brokers([1])
    assert c.heartbeat(1, offline_log_dirs=(c.registration(1).log_dirs[0],)).records == ()


# --------------------------------------------------------------------------- unregistration and expiry


def test_unregistering_leaves_every_isr_then_writes_unregister_broker_record():
    c = three_brokers()
    epoch = c.image.cluster.broker(3).epoch
    r = c.run(unregister_broker, 3, c.heartbeats)
    assert types(r) == [PCR, PCR, PCR, ("UnregisterBrokerRecord", 0)] and not r.atomic
    assert to_json(r.records[-1])["data"] == {"brokerId": 3, "brokerEpoch": epoch}
    assert c.image.cluster.broker(3) is None and 3 not in c.heartbeats.brokers
    r = unregister_broker(c.ctx(), 3, c.heartbeats)
    assert (r.error.name, r.error.code, r.error.message) == ("BROKER_ID_NOT_REGISTERED", 102,
                                                             "Broker ID 3 is not currently registered")


def test_sessions_expire_after_the_timeout_and_each_fencing_sees_the_previous_one():
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1, 2, 3])
    c.create("t", partitions=1, rf=2)
    pair = set(c.partition("t", 0).replicas)
    c.now_ms += c.config.broker_session_timeout_ms
    assert c.run(expire_sessions, c.heartbeats).records == ()
    c.now_ms += 1
    r = c.run(expire_sessions, c.heartbeats)
    assert r.response.fenced_brokers == (1, 2, 3) and not r.atomic
    assert [t for t, _ in types(r)].count("BrokerRegistrationChangeRecord") == 3
    p = c.partition("t", 0)
    assert p.leader == -1 and len(p.isr) == 1 and set(p.isr) <= pair  # the second fencing saw the first
    assert all(c.image.cluster.broker(b).fenced for b in (1, 2, 3))
    assert c.run(expire_sessions, c.heartbeats).records == ()  # the sessions are gone


def test_an_old_epochs_session_expires_without_records():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1])
    c.heartbeat(1, broker_epoch=99)  # refused, but its contact time is tracked, as in Kafka
    c.heartbeats.contacts.pop((1, c.image.cluster.broker(1).epoch))
    c.now_ms += 60_000
    r = c.run(expire_sessions, c.heartbeats)
    assert r.records == () and r.response.fenced_brokers == () and not c.heartbeats.contacts


@pytest.mark.parametrize("release, mv, fenced_again", [("3.9", "3.9-IV0", False), ("4.0", "4.0-IV3", True),
                                                      ("4.4", "4.1-IV1", True)])
def test_a_cleanly_stopped_brokers_old_session_fences_it_again_only_from_4_0(release, mv, fenced_again):
    """3.x looks for stale brokers among unfenced ones only (policy broker_session); 4.x's
    tracker expires the epoch's session, fenced or not, and fences the broker again."""
    c = RuleCluster(mv, catalog=CATALOG.at_release(release))
    c.start_brokers([1, 2])
    r = c.heartbeat(1, want_shut_down=True)
    assert r.response.should_shut_down and c.image.cluster.broker(1).fenced
    c.now_ms += 5_000
    c.heartbeat(2)
    c.now_ms += c.config.broker_session_timeout_ms - 4_000  # broker 1's contact expired, broker 2's lives
    r = c.run(expire_sessions, c.heartbeats)
    assert r.response.fenced_brokers == ((1,) if fenced_again else ())
    assert types(r) == ([FENCE] if fenced_again else [])
    assert (1, c.image.cluster.broker(1).epoch) not in c.heartbeats.contacts  # dropped either way
    assert not c.image.cluster.broker(2).fenced


def test_from_image_gives_unfenced_brokers_a_fresh_session():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2])
    c.heartbeat(2, want_fence=True)
    hb = BrokerHeartbeats.from_image(c.image, now_ms=5)
    assert hb.state(1) is S.UNFENCED and hb.state(2) is S.FENCED
    assert hb.has_valid_session(1, c.image.cluster.broker(1).epoch, 5)
    assert not hb.has_valid_session(2, c.image.cluster.broker(2).epoch, 5)
    assert hb.register_offset(1) == c.image.provenance.last_contained_offset


# --------------------------------------------------------------------------- the real thing

ORACLE_SHUTDOWNS = [
    # set, release line, first record of the controlled shutdown, the fence record
    ("kafka-3.7.0_ldipoc", "3.7", 4871, 4926),
    ("kafka-4.1_dkoh12", "4.1", 7652, 7704),
]


def _json(p, version) -> str:
    return f"{version}:{json.dumps(p, sort_keys=True)}"


@needs_oracle
@pytest.mark.parametrize("folder, release, start, fence_offset", ORACLE_SHUTDOWNS)
def test_controlled_shutdown_reproduces_kafkas_records(folder, release, start, fence_offset):
    """Kafka 3.7 (no ELR: leader -1, ISR kept) and 4.1 (ELR: ISR emptied, broker eligible,
    last known leader kept): the same records, then the same final fencing."""
    entries = read_entries(ORACLE / folder / "__cluster_metadata-0" / "00000000000000000000.log")
    catalog = CATALOG.at_release(release)
    records = data_records(entries)
    image = replay(MetadataImage(), [e for e in records if e.offset < start], catalog, start)
    expected = [e for e in records if start <= e.offset < fence_offset and e.record_type.name != "NoOpRecord"]
    ctx = ControllerContext(node_id=1, supported=catalog.supported_features(), image=image, catalog=catalog,
                            config=ControllerConfig(cluster_id="c"), next_write_offset=start)
    hb = BrokerHeartbeats.from_image(image, now_ms=0)
    epoch = image.cluster.broker(1).epoch
    r = broker_heartbeat(ctx, BrokerHeartbeatRequest(1, epoch, start - 1, want_shut_down=True), hb)
    assert r.response.in_controlled_shutdown
    assert (r.records[0].record_type.name, r.records[0].version) == ("BrokerRegistrationChangeRecord", 1)
    assert to_json(r.records[0])["data"] == expected[0].to_json()["data"]
    # Kafka visits partitions in hash-map order; the records themselves must be the same
    assert sorted(_json(to_json(p)["data"], p.version) for p in r.records) == sorted(
        _json(e.to_json()["data"], e.version) for e in expected)
    assert hb.brokers[1].controlled_shutdown_offset == fence_offset - 1

    ctx = msgspec.structs.replace(ctx, image=replay(image, r.records, catalog), next_write_offset=fence_offset)
    r = broker_heartbeat(ctx, BrokerHeartbeatRequest(1, epoch, fence_offset - 1, want_shut_down=True), hb)
    fence = next(e for e in entries if e.offset == fence_offset)
    assert r.response.should_shut_down
    assert [(p.version, to_json(p)["data"]) for p in r.records] == [(fence.version, fence.to_json()["data"])]


def test_before_3_3_iv2_fencing_uses_fence_and_unfence_broker_records():
    c = RuleCluster("3.3-IV1", catalog=CATALOG.at_release("3.3"))
    r = c.register(1)
    assert types(r) == [("RegisterBrokerRecord", 0)]
    r = c.heartbeat(1)
    assert types(r) == [("UnfenceBrokerRecord", 0)] and not c.image.cluster.broker(1).fenced
    r = c.heartbeat(1, want_shut_down=True)  # no InControlledShutdown state yet: leads nothing, shuts down
    assert types(r) == [("FenceBrokerRecord", 0)] and c.image.cluster.broker(1).fenced
