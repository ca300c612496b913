"""A topic's configs are judged as its controller's release judges them (Kafka's texts, as
the released jars give them: tests/conformance/test_topic_configs_vs_jars.py holds every
release to its jar), in CreateTopics and IncrementalAlterConfigs."""

from __future__ import annotations

import pytest

from kraftsim.controller import CreatableTopic, CreatableTopicConfig
from kraftsim.controller.configs import OP_DELETE, OP_SET
from kraftsim.controller.topic_configs import topic_config_error
from kraftsim.versions import default_catalog
from tests.controller.cluster_support import RuleCluster, types
from tests.controller.test_other_controls import alter, outcome
from tests.controller.test_replication import create, topic_error

TOPIC = 2


@pytest.fixture
def cluster() -> RuleCluster:
    c = RuleCluster("4.1-IV1", catalog=default_catalog().at_release("4.1.2"))
    c.start_brokers([1, 2, 3])
    return c


def test_create_topics_refuses_configs_the_release_refuses_and_writes_nothing_for_them(cluster):
    good = CreatableTopic("good", 1, 3, configs=(CreatableTopicConfig("retention.ms", " 100 "),))
    bad = CreatableTopic("bad", 1, 3, configs=(CreatableTopicConfig("retention.ms", "soon"),))
    unknown = CreatableTopic("unknown", 1, 3, configs=(CreatableTopicConfig("retention.days", "7"),))
    r = create(cluster, good, bad, unknown)
    assert topic_error(r, "bad") == (40, "Invalid value soon for configuration retention.ms: Not a number of type LONG")
    assert topic_error(r, "unknown") == (40, "Unknown topic config name: retention.days")
    assert topic_error(r, "good") == (0, None)
    assert types(r) == [("TopicRecord", 0), ("ConfigRecord", 0), ("PartitionRecord", 2)]


def test_alter_configs_judges_the_configs_the_topic_would_have(cluster):
    create(cluster, CreatableTopic("t", 1, 3, configs=(CreatableTopicConfig("min.compaction.lag.ms", "10"),)))
    r = alter(cluster, (TOPIC, "t", (("max.compaction.lag.ms", OP_SET, "5"),)))
    assert outcome(r) == (40, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")
    assert r.records == ()
    r = alter(cluster, (TOPIC, "t", (("max.compaction.lag.ms", OP_SET, "5"), ("min.compaction.lag.ms", OP_DELETE, None))))
    assert outcome(r) == (0, None) and types(r) == [("ConfigRecord", 0), ("ConfigRecord", 0)]


@pytest.mark.parametrize("release, configs, verdict", [
    # definitions come and go with releases (as each release's jar prints them)
    ("3.7.2", {"compression.gzip.level": "5"}, "Unknown topic config name: compression.gzip.level"),
    ("3.8.0", {"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ("3.9.1", {"message.format.version": "3.9"}, "OK"),
    ("3.9.1", {"message.format.version": "4.0"},
     "Invalid value 4.0 for configuration message.format.version: Version 4.0 is not a valid version"),
    ("3.7.0", {"message.format.version": "3.8"},
     "Invalid value 3.8 for configuration message.format.version: Version 3.8 is not a valid version"),
    ("4.0.0", {"message.format.version": "3.0"}, "Unknown topic config name: message.format.version"),
    ("4.0.2", {"segment.bytes": "1000"}, "OK"),
    ("4.1.0", {"segment.bytes": "1000"},
     "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ("4.1.2", {"cleanup.policy": "compact,"},
     "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete"),
    ("4.2.0", {"cleanup.policy": "compact,"}, "Configuration 'cleanup.policy' values must not be empty."),
    ("4.2.2", {"max.decompressed.message.bytes": "1"}, "OK"),
    ("4.3.0", {"max.decompressed.message.bytes": "1"}, "Unknown topic config name: max.decompressed.message.bytes"),
    # Java's parsing, and its way of printing what it parsed
    ("4.4.0", {"min.cleanable.dirty.ratio": "-1e10"},
     "Invalid value -1.0E10 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
    ("4.4.0", {"min.cleanable.dirty.ratio": "0x1p1"},
     "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("4.4.0", {"preallocate": " yes"}, "Invalid value  yes for configuration preallocate: Expected value to be either "
                                       "true or false"),
    ("4.4.0", {"retention.ms": "abc", "segment.bytes": "1"},  # (definition order: segment.bytes comes first)
     "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"),
    ("4.4.0", {"leader.replication.throttled.replicas": "0:1, 1:x"},
     "Invalid value [0:1, 1:x] for configuration leader.replication.throttled.replicas: leader.replication.throttled."
     "replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],"
     "[partitionId]:[brokerId],..."),
])
def test_each_release_judges_by_its_own_definitions(release: str, configs: dict[str, str], verdict: str) -> None:
    latest = default_catalog().at_release(release).latest_production.version
    err = topic_config_error(release, latest, configs)
    assert ("OK" if err.ok else err.message) == verdict
