"""A broker's dynamic-config facts as each release's jars print them
(kraftsim/conformance/java/BrokerConfigFacts.java): controller/data/broker_configs.toml must be
what `python3 -m kraftsim.conformance.broker_config_facts` writes from them (each config's
documentation included), and kraftsim's
verdict on every probe below, where it gives one, must be the release's own, word for word:
DynamicBrokerConfig.validateConfigs on the PROBES, and for changes of the log configs kraftsim
carries out (each at a few values its definition takes) the broker's new KafkaConfig and
DynamicLogConfig's check of it (`kafka` marker: one small JVM a release, skipped where the jars
cannot be had)."""

from __future__ import annotations

import tomllib

import pytest

from kraftsim.conformance.broker_config_facts import DATA, READ, SET_PROBES, Probe, docs_as_of, entry, read_facts
from kraftsim.controller import OP_SET, AlterableConfig
from kraftsim.controller.broker_config_definitions import broker_config_definitions, broker_config_docs
from kraftsim.controller.broker_dynamic_configs import HeldBrokerConfigs, broker_change_check, validate_configs
from kraftsim.conformance.fact_files import written_entry
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


#: Changes the new configuration's own rules refuse or pass, beside the log configs' values.
APPLIED_EXTRA: list[dict[str, str]] = [
    {"log.retention.ms": "0"}, {"log.retention.ms": "-5"}, {"log.roll.ms": "0"}, {"log.roll.jitter.ms": "-1"},
    {"log.cleaner.threads": "0"}, {"log.cleaner.dedupe.buffer.size": "1048576"},
    {"log.cleaner.dedupe.buffer.size": "-1", "log.roll.ms": "0"},
]
#: Dynamic configs of parts the program does not find (producer state before 3.9, coordinators and
#: thread pools from 4.3): none are log configs.
UNATTRIBUTED = ("num.", "background.threads", "max.connections.per.ip", "group.", "share.", "errors.deadletterqueue.",
                "config.providers", "producer.id.expiration.ms", "transaction.partition.verification.enable")


def _applied_probes(version: str) -> list[dict[str, str]]:
    """A few values each carried-out log, log cleaner and producer state config of `version` takes
    by its definition (the log cleaner's own check looks at its thread count only, which these
    leave as it is; the producer state's cannot fail past the definitions' ranges)."""
    defs = broker_config_definitions(version)
    probes = list(APPLIED_EXTRA)
    for name in sorted(n for n, parts in defs.reconfigured_by.items()
                       if set(parts) <= {"DynamicLogConfig", "LogCleaner", "ProducerStateManager"}
                       and n != "log.cleaner.threads"):
        key = defs.dynamic_by_name[name]
        check = broker_change_check(version, 2, "2", [AlterableConfig(name, OP_SET, key.default or "1")],
                                    HeldBrokerConfigs({}, {}), legacy=False)
        if check.unmodelled is not None or key.unmodelled is not None:
            continue
        values = {key.default} if key.default is not None else set()
        if key.type == "BOOLEAN":
            values |= {"true", "false"}
        elif key.one_of:
            values.add(key.one_of[0])
        elif key.each_one_of:
            values.add(key.each_one_of[-1])
        elif key.type in ("INT", "LONG", "SHORT", "DOUBLE"):
            values |= {str(v) for v in (key.at_least, key.at_most, key.or_equal) if v is not None}
            values.add(str((key.at_least or 0) + 1))
        probes += [{name: v} for v in sorted(values)]
    return probes


@pytest.mark.parametrize("version", READ)
def test_broker_config_facts_and_verdicts_are_the_releases(version: str) -> None:
    applied = _applied_probes(version)
    probes = [p for _, p, _ in SET_PROBES] + PROBES + MAY_BE_UNMODELLED + [("applied", a) for a in applied]
    facts = read_facts(kafka_dist(version), probes)
    assert entry(facts) == written_entry(DATA, version)
    docs = tomllib.loads(DATA.read_text("utf-8")).get("doc", [])
    assert docs_as_of(docs, version, {name for name, *_ in facts.kafka_configs}) == facts.docs
    assert broker_config_docs(version) == facts.docs
    assert all(name.startswith(UNATTRIBUTED) for name in facts.unattributed()), facts.unattributed()
    wrong = []
    for n, (level, configs) in enumerate(probes, 1):
        if level == "applied":
            ours = broker_change_check(version, 2, "2", [AlterableConfig(k, OP_SET, v) for k, v in configs.items()],
                                       HeldBrokerConfigs({}, {}), legacy=False)
        else:
            ours = validate_configs(version, configs, level == "broker")
        if ours.unmodelled is not None:
            if (level, configs) not in MAY_BE_UNMODELLED and level != "applied":
                wrong.append(f"{level} {configs}: unmodelled ({ours.unmodelled}), Kafka {facts.verdicts[n]!r}")
            continue
        said = ours.refusal or "OK"
        if said != facts.verdicts[n]:
            wrong.append(f"{level} {configs}: Kafka {facts.verdicts[n]!r}, kraftsim {said!r}")
    assert not wrong, "\n".join(wrong)
