"""One writer per cluster directory (storage.dirlock): commands started at once on one
directory, as separate processes, are carried out one after the other; nothing they
acknowledged is lost and every node's log stays sound.

Without the lock, a roll, a feature upgrade and a topic creation started together left
diverging logs, failed CRCs or a lost "Created topic" in about a third of the tries.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest

from kraftsim.cli.main import main as kraftsim_main
from kraftsim.errors import ClusterBusyError
from kraftsim.image import load_path
from kraftsim.storage import MetadataLog, cluster_lock
from kraftsim.storage.dirlock import LOCK_FILE
from tests.cluster.conftest import cli, node_dirs, ok, record_files, run, status

TRIALS = 20
MV_3_8 = 20


@pytest.fixture(scope="module")
def prototype(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small cluster on Kafka 3.8 still at metadata.version 3.7-IV4 (copied per trial)."""
    d = tmp_path_factory.mktemp("writer") / "c"
    cli("cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "3.8",
        "--release-version", "3.7-IV4", "--seed", "5")
    return d


def _command(argv: list[str], delay_s: float, out: Path) -> None:
    """A child process: wait, then run `kraftsim ARGV` with its output in `out`."""
    time.sleep(delay_s)
    with open(out, "w") as f:
        sys.stdout = sys.stderr = f  # (the test's own capture is not this process's)
        code = kraftsim_main(argv)
        f.flush()
    os._exit(code)


def _start(argv: list[str], delay_s: float, out: Path) -> multiprocessing.process.BaseProcess:
    proc = multiprocessing.get_context("fork").Process(target=_command, args=(argv, delay_s, out))
    proc.start()
    return proc


@pytest.mark.parametrize("seed", range(TRIALS))
def test_competing_commands_are_serialized(prototype: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           seed: int) -> None:
    d = tmp_path / "c"
    shutil.copytree(prototype, d)
    rng = random.Random(seed)
    commands = {
        "roll": ["cluster", "roll", str(d), "--release", "3.9"],
        "upgrade": ["features", "--cluster", str(d), "upgrade", "--metadata", "3.8"],
        "topic": ["topics", "--cluster", str(d), "create", "--count", "1", "--prefix", f"t{seed}-"],
    }
    names = rng.sample(sorted(commands), len(commands))
    procs = {name: _start(commands[name], rng.uniform(0, 0.05), tmp_path / f"{name}.out") for name in names}
    codes = {}
    for name, proc in procs.items():
        proc.join(120)
        assert not proc.is_alive(), f"{name} still running"
        codes[name] = proc.exitcode
    outputs = {name: (tmp_path / f"{name}.out").read_text() for name in names}
    assert all(code == 0 for code in codes.values()), (codes, outputs)

    ok(capsys, "log", "verify", *record_files(d))
    st = status(capsys, d)
    leader_dir = d / f"node-{st['leader']}" / "__cluster_metadata-0"
    image = load_path(leader_dir).image
    assert "metadata.version was upgraded to 20." in outputs["upgrade"]  # acknowledged: the level is finalized
    assert image.features.metadata_version == MV_3_8
    assert f"Created topic t{seed}-0." in outputs["topic"]
    assert f"t{seed}-0" in {t.name for t in image.topics.sorted_topics()}
    for node in node_dirs(d):
        assert not load_path(node).faults


def _hold(directory: Path, ready: Path, seconds: float) -> None:
    with cluster_lock(directory, command="kraftsim cluster roll DIR --release 3.8"):
        ready.write_text("held")
        time.sleep(seconds)
    os._exit(0)


def _held_by_another_process(directory: Path, tmp_path: Path) -> multiprocessing.process.BaseProcess:
    ready = tmp_path / "ready"
    proc = multiprocessing.get_context("fork").Process(target=_hold, args=(directory, ready, 30))
    proc.start()
    for _ in range(1000):
        if ready.exists():
            break
        time.sleep(0.01)
    assert ready.exists()
    return proc


