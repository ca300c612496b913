"""`kraftsim cluster ... --engine events`: the event simulator from the command line, with the
fault commands, `features --cluster` and `status` on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.conftest import ok, run, status as _status


def test_faults_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    out = ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "1", "--release", "3.9",
             "--engine", "events", "--seed", "3")
    assert "event simulator" in out
    st = _status(capsys, d)
    assert st["engine"] == "events" and st["leader"] is not None
    leader = st["leader"]
    ok(capsys, "cluster", "partition", d, "--group", str(leader))
    ok(capsys, "cluster", "run", d, "--ms", "6000")
    st = _status(capsys, d)
    assert st["partition"] == [[leader]]
    assert st["leader"] not in (None, leader)  # the majority side elected another (3.9: check-quorum)
    ok(capsys, "cluster", "heal", d)
    ok(capsys, "cluster", "stop", d, "--nodes", str(leader))
    ok(capsys, "cluster", "disk-fault", d, "--nodes", str(leader), "--kind", "torn-tail")
    ok(capsys, "cluster", "start", d, "--nodes", str(leader))
    timeline = tmp_path / "t.jsonl"
    ok(capsys, "cluster", "run", d, "--ms", "30000", "--until-stable", "--timeline", timeline)
    kinds = {json.loads(line)["kind"] for line in timeline.read_text().splitlines()}
    assert {"send", "append", "commit"} <= kinds
    st = _status(capsys, d)
    controllers = [n for n in st["nodes"] if "controller" in n["roles"]]
    ends = [n["log_end_offset"] for n in controllers]
    assert st["partition"] == [] and {n["leader"] for n in controllers} == {st["leader"]}
    assert max(ends) - min(ends) <= 2  # at most the idle NoOpRecord in flight


def test_roll_and_features_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "2", "--release", "3.9", "--engine", "events")
    ok(capsys, "cluster", "roll", d, "--release", "4.1")
    out = ok(capsys, "features", "--cluster", d, "upgrade", "--metadata", "4.1")
    assert "metadata.version was upgraded to 27." in out
    out = ok(capsys, "features", "--cluster", d, "describe")
    assert "FinalizedVersionLevel: 4.1-IV1" in out
    st = _status(capsys, d)
    assert {n["release"] for n in st["nodes"]} == {"4.1"}
    assert {n["finalized_in_log"]["metadata.version"] for n in st["nodes"]} == {27}
    regs = [n["registration"] for n in st["nodes"] if "broker" in n["roles"]]
    assert [(r["broker"]["fenced"], r["broker"]["current_incarnation"]) for r in regs] == [(False, True), (False, True)]
    code, _, err = run(capsys, "cluster", "disk-fault", d, "--nodes", "1", "--kind", "wipe")
    assert code == 1 and "needs it stopped" in err



def test_a_roll_stops_at_the_first_node_that_does_not_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """4.0 finalizes metadata.version 25, which 3.9 does not know: rolled back to 3.9, the first
    controller dies on start. An operator stops there, so does the roll: that node stays down with
    Kafka's text, the five others keep running 4.0 with their leader, and the command says so."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "3", "--release", "4.0")
    code, out, err = run(capsys, "cluster", "roll", d, "--release", "3.9")
    assert code == 1
    assert out.count("Stopping node") == 1 and "No leader" not in out
    assert err.splitlines() == ["Node 2 did not come up on Kafka 3.9: No MetadataVersion with feature level 25",
                                "The roll stopped: 5 node(s) left on their old release (Kafka 4.0): 1,3,4,5,6."]
    st = _status(capsys, d)
    assert [(n["id"], n["release"], n["state"]) for n in st["nodes"]] == [
        (1, "4.0", "running"), (2, "3.9", "failed"), (3, "4.0", "running"), (4, "4.0", "running"),
        (5, "4.0", "running"), (6, "4.0", "running")]
    assert st["nodes"][1]["detail"] == "No MetadataVersion with feature level 25" and st["leader"] == 1

