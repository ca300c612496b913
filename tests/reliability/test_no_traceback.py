"""No traceback reaches a user: each class of failure that once printed one is one line now.

The last-resort handler turns any unexpected exception into one line and exit 70 (the
traceback only under --debug); the specific classes below are input errors, said in one
line that names the file, with exit 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftsim.cli import main as cli_main
from kraftsim.cli.main import main
from kraftsim.sim.saved import STATE_FORMAT
from kraftsim.sim.types import not_a_cluster_text
from tests.reliability import damage

REPO = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = damage.build_log_dir(tmp_path_factory.mktemp("log"))
    return next(directory.glob("*.log"))


def test_an_unexpected_exception_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch, segment: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import kraftsim.cli.log_cmd as log_cmd

    def broken(args: object) -> int:
        raise ValueError("something kraftsim did not expect")

    monkeypatch.setattr(log_cmd, "run_dump", broken)
    code, _, err = run(capsys, "log", "dump", str(segment))
    assert code == cli_main.EXIT_INTERNAL == 70
    assert one_line(err) == ("kraftsim: internal error: ValueError: something kraftsim did not expect "
                             "(rerun with --debug for the traceback)")
    code, _, err = run(capsys, "--debug", "log", "dump", str(segment))
    assert code == 70
    assert "Traceback (most recent call last)" in err and "something kraftsim did not expect" in err


def test_a_non_utf8_catalog_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = tmp_path / "catalog.toml"
    catalog.write_bytes(b'[[releases]]\nname = "\xff\xfe"\n')
    for argv in (["storage", "version-mapping", "--catalog", str(catalog)],
                 ["replay", str(segment_dir(tmp_path)), "--catalog", str(catalog)]):
        code, _, err = run(capsys, *argv)
        assert code == 2, argv  # invalid input, in every command
        line = one_line(err)
        assert str(catalog) in line and "not a UTF-8 text file (byte " in line


def segment_dir(tmp_path: Path) -> Path:
    return damage.build_log_dir(tmp_path / "cluster")


@pytest.mark.parametrize("nesting", ["[", "{a="])
def test_a_deeply_nested_toml_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], nesting: str) -> None:
    catalog = tmp_path / "deep.toml"
    catalog.write_text("releases = " + nesting * 5000 + "\n")
    code, _, err = run(capsys, "storage", "version-mapping", "--catalog", str(catalog))
    assert code == 2  # a broken --catalog is invalid input, in every command
    assert "nested too deeply" in one_line(err)
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "Deep.toml").write_text("name = " + nesting * 5000 + "\n")
    code, _, err = run(capsys, "log", "dump", "--schemas", str(schemas), str(segment_dir(tmp_path)))
    assert code == 2  # a broken --schemas file is invalid input, not damage in the files read
    assert f"{schemas / 'Deep.toml'}: not valid TOML: arrays or tables nested too deeply" in one_line(err)


def test_export_to_a_directory_is_refused_and_leaves_no_part(tmp_path: Path, segment: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out"
    target.mkdir()
    for extra in ([], ["--overwrite"]):
        code, _, err = run(capsys, "export", str(segment), "-o", str(target), *extra)
        assert code == 2  # invalid input
        assert one_line(err) == f"kraftsim: error: {target} is a directory: name the Parquet file to write"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert not any(target.iterdir())


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_export_into_a_directory_that_takes_no_files_is_refused_first(
        segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/proc exists, and root may write there by its permission bits, but no file can be made
    in it: refused as bad input before anything is read, in the system's words."""
    out = Path("/proc/records.parquet")
    code, _, err = run(capsys, "export", str(segment), "-o", str(out))
    assert code == 2
    assert one_line(err) == f"kraftsim: error: --output {out}: cannot write in /proc: No such file or directory"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_export_writer_that_cannot_make_its_file_says_the_system_text(segment: Path) -> None:
    """Past the CLI's check (the folder may change under a long export), the writer's own
    failure names the file the user named in the system's words (it was Arrow's "Failed to
    open local file '....part'. Detail: [errno 2] ...")."""
    from kraftsim.errors import KraftsimError
    from kraftsim.pipeline.export import export_parquet

    out = Path("/proc/records.parquet")
    with pytest.raises(KraftsimError) as raised:
        export_parquet([segment], out)
    assert str(raised.value) == f"cannot write {out}: No such file or directory"


