"""`kraftsim serve` answers a change of broker configs through a broker listener as the
release's broker does before it forwards the change (ConfigAdminManager → DynamicBrokerConfig):
configs it does not update dynamically, security configs without a listener prefix, per-broker
configs at the cluster default and values their definition refuses are refused with its words;
the new configuration's own rules (log.retention.ms, log.roll.ms, the cleaner's dedupe buffer per
thread) are checked, thread pools and log.cleaner.threads against the broker's current count;
log configs only the log defaults take, and names Kafka does not define, are forwarded. The texts are those a live broker of 3.7.2, 4.0.2 and 4.4.0 gave
(tests/conformance/test_broker_listener_configs_vs_kafka.py). What is not modelled stays not
carried out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kraftsim
from kraftsim.controller import OP_DELETE, OP_SET, AlterableConfig, error_codes
from kraftsim.controller.broker_dynamic_configs import HeldBrokerConfigs, broker_change_check
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

INVALID = error_codes()["INVALID_REQUEST"]
INCREMENTAL_ALTER_CONFIGS, BROKER = 44, 4
NONE = HeldBrokerConfigs({}, {})
WRAPPED = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"


def _check(release: str, name: str, *sets: tuple[str, str], held: HeldBrokerConfigs = NONE,
           deletes: tuple[str, ...] = (), legacy: bool = False) -> tuple[str | None, str | None]:
    configs = [AlterableConfig(n, OP_SET, v) for n, v in sets] + [AlterableConfig(n, OP_DELETE, None) for n in deletes]
    check = broker_change_check(release, 2, name, configs, held, legacy=legacy)
    return check.refusal, check.unmodelled


@pytest.mark.parametrize(("release", "opening", "security", "closing"), [
    ("3.7.2", "Set(", "HashSet(", ")"), ("4.0.2", "Set(", "HashSet(", ")"), ("4.4.0", "[", "[", "]")])
def test_each_check_refuses_with_the_releases_words(release, opening, security, closing):
    assert _check(release, "2", ("log.dirs", "/x")) == (
        f"Cannot update these configs dynamically: {opening}log.dirs{closing}", None)
    assert _check(release, "", ("sasl.kerberos.service.name", "kafka")) == (
        "Cannot update these configs at default cluster level, broker id must be specified: "
        f"{opening}sasl.kerberos.service.name{closing}", None)
    # per broker it passes the checks, and reconfigures the listeners: not modelled
    assert _check(release, "2", ("sasl.kerberos.service.name", "kafka"))[1] is not None
    assert _check(release, "2", ("ssl.keystore.type", "PKCS12")) == (
        f"These security configs can be dynamically updated only per-listener using the listener prefix: "
        f"{security}ssl.keystore.type{closing}", None)
    assert _check(release, "2", ("log.cleaner.threads", "many")) == (
        "Invalid value many for configuration log.cleaner.threads: Not a number of type INT", None)
    assert _check(release, "", ("log.message.timestamp.type", "Sometime")) == (
        "Invalid value Sometime for configuration log.message.timestamp.type: String must be one of: CreateTime, "
        "LogAppendTime", None)
    # in order: not dynamic, then security, then types (in definition order), then per-broker at the default
    assert _check(release, "", ("num.io.threads", "x"), ("log.dirs", "/x"))[0].startswith("Cannot update")
    assert _check(release, "", ("num.io.threads", "x"), ("sasl.kerberos.service.name", "k"))[0].startswith(
        "Invalid value x for configuration num.io.threads")


def test_thread_pools_stay_within_half_and_double_of_the_brokers_current_count():
    assert _check("4.4.0", "2", ("num.io.threads", "20")) == (WRAPPED.format(
        "Dynamic thread count update validation failed for num.io.threads=20, value should not be greater than "
        "double the current value 8"), None)
    assert _check("3.7.2", "2", ("num.io.threads", "3")) == (WRAPPED.format(
        "Dynamic thread count update validation failed for num.io.threads=3, value should be at least half the "
        "current value 8"), None)
    assert _check("3.7.2", "2", ("num.io.threads", " 16 ")) == (None, None)
    # the current count is the broker's own, else the cluster default's, else the static one
    own = HeldBrokerConfigs({"num.io.threads": "12"}, {"num.io.threads": "4"})
    assert _check("4.0.2", "2", ("num.io.threads", "24"), held=own) == (None, None)
    assert _check("4.0.2", "2", ("num.io.threads", "25"), held=own)[0] is not None
    default_only = HeldBrokerConfigs({}, {"num.io.threads": "4"})
    assert _check("4.0.2", "2", ("num.io.threads", "9"), held=default_only)[0] == WRAPPED.format(
        "Dynamic thread count update validation failed for num.io.threads=9, value should not be greater than "
        "double the current value 4")
    # at the default, a broker that has its own count is not resized: nothing to check
    assert _check("4.0.2", "", ("num.io.threads", "100"), held=own) == (None, None)
    assert _check("4.0.2", "", ("background.threads", "25")) == (WRAPPED.format(
        "Dynamic thread count update validation failed for background.threads=25, value should not be greater than "
        "double the current value 10"), None)
    # deleting the broker's own count goes back to the default's: checked too
    assert _check("4.0.2", "2", deletes=("num.io.threads",), held=HeldBrokerConfigs({"num.io.threads": "20"}, {}))[
        0] == WRAPPED.format("Dynamic thread count update validation failed for num.io.threads=8, value should be at "
                             "least half the current value 20")


def test_log_cleaner_threads():
    assert _check("4.4.0", "2", ("log.cleaner.threads", "5")) == (WRAPPED.format(
        "Log cleaner threads cannot be increased to more than double the current value 1"), None)
    assert _check("3.7.2", "2", ("log.cleaner.threads", "0")) == ("/ by zero", None)
    assert _check("3.7.2", "", ("log.cleaner.threads", "2")) == (None, None)
    # the new configuration's own rule first: at least 1 MB of dedupe buffer per cleaner thread
    assert _check("3.7.2", "2", ("log.cleaner.threads", "2"),
                  held=HeldBrokerConfigs({}, {"log.cleaner.dedupe.buffer.size": "2097152"})) == (
        "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.", None)


def test_the_producer_states_configs_are_checked_by_their_definitions():
    for release in ("3.5.2", "3.7.2", "4.4.0"):
        assert _check(release, "", ("producer.id.expiration.ms", "60000"),
                      ("transaction.partition.verification.enable", "false")) == (None, None)
        assert _check(release, "", ("producer.id.expiration.ms", "0")) == (
            "Invalid value 0 for configuration producer.id.expiration.ms: Value must be at least 1", None)


def test_unknown_names_and_throttle_rates_reconfigure_nothing_and_are_forwarded():
    assert _check("3.7.2", "", ("custom.team", "blue"), ("leader.replication.throttled.rate", "10")) == (None, None)
    # held configs left as they are do not stop it, a held value the broker refuses is dropped
    held = HeldBrokerConfigs({"log.retention.ms": "5", "num.io.threads": "x"}, {})
    assert _check("4.4.0", "2", ("custom.note", "x"), held=held) == (None, None)
    assert _check("4.4.0", "2", deletes=("log.dirs", "custom.gone")) == (None, None)


def test_log_configs_are_checked_by_their_definitions_and_the_new_configurations_rules():
    for release in ("3.7.2", "4.0.2", "4.4.0"):
        assert _check(release, "", ("log.retention.ms", "604800000"), ("log.segment.bytes", "104857600"),
                      ("compression.type", "gzip"), ("min.insync.replicas", "2")) == (None, None)
        assert _check(release, "", ("log.retention.ms", "-5")) == (None, None)  # (unlimited)
        assert _check(release, "2", ("log.retention.ms", "0")) == (
            "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1", None)
        assert _check(release, "2", ("log.roll.ms", "0")) == (
            "requirement failed: log.roll.ms must be greater than or equal to 1", None)
        assert _check(release, "", ("log.segment.bytes", "13"))[0].startswith(
            "Invalid value 13 for configuration log.segment.bytes: Value must be at least ")
    # a value held at the default that the new configuration refuses refuses any change of the broker's
    held = HeldBrokerConfigs({}, {"log.roll.jitter.ms": "-1"})
    assert _check("4.0.2", "2", ("custom.x", "1"), held=held) == (
        "requirement failed: log.roll.jitter.ms must be greater than or equal to 0", None)


@pytest.mark.parametrize(("sets", "deletes"), [
    ((("max.connections", "5000"),), ()),  # the connection quotas' reconfiguration: not modelled
    ((("log.local.retention.ms", "5"),), ()),  # tiered storage
    ((("log.dirs", "/x"), ("broker.id", "3")), ()),  # several names in one refusal: a hash set's order
    ((("listener.name.plaintext.ssl.keystore.type", "x"),), ()),
    ((("principal.builder.class", "x.Y"),), ()),  # a class is loaded
    ((("metrics.jmx.exclude", "x"),), ()),  # a metrics reporter's own config
    ((("num.io.threads", "9"), ("background.threads", "11")), ()),
])
def test_what_is_not_modelled_is_said(sets, deletes):
    refusal, unmodelled = _check("4.0.2", "2", *sets, deletes=deletes)
    assert refusal is None and unmodelled


def test_a_held_config_at_the_other_level_that_kraftsim_cannot_judge_is_said():
    held = HeldBrokerConfigs({"principal.builder.class": "x.Y"}, {})
    assert _check("4.0.2", "", ("custom.x", "1"), held=held)[1] == "a held principal.builder.class (CLASS (the class is " \
                                                                   "loaded))"
    held = HeldBrokerConfigs({}, {"listener.name.plaintext.x": "1"})
    assert _check("4.0.2", "2", ("custom.x", "1"), held=held)[1] == "a listener-prefixed broker config held"


def test_a_legacy_alter_checks_the_requests_configs_alone():
    held = HeldBrokerConfigs({"num.io.threads": "12"}, {})
    # leaving the held count out deletes it: back to the static 8, within half of 12
    assert _check("3.7.2", "2", ("custom.x", "1"), held=held, legacy=True) == (None, None)
    assert _check("3.7.2", "2", ("custom.x", "1"), held=HeldBrokerConfigs({"num.io.threads": "20"}, {}),
                  legacy=True)[0] is not None


def _alter(address: str, name: str, *ops: tuple[str, int, str | None]):
    body = {"Resources": [{"ResourceType": BROKER, "ResourceName": name,
                           "Configs": [{"Name": n, "ConfigOperation": op, "Value": v} for n, op, v in ops]}],
            "ValidateOnly": False}
    answer = rpc(address, INCREMENTAL_ALTER_CONFIGS, 1, body)
    return None if answer is None else [(r["ResourceName"], r["ErrorCode"], r["ErrorMessage"])
                                        for r in answer[1]["Responses"]]


def _held(served, name: str) -> dict[str, str]:
    return served.sim.image(served.sim.leader()).configs.config(BROKER, name)


def test_served_changes_are_refused_or_forwarded_and_replay_from_the_recording(tmp_path, capsys):
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=1, release="4.0.2", record=record) as k:
        b2 = k.address(2)
        assert _alter(b2, "2", ("log.dirs", OP_SET, "/x")) == [
            ("2", INVALID, "Cannot update these configs dynamically: Set(log.dirs)")]
        assert _alter(b2, "2", ("num.io.threads", OP_SET, "12"), ("custom.note", OP_SET, "hello")) == [("2", 0, None)]
        assert _alter(b2, "2", ("num.io.threads", OP_SET, "25")) == [("2", INVALID, WRAPPED.format(
            "Dynamic thread count update validation failed for num.io.threads=25, value should not be greater than "
            "double the current value 12"))]
        assert _alter(b2, "", ("log.cleaner.threads", OP_SET, "2")) == [("", 0, None)]
        capsys.readouterr()
        assert _alter(b2, "", ("log.retention.ms", OP_SET, "0")) == [("", INVALID, "requirement failed: "
                                                                     "log.retention.ms must be unlimited (-1) or, "
                                                                     "greater than or equal to 1")]
        assert _alter(b2, "2", ("log.segment.bytes", OP_SET, "100000000")) == [("2", 0, None)]
        assert _alter(b2, "2", ("message.max.bytes", OP_SET, "100000")) == [("2", 0, None)]
        assert _alter(b2, "2", ("max.connections", OP_SET, "100000")) is None
        served = k.call(lambda s: (_held(s, "2"), _held(s, "")))
    assert "a change of max.connections (its reconfiguration is not modelled)" in capsys.readouterr().err
    assert served == ({"num.io.threads": "12", "custom.note": "hello", "log.segment.bytes": "100000000",
                       "message.max.bytes": "100000"},
                      {"log.cleaner.threads": "2"})
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert (image.configs.config(BROKER, "2"), image.configs.config(BROKER, "")) == served


_NAMES = st.sampled_from(["leader.replication.throttled.rate", "num.io.threads", "background.threads",
                          "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.retention.ms", "log.roll.ms",
                          "log.roll.jitter.ms", "log.dirs", "custom.x", "listener.name.a.b", "ssl.keystore.type",
                          "sasl.kerberos.service.name", "principal.builder.class", "log.local.retention.ms",
                          "metrics.jmx.exclude", "message.max.bytes", "compression.type", "log.segment.bytes"])
_VALUES = st.sampled_from(["", "0", "1", "-1", "x", " 8 ", "99999999999999999999", "gzip", "2097152", "16"])


@settings(max_examples=400, deadline=None)
@given(release=st.sampled_from(["3.3.2", "3.7.2", "4.2.0", "4.4.0"]), name=st.sampled_from(["", "2"]),
       own=st.dictionaries(_NAMES, _VALUES, max_size=3), default=st.dictionaries(_NAMES, _VALUES, max_size=3),
       ops=st.lists(st.tuples(_NAMES, st.sampled_from([OP_SET, OP_DELETE, 2]), _VALUES), max_size=3,
                    unique_by=lambda t: t[0]), legacy=st.booleans())
def test_every_change_gets_an_answer_or_a_reason(release, name, own, default, ops, legacy):
    configs = [AlterableConfig(n, op, None if op == OP_DELETE else v) for n, op, v in ops]
    check = broker_change_check(release, 2, name, configs, HeldBrokerConfigs(own, default), legacy=legacy)
    assert check.refusal is None or check.unmodelled is None
    if any(op == 2 for _, op, _ in ops):
        assert check.unmodelled == "APPEND and SUBTRACT of broker configs"
