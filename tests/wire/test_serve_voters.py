"""`kraftsim serve` carries out AddRaftVoter and RemoveRaftVoter (KIP-853, `kafka-metadata-quorum
add-controller|remove-controller`) at the raft leader, with Kafka's checks and texts (the same
refusals the CLI's are compared with live Kafka on), and records them; a directory with a node
added after it was made is recorded with that node's `add-node` step, so the session replays.
(Kafka's own kafka-metadata-quorum against a served quorum: tested by hand, see the issue note.)"""

from __future__ import annotations

import tomllib

import pytest

import kraftsim
from kraftsim.protocol.primitives import Uuid
from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ADD_RAFT_VOTER, REMOVE_RAFT_VOTER = 80, 81
NOT_LEADER_OR_FOLLOWER, UNSUPPORTED_VERSION, INCONSISTENT_CLUSTER_ID = 6, 35, 104
DUPLICATE_VOTER, VOTER_NOT_FOUND, INVALID_REQUEST = 126, 127, 42


@pytest.fixture
def dynamic(tmp_path):
    """Three controllers formatted as a dynamic quorum, a broker, and controller 5 added as an observer."""
    d = tmp_path / "dq"
    with Simulation.create(d, controllers=3, brokers=1, release="4.0.2", dynamic_quorum=True) as sim:
        sim.add_node("controller", "4.0.2")
        dirs = {n: sim.directory_id(n) for n in (1, 5)}
    return d, dirs


def _add(address: str, voter: int, directory: Uuid, port: int, cluster_id: str | None = None) -> dict:
    return rpc(address, ADD_RAFT_VOTER, 0, {"ClusterId": cluster_id, "TimeoutMs": 30000, "VoterId": voter,
                                            "VoterDirectoryId": directory,
                                            "Listeners": [{"Name": "CONTROLLER", "Host": "127.0.0.1", "Port": port}]})[1]


def _remove(address: str, voter: int, directory: Uuid, cluster_id: str | None = None) -> dict:
    return rpc(address, REMOVE_RAFT_VOTER, 0, {"ClusterId": cluster_id, "VoterId": voter,
                                               "VoterDirectoryId": directory})[1]


def test_a_controller_joins_and_leaves_the_voters_through_the_leader_and_the_session_replays(dynamic, tmp_path):
    d, dirs = dynamic
    record = tmp_path / "session.toml"
    with kraftsim.serve(d, record=record) as k:
        leader = k.leader()
        at = k.address(leader, "controller")
        port = int(k.address(5, "controller").rsplit(":", 1)[1])
        other = k.address(next(i for i in (1, 2, 3) if i != leader), "controller")
        assert _add(other, 5, dirs[5], port)["ErrorCode"] == NOT_LEADER_OR_FOLLOWER
        wrong = _add(at, 5, dirs[5], port, cluster_id="not-this-one")
        assert (wrong["ErrorCode"], wrong["ErrorMessage"]) == \
            (INCONSISTENT_CLUSTER_ID, f'The given id "not-this-one" doesn\'t match the cluster id "{k.cluster_id}"')
        assert _add(at, 5, Uuid.ZERO, port)["ErrorMessage"] == "Add voter request didn't include a valid voter"
        added = _add(at, 5, dirs[5], port, cluster_id=k.cluster_id)
        assert (added["ErrorCode"], added["ErrorMessage"]) == (0, "NONE")
        assert k.call(lambda s: s.sim.voters()) == (1, 2, 3, 5)
        again = _add(at, 5, dirs[5], port)
        assert again["ErrorCode"] == DUPLICATE_VOTER and "is already part of the set of voters" in again["ErrorMessage"]
        missing = _remove(at, 5, dirs[1])
        assert missing["ErrorCode"] == VOTER_NOT_FOUND and missing["ErrorMessage"].startswith("Cannot remove voter")
        assert _remove(k.address(4), 5, dirs[5])["ErrorCode"] == 0  # (a broker forwards it)
        assert k.call(lambda s: s.sim.voters()) == (1, 2, 3)
    steps = tomllib.loads(record.read_text())
    assert steps["cluster"].get("dynamic_quorum") is True
    assert [(s["op"], s.get("id")) for s in steps["step"] if s["op"] != "run"] == \
        [("add-node", 5), ("add-controller", 5), ("remove-controller", 5)]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert sim.voters() == (1, 2, 3)


def test_a_static_quorum_refuses_with_kafkas_text():
    with kraftsim.serve(controllers=3, brokers=1, release="4.0.2") as k:
        answer = _remove(k.address(k.leader(), "controller"), 3, Uuid.from_string("AAAAAAAAAAAAAAAAAAAAAQ"))
    assert (answer["ErrorCode"], answer["ErrorMessage"]) == \
        (UNSUPPORTED_VERSION, "Cluster doesn't support removing voter because the kraft.version feature is 0")


def test_the_clis_quorum_and_add_commands_are_carried_out_by_the_server_and_recorded(tmp_path):
    """`kraftsim cluster add` and `kraftsim metadata-quorum --cluster DIR add-controller|
    remove-controller` while DIR is served: carried out by the server (no exit 75), recorded."""
    d = tmp_path / "dq"
    Simulation.create(d, controllers=3, brokers=1, release="4.0.2", dynamic_quorum=True).close()
    record = tmp_path / "session.toml"
    with kraftsim.serve(d, record=record) as k:  # (kraftsim.serve takes the CLI's commands, as `kraftsim serve` does)
        for argv in (["cluster", "add", str(d), "--controller", "--release", "4.0.2"],
                     ["metadata-quorum", "--cluster", str(d), "add-controller", "--controller-id", "5"],
                     ["metadata-quorum", "--cluster", str(d), "describe", "--status"]):
            code, out, err = _cli(argv)
            assert code == 0, (argv, out, err)
        assert k.call(lambda s: s.sim.voters()) == (1, 2, 3, 5)
        did = k.call(lambda s: str(s.sim.directory_id(5)))
        code, out, err = _cli(["metadata-quorum", "--cluster", str(d), "remove-controller", "-i", "5", "-d", did])
        assert code == 0 and "KRaft controller 5" in out, (out, err)
    steps = [(s["op"], s.get("id")) for s in tomllib.loads(record.read_text())["step"] if s["op"] != "run"]
    assert steps == [("add-node", 5), ("add-controller", 5), ("remove-controller", 5)]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """`kraftsim ARGV` in a fresh process, as a user runs it beside the server."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "kraftsim", *argv], capture_output=True, text=True, timeout=300)
    return run.returncode, run.stdout, run.stderr
