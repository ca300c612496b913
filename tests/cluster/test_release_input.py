"""A release name the catalog does not know is invalid input wherever a cluster command takes
one (exit 2, one line, the cluster left as it was), as it is for `replay` and `log dump`; and
`cluster start` of a node that already runs says so instead of passing over its --release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.conftest import create, run, status, tree_bytes


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_an_unknown_release_is_invalid_input_and_changes_nothing(tmp_path: Path, capsys, engine: str) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "3.9", "--engine", engine)
    before = tree_bytes(d)
    commands = [["cluster", "roll", str(d), "--release", "2.8"],
                ["cluster", "add", str(d), "--broker", "--release", "9.9.9"]]
    if engine == "events":
        commands.append(["cluster", "start", str(d), "--nodes", "2", "--release", "2.8"])
    for argv in commands:
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert len(err.strip().splitlines()) == 1 and "Unknown release " in err and "Known releases are" in err
    assert _without_opens(tree_bytes(d)) == _without_opens(before)
    code, _, err = run(capsys, "cluster", "create", str(tmp_path / "new"), "--controllers", "1", "--release", "2.8",
                       "--engine", engine)
    assert code == 2 and "Unknown release 2.8" in err and not (tmp_path / "new").exists()


def _without_opens(tree: dict[str, bytes]) -> dict[str, object]:
    """The files of a cluster, with cluster.json's count of the times it was opened left out."""
    files: dict[str, object] = dict(tree)
    if "cluster.json" in files:
        files["cluster.json"] = {k: v for k, v in json.loads(tree["cluster.json"]).items() if k != "opens"}
    return files


def test_starting_a_running_node_says_it_runs_already(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "3.9")
    code, out, _ = run(capsys, "cluster", "start", str(d), "--nodes", "2", "--release", "4.0")
    assert code == 0 and "Node 2 is already running (Kafka 3.9): not started again." in out
    assert [n["release"] for n in status(capsys, d)["nodes"]] == ["3.9", "3.9"]