def test_export_that_cannot_rename_leaves_no_part(tmp_path: Path, segment: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import kraftsim.pipeline.export as export

    def refuse(src: object, dst: object) -> None:
        raise IsADirectoryError(21, "Is a directory")

    monkeypatch.setattr(export.os, "replace", refuse)
    out = tmp_path / "records.parquet"
    code, _, err = run(capsys, "export", str(segment), "-o", str(out))
    assert code == 1
    assert one_line(err) == f"kraftsim: error: cannot write {out}: Is a directory"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("setup", ["missing", "empty", "file", "json-dir", "garbage", "foreign-json", "kafka-dir",
                                   "deep-json", "deep-state", "loop"])
@pytest.mark.parametrize("command", [["status"], ["roll", "--release", "3.8"], ["add", "--broker", "--release", "3.8"]])
def test_cluster_commands_on_a_missing_or_foreign_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            setup: str, command: list[str]) -> None:
    d = tmp_path / "cluster"
    if setup == "empty":
        d.mkdir()
    elif setup == "file":
        d.write_text("not a directory\n")
    elif setup == "json-dir":
        (d / "cluster.json").mkdir(parents=True)
    elif setup == "garbage":
        d.mkdir()
        (d / "cluster.json").write_bytes(b"\xff\x00garbage")
    elif setup == "foreign-json":
        d.mkdir()
        (d / "cluster.json").write_text('{"name": "something else"}\n')
    elif setup in ("deep-json", "deep-state"):  # JSON nested past Python's recursion limit (was exit 70)
        d.mkdir()
        head = '{"format": %d, "x": ' % STATE_FORMAT if setup == "deep-state" else ""
        (d / "cluster.json").write_text(head + "[" * 100_000 + "]" * 100_000 + ("}" if head else ""))
    elif setup == "kafka-dir":
        damage.build_log_dir(d)
    elif setup == "loop":  # a symbolic link to itself (ELOOP: was exit 1 in some commands, 2 in others)
        d.symlink_to(d.name)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, out, err = run(capsys, "cluster", command[0], str(d), *command[1:])
    # no cluster.json at all: invalid input (exit 2); one that cannot be read: refused (exit 1)
    assert code == (1 if setup in ("garbage", "foreign-json", "deep-json", "deep-state") else 2), (out, err)
    assert str(d) in one_line(err)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing created or removed


@pytest.mark.parametrize("setup", ["missing", "empty", "file", "loop"])
@pytest.mark.parametrize("command", [["topics", "--cluster", "DIR", "list"],
                                     ["features", "--cluster", "DIR", "describe"],
                                     ["configs", "--cluster", "DIR", "--alter", "--entity-type", "topics",
                                      "--entity-name", "t", "--add-config", "retention.ms=1"],
                                     ["leader-election", "--cluster", "DIR", "--election-type", "preferred",
                                      "--all-topic-partitions"],
                                     ["acls", "--cluster", "DIR", "--add", "--allow-principal", "User:a",
                                      "--operation", "Read", "--topic", "t"],
                                     ["metadata-quorum", "--cluster", "DIR", "describe", "--status"]])
def test_the_kafka_tools_refuse_a_directory_that_is_no_cluster_as_invalid_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, command: list[str]) -> None:
    """No cluster.json where --cluster points (nothing there, an empty folder, a file): exit 2 as
    `cluster status` and `metadata-quorum` say it, not 1 (the status of a request Kafka's tool
    sent and the cluster refused: there is no cluster to send it to)."""
    d = tmp_path / "cluster"
    if setup == "empty":
        d.mkdir()
    elif setup == "file":
        d.write_text("not a directory\n")
    elif setup == "loop":
        d.symlink_to(d.name)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, out, err = run(capsys, *[str(d) if a == "DIR" else a for a in command])
    assert code == 2, (out, err)
    # one text, whichever command or engine reads the directory
    assert one_line(err).removeprefix("kraftsim: error: ") == not_a_cluster_text(d)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing created