def test_fault_commands_need_the_event_simulator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--release", "3.9", "--engine", "ticks")
    code, _, err = run(capsys, "cluster", "crash", d, "--nodes", "1")
    assert code == 1 and "--engine ticks" in err
    code, _, err = run(capsys, "cluster", "create", tmp_path / "k", "--controllers", "1", "--combined", "1",
                       "--release", "3.9", "--engine", "ticks")
    assert code == 2 and "--combined" in err and not (tmp_path / "k").exists()
    # the ticks engine formats a static quorum: --dynamic-quorum was dropped without a word
    code, _, err = run(capsys, "cluster", "create", tmp_path / "k", "--controllers", "1", "--dynamic-quorum",
                       "--release", "3.9", "--engine", "ticks")
    assert code == 2 and "--dynamic-quorum is not available with --engine ticks" in err
    assert not (tmp_path / "k").exists()
    # the event simulator's commands named a ticks cluster's state file a wrong "format 1"
    for argv in (["topics", "--cluster", d, "list"], ["acls", "--cluster", d, "--add", "--allow-principal", "User:a",
                                                      "--operation", "Read", "--topic", "t"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and "a cluster of the tick simulator (`cluster create --engine ticks`)" in err, err


def test_the_event_simulator_is_the_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`cluster create --combined N` needs no --engine; the status shows what each node applied."""
    d = tmp_path / "c"
    out = ok(capsys, "cluster", "create", d, "--combined", "3", "--controllers", "0", "--brokers", "1",
             "--release", "4.1")
    assert "(event simulator, seed 0)" in out
    st = _status(capsys, d)
    assert st["engine"] == "events" and st["voters"] == [1, 2, 3]
    assert [n["roles"] for n in st["nodes"]] == [["broker", "controller"]] * 3 + [["broker"]]
    assert st["finalized"]["metadata.version"] == 27 and st["finalized_epoch"] is not None
    for n in st["nodes"]:
        assert n["applied_offset"] == n["finalized_epoch"] and n["applied_offset"] <= n["log_end_offset"] - 1
        assert n["registration"]["broker"]["fenced"] is False
        assert n["registration"]["broker"]["current_incarnation"]
    assert [n["active_controller"] for n in st["nodes"]].count(True) == 1
    ok(capsys, "cluster", "crash", d, "--nodes", str(st["leader"]))
    ok(capsys, "cluster", "run", d, "--ms", "30000", "--until-stable")
    assert _status(capsys, d)["leader"] not in (None, st["leader"])


FEATURE_COMMANDS = [
    ["upgrade", "--metadata", "4.0", "--dry-run"],
    ["upgrade", "--feature", "metadata.version=25"],
    ["downgrade", "--metadata", "3.9"],
    ["upgrade", "--release-version", "4.1-IV1"],
    ["upgrade", "--feature", "group.version=2"],
    ["disable", "--feature", "group.version", "--feature", "transaction.version"],
    ["downgrade", "--feature", "metadata.version=14", "--unsafe"],
]


def test_kafka_features_says_the_same_on_both_simulators(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every line, error text and exit code of kafka-features is the controller's; the
    simulator underneath changes none of them."""
    said = {}
    for engine in ("ticks", "events"):
        d = tmp_path / engine
        ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "1", "--release", "4.1",
           "--release-version", "3.9-IV0", "--engine", engine)
        said[engine] = [run(capsys, "features", "--cluster", d, *cmd) for cmd in FEATURE_COMMANDS]
    assert said["events"] == said["ticks"]
    assert [code for code, _, _ in said["events"]] == [0, 0, 1, 0, 1, 0, 1]


def test_files_of_an_event_cluster_are_sound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After a roll, a crash and a torn tail, every node's files verify, decode with the
    kafka-python peer, and equal logs give equal images."""
    from tests.cluster.conftest import assert_cluster_sound

    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--brokers", "2", "--release", "3.9", "--engine", "events")
    ok(capsys, "cluster", "roll", d, "--release", "4.0")
    ok(capsys, "cluster", "crash", d, "--nodes", "2")
    ok(capsys, "cluster", "disk-fault", d, "--nodes", "2", "--kind", "torn-tail")
    ok(capsys, "cluster", "start", d, "--nodes", "2")
    ok(capsys, "cluster", "run", d, "--ms", "30000", "--until-stable")
    assert_cluster_sound(capsys, d)


def test_describe_and_status_change_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cluster.conftest import tree_bytes

    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--release", "4.1", "--engine", "events")
    before = tree_bytes(d)
    out = ok(capsys, "features", "--cluster", d, "describe")
    assert "FinalizedVersionLevel: 4.1-IV1" in out
    ok(capsys, "cluster", "status", d)
    assert tree_bytes(d) == before


def test_run_ms_is_bounded_as_a_scenario_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped `--ms` (hours of simulated time) is refused up front, as a scenario's
    `[limits] step_ms` refuses a long `run` step; `--max-ms` lets a longer run through."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--release", "3.9", "--engine", "events")
    before = _status(capsys, d)["time_ms"]
    code, out, err = run(capsys, "cluster", "run", d, "--ms", "1000000000")
    assert code == 2 and out == ""
    assert "3,600,000" in err and "--max-ms 1000000000" in err and "Traceback" not in err
    assert _status(capsys, d)["time_ms"] == before  # nothing ran
    code, out, err = run(capsys, "cluster", "run", d, "--ms", "5000", "--max-ms", "1000")
    assert code == 2 and "--max-ms 5000" in err
    ok(capsys, "cluster", "run", d, "--ms", "3600001", "--max-ms", "3600001", "--json")


def test_a_timeline_that_cannot_be_appended_to_is_refused_before_the_run(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A missing folder or a directory was an internal error (exit 70) after the cluster was
    opened; a file in the cluster directory (its cluster.json) was appended to."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--release", "3.9", "--engine", "events")
    state = (d / "cluster.json").read_bytes()
    for timeline, says in ((tmp_path / "no" / "t.jsonl", "no such directory"), (d, "is a directory"),
                           (d / "cluster.json", "lies inside")):
        code, out, err = run(capsys, "cluster", "run", d, "--ms", "100", "--timeline", timeline)
        assert (code, out) == (2, ""), err
        assert f"--timeline {timeline}" in err and says in err and "Traceback" not in err
        assert (d / "cluster.json").read_bytes() == state  # nothing ran, nothing appended


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_timeline_in_a_folder_that_takes_no_new_file_is_refused_before_the_cluster_is_opened(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/proc passes the writable check (root may write there) but no file can be made in it:
    the open failed after the cluster was opened, as an internal error (exit 70)."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--release", "3.9", "--engine", "events")
    state = (d / "cluster.json").read_bytes()
    timeline = "/proc/kraftsim-no-such-timeline.jsonl"
    code, out, err = run(capsys, "cluster", "run", d, "--ms", "100", "--timeline", timeline)
    assert (code, out) == (2, ""), err
    assert err.startswith(f"--timeline {timeline}") and len(err.strip().splitlines()) == 1, err
    assert (d / "cluster.json").read_bytes() == state  # nothing ran


def test_a_node_in_two_partition_groups_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--group 1 --group 1,2` put node 1 silently in the last group it was named in."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "3", "--release", "3.9", "--engine", "events")
    code, _, err = run(capsys, "cluster", "partition", d, "--group", "1", "--group", "1,2")
    assert (code, err.strip()) == (2, "node 1 is in two groups")  # (invalid input, as an unknown id is)
    code, _, err = run(capsys, "cluster", "partition", d, "--group", "1", "--group", "2,9")
    assert (code, err.strip()) == (2, "the cluster has no node 9")
    assert _status(capsys, d)["partition"] == []


def test_topics_list_without_an_active_controller_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The settling wait's own failure ("not stable after 60000 ms") hid the answer that matters."""
    d = tmp_path / "c"
    ok(capsys, "cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "3.9", "--engine", "events")
    ok(capsys, "topics", "--cluster", d, "create", "--count", "1")
    ok(capsys, "cluster", "crash", d, "--nodes", "1")
    code, out, err = run(capsys, "topics", "--cluster", d, "list")
    assert (code, out, err) == (1, "", "no active controller: the topics cannot be listed\n")
