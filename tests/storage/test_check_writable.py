"""Outputs are tried before the work: an entry is made and removed in the folder a write will
use, and nothing stays (the folders made for the try are removed again)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import kraftsim.storage.safepath as safepath
from kraftsim.errors import UsageError
from kraftsim.storage.safepath import check_writable


@pytest.mark.parametrize("directory", [False, True])
def test_a_writable_place_is_taken_and_left_as_it_was(tmp_path: Path, directory: bool) -> None:
    (tmp_path / "kept").mkdir()
    check_writable(tmp_path / "kept", flag="--out", directory=True)
    check_writable(tmp_path / "a" / "b" / "out", flag="--out", directory=directory)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert list((tmp_path / "kept").iterdir()) == []


def test_a_folder_that_takes_no_entry_is_refused_and_the_folders_made_go(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits pass (as root's do everywhere) but the file system refuses the entry."""
    real = os.open

    def read_only(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        if Path(path).name.startswith(".kraftsim-probe-"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(path, flags, *args)

    monkeypatch.setattr(safepath.os, "open", read_only)
    out = tmp_path / "a" / "b" / "report.html"
    with pytest.raises(UsageError) as raised:
        check_writable(out, flag="--html")
    assert str(raised.value) == f"--html {out}: cannot write in {out.parent}: Read-only file system"
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_made_is_said_as_such(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub" / "out"
    with pytest.raises(UsageError) as raised:
        check_writable(out, flag="--keep", directory=True)
    assert str(raised.value) == f"--keep {out}: {tmp_path / 'file'} is not a directory"


def test_a_file_named_as_a_folder_is_left_to_its_command(tmp_path: Path) -> None:
    """(`--keep FILE`: the command says what is wrong with it, "not an empty directory")."""
    (tmp_path / "file").write_text("x")
    check_writable(tmp_path / "file", flag="--keep", directory=True)
    assert (tmp_path / "file").read_text() == "x"
