"""The QuorumController's operations end to end: rules decide, the controller commits to a
real log, and the log replays (through the MetadataLoader) to the controller's own image."""

from __future__ import annotations

import pytest

from kraftsim.controller.cluster_control import (
    BrokerHeartbeatRequest, BrokerRegistrationRequest, ControllerRegistrationRequest, Listener, supported_features,
)
from kraftsim.controller.context import ControllerConfig
from kraftsim.controller import CreatableTopic, CreateTopicsRequest
from kraftsim.image import image_digest
from kraftsim.image import load_path
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import verify_bytes
from tests.controller.conftest import ManualClock, open_controller

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"


def _uuid(n: int) -> Uuid:
    return Uuid.from_longs(0x5100_0000_0000 | n, 0x1234_0000 | n)


def _register_and_unfence(qc, broker_id: int, clock: ManualClock) -> None:
    req = BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=_uuid(broker_id),
        listeners=(Listener("PLAINTEXT", f"b{broker_id}", 9092),),
        features=supported_features(qc.supported), log_dirs=(_uuid(100 + broker_id),))
    reg = qc.register_broker(req)
    assert reg.ok, reg.error
    clock.advance(100)
    beat = qc.broker_heartbeat(BrokerHeartbeatRequest(broker_id, reg.response.broker_epoch,
                                                      current_metadata_offset=qc.log.log_end_offset - 1))
    assert beat.ok and not beat.response.is_fenced


def test_cluster_operations_commit_a_log_that_replays_to_the_controller_image(tmp_path):
    clock = ManualClock()
    log_dir = tmp_path / "__cluster_metadata-0"
    qc = open_controller(log_dir, clock, "4.1", node_id=3000,
                         config=ControllerConfig(cluster_id=CLUSTER_ID, default_replication_factor=3))
    qc.write_leader_change()
    qc.activate()
    ctl = qc.register_controller(ControllerRegistrationRequest(3000, _uuid(3000),
                                                               features=supported_features(qc.supported)))
    assert ctl.ok, ctl.error
    for b in (1, 2, 3):
        _register_and_unfence(qc, b, clock)
    created = qc.create_topics(CreateTopicsRequest((CreatableTopic("orders", num_partitions=6,
                                                                   replication_factor=3),)))
    assert created.ok, created.error
    assert [b.fenced for b in qc.image.cluster.sorted_brokers()] == [False, False, False]
    assert qc.image.topics.partition_count() == 6

    # Broker 2 asks to be fenced: it leaves every ISR, and no partition is led by it.
    reg2 = qc.image.cluster.broker(2)
    fenced = qc.broker_heartbeat(BrokerHeartbeatRequest(2, reg2.epoch, qc.log.log_end_offset - 1, want_fence=True))
    assert fenced.ok and fenced.response.is_fenced
    topic = qc.image.topics.get_topic_by_name("orders")
    assert all(2 not in p.isr and p.leader != 2 for p in topic.partitions.values())
    qc.log.flush()

    loaded = load_path(log_dir, catalog=qc.catalog)
    assert image_digest(loaded.image) == image_digest(qc.image)
    assert loaded.image.provenance.last_contained_offset == qc.log.log_end_offset - 1
    data = (log_dir / "00000000000000000000.log").read_bytes()
    report = verify_bytes(data, default_registry())
    assert report.ok, [p.describe() for p in report.problems]


def test_heartbeat_state_survives_only_in_memory_and_is_rebuilt_on_activation(tmp_path):
    clock = ManualClock()
    log_dir = tmp_path / "__cluster_metadata-0"
    qc = open_controller(log_dir, clock, "4.1", node_id=3000, config=ControllerConfig(cluster_id=CLUSTER_ID))
    qc.write_leader_change()
    qc.activate()
    _register_and_unfence(qc, 1, clock)
    qc.log.close()
    # A new leader in a later epoch: the registered broker is known, unfenced, with a live session.
    again = open_controller(log_dir, clock, "4.1", node_id=3000, epoch=2,
                            config=ControllerConfig(cluster_id=CLUSTER_ID))
    again.write_leader_change()
    again.activate()
    assert 1 in again.heartbeats.brokers
    clock.advance(again.config.broker_session_timeout_ms + 1)
    expired = again.expire_sessions()
    assert expired.ok and expired.response.fenced_brokers == (1,)
    assert again.image.cluster.broker(1).fenced


@pytest.mark.parametrize("release, refused_after_failover", [("3.9", False), ("4.0", True), ("4.1", False)])
def test_a_fenced_broker_after_a_failover(tmp_path, release: str, refused_after_failover: bool):
    """Kafka 4.0's activate() gives every registered broker a session (KAFKA-18138), so a
    fenced broker's new incarnation waits for it to expire; 3.x (a fenced broker holds no
    session) and 4.1 on (KAFKA-19130: unfenced brokers only) take it at once."""
    clock = ManualClock()
    log_dir = tmp_path / "__cluster_metadata-0"
    config = ControllerConfig(cluster_id=CLUSTER_ID)
    qc = open_controller(log_dir, clock, release, node_id=3000, config=config)
    qc.write_leader_change()
    qc.activate()
    _register_and_unfence(qc, 1, clock)
    epoch = qc.image.cluster.broker(1).epoch
    fenced = qc.broker_heartbeat(BrokerHeartbeatRequest(1, epoch, qc.log.log_end_offset - 1, want_fence=True))
    assert fenced.ok and fenced.response.is_fenced
    qc.log.close()
    again = open_controller(log_dir, clock, release, node_id=3000, epoch=2, config=config)
    again.write_leader_change()
    again.activate()
    new = BrokerRegistrationRequest(
        broker_id=1, cluster_id=CLUSTER_ID, incarnation_id=_uuid(77), listeners=(Listener("PLAINTEXT", "b1", 9092),),
        features=supported_features(again.supported), log_dirs=(_uuid(101),))
    clock.advance(again.config.broker_session_timeout_ms)
    first = again.register_broker(new)
    assert first.ok is not refused_after_failover
    if refused_after_failover:
        assert first.error.name == "DUPLICATE_BROKER_REGISTRATION"
        clock.advance(1)
        assert again.register_broker(new).ok
