"""`kraftsim serve` carries out a change of a broker's replication throttle rates through a
broker listener (what `kafka-reassign-partitions --throttle` sets and its `--verify` clears),
with the broker's own checks before it forwards the change: the resource names this broker or
the cluster default, and each resulting rate is a LONG of at least 0 (held values the broker's
definitions refuse are dropped first). Held configs the change leaves as they are do not stop it
(tests/wire/test_serve_broker_configs.py has the other broker configs). The changes replay from
the session's recording."""

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

ERR = error_codes()
LEGACY_ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 33, 44
BROKER = 4
LEADER, FOLLOWER, LOG_DIRS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                             "replica.alter.log.dirs.io.max.bytes.per.second")


def _held(served, name: str) -> dict[str, str]:
    return served.sim.image(served.sim.leader()).configs.config(BROKER, name)


def _alter(address: str, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):
    body = {"Resources": [{"ResourceType": BROKER, "ResourceName": name,
                           "Configs": [{"Name": n, "ConfigOperation": op, "Value": v} for n, op, v in ops]}],
            "ValidateOnly": validate_only}
    answer = rpc(address, INCREMENTAL_ALTER_CONFIGS, 1, body)
    return None if answer is None else [(r["ResourceName"], r["ErrorCode"], r["ErrorMessage"])
                                        for r in answer[1]["Responses"]]


def test_a_brokers_throttle_rates_are_set_and_cleared_through_its_own_listener():
    with kraftsim.serve(controllers=1, brokers=2, release="3.9.2") as k:
        b2 = k.address(2)
        assert _alter(b2, "2", (LEADER, OP_SET, "1000"), (FOLLOWER, OP_SET, " 1000")) == [("2", 0, None)]
        assert _alter(b2, "", (LOG_DIRS, OP_SET, "5")) == [("", 0, None)]
        assert k.call(lambda s: (_held(s, "2"), _held(s, ""))) == ({LEADER: "1000", FOLLOWER: " 1000"},
                                                                   {LOG_DIRS: "5"})
        # what --verify sends to clear them: every rate deleted, held or not
        clear = [(n, OP_DELETE, None) for n in (LEADER, FOLLOWER, LOG_DIRS)]
        assert _alter(b2, "2", *clear) == [("2", 0, None)]
        assert _alter(k.address(3), "3", *clear) == [("3", 0, None)]
        assert k.call(lambda s: (_held(s, "2"), _held(s, "3"))) == ({}, {})


def test_the_broker_refuses_another_brokers_name_and_a_rate_its_definitions_refuse():
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        b2 = k.address(2)
        invalid = ERR["INVALID_REQUEST"]
        assert _alter(b2, "3", (LEADER, OP_SET, "1")) == [
            ("3", invalid, "Unexpected broker id, expected 2, but received 3")]
        assert _alter(b2, "two", (LEADER, OP_SET, "1")) == [
            ("two", invalid, "Node id must be an integer, but it is: two")]
        assert _alter(b2, "2", (FOLLOWER, OP_SET, "-5"), (LEADER, OP_SET, "fast")) == [
            ("2", invalid, f"Invalid value fast for configuration {LEADER}: Not a number of type LONG")]
        assert _alter(b2, "2", (FOLLOWER, OP_SET, "-5")) == [
            ("2", invalid, f"Invalid value -5 for configuration {FOLLOWER}: Value must be at least 0")]
        assert _alter(b2, "2", (LEADER, OP_SET, "7"), validate_only=True) == [("2", 0, None)]
        assert k.call(lambda s: _held(s, "2")) == {}
        # the cluster default holds the min.insync.replicas that enabling ELR wrote: left as it is, it reconfigures nothing
        assert "min.insync.replicas" in k.call(lambda s: _held(s, ""))
        assert _alter(b2, "", (LEADER, OP_SET, "1")) == [("", 0, None)]
        # a value the controller took without the broker's checks is dropped by the broker before it checks
        ctl = k.address(1, "controller")
        assert _alter(ctl, "2", (LEADER, OP_SET, "fast")) == [("2", 0, None)]
        assert _alter(b2, "2", (FOLLOWER, OP_SET, "9")) == [("2", 0, None)]
        assert k.call(lambda s: _held(s, "2")) == {LEADER: "fast", FOLLOWER: "9"}


