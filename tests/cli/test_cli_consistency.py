"""The habits every command shares: "did you mean" after an unknown command or flag (exit 2),
colour only on a terminal and never with NO_COLOR, simulated time as `+12.345 s`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kraftsim.cli.style import colour_enabled, paint, paint_prefix
from kraftsim.sim.node.format import EPOCH_MS, clock_text, elapsed_text
from tests.cli_support import run


@pytest.mark.parametrize("argv, hint", [
    (["clustr", "status", "x"], "(did you mean 'cluster'?)"),
    (["cluster", "stauts", "x"], "(did you mean 'status'?)"),
    (["log", "verify", "x", "--jsn"], "(did you mean --json?)"),
    (["log", "dump", "--relase", "3.7", "x"], "(did you mean --release?)"),
    (["scenario", "run", "x", "--sed", "3"], "(did you mean --seed?)"),
    # a flag that exists, in the wrong place: where it goes, never "did you mean" the flag itself
    (["log", "verify", "x", "--debug"], "(--debug goes before the command: kraftsim --debug COMMAND ...)"),
    (["scenario", "check", "x", "--seed", "3"], "(--seed is not a flag of this command: see its --help)"),
    # a command group's own flag given after its subcommand (as in Kafka's tools, it goes before)
    (["features", "upgrade", "--cluster", "x", "--metadata", "3.9"],
     "(--cluster goes before the subcommand: kraftsim features --cluster ... upgrade ...)"),
    (["topics", "create", "--cluster", "x"], "(--cluster goes before the subcommand: kraftsim topics --cluster ... "
                                             "create ...)"),
    # close to another command's flag only: no suggestion of a flag this command does not have
    (["cluster", "create", "x", "--controllers", "1", "--release", "3.9", "--nodez", "3"], "unrecognized arguments: --nodez 3"),
])
def test_did_you_mean(capsys: pytest.CaptureFixture[str], argv: list[str], hint: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.splitlines()[-1].endswith(hint)


@pytest.mark.parametrize("argv, prog", [
    (["topics", "--cluster", "x", "create", "--name", "t"], "kraftsim topics create"),
    (["cluster", "create", "x", "--controllers", "1", "--release", "3.9", "--nodes", "3"], "kraftsim cluster create"),
    (["replay", "x", "--nodes", "3"], "kraftsim replay"),
    (["--debug", "log", "verify", "x", "--jsn"], "kraftsim log verify"),
])
def test_an_unknown_flag_is_refused_by_its_subcommand(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                      prog: str) -> None:
    """With the subcommand's usage and name, not the top level's (which says nothing of its flags)."""
    code, out, err = run(capsys, *argv)
    usage, error = err.split(f"{prog}: error: ")
    assert code == 2 and out == "" and usage.startswith(f"usage: {prog} [-h]")
    assert error.startswith(f"unrecognized arguments: {argv[-2] if argv[-1] != '--jsn' else '--jsn'}")


def test_nothing_close_suggests_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "log", "verify", "x", "--zzzzzz")
    assert code == 2 and "did you mean" not in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour_enabled(_Tty()) and not colour_enabled(io.StringIO())
    assert paint("PASS", "green", _Tty()) == "\033[32mPASS\033[0m"
    assert paint("PASS", "green", io.StringIO()) == "PASS"
    assert paint_prefix("  FAIL x", {"FAIL ": "red"}, _Tty()) == "  \033[31mFAIL \033[0mx"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_enabled(_Tty()) and paint("PASS", "green", _Tty()) == "PASS"
    monkeypatch.setenv("NO_COLOR", "")  # set but empty: no-color.org says colour stays on
    assert colour_enabled(_Tty())
    monkeypatch.setenv("TERM", "dumb")
    assert not colour_enabled(_Tty())


def test_simulated_time_reads_as_seconds_since_the_start() -> None:
    assert elapsed_text(12345) == "+12.345 s" and elapsed_text(0) == "+0.000 s"
    assert clock_text(EPOCH_MS + 36373) == "+36.373 s"


def test_json_on_the_commands_that_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    assert run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "4.1")[0] == 0
    code, out, _ = run(capsys, "cluster", "run", str(d), "--ms", "1500", "--json")
    ran = json.loads(out)
    assert code == 0 and ran["leader"] == 1 and all(i["ok"] for i in ran["invariants"])
    assert ran["time"] == elapsed_text(ran["time_ms"]) and len(ran["invariants"]) >= 4
    code, out, _ = run(capsys, "features", "--cluster", str(d), "describe", "--json")
    described = json.loads(out)
    mv = next(f for f in described["features"] if f["feature"] == "metadata.version")
    assert code == 0 and described["node"] == 2 and mv["text"]["finalized_level"] == "4.1-IV1"
    code, text, _ = run(capsys, "features", "--cluster", str(d), "describe")
    assert len(text.splitlines()) == len(described["features"])
    meta = d / "node-1" / "__cluster_metadata-0"
    code, out, _ = run(capsys, "log", "verify", "--json", str(meta))
    (verified,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and verified["ok"] is True and verified["problems"] == [] and verified["records"] > 0
    end = verified["last_offset"] + 1
    code, out, _ = run(capsys, "snapshot", "create", str(meta), "--at", str(end), "-o", str(tmp_path), "--json")
    made = json.loads(out)
    assert code == 0 and Path(made["file"]).is_file() and made["metadata_version"] == "4.1-IV1"
    assert made["snapshot"] == Path(made["file"]).name and made["records"] > 0


@pytest.mark.parametrize("argv", [["log", "dump", "{missing}"], ["log", "verify", "{missing}"],
                                  ["scenario", "list", "--dir", "{missing}"], ["cluster", "status", "{missing}"],
                                  ["cluster", "run", "{missing}", "--ms", "5"], ["cluster", "crash", "{c}", "--nodes", "x"],
                                  ["cluster", "crash", "{c}", "--nodes", "99"]])
def test_invalid_input_exits_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    c = tmp_path / "c"
    if "{c}" in argv:
        assert run(capsys, "cluster", "create", str(c), "--controllers", "1", "--release", "4.1")[0] == 0
    code, out, err = run(capsys, *(a.format(missing=tmp_path / "missing", c=c) for a in argv))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
