"""`kraftsim metadata-quorum` against what kafka-metadata-quorum printed on live Kafka 3.9.1 and
4.3.1 dynamic quorums (tests/cli/data/kafka_*_metadata_quorum.json): the same sequence of
describes, adds and removes on a simulated cluster of the same shape prints the same lines,
once directory ids, endpoints, offsets, times and the leader's id are masked; and the
orders Kafka prints sets in (Java HashSet/HashMap of ReplicaKey) come out the same for the
same ids."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from kraftsim.conformance.cases.live_quorum import mask
from kraftsim.javacompat import hash_map_order
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.node.voters import replica_key_hash, voter_keys_text
from tests.cli_support import run

DATA = Path(__file__).parent / "data"
LIVE = {r: json.loads((DATA / f"kafka_{r.replace('.', '_')}_metadata_quorum.json").read_text())["steps"]
        for r in ("3.9.1", "4.3.1")}
def table(text: str) -> list[list[str]]:
    """describe --replication: the cells, with each row's tab-separated padding checked."""
    rows = [line.split("\t") for line in text.splitlines()]
    for i in range(len(rows[0]) - 1):
        width = max(len(r[i]) for r in rows)
        assert all(len(r[i]) == width for r in rows), (i, rows)  # every cell padded to its column
    return [[c.strip() for c in r] for r in rows]


@pytest.mark.parametrize("release", sorted(LIVE))
def test_the_same_session_says_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str) -> None:
    kafka_said = LIVE[release]
    d = str(tmp_path / "c")
    assert run(capsys, "cluster", "create", d, "--controllers", "3", "--release", release, "--dynamic-quorum")[0] == 0
    mq = ["metadata-quorum", "--cluster", d]

    def says(step: str, *args: str) -> tuple[int, str, str]:
        code, out, err = run(capsys, *mq, *args)
        first = next((line for line in err.splitlines() if line.strip()), "")
        kafka = kafka_said[step]
        assert (code, mask(out), mask(first)) == (kafka["exit"], mask(kafka["stdout"]), mask(kafka["stderr_first_line"])), step
        return code, out, err

    says("status-3", "describe", "--status")
    assert run(capsys, "cluster", "add", d, "--controller", "--release", release)[0] == 0
    says("status-observer", "describe", "--status")
    _, out, _ = run(capsys, *mq, "describe", "--replication")
    mine, theirs = table(out), table(kafka_said["replication-observer"]["stdout"])
    assert mine[0] == theirs[0]
    assert [(r[6], len(r[1])) for r in mine[1:]] == [(r[6], len(r[1])) for r in theirs[1:]]
    assert sorted(r[0] for r in mine[1:]) == sorted(r[0] for r in theirs[1:]) and mine[-1][0] == theirs[-1][0] == "4"
    says("add-4", "add-controller", "--controller-id", "4")
    says("add-4-again", "add-controller", "--controller-id", "4")
    says("status-4", "describe", "--status")
    dirs = dict(re.findall(r'\{"id": (\d+), "directoryId": "([\w-]{22})"', run(capsys, *mq, "describe", "--status")[1]))
    says("remove-wrong-dir", "remove-controller", "-i", "4", "-d", dirs["1"])
    says("remove-4", "remove-controller", "-i", "4", "-d", dirs["4"])
    says("remove-4-again", "remove-controller", "-i", "4", "-d", dirs["4"])
    _, status, _ = says("status-after-remove", "describe", "--status")
    leader = re.search(r"LeaderId: +(\d+)", status).group(1)  # type: ignore[union-attr]
    says("remove-leader", "remove-controller", "-i", leader, "-d", dirs[leader])
    _, status, _ = says("status-after-leader-removed", "describe", "--status")
    assert re.search(r"LeaderId: +(\d+)", status).group(1) != leader  # type: ignore[union-attr]
    assert f'{{"id": {leader}, ' in status.splitlines()[-1]  # the removed leader observes
    says("remove-bad-uuid", "remove-controller", "-i", "4", "-d", "xyz")


@pytest.mark.parametrize("release", sorted(LIVE))
def test_sets_come_in_kafkas_order(release: str) -> None:
    """The voter keys of a refusal and the observers of a status, for the ids Kafka had."""
    steps = LIVE[release]
    line = steps["add-4-again"]["stderr_first_line"]
    keys = re.findall(r"ReplicaKey\(id=(\d+), directoryId=(?:Optional\[)?([\w-]{22})", line.split("set of voters ")[1])
    record = SimpleNamespace(voters=[SimpleNamespace(voter_id=int(i), voter_directory_id=Uuid.from_string(d))
                                     for i, d in sorted(keys)])
    style = "optional" if release.startswith("3.") else "plain"
    assert line.endswith(f"set of voters {voter_keys_text(record, style)}.")
    observers = re.findall(r'\{"id": (\d+), "directoryId": "([\w-]{22})"\}',
                           steps["status-after-leader-removed"]["stdout"].splitlines()[-1])
    assert len(observers) == 2
    ordered = hash_map_order(sorted(observers), lambda o: replica_key_hash(int(o[0]), Uuid.from_string(o[1])))
    assert ordered == observers
