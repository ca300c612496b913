"""Group configs as each release's jars define and check them
(kraftsim/conformance/java/GroupConfigFacts.java): controller/data/group_configs.toml must be what
`python3 -m kraftsim.conformance.group_config_facts` writes from them, and kraftsim's verdict on
every probe below must be the release's own GroupConfig.validate's, error and text, unless kraftsim
says it cannot reproduce it. `kafka` marker: one small JVM a release."""

from __future__ import annotations


import pytest

from kraftsim.conformance.group_config_facts import DATA, READ, RULE_PROBES, Probe, entry, read_facts
from kraftsim.controller.group_configs import group_config_check, has_group_configs
from kraftsim.conformance.fact_files import written_entry
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka

#: What refused a probe, by Java class, as the controller answers it (a ConfigException is
#: caught as INVALID_CONFIG).
_ERRORS = {"InvalidConfigurationException": "INVALID_CONFIG", "ConfigException": "INVALID_CONFIG"}

_TIMES = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
          "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "streams.session.timeout.ms",
          "streams.heartbeat.interval.ms")
PROBES: list[Probe] = [
    {}, {"foo": "1"}, {"foo": "1", "consumer.session.timeout.ms": "50000"},
    {"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"},
    {"consumer.session.timeout.ms": "1", "share.session.timeout.ms": "x"},
    {"consumer.session.timeout.ms": "x", "consumer.heartbeat.interval.ms": "x"},
    {"consumer.assignor.offload.enable": "false"}, {"consumer.assignor.offload.enable": "maybe"},
    {"share.renew.acknowledge.enable": "TRUE"}, {"errors.deadletterqueue.copy.record.enable": "true"},
] + [{name: v} for name in _TIMES for v in ("1", "0", "-1", "999", "1000", "5000", "15000", "15001", "45000", "50000",
                                              "60000", "60001", " 50000 ", "050000", "+50000", "x", "", "1e4",
                                              "99999999999")]
#: Probes whose verdict kraftsim may leave to Kafka (checks past a definition and the node's bounds).
MAY_BE_UNMODELLED: list[Probe] = [
    {"foo": "1", "bar": "2"}, {"consumer.session.timeout.ms": "1", "share.session.timeout.ms": "1"},
    {"share.auto.offset.reset": "earliest"}, {"share.auto.offset.reset": "x"},
    {"share.isolation.level": "read_committed"}, {"share.delivery.count.limit": "3"},
    {"share.partition.max.record.locks": "50"}, {"streams.num.standby.replicas": "5"},
    {"streams.assignor.name": "x"}, {"errors.deadletterqueue.topic.name": "dlq"},
    {"streams.rack.aware.assignment.tags": "a,b"}, {"consumer.assignment.interval.ms": "20000"},
]


def _kafka_said(verdict: str) -> tuple[str, str | None]:
    if verdict == "OK":
        return "NONE", None
    cls, message = verdict.split("\t", 1)
    return _ERRORS[cls], message


@pytest.mark.parametrize("version", READ)
def test_group_config_facts_and_verdicts_are_the_releases(version: str) -> None:
    probes = list(RULE_PROBES) + PROBES + MAY_BE_UNMODELLED
    facts = read_facts(kafka_dist(version), probes)
    assert entry(facts) == written_entry(DATA, version)
    if not has_group_configs(version):
        return  # (no GroupConfig: its controller refuses the type itself, tests/controller/test_group_configs.py)
    wrong = []
    for n, configs in enumerate(probes, 1):
        ours = group_config_check(version, configs)
        if ours.unmodelled is not None:
            if configs not in MAY_BE_UNMODELLED:
                wrong.append(f"{configs}: unmodelled ({ours.unmodelled}), Kafka {facts.verdicts[n]!r}")
            continue
        said = (ours.error.name, ours.error.message)
        if said != _kafka_said(facts.verdicts[n]):
            wrong.append(f"{configs}: Kafka {facts.verdicts[n]!r}, kraftsim {said!r}")
    assert not wrong, "\n".join(wrong)
