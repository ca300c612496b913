"""`kraftsim metadata-quorum` on a simulated cluster: kafka-metadata-quorum's lines, error
texts and exit codes, per release (the 3.8 tool has no directory ids and no add-controller)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_support import run

STATUS_KEYS = ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
               "CurrentVoters", "CurrentObservers"]


def _cluster(capsys: pytest.CaptureFixture[str], d: Path, release: str, *extra: str) -> str:
    code, _, err = run(capsys, "cluster", "create", str(d), "--controllers", "3", "--brokers", "1", "--release",
                       release, *extra)
    assert code == 0, err
    return str(d)


def _status(capsys: pytest.CaptureFixture[str], d: str) -> dict[str, str]:
    code, out, err = run(capsys, "metadata-quorum", "--cluster", d, "describe", "--status")
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == STATUS_KEYS
    assert all(re.fullmatch(r"[A-Za-z]+: +\S.*", line) and line.index(line.split()[1]) == 24 for line in lines)
    return {line.split(":", 1)[0]: line[24:] for line in lines}


def test_grow_and_shrink_a_dynamic_quorum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "4.0.0", "--dynamic-quorum")
    before = (Path(d) / "cluster.json").read_bytes()
    st = _status(capsys, d)
    assert (Path(d) / "cluster.json").read_bytes() == before  # describe changes nothing
    assert st["LeaderId"] == "1" and st["MaxFollowerLag"] == "0"
    voters = re.findall(r'\{"id": (\d+), "directoryId": "([\w-]{22})", "endpoints": \["CONTROLLER://node-\1:9093"\]\}',
                        st["CurrentVoters"])
    assert [v[0] for v in voters] == ["1", "2", "3"]
    assert re.fullmatch(r'\[\{"id": 4, "directoryId": "[\w-]{22}"\}\]', st["CurrentObservers"])

    assert run(capsys, "cluster", "add", d, "--controller", "--release", "4.0.0")[0] == 0
    code, out, err = run(capsys, "metadata-quorum", "--cluster", d, "add-controller", "--controller-id", "5")
    assert code == 0, err
    assert re.fullmatch(r"Added controller 5 with directory id [\w-]{22} and endpoints: CONTROLLER://node-5:9093\n", out)
    code, _, err = run(capsys, "metadata-quorum", "--cluster", d, "add-controller", "--controller-id", "5")
    assert code == 1 and err.startswith("org.apache.kafka.common.errors.DuplicateVoterException: The voter id for "
                                        "ReplicaKey(id=5, directoryId=")

    code, out, _ = run(capsys, "metadata-quorum", "--cluster", d, "describe", "--replication")
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["NodeId", "DirectoryId           ", "LogEndOffset", "Lag", "LastFetchTimestamp",
                       "LastCaughtUpTimestamp", "Status  ", ""]
    assert [(r[0].strip(), r[6].strip()) for r in rows[1:]] == [("1", "Leader"), ("2", "Follower"), ("3", "Follower"),
                                                                ("5", "Follower"), ("4", "Observer")]

    leader_dir = voters[0][1]
    code, out, _ = run(capsys, "metadata-quorum", "--cluster", d, "remove-controller", "-i", "1", "-d", leader_dir)
    assert (code, out) == (0, f"Removed  KRaft controller 1 with directory id {leader_dir}\n")
    st = _status(capsys, d)
    assert st["LeaderId"] in ("2", "3", "5") and '"id": 1,' in st["CurrentObservers"]
    code, _, err = run(capsys, "metadata-quorum", "--cluster", d, "remove-controller", "-i", "1", "-d", leader_dir)
    assert code == 1 and err.startswith("org.apache.kafka.common.errors.VoterNotFoundException: Cannot remove voter "
                                        f"ReplicaKey(id=1, directoryId={leader_dir}) from the set of voters [")


def test_texts_of_bad_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "3.9.0")
    mq = ["metadata-quorum", "--cluster", d]
    assert run(capsys, *mq, "describe")[::2] == (1, "One of --status or --replication must be specified with describe "
                                                   "sub-command\n")
    assert run(capsys, *mq, "describe", "--status", "--replication")[::2] == (
        1, "Only one of --status or --replication should be specified with describe sub-command\n")
    assert run(capsys, *mq, "describe", "--status", "--human-readable")[::2] == (
        1, "The option --human-readable is only supported along with --replication\n")
    assert run(capsys, *mq, "add-controller")[::2] == (
        1, "You must supply the configuration file of the controller you are adding when using add-controller.\n")
    # a configuration file that is a folder: Java's FileInputStream's words, not an internal error
    (tmp_path / "folder").mkdir()
    assert run(capsys, *mq, "--command-config", str(tmp_path / "folder"), "add-controller")[::2] == (
        1, f"{tmp_path / 'folder'} (Is a directory)\n")
    assert run(capsys, *mq, "remove-controller", "-i", "-1", "-d", "x")[::2] == (1, "Invalid negative --controller-id: -1\n")
    assert run(capsys, *mq, "remove-controller", "-i", "2", "-d", "xyz")[::2] == (
        1, "Failed to parse --controller-directory-id: Input string `xyz` decoded as 2 bytes, which is not equal to "
           "the expected 16 bytes of a base64-encoded UUID\n")
    # a static quorum (kraft.version 0) refuses membership changes
    assert run(capsys, *mq, "remove-controller", "-i", "2", "-d", "AAAAAAAAAAAAAAAAAAAAAQ")[::2] == (
        1, "org.apache.kafka.common.errors.UnsupportedVersionException: Cluster doesn't support removing voter because "
           "the kraft.version feature is 0\n")
    # a static quorum's voters have no directory id
    assert '{"id": 1, "directoryId": null, "endpoints": ["CONTROLLER://node-1:9093"]}' in _status(capsys, d)["CurrentVoters"]
    assert run(capsys, "metadata-quorum", "--cluster", str(tmp_path / "none"), "describe", "--status")[0] == 2
    assert run(capsys, "metadata-quorum", "--cluster", d, "--release", "9.9", "describe", "--status")[0] == 2


def test_the_3_8_tool_prints_ids_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _cluster(capsys, tmp_path / "c", "3.8.1")
    st = _status(capsys, d)
    assert (st["CurrentVoters"], st["CurrentObservers"]) == ("[1,2,3]", "[4]")
    code, out, _ = run(capsys, "metadata-quorum", "--cluster", d, "describe", "--replication")
    assert out.splitlines()[0].split("\t")[:2] == ["NodeId", "LogEndOffset"]
    assert run(capsys, "metadata-quorum", "--cluster", d, "add-controller", "--controller-id", "3")[::2] == (
        1, "kafka-metadata-quorum: error: argument command: invalid choice: 'add-controller' (choose from 'describe')\n")
