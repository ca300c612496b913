"""Controller operations of Kafka 4.3 and 4.4 with their MV gates and texts (kafka-facts
§11.4): cordoned log directories (KIP-1066), controller unregistration (KIP-1312), CIDR ACL
host patterns (KIP-1276)."""

from __future__ import annotations

import pytest

from kraftsim.controller.acls import AclCreation, CreateAclsRequest, create_acls
from kraftsim.controller.cluster_control import unregister_controller
from kraftsim.controller.configs import AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest, \
    incremental_alter_configs
from kraftsim.controller.cordon import NOT_BEFORE_4_3_IV0
from kraftsim.controller.result import accepted
from kraftsim.protocol.primitives import Uuid
from tests.controller.cluster_support import CATALOG, RuleCluster
from tests.controller.conftest import payload


def dirs(c: RuleCluster, broker_id: int) -> tuple[Uuid, ...]:
    return c.image.cluster.broker(broker_id).directories


def cluster(mv: str, brokers=(1, 2, 3)) -> RuleCluster:
    c = RuleCluster(mv)
    c.start_brokers(brokers, dirs=2)
    return c


# ------------------------------------------------------------------------ cordoned log dirs


def test_a_heartbeat_reporting_cordoned_dirs_writes_change_record_v3():
    c = cluster("4.3-IV0")
    one = dirs(c, 1)[:1]
    r = c.heartbeat(1, cordoned_log_dirs=one)
    assert [(p.record_type.name, p.version, p.message.cordoned_log_dirs) for p in r.records] == [
        ("BrokerRegistrationChangeRecord", 3, list(one))]
    assert c.image.cluster.broker(1).cordoned_directories == one
    assert c.heartbeat(1, cordoned_log_dirs=one).records == ()  # unchanged: nothing to write
    assert c.heartbeat(1).records == ()  # nothing reported: nothing to write


def test_below_4_3_iv0_cordoned_dirs_are_not_recorded():
    c = cluster("4.2-IV1")
    assert c.heartbeat(1, cordoned_log_dirs=dirs(c, 1)).records == ()
    assert c.image.cluster.broker(1).cordoned_directories is None
    c.register(4, dirs=2, cordoned_log_dirs=(Uuid.from_longs(1, 2),))
    assert c.image.cluster.broker(4).cordoned_directories is None
    assert c.log[-1][1].version == 3  # RegisterBrokerRecord v3 at 4.2-IV1


def test_registration_carries_cordoned_dirs_from_4_3_iv0():
    c = cluster("4.3-IV0")
    c.register(4, dirs=2, cordoned_log_dirs=())
    reg = c.log[-1][1]
    assert (reg.record_type.name, reg.version, reg.message.cordoned_log_dirs) == ("RegisterBrokerRecord", 4, [])


def test_a_broker_with_every_dir_cordoned_gets_no_new_replicas():
    c = cluster("4.3-IV0")
    c.heartbeat(3, cordoned_log_dirs=dirs(c, 3))
    assert c.image.cluster.broker(3).all_directories_cordoned
    c.create("t", partitions=6, rf=2)
    replicas = {b for p in c.image.topics.get_topic_by_name("t").partitions.values() for b in p.replicas}
    assert replicas == {1, 2}
    # one directory left uncordoned: the broker takes replicas again
    c.heartbeat(3, cordoned_log_dirs=dirs(c, 3)[:1])
    c.create("u", partitions=6, rf=3)
    assert {b for p in c.image.topics.get_topic_by_name("u").partitions.values() for b in p.replicas} == {1, 2, 3}


def test_every_broker_cordoned_refuses_new_topics():
    c = cluster("4.3-IV0", brokers=(1,))
    c.heartbeat(1, cordoned_log_dirs=dirs(c, 1))
    r = c.create("t", partitions=1, rf=1)
    t = r.response.topics[0]
    assert t.error_code == 38  # INVALID_REPLICATION_FACTOR, as in Kafka's CordonedLogDirsIntegrationTest


@pytest.mark.parametrize("mv,ok", [("4.2-IV1", False), ("4.3-IV0", True)])
def test_the_dynamic_config_needs_4_3_iv0(mv, ok):
    c = cluster(mv)
    req = IncrementalAlterConfigsRequest((AlterConfigsResource(4, "1", (AlterableConfig("cordoned.log.dirs", 0, "*"),)),))
    r = incremental_alter_configs(c.ctx(), req)
    res = r.response.responses[0]
    # Kafka's text (ConfigurationControlManager, 4.3.1 and 4.4.0 jars): INVALID_CONFIG (40)
    kafka_text = ("The cordoned.log.dirs configuration value cannot be set because it requires "
                  "metadata.version >= 4.3-IV0")
    assert NOT_BEFORE_4_3_IV0 == kafka_text
    if ok:
        assert res.error_code == 0 and len(r.records) == 1
    else:
        assert (res.error_code, res.error_message) == (40, kafka_text) and r.records == ()
    # removing it is refused alike below 4.3-IV0 (Kafka checks the name, not the value)
    rm = IncrementalAlterConfigsRequest((AlterConfigsResource(4, "1", (AlterableConfig("cordoned.log.dirs", 1),)),))
    removed = incremental_alter_configs(c.ctx(), rm).response.responses[0]
    assert (removed.error_code, removed.error_message) == ((0, None) if ok else (40, kafka_text))


