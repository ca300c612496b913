"""`kraftsim cluster import` on bad input: exit 2 (1 for a damaged log), one line on stderr,
no traceback, nothing written; `--up-to-damage` imports the valid prefix, labelled partial."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kraftsim.cli.main import main
from kraftsim.image import load_path
from kraftsim.protocol.batch import BatchSlice, split_batches
from kraftsim.storage import METADATA_DIR_NAME, MetadataLog
from tests.image.helpers import REGISTRY, rec, uid
from tests.paths import ORACLE
from tests.sim.test_import import needs_oracle

SET = "kafka-3.6.0_jeongrae"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cluster", "import", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_refusal(code: int, err: str, expected_code: int, *words: str) -> None:
    assert code == expected_code
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "real"
    shutil.copytree(ORACLE / SET, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["cluster", "import", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "SOURCE [SOURCE ...] DIR" in out and "--up-to-damage" in out and "--voters" in out


def test_not_kafka_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hello")
    code, out, err = run(capsys, str(tmp_path / "notes"), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "notes")
    assert out == "" and not (tmp_path / "c").exists()
    code, _, err = run(capsys, str(tmp_path / "missing"), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "no such file or directory")


@needs_oracle
def test_non_empty_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "c"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    code, _, err = run(capsys, str(ORACLE / SET), str(target))
    _one_line_refusal(code, err, 2, "not an empty directory")
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


@needs_oracle
def test_a_target_inside_a_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The new cluster was written into the real log directory it was read from, where Kafka
    takes every folder for a partition's (and refuses to start on one it cannot parse)."""
    real = _copy(tmp_path)
    before = sorted(str(p.relative_to(real)) for p in real.rglob("*"))
    code, out, err = run(capsys, str(real), str(real / "sim"))
    _one_line_refusal(code, err, 2, f"DIR {real / 'sim'}: is or lies inside the input {real}")
    assert out == "" and sorted(str(p.relative_to(real)) for p in real.rglob("*")) == before


@needs_oracle
def test_damaged_log_stops_unless_up_to_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = _copy(tmp_path)
    seg = real / METADATA_DIR_NAME / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[100_000] ^= 0xFF
    seg.write_bytes(bytes(data))
    before = seg.read_bytes()
    with MetadataLog.open(seg.parent, read_only=True) as log:
        valid_end = log.log_end_offset
    code, out, err = run(capsys, str(real), str(tmp_path / "c"))
    _one_line_refusal(code, err, 1, f"offset {valid_end}", "corrupt", "--up-to-damage")
    assert not (tmp_path / "c").exists()
    code, out, err = run(capsys, "--up-to-damage", "--json", str(real), str(tmp_path / "c"))
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["partial"], summary["stopped_at_offset"], summary["end_offset"]) == (True, valid_end, valid_end)
    assert f"offset {valid_end}" in summary["damage"][0]
    assert seg.read_bytes() == before, "the source was repaired"
    node = load_path(tmp_path / "c" / "node-1" / METADATA_DIR_NAME)
    assert node.end_offset == valid_end and not node.recovery
    code, out, _ = run(capsys, "--up-to-damage", str(real), str(tmp_path / "d"))
    assert "PARTIAL" in out.splitlines()[0]


@needs_oracle
def test_unknown_advertised_range_needs_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = _copy(tmp_path)
    with MetadataLog.open(real / METADATA_DIR_NAME) as log:
        feature = REGISTRY["RegisterBrokerRecord"].nested["BrokerFeature"](
            name="metadata.version", min_supported_version=1, max_supported_version=99)
        log.append_records([rec("RegisterBrokerRecord", 1, broker_id=1, incarnation_id=uid(1), broker_epoch=9999,
                                features=[feature])], epoch=6, timestamp=1_700_000_000_000)
    code, _, err = run(capsys, str(real), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "metadata.version 1-99", "--release 1=R")
    assert not (tmp_path / "c").exists()
    code, out, err = run(capsys, "--release", "1=3.9", "--json", str(real), str(tmp_path / "c"))
    assert code == 0, err
    node = json.loads(out)["nodes"][0]
    assert (node["release"], node["release_from"]) == ("3.9.2", "given (--release 3.9.2)")


@needs_oracle
def test_bad_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--release", "9.9", str(ORACLE / SET), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "unknown release 9.9")
    code, _, err = run(capsys, "--release", "5=3.7", str(ORACLE / SET), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "no node 5")
    code, _, err = run(capsys, "--catalog", str(tmp_path / "none.toml"), str(ORACLE / SET), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "none.toml")
    code, _, err = run(capsys, "--voters", "a,b", str(ORACLE / SET), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "--voters")
    assert not (tmp_path / "c").exists()


