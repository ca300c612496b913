"""kafka-python's admin client (a real Kafka client, in the test extra) against a served cluster."""

from __future__ import annotations

import pytest

import kraftsim

kafka = pytest.importorskip("kafka")
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402


# kafka-python infers the broker's release from its ApiVersions answer; 3.0.12 knows lines up to 4.3.
@pytest.mark.parametrize(("release", "inferred"), [("3.7.2", (3, 7)), ("4.4.0", (4, 3))])
def test_admin_client_describes_lists_and_creates(release, inferred):
    with kraftsim.serve(controllers=1, brokers=2, release=release) as k:
        admin = KafkaAdminClient(bootstrap_servers=k.bootstrap_servers, request_timeout_ms=10_000)
        try:
            cluster = admin.describe_cluster()
            assert cluster["cluster_id"] == k.cluster_id
            assert sorted((b["broker_id"], f"{b['host']}:{b['port']}") for b in cluster["brokers"]) == \
                [(2, k.address(2)), (3, k.address(3))]
            admin.create_topics([NewTopic("payments", num_partitions=2, replication_factor=2)])
            assert "payments" in admin.list_topics()
            (described,) = admin.describe_topics(["payments"])
            assert len(described["partitions"]) == 2
            versions = admin._client.check_version()  # the version kafka-python infers from ApiVersions
            assert versions == inferred
        finally:
            admin.close()
        finalized = k.finalized()
    assert finalized["metadata.version"] > 0
