"""`kraftsim log verify` checks what Kafka's log layer checks, not only CRCs.

Each case damages a copy of a kraftsim-written directory (or of a real Kafka file) in one
way that keeps every CRC valid, and expects exit 1 with the problem named by file, byte
position and offset.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from kraftsim.cli.main import main
from kraftsim.storage.quorum_state import QuorumState, write_quorum_state
from kraftsim.storage.view import iter_segment_batches
from tests.conftest import ORACLE
from tests.reliability import damage

SMALL_LOG = ORACLE / "kafka-3.5.1_bitnami_pmatuan" / "__cluster_metadata-0" / "00000000000000000000.log"
SNAPSHOT = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0" / "00000000000000007752-0000000001.checkpoint"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return damage.build_log_dir(tmp_path_factory.mktemp("pristine"))


@pytest.fixture()
def logdir(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / pristine.name))


def verify(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str]:
    code = main(["log", "verify", *map(str, paths)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out


def problems(out: str) -> list[str]:
    return [line.strip()[len("PROBLEM: "):] for line in out.splitlines() if line.strip().startswith("PROBLEM: ")]


def segments(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def snapshot(d: Path) -> Path:
    return next(d.glob("*.checkpoint"))


def edit(path: Path, change: Callable[[bytes], bytes]) -> None:
    path.chmod(0o644)
    path.write_bytes(change(path.read_bytes()))


def test_the_kraftsim_directory_verifies(pristine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = verify(capsys, pristine)
    assert code == 0, out
    assert len(segments(pristine)) >= 2


@pytest.mark.parametrize("name, change, expected", [
    ("duplicated", lambda d: damage.duplicate_batch(d, 3), "is not after the previous batch"),
    ("swapped", lambda d: damage.swap_batches(d, 3), "leaves a gap after the previous batch"),
    ("removed", lambda d: damage.remove_batch(d, 3), "are missing"),
    ("lastOffsetDelta", lambda d: damage.set_last_offset_delta(d, 3, 5), "does not match its count of"),
    ("rewritten base offset", lambda d: damage.set_base_offset(d, 3, 1000), "leaves a gap"),
    ("lower epoch", lambda d: damage.set_epoch(d, 5, 0), "leader epoch 0 is lower than"),
    ("control bit", lambda d: damage.flip_control(d, 3), "a record without a control key in a control batch"),
    ("control bit off", lambda d: damage.flip_control(d, 0), "a control record in a data batch"),
])
def test_batch_sequence_damage_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str], name: str,
                                           change: Callable[[bytes], bytes], expected: str) -> None:
    seg = segments(logdir)[0]
    before = damage.slices(seg.read_bytes())
    edit(seg, change)
    code, out = verify(capsys, logdir)
    assert code == 1, out
    found = [p for p in problems(out) if expected in p]
    assert found, problems(out)
    assert found[0].startswith(f"{seg}: batch at offset ")
    assert "(position " in found[0]
    assert any(f"(position {s.position})" in found[0] for s in before)


def test_a_renamed_segment_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = segments(logdir)[:2]
    renamed = logdir / "00000000000000000007.log"
    first.rename(renamed)
    code, out = verify(capsys, logdir)
    assert code == 1
    assert (f"{renamed}: batch at offset 0 (position 0): the segment's name says it starts at offset 7, "
            "but its first batch starts at 0") in problems(out)


def test_a_log_file_that_is_no_segment_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """verify lists the named segments only: with `abc.log` beside them the directory passed as
    OK, while replay (as Kafka's log loader) refuses it."""
    first = segments(logdir)[0]
    shutil.copy(first, logdir / "abc.log")
    code, out = verify(capsys, logdir)
    assert code == 1
    assert (f"{first}: position 0: abc.log: not a log segment name (expected 20 digits and .log; replay refuses the "
            "directory)") in problems(out)
    assert main(["replay", str(logdir), "--no-verify"]) == 2
    assert "abc.log: not a log segment name" in capsys.readouterr().err
    # a segment named on its own is checked as a file: its neighbours are not its problems
    code, out = verify(capsys, first)
    assert code == 0 and "abc.log" not in out


def test_a_removed_segment_leaves_a_gap_between_segments(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    segs = segments(logdir)
    assert len(segs) >= 3
    segs[1].unlink()
    code, out = verify(capsys, logdir)
    assert code == 1
    base = int(segs[2].stem)
    assert any(p.startswith(f"{segs[2]}: batch at offset {base} (position 0): the segment starts at offset {base}, "
                            f"but {segs[0].name} ends at") and "are missing" in p for p in problems(out)), out


def test_a_lower_epoch_across_segments_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    last = segments(logdir)[-1]
    edit(last, lambda d: damage.set_epoch(d, 0, 0))
    code, out = verify(capsys, logdir)
    assert code == 1
    assert any(p.startswith(f"{last}: batch at offset {int(last.stem)} (position 0): leader epoch 0 is lower than epoch")
               for p in problems(out)), out


def test_an_epoch_rise_outside_a_leader_change_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A new KRaft leader's first append is its LeaderChange control batch: an epoch rises
    only there. A flipped high bit in the last batch's epoch never makes the epochs fall."""
    last = segments(logdir)[-1]
    n = len(damage.slices(last.read_bytes()))
    edit(last, lambda d: damage.set_epoch(d, n - 1, 3 | 1 << 20))
    code, out = verify(capsys, logdir)
    assert code == 1
    assert any(p.startswith(f"{last}: batch at offset ") and
               f"leader epoch rises from 3 to {3 | 1 << 20} at a batch that is not a LeaderChange control batch" in p
               for p in problems(out)), problems(out)


def test_a_checkpoint_behind_the_log_is_not_a_problem(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka may write leader-epoch-checkpoint after the batches: one lacking the last epoch
    is what a crash can leave, not damage."""
    checkpoint = logdir / "leader-epoch-checkpoint"
    lines = checkpoint.read_text().splitlines()
    checkpoint.write_text("\n".join(["0", str(int(lines[1]) - 1), *lines[2:-1]]) + "\n")
    code, out = verify(capsys, logdir)
    assert code == 0, problems(out)


def test_epochs_that_disagree_with_the_checkpoint_are_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = segments(logdir)[0]
    edit(first, lambda d: damage.set_epoch(d, 0, 0))  # 1 -> 0 on the very first batch: no decrease follows
    code, out = verify(capsys, logdir)
    assert code == 1
    assert any(p.startswith(f"{first}: batch at offset 0 (position 0): the batches start epochs at 0@0, 1@1")
               and "but leader-epoch-checkpoint says 1@0" in p for p in problems(out)), out


def test_a_snapshot_renamed_to_another_epoch_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = snapshot(logdir)
    end = int(snap.name[:20])
    renamed = logdir / f"{end:020d}-0000000003.checkpoint"
    snap.rename(renamed)
    code, out = verify(capsys, logdir)
    assert code == 1
    found = [p for p in problems(out) if p.startswith(f"{renamed}:")]
    assert any("batch(es) carry epoch 2, but the file name says epoch 3" in p for p in found), found
    assert any(f"the name says epoch 3, but the log's batch holding offset {end - 1} has epoch 2" in p for p in found)


def test_a_snapshot_renamed_inside_a_log_batch_is_reported(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = snapshot(logdir)
    end = int(snap.name[:20])
    renamed = logdir / f"{end - 1:020d}-0000000002.checkpoint"  # the batch before the snapshot holds 2 or 3 records
    snap.rename(renamed)
    code, out = verify(capsys, logdir)
    assert code == 1
    assert any(p.startswith(f"{renamed}:") and "(snapshots end where a committed batch ends)" in p
               for p in problems(out)), out


@pytest.mark.parametrize("cut", ["empty", "before footer", "inside footer"])
def test_incomplete_checkpoints_are_errors(logdir: Path, capsys: pytest.CaptureFixture[str], cut: str) -> None:
    snap = snapshot(logdir)
    data = snap.read_bytes()
    footer = damage.slices(data)[-1]
    size = {"empty": 0, "before footer": footer.position, "inside footer": footer.position + 30}[cut]
    edit(snap, lambda d: d[:size])
    code, out = verify(capsys, snap)
    assert code == 1, out
    if cut == "empty":
        assert f"{snap}: position 0: empty file: a snapshot holds at least a header batch and a footer batch" in problems(out)
    else:
        assert any(p.startswith(f"{snap}: ") and f"position {size}" in p
                   and "no snapshot footer at the end of the file: the snapshot is incomplete" in p
                   for p in problems(out)), out


def test_a_checkpoint_without_its_header_is_an_error(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = snapshot(logdir)
    edit(snap, lambda d: damage.remove_batch(d, 0))
    code, out = verify(capsys, snap)
    assert code == 1
    assert any("First control record is not a snapshot header" in p or "First batch is not a control batch" in p
               for p in problems(out)), out
    assert any("a snapshot's offsets start at 0" in p for p in problems(out))


def test_every_problem_is_listed(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seg = segments(logdir)[0]
    edit(seg, lambda d: damage.duplicate_batch(damage.set_last_offset_delta(d, 6, 9), 2))
    code, out = verify(capsys, logdir)
    assert code == 1
    found = problems(out)
    assert any("is not after the previous batch" in p for p in found)
    assert any("does not match its count of" in p for p in found)


# ------------------------------------------------------------------------------ real Kafka files


needs_oracle = pytest.mark.skipif(not SMALL_LOG.is_file(), reason="../shared/oracle is not present")


@needs_oracle
@pytest.mark.parametrize("change, expected", [
    (lambda d: damage.duplicate_batch(d, 10), "is not after the previous batch"),
    (lambda d: damage.swap_batches(d, 10), "leaves a gap"),
    (lambda d: damage.remove_batch(d, 10), "are missing"),
    (lambda d: damage.set_last_offset_delta(d, 10, 3), "does not match its count of"),
])
def test_damaged_copies_of_a_kafka_log_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     change: Callable[[bytes], bytes], expected: str) -> None:
    copy = tmp_path / SMALL_LOG.name
    copy.write_bytes(change(SMALL_LOG.read_bytes()))
    code, out = verify(capsys, copy)
    assert code == 1
    assert any(expected in p for p in problems(out)), out


@needs_oracle
def test_a_footless_kafka_snapshot_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = SNAPSHOT.read_bytes()
    copy = tmp_path / SNAPSHOT.name
    copy.write_bytes(data[:damage.slices(data)[-1].position])
    code, out = verify(capsys, copy)
    assert code == 1
    assert any("no snapshot footer" in p for p in problems(out)), out


def test_a_snapshot_renamed_to_another_end_offset_of_its_epoch_is_reported(
        logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same epoch, at a batch's end: every name check passes; only the log replayed to the
    new end offset shows the snapshot holds another state."""
    snap = snapshot(logdir)
    end = int(snap.name[:20])
    ends = [fb.batch.last_offset + 1 for fb in iter_segment_batches(logdir)
            if fb.batch.partition_leader_epoch == 2 and fb.batch.last_offset + 1 < end]
    renamed = logdir / f"{ends[-1]:020d}-0000000002.checkpoint"
    snap.rename(renamed)
    code, out = verify(capsys, logdir)
    assert code == 1
    found = [p for p in problems(out) if p.startswith(f"{renamed}:")]
    assert any(f"its image is not the log's replayed to offset {ends[-1]} (first differences: " in p for p in found), out
    assert all(not p.startswith(f"{s}:") for s in segments(logdir) for p in problems(out))  # the log is fine


def test_batches_in_an_epoch_quorum_state_has_not_reached_are_reported(
        logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_quorum_state(logdir, QuorumState(leader_id=1, leader_epoch=2, current_voters=(1,)), fsync=False)
    code, out = verify(capsys, logdir)
    assert code == 1
    first3 = next(fb for fb in iter_segment_batches(logdir) if fb.batch.partition_leader_epoch == 3)
    assert any(f"batch at offset {first3.batch.base_offset} (position " in p
               and "leader epoch 3 is above epoch 2, the latest quorum-state records" in p for p in problems(out)), out


def test_a_simulated_cluster_with_crashes_and_a_partition_verifies(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The simulator writes quorum-state as a node moves to an epoch (no batch above it),
    and its snapshots agree with the log: log verify finds nothing in any node."""
    c = str(tmp_path / "c")
    steps = [["create", c, "--controllers", "3", "--brokers", "1", "--release", "3.9", "--engine", "events"],
             ["run", c, "--ms", "5000"], ["crash", c, "--nodes", "1"], ["run", c, "--ms", "8000"],
             ["start", c, "--nodes", "1"], ["partition", c, "--group", "1,2"], ["run", c, "--ms", "8000"],
             ["heal", c], ["crash", c, "--nodes", "2,3"], ["run", c, "--ms", "3000"],
             ["start", c, "--nodes", "2,3"], ["run", c, "--ms", "10000"]]
    for step in steps:
        assert main(["cluster", *step]) == 0, step
    capsys.readouterr()
    dirs = sorted((tmp_path / "c").rglob("__cluster_metadata-0"))
    assert len(dirs) == 4 and sum((d / "quorum-state").is_file() for d in dirs) >= 3  # the controllers' at least
    code, out = verify(capsys, *dirs)
    assert code == 0, problems(out)
