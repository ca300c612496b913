"""The pytest plugin's `kraftsim_served` fixture, as a user's test of operator code would use it:
finalize a feature through the Admin protocol with a crash injected mid-way."""

from __future__ import annotations

import pytest

kafka = pytest.importorskip("kafka")
from kafka.admin import KafkaAdminClient  # noqa: E402

from tests.wire.client import rpc  # noqa: E402


def test_operator_code_against_the_fixture_with_a_crash(kraftsim_served):
    k = kraftsim_served(controllers=3, brokers=2, release="4.4.0", features={"group.version": 0})
    admin = KafkaAdminClient(bootstrap_servers=k.bootstrap_servers, request_timeout_ms=10_000)
    try:
        assert len(admin.describe_cluster()["brokers"]) == 2
        k.crash(k.leader())  # the active controller dies mid-way; another is elected
        k.call(lambda s: s.sim.wait(30_000))
        body = rpc(k.bootstrap_servers.split(",")[0], 57, 1, {"FeatureUpdates": [
            {"Feature": "group.version", "MaxVersionLevel": 1, "UpgradeType": 1}]})[1]
        assert body["ErrorCode"] == 0
    finally:
        admin.close()
    assert k.finalized()["group.version"] == 1