def test_a_legacy_alter_through_a_broker_replaces_its_rates():
    with kraftsim.serve(combined=1, release="3.7.2") as k:
        body = {"Resources": [{"ResourceType": BROKER, "ResourceName": "1",
                               "Configs": [{"Name": FOLLOWER, "Value": "300"}]}], "ValidateOnly": False}
        _alter(k.address(1), "1", (LEADER, OP_SET, "100"))
        answer = rpc(k.address(1), LEGACY_ALTER_CONFIGS, 2, body)
        assert answer is not None and answer[1]["Responses"][0]["ErrorCode"] == 0
        assert k.call(lambda s: _held(s, "1")) == {FOLLOWER: "300"}


def test_a_rate_set_beside_other_held_configs_is_carried_out_and_unmodelled_changes_are_not(capsys):
    with kraftsim.serve(controllers=1, brokers=1, release="4.0.2") as k:
        ctl, b2 = k.address(1, "controller"), k.address(2)
        assert _alter(ctl, "2", ("log.cleaner.threads", OP_SET, "2")) == [("2", 0, None)]
        capsys.readouterr()
        # the held log.cleaner.threads is left as it is: nothing is reconfigured but the rate
        assert _alter(b2, "2", (LEADER, OP_SET, "1")) == [("2", 0, None)]
        # the connection quotas are reconfigured by it: their checks are not modelled
        assert _alter(b2, "2", ("log.cleaner.threads", OP_DELETE, None), ("max.connections", OP_SET, "600000")) is None
        assert _alter(b2, "2", (LEADER, 2, "1")) is None  # (APPEND)
        assert k.call(lambda s: _held(s, "2")) == {"log.cleaner.threads": "2", LEADER: "1"}
    err = capsys.readouterr().err
    assert "BROKER configs through a broker listener: a change of max.connections" in err
    assert "APPEND and SUBTRACT of broker configs" in err


def test_a_served_session_of_throttles_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0", record=record) as k:
        _alter(k.address(2), "2", (LEADER, OP_SET, "1000"), (FOLLOWER, OP_SET, "2000"))
        _alter(k.address(3), "3", (LEADER, OP_SET, "1000"))
        _alter(k.address(2), "2", (LEADER, OP_DELETE, None))
        served = k.call(lambda s: (_held(s, "2"), _held(s, "3")))
    assert served == ({FOLLOWER: "2000"}, {LEADER: "1000"})
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert (image.configs.config(BROKER, "2"), image.configs.config(BROKER, "3")) == served


_RATE_VALUES = st.one_of(st.integers(-3, 3).map(str), st.sampled_from(["", " 7 ", "1.5", "9223372036854775808", "x"]))
_OPS = st.lists(st.tuples(st.sampled_from([LEADER, FOLLOWER, LOG_DIRS]), st.sampled_from([OP_SET, OP_DELETE]),
                          _RATE_VALUES), max_size=4, unique_by=lambda t: t[0])


@settings(max_examples=300, deadline=None)
@given(held=st.dictionaries(st.sampled_from([LEADER, FOLLOWER, LOG_DIRS]), _RATE_VALUES), ops=_OPS)
def test_the_broker_refuses_exactly_the_changes_that_leave_an_unparsable_rate(held, ops):
    configs = [AlterableConfig(n, op, v if op == OP_SET else None) for n, op, v in ops]
    check = broker_change_check("4.4.0", 1, "1", configs, HeldBrokerConfigs(held, {}), legacy=False)
    assert check.unmodelled is None
    error = check.refusal
    # what the broker would hold afterwards: the valid held rates, changed
    after = {n: v for n, v in held.items() if _rate(v) is not None}
    for n, op, v in ops:
        if op == OP_DELETE:
            after.pop(n, None)
        else:
            after[n] = v
    refused = [n for n in (LEADER, FOLLOWER, LOG_DIRS) if n in after and _rate(after[n]) is None]
    assert (error is None) == (not refused)
    if refused:
        assert error is not None and error.startswith("Invalid value ") and f" for configuration {refused[0]}: " in error


def _rate(text: str) -> int | None:
    """A rate as Long.parseLong reads it after ConfigDef's trim, if it is at least 0."""
    try:
        value = int(text.strip(), 10) if text.strip().lstrip("+-").isdigit() else None
    except ValueError:
        return None
    return value if value is not None and 0 <= value < 2**63 else None


@pytest.mark.parametrize("name", ["01", "+1"])
def test_a_name_that_reads_as_the_brokers_id_passes_the_brokers_check(name):
    check = broker_change_check("3.9.2", 1, name, [AlterableConfig(LEADER, OP_SET, "1")], HeldBrokerConfigs({}, {}),
                                legacy=False)
    assert check.refusal is None and check.unmodelled is None