def test_a_second_writer_gives_up_naming_the_holder(prototype: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "c"
    shutil.copytree(prototype, d)
    before = (d / "cluster.json").read_bytes()
    holder = _held_by_another_process(d, tmp_path)
    try:
        monkeypatch.setenv("KRAFTSIM_LOCK_WAIT_S", "0.2")
        for argv in (["topics", "--cluster", d, "create", "--count", "1"],
                     ["features", "--cluster", d, "upgrade", "--metadata", "3.8"],
                     ["cluster", "roll", d, "--release", "3.8"],
                     ["cluster", "status", d],
                     ["serve", d, "--for", "1"]):
            code, out, err = run(capsys, *argv)
            assert code == 75, (argv, out, err)
            assert f"pid {holder.pid}" in err and "kraftsim cluster roll DIR --release 3.8" in err
            assert "KRAFTSIM_LOCK_WAIT_S" in err and "Traceback" not in err
        assert (d / "cluster.json").read_bytes() == before
    finally:
        holder.kill()
        holder.join()
    # the killed holder's lock went with it
    ok(capsys, "topics", "--cluster", d, "create", "--count", "1")


def test_a_snapshot_written_into_a_held_clusters_node_directory_waits_for_its_writer(
        prototype: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`snapshot create -o` into a node's log directory is a write into the cluster: while
    another process holds the cluster (a `serve`, a roll), it waits for it, then gives up
    (exit 75) with nothing written; once the holder is gone it writes."""
    d = tmp_path / "c"
    shutil.copytree(prototype, d)
    log_dir = d / "node-1" / "__cluster_metadata-0"
    before = sorted(p.name for p in log_dir.iterdir())
    with MetadataLog.open(log_dir, read_only=True) as log:
        end = str(log.log_end_offset)
    holder = _held_by_another_process(d, tmp_path)
    try:
        monkeypatch.setenv("KRAFTSIM_LOCK_WAIT_S", "0.2")
        for output in (log_dir, log_dir / "copy.checkpoint"):
            code, out, err = run(capsys, "snapshot", "create", log_dir, "--at", end, "-o", output)
            assert code == 75, (output, out, err)
            assert f"pid {holder.pid}" in err and "Traceback" not in err
        assert sorted(p.name for p in log_dir.iterdir()) == before
    finally:
        holder.kill()
        holder.join()
    assert "wrote " in ok(capsys, "snapshot", "create", log_dir, "--at", end, "-o", log_dir)
    assert len(list(log_dir.glob("*.checkpoint"))) == len([n for n in before if n.endswith(".checkpoint")]) + 1


def test_an_export_written_into_a_held_cluster_waits_for_its_writer(
        prototype: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`export -o` into a cluster directory is a write into the cluster: while another process
    holds it, it waits, then gives up (exit 75) with nothing written; once the holder is gone it writes."""
    d = tmp_path / "c"
    shutil.copytree(prototype, d)
    log_dir = d / "node-1" / "__cluster_metadata-0"
    output = d / "node-1" / "records.parquet"
    holder = _held_by_another_process(d, tmp_path)
    try:
        monkeypatch.setenv("KRAFTSIM_LOCK_WAIT_S", "0.2")
        code, out, err = run(capsys, "export", log_dir, "-o", output)
        assert code == 75, (out, err)
        assert f"pid {holder.pid}" in err and "Traceback" not in err
        assert not output.exists()
    finally:
        holder.kill()
        holder.join()
    assert "wrote " in ok(capsys, "export", log_dir, "-o", output)
    assert output.is_file()


def test_the_lock_is_reentrant_and_shared_readers_coexist(tmp_path: Path) -> None:
    with cluster_lock(tmp_path, command="outer"):
        with cluster_lock(tmp_path, command="inner", wait_s=0):
            pass
        with cluster_lock(tmp_path, exclusive=False, wait_s=0):
            pass
    holder = _held_by_another_process(tmp_path, tmp_path)
    try:
        with pytest.raises(ClusterBusyError, match=f"pid {holder.pid}"):
            with cluster_lock(tmp_path, wait_s=0.05):
                pass
    finally:
        holder.kill()
        holder.join()
    with cluster_lock(tmp_path, wait_s=1):
        pass


def test_a_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("precious")
    d = tmp_path / "c"
    d.mkdir()
    (d / LOCK_FILE).symlink_to(outside)
    with pytest.raises(Exception, match="symbolic link"):
        with cluster_lock(d):
            pass
    assert outside.read_text() == "precious"


def test_status_cuts_nothing(prototype: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A torn tail on a running node's log is left as it is by `cluster status` (a reader)."""
    d = tmp_path / "c"
    shutil.copytree(prototype, d)
    segment = sorted((d / "node-1" / "__cluster_metadata-0").glob("*.log"))[-1]
    with segment.open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x99\x00\x00\x01\x00\x00\x00")  # half a batch header
    files = {p: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != LOCK_FILE}
    ok(capsys, "cluster", "status", d)
    ok(capsys, "cluster", "status", d, "--json")
    assert {p: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != LOCK_FILE} == files


def _fill_while_held(directory: Path, ready: Path, seconds: float) -> None:
    """Another `cluster create` of the same new directory that locked it first: it waits, then
    writes its cluster and lets go."""
    with cluster_lock(directory, command="kraftsim cluster create DIR"):
        ready.write_text("held")
        time.sleep(seconds)
        (directory / "cluster.json").write_text('{"theirs": true}')
    os._exit(0)


def test_a_create_that_locks_a_new_directory_second_refuses_and_takes_nothing_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two creates of one new directory both found it new before either locked it. The second
    to lock went on into the first one's files and, when its format failed there, took back
    what it thought it had made: the other's cluster (seen with two `cluster create` at once).
    It now refuses once it holds the lock, and leaves the directory as the other made it."""
    from kraftsim.sim import Simulation
    from kraftsim.sim import simulation as simulation_module

    d = tmp_path / "c"
    d.mkdir()
    ready = tmp_path / "ready"
    proc = multiprocessing.get_context("fork").Process(target=_fill_while_held, args=(d, ready, 0.5))
    proc.start()
    for _ in range(1000):
        if ready.exists():
            break
        time.sleep(0.01)
    # (the window between the check that the directory is new and its lock, held open)
    monkeypatch.setattr(simulation_module, "new_cluster_directory_problem", lambda directory: None)
    try:
        with pytest.raises(ClusterBusyError, match="another command made a cluster there while this one waited"):
            Simulation.create(d, controllers=1, release="3.9")
    finally:
        proc.join(30)
    assert sorted(os.listdir(d)) == [LOCK_FILE, "cluster.json"]
    assert (d / "cluster.json").read_text() == '{"theirs": true}'