@needs_oracle
def test_summary_and_determinism(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(ORACLE / SET), str(tmp_path / "a"))
    assert code == 0
    assert "node 1: broker+controller, release 3.6.2 -- inferred from its broker registration" in out
    run(capsys, str(ORACLE / SET), str(tmp_path / "b"))
    for name in ("cluster.json", "node-1/meta.properties", "node-1/__cluster_metadata-0/quorum-state"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@needs_oracle
@pytest.mark.parametrize("name", [f"{METADATA_DIR_NAME}/00000000000000000000.log", "bootstrap.checkpoint"])
def test_a_segment_or_bootstrap_alone_is_not_a_cluster(name: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(ORACLE / SET / name), str(tmp_path / "c"))
    _one_line_refusal(code, err, 2, "alone does not hold a cluster")
    assert not (tmp_path / "c").exists()


def _split_in_two(real: Path) -> tuple[Path, list[tuple[int, int]]]:
    """Cut the source's one segment into two at a batch in the middle (as Kafka rolls
    segments); returns the first segment and the (position, base offset) of its batches."""
    seg = real / METADATA_DIR_NAME / "00000000000000000000.log"
    data = seg.read_bytes()
    batches = [(s.position, s.base_offset) for s in split_batches(data) if isinstance(s, BatchSlice)]
    pos, base = batches[len(batches) // 2]
    seg.write_bytes(data[:pos])
    (seg.parent / f"{base:020d}.log").write_bytes(data[pos:])
    return seg, batches[:len(batches) // 2]


@needs_oracle
def test_damage_in_an_older_segment_stops_the_import_and_is_labelled_partial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka's recovery checks only the last segment; a bad batch in an older one must still stop
    the import (exit 1) or, with --up-to-damage, give a partial cluster that says where it stopped."""
    real = _copy(tmp_path)
    seg, first_half = _split_in_two(real)
    pos, bad_offset = first_half[-2]
    data = bytearray(seg.read_bytes())
    data[pos + 70] ^= 0xFF  # inside the records: the batch's CRC no longer matches
    seg.write_bytes(bytes(data))
    code, out, err = run(capsys, str(real), str(tmp_path / "c"))
    _one_line_refusal(code, err, 1, f"offset {bad_offset}", "--up-to-damage")
    assert not (tmp_path / "c").exists()
    code, out, err = run(capsys, "--up-to-damage", "--json", str(real), str(tmp_path / "c"))
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["partial"], summary["stopped_at_offset"], summary["end_offset"]) == (True, bad_offset, bad_offset)
    assert f"offset {bad_offset}" in summary["damage"][0]
    node = load_path(tmp_path / "c" / "node-1" / METADATA_DIR_NAME)
    assert node.end_offset == bad_offset and node.partial is None, "the copy still holds the damage"
    code, out, _ = run(capsys, "--up-to-damage", str(real), str(tmp_path / "d"))
    assert f"PARTIAL: stopped at offset {bad_offset}" in out.splitlines()[0]


@needs_oracle
def test_missing_offsets_stop_the_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = _copy(tmp_path)
    seg, first_half = _split_in_two(real)
    pos, gap_from = first_half[-1]
    seg.write_bytes(seg.read_bytes()[:pos])  # the last batch of the first segment is gone: a gap
    code, _, err = run(capsys, str(real), str(tmp_path / "c"))
    _one_line_refusal(code, err, 1, f"offsets {gap_from}..", "missing")
    code, out, err = run(capsys, "--up-to-damage", "--json", str(real), str(tmp_path / "c"))
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["partial"], summary["stopped_at_offset"]) == (True, gap_from)


@needs_oracle
def test_a_torn_last_batch_is_recovery_not_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of a running node's log may end in half a batch; Kafka's recovery cuts it, and so
    does the import, saying so in a note (the result is not partial)."""
    real = _copy(tmp_path)
    seg = real / METADATA_DIR_NAME / "00000000000000000000.log"
    last_pos, last_base = [(s.position, s.base_offset) for s in split_batches(seg.read_bytes())
                           if isinstance(s, BatchSlice)][-1]
    seg.write_bytes(seg.read_bytes()[:last_pos + 30])
    code, out, err = run(capsys, "--json", str(real), str(tmp_path / "c"))
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["partial"], summary["stopped_at_offset"], summary["end_offset"]) == (False, None, last_base)
    assert any("torn last batch" in n for n in summary["notes"])
