"""Capability gates, record and request versions, downgrade losses (facts §1.3, §3.1)."""

import pytest
from hypothesis import given, strategies as st

from kraftsim.versions import IllegalArgument, default_catalog
from tests.versions.versions_facts import (
    ALL_RECORD_TYPES,
    CAPABILITIES,
    CHANGED,
    RECORD_TYPE_GATES,
    fetch_request_version,
    list_offsets_request_version,
    partition_record_version,
    register_broker_record_version,
)

CAT = default_catalog()
LEVELS = range(7, 30)


@pytest.mark.parametrize("level", LEVELS)
def test_capabilities(level):
    for name, since in CAPABILITIES.items():
        assert CAT.supports(name, level) == (level >= since), name
    # Kafka's inverted gate isLeaderEpochBumpRequiredOnIsrShrink is true below 12.
    assert (not CAT.supports("isr_shrink_without_leader_epoch_bump", level)) == (level < 12)


@pytest.mark.parametrize("level", LEVELS)
def test_record_and_request_versions(level):
    assert CAT.record_version("RegisterBrokerRecord", level) == register_broker_record_version(level)
    assert CAT.record_version("PartitionRecord", level) == partition_record_version(level)
    assert CAT.record_version("PartitionChangeRecord", level) == partition_record_version(level)
    assert CAT.request_version("Fetch", level) == fetch_request_version(level)
    assert CAT.request_version("ListOffsets", level) == list_offsets_request_version(level)
    assert CAT.record_version("FeatureLevelRecord", level) == 0


@pytest.mark.parametrize("level,version", [(6, 0), (7, 1), (16, 1), (17, 2), (21, 2)])
def test_broker_registration_change_record_versions(level, version):
    assert CAT.at_release("3.9").record_version("BrokerRegistrationChangeRecord", level) == version


def test_register_controller_record_error_text():
    assert CAT.record_version("RegisterControllerRecord", 15) == 0
    with pytest.raises(IllegalArgument) as exc:
        CAT.record_version("RegisterControllerRecord", 14)
    assert str(exc.value) == "Controller registration is not supported in MetadataVersion 3.6-IV2"


def test_record_types_by_level():
    line = CAT.at_release("3.9")
    for level in range(1, 22):
        expected = {r for r in ALL_RECORD_TYPES if RECORD_TYPE_GATES.get(r, 1) <= level}
        assert set(line.record_types(level)) == expected
    assert set(CAT.record_types(29)) == set(ALL_RECORD_TYPES) - {"UnregisterControllerRecord"}
    assert set(CAT.record_types(33)) == set(ALL_RECORD_TYPES)


def test_losses_of_the_4_3_and_4_4_levels():
    # §11.1/§11.3: 30 adds CordonedLogDirs to both registration records, 32 CIDR ACL hosts,
    # 33 UnregisterControllerRecord; 31 changes nothing that a downgrade could lose.
    losses = CAT.downgrade_losses(30, 29)
    assert set(losses.record_versions) == {("RegisterBrokerRecord", 4, 3), ("BrokerRegistrationChangeRecord", 3, 2)}
    assert losses.capabilities == ("cordoned_log_dirs",) and not losses.record_types
    assert CAT.downgrade_losses(31, 30).lossless
    assert CAT.downgrade_losses(32, 31).capabilities == ("cidr_acl_hosts",)
    top = CAT.downgrade_losses(33, 32)
    assert top.record_types == ("UnregisterControllerRecord",) and top.capabilities == ("controller_unregistration",)
    for hi in range(30, 34):
        for lo in range(7, 30):
            assert not CAT.downgrade_losses(hi, lo).lossless and CAT.is_lossy(hi, lo)


def test_losses_of_crossing_elr():
    losses = CAT.downgrade_losses(23, 22)
    assert losses.record_types == ("ClearElrRecord",)
    assert set(losses.record_versions) == {("PartitionRecord", 2, 1), ("PartitionChangeRecord", 2, 1)}
    assert losses.capabilities == ("elr",)
    assert not losses.lossless
    assert CAT.downgrade_losses(29, 23).lossless
    assert CAT.downgrade_losses(22, 23).lossless  # an upgrade loses nothing


def test_losses_of_crossing_jbod_and_isr_behaviour():
    losses = CAT.downgrade_losses(17, 11)
    assert {r for r, _, _ in losses.record_versions} == {
        "RegisterBrokerRecord", "PartitionRecord", "PartitionChangeRecord", "BrokerRegistrationChangeRecord",
    }
    assert set(losses.record_types) == {
        "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord",
        "DelegationTokenRecord", "RemoveDelegationTokenRecord", "RegisterControllerRecord",
    }
    assert "isr_shrink_without_leader_epoch_bump" in losses.behaviours
    assert losses.lines()[0] == "Downgrade of metadata.version from 3.7-IV2 to 3.5-IV2 loses:"


@given(st.sampled_from(list(LEVELS)), st.sampled_from(list(LEVELS)))
def test_losses_exist_exactly_when_lossy(a, b):
    hi, lo = max(a, b), min(a, b)
    lossy = any(CHANGED[v] for v in range(lo + 1, hi + 1))
    assert CAT.downgrade_losses(hi, lo).lossless == (not lossy)


def test_unknown_names():
    with pytest.raises(IllegalArgument):
        CAT.supports("teleportation", 29)
    with pytest.raises(IllegalArgument):
        CAT.record_version("FooRecord", 29)
