"""Deleted files are renamed at once and unlinked by the reaper thread later (storage.reaper):
no listing, recovery or retention result may tell, and a failed unlink is reported."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.storage import MetadataLog, apply_retention, describe_log, plan_retention
from kraftsim.storage.names import DELETED_SUFFIX
from kraftsim.storage.reaper import REAPER, THREAD_NAME, discard, mark_and_discard, paced, settle

from tests.storage.conftest import log_with_two_snapshots


def _retain(log: MetadataLog) -> list[Path]:
    segments, snapshots = describe_log(log)
    plan = plan_retention(segments, snapshots, log_start_offset=log.log_start_offset, now_ms=0,
                          retention_bytes=1000, retention_ms=-1)
    assert plan.delete_snapshots and plan.delete_segments
    return apply_retention(log, plan)


def _names(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_retention_renames_at_once_and_the_thread_unlinks_later(tmp_path: Path) -> None:
    gate = threading.Event()
    with paced(before_unlink=lambda path: gate.wait()):
        log = log_with_two_snapshots(tmp_path)
        deleted = _retain(log)
        # held: each deleted file waits under its `.deleted` name, as in Kafka
        names = _names(tmp_path)
        assert sorted(p.name + ".deleted" for p in deleted) == sorted(n for n in names if n.endswith(".deleted"))
        assert any(n.endswith(DELETED_SUFFIX) for n in names) and any(n.endswith(".log.deleted") for n in names)
        assert REAPER.pending(tmp_path) == len(deleted)
        assert any(t.name == THREAD_NAME and t.daemon for t in threading.enumerate())
        settle(tmp_path / "elsewhere")  # another directory does not wait for these
        gate.set()
        log.close()  # closing a log settles its directory
        assert REAPER.pending(tmp_path) == 0
        assert not any(n.endswith(".deleted") for n in _names(tmp_path))


def test_recovery_does_not_report_files_this_process_marked_for_deletion(tmp_path: Path) -> None:
    """Opening a log settles its directory first: the files queued for the reaper are not
    the leftovers of an interrupted deletion that Kafka's recovery deletes and reports."""
    slow, inline = tmp_path / "slow", tmp_path / "inline"
    found = {}
    for d, kwargs in ((slow, {"delay_s": 0.05}), (inline, {"inline": True})):
        with paced(**kwargs):  # type: ignore[arg-type]
            log = log_with_two_snapshots(d)
            _retain(log)
            for seg in log.segments.values():  # (closed without the close that settles)
                seg.close()
            with MetadataLog.open(d, read_only=True) as again:
                found[d] = ([a.describe() for a in again.recovery], _names(d), again.log_start_offset)
    assert found[slow][0] == found[inline][0] == []
    assert found[slow][1:] == found[inline][1:]


def test_truncation_deletes_segments_the_same_way(tmp_path: Path) -> None:
    with paced(delay_s=0.05):
        log = log_with_two_snapshots(tmp_path)
        before = len(log.segments)
        log.truncate_to(5)
        assert len(log.segments) < before
        log.close()
        assert not any(n.endswith(".deleted") for n in _names(tmp_path))
        with MetadataLog.open(tmp_path) as again:
            assert again.recovery == [] and again.log_end_offset == log.log_end_offset


def test_a_failed_unlink_is_raised_at_the_next_settle_not_lost(tmp_path: Path) -> None:
    gate = threading.Event()
    with paced(before_unlink=lambda path: gate.wait()):
        log = log_with_two_snapshots(tmp_path)
        _retain(log)
        marked = [p for p in tmp_path.iterdir() if p.name.endswith(DELETED_SUFFIX)]
        assert len(marked) == 1
        marked[0].unlink()
        (marked[0] / "in-the-way").mkdir(parents=True)  # a directory now holds the name: not unlinkable
        gate.set()
        with pytest.raises(KraftsimError, match=f"cannot delete {marked[0]}: Is a directory"):
            settle(tmp_path)
        settle()  # said once
        log.close()
    assert marked[0].is_dir()


def test_a_failure_in_the_callers_thread_when_inline(tmp_path: Path) -> None:
    (tmp_path / "x.deleted").mkdir()
    with paced(inline=True), pytest.raises(KraftsimError, match="cannot delete"):
        discard(tmp_path / "x.deleted")


def test_a_name_queued_twice_and_a_file_already_gone_are_fine(tmp_path: Path) -> None:
    p = tmp_path / "a.deleted"
    p.write_bytes(b"x")
    with paced(delay_s=0.01):
        discard(p)
        discard(p)
        discard(tmp_path / "never-there.deleted")
        settle(tmp_path)
        assert REAPER.pending() == 0 and not p.exists()


def test_the_process_end_settles_and_says_a_failure_in_one_line(tmp_path: Path) -> None:
    """What is queued when the process ends is unlinked before it exits; what fails is said
    on stderr as an error line, without a traceback."""
    gone, stuck = tmp_path / "gone.deleted", tmp_path / "stuck.deleted"
    gone.write_bytes(b"x" * 4096)
    (stuck / "in-the-way").mkdir(parents=True)
    code = ("import sys, time\nfrom kraftsim.storage.reaper import REAPER, discard\n"
            "REAPER.before_unlink = lambda path: time.sleep(0.2)\n"
            "discard(sys.argv[1]); discard(sys.argv[2])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", code, str(gone), str(stuck)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert not gone.exists()
    assert proc.stderr == f"kraftsim: error: cannot delete {stuck}: Is a directory\n"


def test_a_name_whose_deleted_twin_still_waits_as_a_link_of_it_is_deleted_too(tmp_path: Path) -> None:
    """POSIX rename onto a hard link of the same file does nothing: the name is unlinked
    instead (its twin is already queued), never left in place."""
    gate = threading.Event()
    with paced(before_unlink=lambda path: gate.wait()):
        live = tmp_path / "00000000000000000010-0000000002.checkpoint"
        live.write_bytes(b"snapshot")
        marked = tmp_path / ("00000000000000000010-0000000002" + DELETED_SUFFIX)
        try:
            mark_and_discard(live, marked)  # (waits, held by the gate)
            os.link(marked, live)  # (the same file under its live name again)
            mark_and_discard(live, marked)
            assert _names(tmp_path) == [marked.name]
        finally:
            gate.set()
        settle(tmp_path)
    assert _names(tmp_path) == []
