"""Client-metrics subscriptions as each release's jars define and check them
(kraftsim/conformance/java/ClientMetricsConfigFacts.java): controller/data/client_metrics_configs.toml
must be what `python3 -m kraftsim.conformance.client_metrics_config_facts` writes from them, and
kraftsim's verdict on every probe below must be the release's own ClientMetricsConfigs.validate's,
error and text, unless kraftsim says it cannot reproduce it (a regex outside the dialect Java and
Python share; the probes of MAY_BE_UNMODELLED only). `kafka` marker: one small JVM a release."""

from __future__ import annotations


import pytest

from kraftsim.conformance.client_metrics_config_facts import DATA, READ, RULE_PROBES, Probe, entry, read_facts
from kraftsim.controller.client_metrics import client_metrics_check
from kraftsim.conformance.fact_files import written_entry
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka

#: What refused a probe, by Java class, as the controller answers it (ApiError.fromThrowable; a
#: ConfigException is caught as INVALID_CONFIG; an unexpected exception has no message).
_ERRORS = {"InvalidRequestException": "INVALID_REQUEST", "InvalidConfigurationException": "INVALID_CONFIG",
           "ConfigException": "INVALID_CONFIG", "NumberFormatException": "UNKNOWN_SERVER_ERROR"}

PROBES: list[Probe] = [
    ("", {}), ("", {"metrics": "a"}), ("s", {}), ("s", {"foo": "1"}), ("s", {"foo": "1", "bar": "2"}),
    ("s", {"foo": "1", "interval.ms": "x"}), ("s", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}),
    ("s", {"metrics": "*"}), ("s", {"metrics": ""}), ("s", {"metrics": " "}), ("s", {"metrics": "a,,b"}),
    ("s", {"metrics": ",a"}), ("s", {"metrics": "a , b"}), ("s", {"interval.ms": "x", "metrics": "a,"}),
] + [("s", {"interval.ms": v}) for v in ("100", "99", "3600000", "3600001", "0", "-1", "+500", " 500 ", "500 ", "",
                                          "99999999999", "1e3", "0500", "x")] + [
    ("s", {"match": v}) for v in (
        "client_id=a", "client_id=a.*", "client_software_name=kafka-java,client_software_version=3.*",
        "client_instance_id=abc", "client_source_address=127.0.0.1", "client_source_port=5000",
        "client_id = a ", " client_id=a", "client_id=", "=a", "client_id", "client_id==a", "client_id=a=b",
        "clientid=a", "CLIENT_ID=a", "client_id=a,", ",client_id=a", "client_id=a,,client_id=b", "", " ", ",",
        "client_id=a, client_software_name=b", "client_id=a,client_id=b",
        "client_id=*", "client_id=a**", "client_id=+a", "client_id=a?+", "client_id=a*?", "client_id=a++",
        "client_id=a+*", "client_id=(a", "client_id=a)", "client_id=(a|b)", "client_id=()", "client_id=a|",
        "client_id=|*", "client_id=^a$", "client_id=^", "client_id=$", "client_id=(*)",
        "client_id=a???", "client_id=a*??", "client_id=.*-producer-1", "client_id=a:b/c@d",
    )
] + [("s", {"match": "client_id=a", "interval.ms": "50"}), ("s", {"match": "x=y", "interval.ms": "50"}),
     ("s", {"match": "x=y", "interval.ms": "x"}), ("s", {"match": "client_id=a,", "metrics": "a,"})]
#: Probes whose verdict kraftsim may leave to Kafka (regexes past the shared dialect).
MAY_BE_UNMODELLED: list[Probe] = [
    ("s", {"match": v}) for v in ("client_id=[a-z]+", "client_id=[", "client_id=a{2}", "client_id=a{", "client_id=\\d",
                                  "client_id=(?i)a", "client_id=(?P<n>a)", "client_id=\\", "client_id=\u00e9",
                                  "client_id=^*", "client_id=^*a", "client_id=$*", "client_id=a^*", "client_id=(^)*", "client_id=a$b")
]


def _kafka_said(verdict: str) -> tuple[str, str | None]:
    if verdict == "OK":
        return "NONE", None
    cls, message = verdict.split("\t", 1)
    error = _ERRORS[cls]
    return error, None if error == "UNKNOWN_SERVER_ERROR" else message


@pytest.mark.parametrize("version", READ)
def test_client_metrics_facts_and_verdicts_are_the_releases(version: str) -> None:
    probes = list(RULE_PROBES) + PROBES + MAY_BE_UNMODELLED
    facts = read_facts(kafka_dist(version), probes)
    assert entry(facts) == written_entry(DATA, version)
    wrong = []
    for n, (name, configs) in enumerate(probes, 1):
        ours = client_metrics_check(version, name, configs)
        if ours.unmodelled is not None:
            if (name, configs) not in MAY_BE_UNMODELLED:
                wrong.append(f"{name!r} {configs}: unmodelled ({ours.unmodelled}), Kafka {facts.verdicts[n]!r}")
            continue
        said = (ours.error.name, ours.error.message)
        if said != _kafka_said(facts.verdicts[n]):
            wrong.append(f"{name!r} {configs}: Kafka {facts.verdicts[n]!r}, kraftsim {said!r}")
    assert not wrong, "\n".join(wrong)
