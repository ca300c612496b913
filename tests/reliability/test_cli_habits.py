"""Small habits of the CLI: exit statuses in --help, no debug dumps in a cluster's output,
and the default output folders kept out of git."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.cli.main import main

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