# ------------------------------------------------------------------------ controller unregistration


def with_controllers(mv: str) -> RuleCluster:
    c = RuleCluster(mv)
    c.apply(accepted([payload("RegisterControllerRecord", controller_id=i, incarnation_id=Uuid.from_longs(9, i))
                      for i in (5, 6)]))
    return c


def test_controller_unregistration_texts_and_record():
    c = with_controllers("4.4-IV2")
    r = c.run(unregister_controller, 5)
    assert [(p.record_type.name, p.version, p.message.controller_id) for p in r.records] == [
        ("UnregisterControllerRecord", 0, 5)]
    assert sorted(c.image.cluster.controllers) == [6]
    again = unregister_controller(c.ctx(), 5)
    # Kafka 4.4.0's ControllerIdNotRegisteredException: Errors.CONTROLLER_ID_NOT_REGISTERED, code 136
    assert (again.error.name, again.error.code, again.error.message) == (
        "CONTROLLER_ID_NOT_REGISTERED", 136, "Controller ID 5 is not currently registered.")


@pytest.mark.parametrize("mv", ["4.4-IV1", "4.3-IV0", "3.7-IV0"])
def test_controller_unregistration_below_4_4_iv2(mv):
    r = unregister_controller(with_controllers(mv).ctx(), 5)
    assert (r.error.name, r.error.message) == (
        "UNSUPPORTED_VERSION", "The current MetadataVersion is too old to support controller unregistration.")
    assert r.records == ()


# ------------------------------------------------------------------------ CIDR ACL hosts


def acl(host: str) -> AclCreation:
    return AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host=host,
                       operation=3, permission_type=3)


@pytest.mark.parametrize("mv,ok", [("4.4-IV0", False), ("4.3-IV0", False), ("4.4-IV1", True), ("4.4-IV2", True)])
def test_cidr_host_patterns_need_4_4_iv1(mv, ok):
    c = RuleCluster(mv)
    r = create_acls(c.ctx(), CreateAclsRequest((acl("10.0.0.0/8"), acl("10.1.2.3"), acl("*"))))
    codes = [(x.error_code, x.error_message) for x in r.response.results]
    if ok:
        assert codes == [(0, None)] * 3 and len(r.records) == 3
        assert r.records[0].message.host == "10.0.0.0/8"
    else:  # Kafka 4.4.0: UnsupportedVersionException, UNSUPPORTED_VERSION (35)
        assert codes == [(35, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."),
                         (0, None), (0, None)]
        assert [p.message.host for p in r.records] == ["10.1.2.3", "*"]


def test_a_4_4_controller_checks_cidr_notation_and_empty_hosts():
    c = RuleCluster("4.4-IV2")
    hosts = ["10.0.0.0/33", "10.0.300.0/8", "not-a-net/8", "fd00::/8", "fd00::zz/8", ""]
    r = create_acls(c.ctx(), CreateAclsRequest(tuple(acl(h) for h in hosts)))
    assert [(x.error_code, x.error_message) for x in r.response.results] == [
        (42, "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"),
        (42, "Invalid CIDR notation '10.0.300.0/8': Value [300] not in range [0,255]"),
        (42, "Invalid CIDR notation 'not-a-net/8': Could not parse [not-a-net/8]"),
        (0, None),
        (42, "Invalid CIDR notation 'fd00::zz/8': Could not parse [fd00::zz/8]"),
        (42, "Host pattern cannot be null or empty"),
    ]
    assert [p.message.host for p in r.records] == ["fd00::/8"]


def test_a_4_3_controller_does_not_check_hosts():
    # Before 4.4 validateNewAcl has no host check: "10.0.0.0/8" is a literal host name.
    c = RuleCluster("4.3-IV0", catalog=CATALOG.at_release("4.3"))
    r = create_acls(c.ctx(), CreateAclsRequest((acl("10.0.0.0/8"), acl("10.0.0.0/33"))))
    assert [x.error_code for x in r.response.results] == [0, 0] and len(r.records) == 2


# ------------------------------------------------------------------------ share.version 2 (§11.6)


def test_a_4_4_controller_upgrades_share_version_to_2_at_4_3_iv0_and_a_4_3_one_cannot():
    from kraftsim.controller.features import FeatureUpdate, UpdateFeaturesRequest, update_features
    from tests.controller.conftest import make_ctx

    req = UpdateFeaturesRequest(updates=(FeatureUpdate("share.version", 2, 1),), validate_only=False)
    on_44 = update_features(make_ctx("4.4", levels={"metadata.version": 30, "share.version": 1}), req)
    assert on_44.ok and [(p.message.name, p.message.feature_level) for p in on_44.records] == [("share.version", 2)]
    on_43 = update_features(make_ctx("4.3", levels={"metadata.version": 30, "share.version": 1}), req)
    assert not on_43.ok and on_43.records == ()
    assert "Local controller 1 only supports versions 0-1" in on_43.response.error_message
