"""`cluster status` tells the truth: health first, and exit 1 when the cluster is not healthy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.sim.tools.health import first_difference
from tests.cluster.conftest import ok, run
from tests.paths import REPO


def _status(capsys: pytest.CaptureFixture[str], d: Path) -> tuple[int, str, dict]:
    code, out, _ = run(capsys, "cluster", "status", d)
    code_json, js, _ = run(capsys, "cluster", "status", d, "--json")
    assert code == code_json
    return code, out, json.loads(js)["health"]


def test_a_healthy_cluster_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "1", "--release", "3.9")
    ok(capsys, "cluster", "run", d, "--ms", "5000")
    code, out, health = _status(capsys, d)
    assert code == 0 and health["healthy"] is True
    assert out.splitlines()[2] == "Health: OK: a leader, every node running and caught up, no invariant broken"
    ok(capsys, "cluster", "stop", d, "--nodes", "4")
    code, out, health = _status(capsys, d)
    assert code == 1 and health["down"] == [{"id": 4, "state": "stopped", "detail": ""}]
    assert "  node 4 is stopped" in out.splitlines()


def test_with_every_voter_down_no_node_is_called_the_leader(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The quorum-state files of crashed voters (and of brokers, which have no vote) still name
    the old leader; counted as knowledge, they had status say "leader: node 1" (and mark the
    crashed node 1 the active controller) while `cluster crash` itself said "leader: none"."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "2", "--release", "3.9")
    assert ok(capsys, "cluster", "crash", d, "--nodes", "1,2,3").splitlines()[-1].endswith("leader: none.")
    code, out, health = _status(capsys, d)
    assert code == 1 and out.splitlines()[1] == "Voters: 1,2,3; no leader known to a majority (last epoch 1)"
    assert health["leader"] == "no leader known to a majority of the voters (last epoch 1)"
    status = json.loads(run(capsys, "cluster", "status", d, "--json")[1])
    assert status["leader"] is None and not any(n["active_controller"] for n in status["nodes"])


def test_a_roll_before_the_election_says_no_leader_as_the_others_do(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Right after `start --nodes all` no node knows a leader yet: `roll` said "leader: node None"."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "1", "--release", "4.0")
    ok(capsys, "cluster", "stop", d, "--nodes", "all")
    assert ok(capsys, "cluster", "start", d, "--nodes", "all").splitlines()[-1].endswith("; leader: none.")
    assert ok(capsys, "cluster", "roll", d, "--release", "4.0").splitlines()[-1] == "Rolled to Kafka 4.0; leader: none."


def test_the_wiped_voter_tour_is_not_healthy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's fault tour: a voter that forgot its vote helps elect a second leader in an
    epoch; the invariant, and the nodes that followed the other leader, are shown."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "3", "--release", "3.9")
    ok(capsys, "cluster", "partition", d, "--group", "1")
    ok(capsys, "cluster", "run", d, "--ms", "5000")
    ok(capsys, "cluster", "heal", d)
    ok(capsys, "cluster", "crash", d, "--nodes", "2")
    ok(capsys, "cluster", "disk-fault", d, "--nodes", "2", "--kind", "wipe")
    run(capsys, "cluster", "start", d, "--nodes", "2")
    run(capsys, "cluster", "run", d, "--ms", "30000", "--until-stable")
    code, out, health = _status(capsys, d)
    assert code == 1 and health["healthy"] is False
    assert [i["name"] for i in health["invariants"]] == ["OneLeaderPerEpoch"]
    assert "which node 3 already leads" in health["invariants"][0]["detail"]
    assert {n["id"] for n in health["diverged"]} == {3, 4, 5, 6}
    lines = out.splitlines()
    assert lines[2] == "Health: NOT HEALTHY" and lines[3].startswith("  invariant OneLeaderPerEpoch broken: ")


def test_a_node_that_stopped_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "kept"
    scenario = REPO / "scenarios" / "rollback-controller-after-finalizing.toml"
    assert run(capsys, "scenario", "run", str(scenario), "--keep", str(keep), "--json")[0] == 0
    code, out, health = _status(capsys, keep)
    assert code == 1
    (stopped,) = health["stopped_themselves"]
    assert stopped["id"] == 1 and stopped["detail"]
    assert f"  node 1 stopped itself: {stopped['detail']}" in out.splitlines()


def test_first_difference() -> None:
    leader = {0: (0, 1, 11), 1: (4, 1, 12), 5: (5, 2, 13)}
    assert first_difference(leader, {0: (0, 1, 11), 1: (4, 1, 12)}) is None  # a prefix: behind, not diverged
    assert first_difference(leader, {0: (0, 1, 11), 1: (4, 1, 99)}) == 1
    assert first_difference(leader, {1: (4, 1, 12), 5: (6, 3, 14)}) == 5  # a log that starts later (a snapshot)
    assert first_difference(leader, {0: (0, 1, 11), 6: (6, 3, 1)}) is None  # beyond the leader's end: not judged
