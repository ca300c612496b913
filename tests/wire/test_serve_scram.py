"""`kraftsim serve` answers SCRAM credentials as Kafka does: AlterUserScramCredentials forwarded
by a broker (or taken by the active controller) with the controller's checks and texts, and
DescribeUserScramCredentials from the node's image; each accepted user's change is recorded
with the client's salt and salted password, and the recording replays to the same credentials."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes, salted_password
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
DESCRIBE, ALTER = 50, 51
SHA256, SHA512 = 1, 2


def _upsert(user: str, mechanism: int, iterations: int, password: str) -> dict[str, object]:
    salt = f"salt-of-{user}".encode()
    return {"Name": user, "Mechanism": mechanism, "Iterations": iterations, "Salt": salt,
            "SaltedPassword": salted_password(mechanism, password, salt, iterations)}


def _alter(address: str, upsertions=(), deletions=()):
    answer = rpc(address, ALTER, 0, {"Upsertions": list(upsertions),
                                     "Deletions": [{"Name": n, "Mechanism": m} for n, m in deletions]})
    assert answer is not None
    return [(r["User"], r["ErrorCode"], r["ErrorMessage"]) for r in answer[1]["Results"]]


def _described(address: str, *users: str):
    answer = rpc(address, DESCRIBE, 0, {"Users": [{"Name": u} for u in users] or None})
    assert answer is not None
    return {r["User"]: [(c["Mechanism"], c["Iterations"]) for c in r["CredentialInfos"]] or r["ErrorMessage"]
            for r in answer[1]["Results"]}


def test_credentials_are_altered_by_the_controller_and_described_by_each_node():
    with kraftsim.serve(controllers=1, brokers=1, release="3.9.2") as k:
        bs, ctl = k.address(2), k.address(1, "controller")
        assert _alter(bs, [_upsert("alice", SHA256, 8192, "a"), _upsert("bob", SHA512, 20000, "b")]) == [
            ("alice", 0, None), ("bob", ERR["UNACCEPTABLE_CREDENTIAL"], "Too many iterations")]
        assert _alter(ctl, [_upsert("carol", SHA512, 4096, "c")], [("alice", SHA512)]) == [
            ("carol", 0, None), ("alice", ERR["RESOURCE_NOT_FOUND"],
                                 "Attempt to delete a user credential that does not exist")]
        k.call(lambda s: s.sim.run(1000))  # (the broker applies what the controller wrote)
        assert _described(bs, "alice", "carol", "dave") == {
            "alice": [(SHA256, 8192)], "carol": [(SHA512, 4096)],
            "dave": "Attempt to describe a user credential that does not exist: dave"}
        assert _described(ctl) == {"alice": [(SHA256, 8192)], "carol": [(SHA512, 4096)]}
        credential = k.call(lambda s: s.sim.image(2).scram.credential(SHA256, "alice"))
        assert credential.salt == b"salt-of-alice" and credential.iterations == 8192


def test_a_served_session_of_credential_changes_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="4.4.0", record=record) as k:
        _alter(k.address(1), [_upsert("alice", SHA256, 8192, "a"), _upsert("bob", SHA512, 4096, "b")])
        _alter(k.address(1), deletions=[("bob", SHA512)])
        _alter(k.address(1), deletions=[("bob", SHA512)])  # refused: not recorded
        served = k.call(lambda s: list(s.sim.image(1).scram.sorted_credentials()))
    text = record.read_text()
    assert text.count('op = "alter-scram-credentials"') == 3 and '"password"' not in text, text
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert list(sim.image(1).scram.sorted_credentials()) == served
    assert [key for key, _ in served] == [(SHA256, "alice")]
