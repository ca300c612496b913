"""Opening a log tells a torn tail (recovery, as Kafka cuts it) from damage (everything else).

Each case damages a copy of a kraftsim-written directory, opens it read-only and checks
what `MetadataLog.damage()` and `torn_tail()` say, and that nothing on disk changed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from kraftsim.errors import LogFileError
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.snapshot import read_snapshot
from tests.reliability import damage


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return damage.build_log_dir(tmp_path_factory.mktemp("pristine"))


@pytest.fixture()
def logdir(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / pristine.name))


def edit(path: Path, change: Callable[[bytes], bytes]) -> None:
    path.chmod(0o644)
    path.write_bytes(change(path.read_bytes()))


def open_read_only(d: Path) -> MetadataLog:
    return MetadataLog.open(d, read_only=True, validate="all")


def test_the_pristine_log_has_neither(pristine: Path) -> None:
    with open_read_only(pristine) as log:
        assert log.damage() == [] and log.torn_tail() is None


@pytest.mark.parametrize("keep", [1, 11, 12, 30])
def test_a_torn_last_batch_is_recovery_not_damage(logdir: Path, keep: int) -> None:
    last = sorted(logdir.glob("*.log"))[-1]
    tail = damage.slices(last.read_bytes())[-1]
    edit(last, lambda d: d[:tail.position + keep])
    before = last.read_bytes()
    with open_read_only(logdir) as log:
        assert log.damage() == []
        torn = log.torn_tail()
        assert torn is not None and torn.position == tail.position and not torn.applied
        assert torn.base_offset == (tail.base_offset if keep >= 8 else None)
        assert log.log_end_offset == tail.base_offset
    assert last.read_bytes() == before


@pytest.mark.parametrize("segment, change, reason", [
    (-1, lambda d: damage.duplicate_batch(d, 2), "below the expected next offset"),
    (-1, lambda d: damage.swap_batches(d, 2), "below the expected next offset"),
    (-1, lambda d: damage.set_last_offset_delta(d, len(damage.slices(d)) - 1, 7), "does not match its count"),
    (-1, lambda d: damage.set_epoch(d, 4, 0), "leader epoch 0 is lower than"),
    (0, lambda d: damage.flip_bit_at(d, damage.slices(d)[3].position + 40), "Record is corrupt"),
    (0, lambda d: damage.set_length(d, 3, 5), ""),
])
def test_a_bad_whole_batch_is_damage_at_its_offset(logdir: Path, segment: int, change: Callable[[bytes], bytes],
                                                   reason: str) -> None:
    seg = sorted(logdir.glob("*.log"))[segment]
    edit(seg, change)
    before = {p.name: p.read_bytes() for p in logdir.iterdir()}
    with open_read_only(logdir) as log:
        found = log.damage()
        assert found, [a.describe() for a in log.recovery]
        assert found[0].where.startswith(str(seg)) and reason in found[0].reason
        assert found[0].offset <= log.log_end_offset
        assert log.torn_tail() is None
    assert {p.name: p.read_bytes() for p in logdir.iterdir()} == before


def test_a_removed_batch_is_a_gap(logdir: Path) -> None:
    seg = sorted(logdir.glob("*.log"))[0]
    removed = damage.slices(seg.read_bytes())[5]
    edit(seg, lambda d: damage.remove_batch(d, 5))
    with open_read_only(logdir) as log:
        (gap,) = log.damage()
        assert gap.offset == removed.base_offset and "are missing" in gap.reason


def test_a_snapshot_with_a_repeated_batch_is_refused(logdir: Path) -> None:
    snap = next(logdir.glob("*.checkpoint"))
    edit(snap, lambda d: damage.duplicate_batch(d, 1))
    with pytest.raises(LogFileError, match="a snapshot's offsets run from 0 without gap or overlap"):
        read_snapshot(snap)