@pytest.mark.parametrize("command", [["log", "dump", "LONG"], ["metadata-shell", "-s", "LONG", "ls"],
                                     ["cluster", "status", "LONG"], ["serve", "LONG"], ["scenario", "check", "LONG"],
                                     ["export", "SEG", "-o", "LONG"], ["scenario", "new", "x", "--output", "LONG"]])
def test_a_name_longer_than_the_file_system_takes_is_invalid_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], segment: Path, command: list[str]) -> None:
    """ENAMETOOLONG, wherever a command first looks at the path it was given, was reported as an
    internal error (exit 70): it is the path the user named, said in one line, exit 2."""
    long = tmp_path / ("a" * 300)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, out, err = run(capsys, *[str(long) if a == "LONG" else str(segment) if a == "SEG" else a for a in command])
    assert code == 2, (out, err)
    line = one_line(err)
    assert str(long) in line and line.endswith(": File name too long") and "internal error" not in line
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_scenario_new_with_a_name_too_long_for_a_file_is_invalid_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "scenario", "new", "a" * 300)
    assert code == 2, (out, err)
    assert one_line(err) == f"kraftsim: error: NAME {'a' * 300}.toml: File name too long"
    assert list(tmp_path.iterdir()) == []


def test_a_cluster_state_nested_too_deeply_is_refused_by_commands_that_open_the_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`topics` opens the cluster straight away (not through `cluster`'s engine check): exit 1, not 70."""
    d = tmp_path / "cluster"
    d.mkdir()
    (d / "cluster.json").write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run(capsys, "topics", "--cluster", str(d), "list")
    assert (code, one_line(err)) == (1, f"{d / 'cluster.json'}: not a valid cluster state file: arrays or objects "
                                        "nested too deeply")


def test_a_cluster_state_of_an_unknown_format_names_both_formats_kraftsim_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "cluster"
    d.mkdir()
    (d / "cluster.json").write_text('{"format": 999}')
    code, _, err = run(capsys, "cluster", "status", str(d))
    assert (code, one_line(err)) == (1, f"{d / 'cluster.json'}: cluster state format 999 is not supported (kraftsim "
                                        "reads 1, the tick engine's, and 2, the event simulator's)")


def test_a_closed_pipe_is_not_a_traceback(segment: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "kraftsim", "log", "dump", *[str(segment)] * 300],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(200)  # what `| head -c 200` reads before it goes away
    proc.stdout.close()
    try:
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    assert head.startswith(b"Dumping ")
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    assert code == 141


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_said_not_called_a_bug(segment: Path) -> None:
    """Output that the machine cannot take (here stdout on /dev/full, where every write finds the
    disk full) was an internal error (exit 70); it is a failure of the machine, said in one line."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "kraftsim", "log", "dump", str(segment)], cwd=REPO,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "kraftsim: error: cannot write the output: No space left on device\n"


def test_an_os_error_that_is_not_the_machines_is_still_a_bug(monkeypatch: pytest.MonkeyPatch, segment: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    import kraftsim.cli.log_cmd as log_cmd

    def broken(args: object) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(log_cmd, "run_dump", broken)
    code, _, err = run(capsys, "log", "dump", str(segment))
    assert code == 70 and "internal error: OSError: [Errno 9] Bad file descriptor" in err


def test_sigterm_ends_a_run_as_an_interrupt_does_and_leaves_no_temporary_cluster(tmp_path: Path) -> None:
    """`timeout` and service managers stop a command with SIGTERM: the run's temporary cluster
    is removed, one line says so, exit 143 (before, the process died where it was and left the
    cluster in $TMPDIR)."""
    import signal

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kraftsim", "scenario", "run",
                             str(REPO / "scenarios" / "snapshot-during-roll-at-scale.toml")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for _ in range(200):  # bounded: the run prints its steps as it goes
            line = proc.stdout.readline()
            if not line or b"step 1 " in line:
                break
        assert any(scratch.iterdir()), "the run has its temporary cluster by its first step"
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    assert code == 143 and err.strip().endswith("kraftsim: terminated"), err
    assert "Traceback" not in err
    assert list(scratch.iterdir()) == []
