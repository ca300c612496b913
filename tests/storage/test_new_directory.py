"""A new directory (storage.safepath.new_directory) is taken back when what fills it fails
or is interrupted: what was made goes, what was there before stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage.safepath import new_directory


def _fill_and_fail(d: Path) -> None:
    with pytest.raises(KeyboardInterrupt), new_directory(d) as made:
        (made / "node-1" / "__cluster_metadata-0").mkdir(parents=True)
        (made / ".lock").write_bytes(b"")
        raise KeyboardInterrupt


def test_the_folders_made_are_removed_up_to_the_first_that_was_there(tmp_path: Path) -> None:
    _fill_and_fail(tmp_path / "a" / "b" / "c")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_was_there_keeps_what_it_held(tmp_path: Path) -> None:
    (tmp_path / "mine").write_text("kept")
    _fill_and_fail(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine"] and (tmp_path / "mine").read_text() == "kept"


def test_a_folder_above_that_something_else_filled_meanwhile_stays(tmp_path: Path) -> None:
    d = tmp_path / "a" / "c"
    with pytest.raises(KeyboardInterrupt), new_directory(d):
        (tmp_path / "a" / "other").write_text("not ours")
        raise KeyboardInterrupt
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["other"]


def test_a_block_that_ends_well_keeps_everything(tmp_path: Path) -> None:
    with new_directory(tmp_path / "a" / "c") as d:
        (d / "cluster.json").write_text("{}")
    assert (tmp_path / "a" / "c" / "cluster.json").read_text() == "{}"


def test_a_directory_that_cannot_be_made_is_bad_input_and_leaves_nothing(tmp_path: Path) -> None:
    """A folder that cannot be made (here: below a file) is a UsageError naming the path and the
    OS's reason, not an OSError the CLI reports as a bug; the folders made above it go again."""
    from kraftsim.errors import UsageError

    (tmp_path / "a-file").write_text("x")
    d = tmp_path / "made" / "a-file-link" / "c"
    (tmp_path / "made").mkdir()
    (tmp_path / "made" / "a-file-link").symlink_to(tmp_path / "a-file")
    with pytest.raises(UsageError, match="cannot create the directory: Not a directory"), new_directory(d):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "made"]
    assert [p.name for p in (tmp_path / "made").iterdir()] == ["a-file-link"]
