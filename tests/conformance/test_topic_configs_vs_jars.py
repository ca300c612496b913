"""A topic's configs as each release's controller judges them, against the released jars:
TopicConfigFacts.java prints a release's topic config definitions and runs its own validation
(LogConfig.validate, called as the controller calls it) on the probes below; kraftsim's
definitions (controller/data/topic_configs.toml) must list the same keys, and its verdict on
every probe must be the jar's, word for word. One release per entry of the data, the one
each entry was read from."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftsim.controller.topic_configs import topic_config_error, topic_configs
from kraftsim.versions import default_catalog
from tests.conformance.conftest import kafka_dist

PROBE = Path(__file__).with_name("TopicConfigFacts.java")
pytestmark = pytest.mark.kafka

READ_FROM = ["3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.0", "4.2.2",
             "4.3.1", "4.4.0"]

PROBES: list[dict[str, str]] = [
    {"retention.ms": "abc"}, {"retention.ms": "-5"}, {"retention.ms": " 100 "}, {"retention.ms": "+100"},
    {"retention.ms": "1_000"}, {"retention.ms": "99999999999999999999"}, {"retention.ms": "\u0663"},
    {"frob": "1"}, {"frob": "1", "retention.ms": "abc"}, {"zz.top": "1", "aa": "2", "frob": "3", "m": "4"},
    {"segment.bytes": "1"}, {"segment.bytes": "3000000000"}, {"segment.bytes": "1048576"},
    {"retention.ms": "abc", "segment.bytes": "1"}, {"segment.ms": "0"}, {"index.interval.bytes": "abc"},
    {"cleanup.policy": "x"}, {"cleanup.policy": ""}, {"cleanup.policy": " "}, {"cleanup.policy": "compact,delete"},
    {"cleanup.policy": " compact , x"}, {"cleanup.policy": "compact,"}, {"cleanup.policy": ",compact"},
    {"cleanup.policy": "compact,compact"}, {"cleanup.policy": "compact ,\tdelete"},
] + [
    {"min.cleanable.dirty.ratio": v} for v in ("2", "1e3", "abc", "-0.5", "1e-5", "-1e10", "NaN", "0.5f", "0x1p1",
                                               "+.5", "1_0", "-Infinity", "1.5", "NaNf")
] + [
    {"compression.type": "zip"}, {"compression.type": "ZSTD"}, {"compression.type": " gzip "},
    {"compression.gzip.level": "0"}, {"compression.gzip.level": "-1"}, {"compression.gzip.level": "10"},
    {"compression.lz4.level": "18"}, {"compression.zstd.level": "-131073"},
    {"unclean.leader.election.enable": "maybe"}, {"preallocate": "TRUE"}, {"preallocate": " yes"},
    {"preallocate": "tRuE"}, {"min.insync.replicas": "0"}, {"max.message.bytes": "-1"}, {"retention.bytes": "-100"},
    {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, {"min.compaction.lag.ms": "5"},
    {"remote.storage.enable": "true"}, {"local.retention.ms": "-3"},
    {"message.timestamp.type": "Foo"}, {"message.timestamp.type": "createtime"},
    {"message.timestamp.difference.max.ms": "5"}, {"message.downconversion.enable": "true"},
] + [
    {"leader.replication.throttled.replicas": v} for v in ("x", "*", "0:1,1:2", "0:1, 1:x", "0:1,", ",0:1", " * ",
                                                            "*,*")
] + [
    {"message.format.version": v} for v in ("foo", "3.0", "3.0.5", "3.0-IV1.7", "0.10.0", "0.10", "3.3", "3.8", "3.9",
                                            "4.0", "4.0-IV0", "2.8-IV1")
] + [
    {"max.decompressed.message.bytes": "0"}, {"internal.segment.bytes": "1"}, {"remote.copy.lag.ms": "-2"},
    {"errors.deadletterqueue.group.enable": "yes"},
]


def _jar(version: str) -> tuple[list[tuple[str, str]], dict[int, str]]:
    """The release's keys (name, type) in definition order, and its verdict on each probe (by number)."""
    dist = kafka_dist(version)
    stdin = "".join("\u0001".join(f"{k}={v}" for k, v in p.items()) + "\n" for p in PROBES)
    proc = subprocess.run([str(dist.java.path), "-Xmx128m", "-cp", dist.classpath, str(PROBE)], input=stdin,
                          capture_output=True, text=True, timeout=180, check=True)
    keys, verdicts = [], {}
    for line in proc.stdout.splitlines():
        kind, *rest = line.split("\t")
        if kind == "key":
            keys.append((rest[0], rest[1]))
        elif kind == "probe":
            verdicts[int(rest[0])] = "OK" if rest[1] == "OK" else rest[2]
    return keys, verdicts


@pytest.mark.parametrize("version", READ_FROM)
def test_topic_configs_are_judged_as_the_release_judges_them(version: str) -> None:
    keys, verdicts = _jar(version)
    assert [(k.name, k.type) for k in topic_configs(version).keys] == keys
    latest_production = default_catalog().at_release(version).latest_production.version
    wrong = []
    for n, probe in enumerate(PROBES, 1):
        err = topic_config_error(version, latest_production, probe)
        ours = "OK" if err.ok else err.message
        if ours != verdicts[n]:
            wrong.append(f"{probe}: Kafka {verdicts[n]!r}, kraftsim {ours!r}")
    assert not wrong, "\n".join(wrong)
