"""A broker's dynamic-config facts as each release's jars print them
(kraftsim/conformance/java/BrokerConfigFacts.java): controller/data/broker_configs.toml must be
what `python3 -m kraftsim.conformance.broker_config_facts` writes from them, and kraftsim's
verdict on every probe below, where it gives one, must be the release's own
DynamicBrokerConfig.validateConfigs, word for word (`kafka` marker: one small JVM a release,
skipped where the jars cannot be had)."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from kraftsim.conformance.broker_config_facts import DATA, READ, SET_PROBES, Probe, entry, read_facts
from kraftsim.controller.broker_dynamic_configs import validate_configs
from kraftsim.versions import release_name_key
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka

#: Probes every release's verdict is compared on: kraftsim must give one (not leave it unmodelled).
PROBES: list[Probe] = [
    ("default", {"log.dirs": "/x"}), ("broker", {"broker.id": "5"}), ("broker", {"custom.x": "1"}),
    ("default", {"custom.x": "1", "leader.replication.throttled.rate": "5"}),
    ("broker", {"num.io.threads": "4"}), ("default", {"log.retention.ms": "1000"}),
    ("broker", {"ssl.keystore.type": "x", "num.io.threads": "abc"}),
    ("broker", {"log.dirs": "/x", "num.io.threads": "abc"}),
    ("default", {"num.io.threads": "abc", "sasl.kerberos.service.name": "k"}),
    ("broker", {"log.retention.ms": "abc", "num.io.threads": "abc"}),
    ("broker", {"log.message.timestamp.type": "x", "num.io.threads": "0"}),
    ("default", {"sasl.kerberos.service.name": "k", "log.cleaner.threads": "1"}),
] + [
    ("broker", {name: value}) for name, value in (
        ("num.io.threads", "abc"), ("num.io.threads", "0"), ("num.io.threads", " 4 "), ("num.io.threads", "+4"),
        ("num.io.threads", "99999999999"), ("log.cleaner.min.cleanable.ratio", "2"),
        ("log.cleaner.min.cleanable.ratio", "abc"), ("log.message.timestamp.type", "x"),
        ("unclean.leader.election.enable", "yes"), ("compression.type", "zip"), ("compression.gzip.level", "0"),
        ("compression.gzip.level", "10"), ("compression.gzip.level", "-1"), ("sasl.login.refresh.buffer.seconds", "70000"),
        ("log.cleaner.io.max.bytes.per.second", "fast"), ("log.retention.ms", "abc"), ("message.max.bytes", "-1"),
        ("producer.id.expiration.ms", "0"), ("log.local.retention.ms", "-3"), ("follower.replication.throttled.rate", "-1"),
        ("log.cleaner.threads", "0"), ("background.threads", "x"), ("num.replica.fetchers", "0"),
        ("max.connections", "-1"), ("log.segment.bytes", "13"),
    )
]
#: Probes kraftsim may leave unmodelled (it then says so and carries nothing out).
MAY_BE_UNMODELLED: list[Probe] = [
    ("broker", {"log.dirs": "/x", "broker.id": "3"}), ("broker", {"log.cleanup.policy": "x"}),
    ("broker", {"listener.name.plaintext.ssl.keystore.type": "x"}), ("broker", {"principal.builder.class": "x.Y"}),
]


def _data_entry(version: str) -> dict[str, Any]:
    """The entry of the data file in effect for `version`, without since / read_from."""
    entries = sorted(tomllib.loads(DATA.read_text("utf-8"))["release"], key=lambda e: release_name_key(e["since"]))
    chosen = [e for e in entries if release_name_key(e["since"]) <= release_name_key(version)][-1]
    return {k: v for k, v in chosen.items() if k not in ("since", "read_from")}


@pytest.mark.parametrize("version", READ)
def test_broker_config_facts_and_verdicts_are_the_releases(version: str) -> None:
    probes = [p for _, p, _ in SET_PROBES] + PROBES + MAY_BE_UNMODELLED
    facts = read_facts(kafka_dist(version), probes)
    assert entry(facts) == _data_entry(version)
    wrong = []
    for n, (level, configs) in enumerate(probes, 1):
        ours = validate_configs(version, configs, level == "broker")
        if ours.unmodelled is not None:
            if (level, configs) not in MAY_BE_UNMODELLED:
                wrong.append(f"{level} {configs}: unmodelled ({ours.unmodelled}), Kafka {facts.verdicts[n]!r}")
            continue
        said = ours.refusal or "OK"
        if said != facts.verdicts[n]:
            wrong.append(f"{level} {configs}: Kafka {facts.verdicts[n]!r}, kraftsim {said!r}")
    assert not wrong, "\n".join(wrong)
