"""Small habits of the CLI: exit statuses in --help, no debug dumps in a cluster's output,
and the default output folders kept out of git."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kraftsim.cli.main import build_parser, main

REPO = Path(__file__).resolve().parents[2]


def test_help_documents_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("exit status: 0 ok", "1 a check failed or the request was refused", "2 usage or invalid input",
                 "70 internal error", "--debug"):
        assert text in out


def test_cluster_create_prints_no_bootstrap_metadata_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "create", str(tmp_path / "c"), "--controllers", "3", "--brokers", "3",
                 "--release", "4.2"]) == 0
    out, err = capsys.readouterr()
    assert "Formatting metadata directory" in out + err  # the rest of the format output is still there
    assert "BootstrapMetadata(" not in out + err


def test_default_output_folders_are_ignored_by_git() -> None:
    lines = (REPO / ".gitignore").read_text().splitlines()
    assert "kraftsim-output/" in lines and "kraftsim-demo/" in lines


def _undocumented(parser: argparse.ArgumentParser, prefix: list[str]) -> list[str]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _undocumented(sub, prefix + [name])
        elif action.help is None and action.dest != "help":
            out.append(" ".join(prefix + [action.option_strings[0] if action.option_strings else action.dest]))
    return out


@pytest.mark.parametrize("command", ["log", "replay", "snapshot", "downgrade-report", "export", "storage", "features"])
def test_every_option_and_argument_has_help(command: str) -> None:
    assert _undocumented(build_parser([command]), ["kraftsim"]) == []


@pytest.mark.parametrize("argv, flag", [
    (["replay", "X"], "--at"), (["downgrade-report", "X"], "--at"), (["snapshot", "create", "X"], "--at"),
    (["snapshot", "diff", "X", "Y"], "--at"), (["downgrade-report", "X"], "--metadata"),
    (["snapshot", "create", "X"], "--metadata"),
])
def test_an_offset_is_at_and_a_metadata_version_is_metadata_in_every_command(argv: list[str], flag: str,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    shown = capsys.readouterr().out
    assert f"{flag} " in shown
    for old in ("--offset", "--to ", "--metadata-version", "@OFFSET"):  # older spellings work, unshown
        assert old not in shown


def test_an_older_spelling_given_with_another_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["snapshot", "create", "X", "-o", "Y", "--offset", "5", "--at", "6"])
    assert e.value.code == 2
    assert "--at 6 contradicts the 5 given before" in capsys.readouterr().err
