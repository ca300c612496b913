"""A scratch directory (storage.scratch) is gone when its block ends, whether its removal
started early on another thread or not; a failed removal is raised there, not lost."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import pytest

from kraftsim.storage.scratch import THREAD_NAME, Scratch


def _fill(root: Path) -> None:
    """Files as a cluster leaves them: nested, some read-only (frozen snapshots are)."""
    deep = root / "cluster" / "node-1" / "__cluster_metadata-0"
    deep.mkdir(parents=True)
    for i in range(3):
        f = deep / f"{i:020d}-0000000001.checkpoint"
        f.write_bytes(bytes(1000))
        os.chmod(f, 0o444)


@pytest.mark.parametrize("early", [False, True], ids=["removed-at-the-end", "removal-started-early"])
def test_the_directory_is_gone_when_the_block_ends(early: bool) -> None:
    with Scratch("kraftsim-test-") as scratch:
        _fill(scratch.path)
        if early:
            scratch.remove_soon()
            scratch.remove_soon()  # (once is enough: a second call starts nothing)
    assert not scratch.path.exists()


def test_the_removal_runs_on_its_own_thread_while_the_block_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tempfile.TemporaryDirectory.cleanup
    started, go_on = threading.Event(), threading.Event()
    removed_by: list[str] = []

    def held(self: tempfile.TemporaryDirectory[str]) -> None:
        removed_by.append(threading.current_thread().name)
        started.set()
        go_on.wait(30)
        plain(self)
    monkeypatch.setattr(tempfile.TemporaryDirectory, "cleanup", held)
    with Scratch("kraftsim-test-") as scratch:
        _fill(scratch.path)
        scratch.remove_soon()
        assert started.wait(30)
        assert scratch.path.exists()  # (held: the block's own work runs meanwhile)
        go_on.set()
    assert removed_by == [THREAD_NAME] and not scratch.path.exists()


def test_a_failed_removal_is_raised_when_the_block_ends_not_printed_by_the_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: tempfile.TemporaryDirectory[str]) -> None:
        raise PermissionError(13, "Permission denied", self.name)
    printed: list[object] = []
    monkeypatch.setattr(tempfile.TemporaryDirectory, "cleanup", refused)
    monkeypatch.setattr(threading, "excepthook", printed.append)
    with pytest.raises(PermissionError, match="Permission denied"):
        with Scratch("kraftsim-test-") as scratch:
            scratch.remove_soon()
    assert printed == []
    os.rmdir(scratch.path)
