"""confluent-kafka (librdkafka) against `kraftsim.serve`: the AdminClient's metadata, topic
creation, configs and cluster description; a producer's records are refused cleanly (serve
answers no Produce: the connection closes and the client's delivery times out), and the
server goes on answering."""

from __future__ import annotations

import pytest

confluent = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

import kraftsim  # noqa: E402

#: librdkafka's own bounds on each call (client settings, not assertions on time).
TIMEOUT_S = 20


def test_admin_client_lists_creates_describes_configs_and_the_cluster():
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        admin = AdminClient({"bootstrap.servers": k.bootstrap_servers})
        md = admin.list_topics(timeout=TIMEOUT_S)
        assert md.cluster_id == k.cluster_id
        assert sorted(md.brokers) == [2, 3] and md.topics == {}
        assert {str(b) for b in md.brokers.values()} == {f"{k.address(2)}/2", f"{k.address(3)}/3"}
        (future,) = admin.create_topics([NewTopic("orders", 3, 2)], request_timeout=TIMEOUT_S).values()
        assert future.result(timeout=TIMEOUT_S) is None
        topic = admin.list_topics(timeout=TIMEOUT_S).topics["orders"]
        assert sorted(topic.partitions) == [0, 1, 2]
        assert all(sorted(p.replicas) == [2, 3] for p in topic.partitions.values())
        (again,) = admin.create_topics([NewTopic("orders", 3, 2)], request_timeout=TIMEOUT_S).values()
        with pytest.raises(confluent.KafkaException) as refused:
            again.result(timeout=TIMEOUT_S)
        assert refused.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        (configs,) = admin.describe_configs([ConfigResource("topic", "orders")]).values()
        described = configs.result(timeout=TIMEOUT_S)  # created without configs: what it inherits, and defaults
        assert len(described) == 37  # (every topic config 4.4.0 describes)
        assert {n: (e.value, e.source) for n, e in described.items()
                if e.source != confluent.admin.ConfigSource.DEFAULT_CONFIG.value} == \
            {"min.insync.replicas": ("1", confluent.admin.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)}
        assert (described["retention.ms"].value, described["cleanup.policy"].value) == ("604800000", "delete")
        cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        assert cluster.cluster_id == k.cluster_id
        assert sorted(n.id for n in cluster.nodes) == [2, 3] and cluster.controller.id == 2


def test_a_producer_is_refused_cleanly_and_the_server_goes_on():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        admin = AdminClient({"bootstrap.servers": k.bootstrap_servers})
        (future,) = admin.create_topics([NewTopic("t", 1, 1)], request_timeout=TIMEOUT_S).values()
        future.result(timeout=TIMEOUT_S)
        producer = Producer({"bootstrap.servers": k.bootstrap_servers, "message.timeout.ms": 2000,
                             "log_level": 0})
        errors: list[KafkaError] = []
        producer.produce("t", b"record", on_delivery=lambda err, _msg: errors.append(err))
        assert producer.flush(TIMEOUT_S) == 0
        assert [e.code() for e in errors] == [KafkaError._MSG_TIMED_OUT]
        assert "t" in admin.list_topics(timeout=TIMEOUT_S).topics  # still served
