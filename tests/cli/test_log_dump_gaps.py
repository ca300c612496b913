"""`kraftsim log dump` on segments whose offsets skip or that start after their name: dumped
with exit 0 and noted on stderr as each release's kafka-dump-log notes them (the expected
texts are what kafka-dump-log 3.7.2, 4.0.2, 4.2.0, 4.3.1 and 4.4.0 printed for the same kind
of file; tests/conformance runs the real tool). `log verify` still reports them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.cli.dump_gaps import OffsetGaps
from kraftsim.javacompat import compute_if_absent_order, scala_hash_map_order, string_hash
from tests.cli_support import run
from tests.reliability import damage


@pytest.fixture(scope="module")
def segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sorted(damage.build_log_dir(tmp_path_factory.mktemp("log")).glob("*.log"))[0]


def _copy(segment: Path, folder: Path, name: str, keep: list[int]) -> tuple[Path, list[damage.BatchSlice]]:
    pieces = damage.slices(segment.read_bytes())
    folder.mkdir()
    path = folder / name
    path.write_bytes(b"".join(pieces[i].data for i in keep))
    return path, [pieces[i] for i in keep]


def _last(piece: damage.BatchSlice) -> int:
    return piece.base_offset + damage.last_offset_delta(piece.data, 0)


def test_a_segment_that_skips_offsets_is_dumped_and_noted(segment: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    pieces = damage.slices(segment.read_bytes())
    path, kept = _copy(segment, tmp_path / "gaps", segment.name, [i for i in range(len(pieces)) if i not in (2, 4)])
    jumps = [(_last(pieces[1]), pieces[3].base_offset), (_last(pieces[3]), pieces[5].base_offset)]
    code, out, err = run(capsys, "log", "dump", str(path))
    assert code == 0
    assert out.count("baseOffset: ") == len(kept)
    assert err.splitlines() == [f"Non-consecutive offsets in {path}"] + [f"  {a} is followed by {b}" for a, b in jumps]
    code, _, old = run(capsys, "log", "dump", "--release", "4.2", str(path))  # the Scala tool: newest first
    assert code == 0 and old.splitlines()[1:] == [f"  {a} is followed by {b}" for a, b in reversed(jumps)]
    code, js, err_json = run(capsys, "log", "dump", "--json", str(path))
    assert code == 0 and err_json == err and all(json.loads(line) for line in js.splitlines())
    code, verified, _ = run(capsys, "log", "verify", str(path))
    assert code == 1 and "leaves a gap after the previous batch" in verified  # still a problem to verify


def test_a_segment_that_starts_after_its_name(segment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pieces = damage.slices(segment.read_bytes())
    path, kept = _copy(segment, tmp_path / "late", segment.name, list(range(3, len(pieces))))
    code, out, err = run(capsys, "log", "dump", str(path))
    assert code == 0 and out.splitlines()[1] == f"Log starting offset: {int(segment.stem)}"
    # Kafka 4.3 on counts from -1; Kafka up to 4.2 starts at the first record and says nothing
    assert err.splitlines() == [f"Non-consecutive offsets in {path}", f"  -1 is followed by {kept[0].base_offset}"]
    assert run(capsys, "log", "dump", "--release", "3.7", str(path))[1:] == (out, "")
    code, verified, _ = run(capsys, "log", "verify", str(path))
    assert code == 1 and "the segment's name says it starts at offset" in verified


def test_real_damage_is_still_an_error(segment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / segment.name
    bad.write_bytes(damage.flip_bit_at(segment.read_bytes(), 70))
    code, _, err = run(capsys, "log", "dump", str(bad))
    assert code == 1 and "kraftsim: error: " in err


def test_files_come_in_the_order_of_the_tools_hash_map() -> None:
    """As Kafka 4.3.1 printed them: files c, b, a gave c, a, b; and gaps, late, more-gaps (the
    first two in one bucket, which computeIfAbsent fills newest first) gave more-gaps, late, gaps."""
    names = [f"/tmp/op-gap/{d}/{n}" for d, n in (("c", "00000000000000000010.log"), ("b", "00000000000000000000.log"),
                                                 ("a", "00000000000000000000.log"))]
    assert compute_if_absent_order(names, string_hash) == [names[0], names[2], names[1]]
    base = "/tmp/kraftsim-conformance-4.3.1-76mgaucz/0005-dump-irregular/{}/00000000000000000000.log"
    gaps = OffsetGaps("java")
    for folder in ("gaps", "late", "more-gaps"):
        gaps.file(Path(base.format(folder)))([10, 11])
    assert [line for line in gaps.lines() if not line.startswith(" ")] == [
        f"Non-consecutive offsets in {base.format(f)}" for f in ("more-gaps", "late", "gaps")]
    # Scala's mutable.HashMap: the same buckets; within one, by hash rather than by insertion
    keys = [str(i) for i in range(40)]
    order = scala_hash_map_order(keys, string_hash)
    assert sorted(order) == sorted(keys) and order != keys
