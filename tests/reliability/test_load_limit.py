"""Kafka's rule for loads (storage.damage): a torn tail is recovery, everything else damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.storage.damage import DamagedLog, load_limit, segment_batches
from kraftsim.storage.log import MetadataLog
from tests.reliability import damage


@pytest.fixture()
def logdir(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return damage.build_log_dir(tmp_path)


def edit_last_segment(d: Path, change) -> Path:
    seg = sorted(d.glob("*.log"))[-1]
    seg.chmod(0o644)
    seg.write_bytes(change(seg.read_bytes()))
    return seg


def test_a_whole_log_has_no_limit(logdir: Path) -> None:
    with MetadataLog.open(logdir, read_only=True, validate="all") as log:
        limit = load_limit(log, up_to_damage=False)
    assert (limit.upto, limit.torn_tail, limit.partial, limit.recovery_line(), limit.partial_line()) == \
        (None, None, False, None, None)


def test_a_torn_tail_is_one_line_of_recovery_with_its_offset(logdir: Path) -> None:
    seg = sorted(logdir.glob("*.log"))[-1]
    last = damage.slices(seg.read_bytes())[-1]
    edit_last_segment(logdir, lambda b: b[:last.position + 20])
    with MetadataLog.open(logdir, read_only=True, validate="all") as log:
        limit = load_limit(log, up_to_damage=False)
    assert limit.upto is None and not limit.partial
    line = limit.recovery_line()
    assert line is not None and "\n" not in line
    assert line.startswith(f"recovery: {seg}: the torn last batch at offset {last.base_offset} (20 byte(s) at "
                           f"position {last.position}) is left out, as Kafka's recovery cuts it")


def test_damage_is_an_error_or_with_up_to_damage_a_labelled_partial_limit(logdir: Path) -> None:
    seg = edit_last_segment(logdir, lambda b: damage.flip_bit_at(b, damage.slices(b)[4].position + 30))
    bad = damage.slices(seg.read_bytes())[4]
    with MetadataLog.open(logdir, read_only=True, validate="all") as log:
        with pytest.raises(DamagedLog) as e:
            load_limit(log, up_to_damage=False)
        limit = load_limit(log, up_to_damage=True)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"{seg} position {bad.position}: Record is corrupt (stored crc = ")
    assert f"(the log cannot be trusted from offset {bad.base_offset})" in str(e.value)
    assert "--up-to-damage" in str(e.value)
    assert limit.upto == bad.base_offset and limit.partial
    assert limit.partial_line().startswith(f"PARTIAL: loaded the offsets below {bad.base_offset} only (--up-to-damage)")


def test_a_lone_segment_follows_the_same_rule(logdir: Path) -> None:
    seg = sorted(logdir.glob("*.log"))[0]
    data = seg.read_bytes()
    pieces = damage.slices(data)
    seg.chmod(0o644)
    seg.write_bytes(data[:-5])
    batches, limit, size = segment_batches(seg, up_to_damage=False)
    assert len(batches) == len(pieces) - 1 and limit.torn_tail is not None and not limit.partial
    assert size == len(data) - 5 and limit.torn_tail.bytes_cut == len(data) - 5 - pieces[-1].position
    seg.write_bytes(damage.remove_batch(data, 3))
    with pytest.raises(DamagedLog, match=f"offsets {pieces[3].base_offset}..{pieces[4].base_offset - 1} are missing"):
        segment_batches(seg, up_to_damage=False)
    batches, limit, _ = segment_batches(seg, up_to_damage=True)
    assert limit.upto == pieces[3].base_offset


def test_damage_beyond_the_requested_offset_does_not_concern_the_load(logdir: Path) -> None:
    seg = edit_last_segment(logdir, lambda b: damage.flip_bit_at(b, damage.slices(b)[4].position + 30))
    bad = damage.slices(seg.read_bytes())[4]
    with MetadataLog.open(logdir, read_only=True, validate="all") as log:
        assert load_limit(log, up_to_damage=False, upto=bad.base_offset) == load_limit(
            log, up_to_damage=True, upto=bad.base_offset)
        assert not load_limit(log, up_to_damage=False, upto=bad.base_offset).partial
        with pytest.raises(DamagedLog):
            load_limit(log, up_to_damage=False, upto=bad.base_offset + 1)
