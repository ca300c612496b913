"""`kraftsim serve` answers client quotas as Kafka does: AlterClientQuotas forwarded by a broker
(or taken by the active controller) with the controller's checks and texts, DescribeClientQuotas
from the broker's own image (a broker listener only), DescribeUserScramCredentials from the
node's image; every accepted change is recorded as an `alter-client-quotas` step and the
recording replays to the same quotas."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
DESCRIBE, ALTER, SCRAM = 48, 49, 50


def _alter(address: str, *entries: tuple[dict[str, str | None], dict[str, float | None]], validate_only=False):
    body = {"Entries": [{"Entity": [{"EntityType": t, "EntityName": n} for t, n in entity.items()],
                         "Ops": [{"Key": k, "Value": v or 0.0, "Remove": v is None} for k, v in ops.items()]}
                        for entity, ops in entries], "ValidateOnly": validate_only}
    answer = rpc(address, ALTER, 1, body)
    assert answer is not None
    return [(r["ErrorCode"], r["ErrorMessage"]) for r in answer[1]["Entries"]]


def _describe(address: str, *components: tuple[str, int, str | None], strict: bool = False):
    answer = rpc(address, DESCRIBE, 1, {"Components": [{"EntityType": t, "MatchType": m, "Match": n}
                                                       for t, m, n in components], "Strict": strict})
    assert answer is not None
    body = answer[1]
    if body["ErrorCode"]:
        return body["ErrorCode"], body["ErrorMessage"]
    return {tuple((p["EntityType"], p["EntityName"]) for p in e["Entity"]): {v["Key"]: v["Value"] for v in e["Values"]}
            for e in body["Entries"]}


def test_quotas_are_altered_by_the_controller_and_described_by_the_broker(capsys):
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0") as k:
        bs, ctl = k.address(2), k.address(1, "controller")
        assert _alter(bs, ({"client-id": "c1"}, {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0})) == [
            (0, None)]
        assert _alter(ctl, ({"user": None}, {"request_percentage": 50.0})) == [(0, None)]
        assert _alter(bs, ({"client-id": "c1"}, {"producer_byte_rate": 1.5}), ({"ip": "10.0.0.1"}, {"x": 1.0})) == [
            (ERR["INVALID_REQUEST"], "producer_byte_rate cannot be a fractional value."),
            (ERR["INVALID_REQUEST"], "Invalid configuration key x")]
        assert _alter(bs, ({"client-id": "c1"}, {"consumer_byte_rate": None}), validate_only=True) == [(0, None)]
        k.call(lambda s: s.sim.run(1000))  # (the broker applies what the controller wrote)
        assert _describe(bs, ("client-id", 0, "c1"), strict=True) == {
            (("client-id", "c1"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}}
        assert _describe(bs) == {(("client-id", "c1"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
                                 (("user", None),): {"request_percentage": 50.0}}
        assert _describe(bs, ("ip", 2, None), ("user", 1, None)) == (
            ERR["INVALID_REQUEST"], "Invalid entity filter component combination. IP filter component should not be "
                                    "used with user or clientId filter component.")
        # DescribeClientQuotas is a broker's: a controller listener does not take it
        assert rpc(ctl, DESCRIBE, 1, {"Components": [], "Strict": False}) is None
        answer = rpc(ctl, SCRAM, 0, {"Users": [{"Name": "alice"}]})
        assert answer is not None and answer[1]["Results"] == [
            {"User": "alice", "ErrorCode": ERR["RESOURCE_NOT_FOUND"],
             "ErrorMessage": "Attempt to describe a user credential that does not exist: alice", "CredentialInfos": []}]


def test_a_served_session_of_quota_changes_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="3.9.2", record=record) as k:
        bs = k.address(1)
        _alter(bs, ({"client-id": "c1"}, {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}))
        _alter(bs, ({"user": "alice", "client-id": "c1"}, {"producer_byte_rate": 10.0}))
        _alter(bs, ({"user": None}, {"request_percentage": 50.0}), ({"ip": "10.0.0.1"}, {"connection_creation_rate": 5.0}))
        _alter(bs, ({"client-id": "c1"}, {"consumer_byte_rate": None}))
        _alter(bs, ({"client-id": "c1"}, {"producer_byte_rate": 0.5}))  # refused: not recorded
        served = k.call(lambda s: s.sim.image(s.sim.leader()).client_quotas.entities.sorted_items())
    text = record.read_text()
    assert text.count('op = "alter-client-quotas"') == 5, text
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert sim.image(1).client_quotas.entities.sorted_items() == served
    assert dict(served) == {(("client-id", "c1"),): {"producer_byte_rate": 1024.0},
                            (("client-id", "c1"), ("user", "alice")): {"producer_byte_rate": 10.0},
                            (("user", None),): {"request_percentage": 50.0},
                            (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0}}
