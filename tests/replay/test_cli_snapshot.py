"""`kraftsim snapshot create` and `kraftsim snapshot diff`, in-process on oracle sets and temp copies."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_support import run
from kraftsim.storage import read_snapshot
from tests.conftest import ORACLE
from tests.replay.helpers import REGISTRY, record_multiset

pytestmark = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")

OTUS = ORACLE / "cp-kafka-3.8_otus"
OTUS_SNAP = OTUS / "__cluster_metadata-0" / "00000000000000008931-0000000023.checkpoint"
K42 = ORACLE / "kafka-4.2_induswargods"
K42_SNAP = K42 / "__cluster_metadata-0" / "00000000000000010744-0000000004.checkpoint"




def test_create_into_a_directory_writes_kafkas_name_and_records(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "snapshot", "create", str(OTUS), "--offset", "8931", "-o", str(tmp_path))
    assert code == 0, err
    written = tmp_path / OTUS_SNAP.name
    assert out.startswith(f"wrote {written}: snapshot {OTUS_SNAP.name}, ")
    assert "writer of Kafka 3.8.1 (the registered nodes advertise metadata.version up to 20), from the whole log" in out
    assert record_multiset(read_snapshot(written, REGISTRY).payloads()) == \
           record_multiset(read_snapshot(OTUS_SNAP, REGISTRY).payloads())
    # the same again refuses to overwrite
    code, _, err = run(capsys, "snapshot", "create", str(OTUS), "--offset", "8931", "-o", str(tmp_path))
    assert code == 2 and "already exists" in err


def test_create_to_a_file_name_and_release_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    three, four = tmp_path / "three.checkpoint", tmp_path / "four.checkpoint"
    assert run(capsys, "snapshot", "create", str(OTUS), "--offset", "8931", "-o", str(three))[0] == 0
    assert run(capsys, "snapshot", "create", str(OTUS), "--offset", "8931", "--release", "4.0", "-o", str(four))[0] == 0
    a = [p.record_type.name for p in read_snapshot(three, REGISTRY).payloads()]
    b = [p.record_type.name for p in read_snapshot(four, REGISTRY).payloads()]
    assert "ZkMigrationStateRecord" in a and "ZkMigrationStateRecord" not in b
    assert sorted(a) == sorted(b + ["ZkMigrationStateRecord"])
    assert not list(tmp_path.glob(".kraftsim-snapshot-*"))  # no staging leftovers
    # and the two hold the same image
    assert run(capsys, "snapshot", "diff", str(three), str(four))[0] == 0


@pytest.mark.parametrize("release", [[], ["--release", "3.4"]])
def test_create_at_a_version_only_older_releases_know(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       release: list[str]) -> None:
    # 3.3-IV2 (level 6) is a 3.4 writer's version, not a 4.x one: the writer's release decides
    log = ORACLE / "kafka-3.4_cooler-SAI"
    code, out, err = run(capsys, "snapshot", "create", str(log), "--offset", "20", "--metadata-version", "3.3-IV2",
                         *release, "-o", str(tmp_path))
    assert code == 0, err
    assert "at metadata.version 3.3-IV2, writer of Kafka 3.4" in out
    levels = [p.message.feature_level for p in read_snapshot(next(tmp_path.glob("*.checkpoint")), REGISTRY).payloads()
              if p.record_type.name == "FeatureLevelRecord" and p.message.name == "metadata.version"]
    assert levels == [6]
    code, out, err = run(capsys, "snapshot", "create", str(log), "--offset", "20", "--metadata-version", "3.3-IV2",
                         "--release", "4.0", "-o", str(tmp_path / "x.checkpoint"))
    assert code == 2 and "Unknown metadata.version '3.3-IV2'" in err and not (tmp_path / "x.checkpoint").exists()


def test_create_is_deterministic_and_time_ms_stamps_batches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two, stamped = tmp_path / "1.checkpoint", tmp_path / "2.checkpoint", tmp_path / "3.checkpoint"
    for out in (one, two):
        run(capsys, "snapshot", "create", str(K42), "--offset", "10744", "-o", str(out))
    assert one.read_bytes() == two.read_bytes()
    run(capsys, "snapshot", "create", str(K42), "--offset", "10744", "--time-ms", "1775476928088", "-o", str(stamped))
    s = read_snapshot(stamped, REGISTRY)
    assert set(s.batch_timestamps) == {1775476928088}
    assert s.last_contained_log_timestamp == read_snapshot(K42_SNAP, REGISTRY).last_contained_log_timestamp


def test_lossy_target_refused_with_kafkas_text_then_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "low.checkpoint"
    code, out, err = run(capsys, "snapshot", "create", str(K42), "--offset", "10744", "--metadata-version", "3.6-IV2",
                         "-o", str(out_file))
    assert code == 1 and out == "" and not out_file.exists()
    assert err.splitlines()[0] == ("Metadata has been lost because the following could not be represented in "
                                   "metadata.version 3.6-IV2: the online log directories of one or more brokers")
    code, out, err = run(capsys, "snapshot", "create", str(K42), "--offset", "10744", "--metadata-version", "14",
                         "--allow-loss", "-o", str(out_file))
    assert code == 0, err
    assert "lost at metadata.version 3.6-IV2 (3 item(s)):" in out
    for line in ("  broker log dirs: broker 1", "  controller registration: controller 1",
                 "  replica directory assignment: topic test-topic partition 0"):
        assert line in out
    names = [p.record_type.name for p in read_snapshot(out_file, REGISTRY).payloads()]
    assert "RegisterControllerRecord" not in names and names[0] == "FeatureLevelRecord"
    # the diff against the log's state names exactly what was dropped (and the version)
    code, out, _ = run(capsys, "snapshot", "diff", str(out_file), f"{K42}@10744")
    assert code == 1
    lines = out.splitlines()[2:]
    assert lines[0] == "feature metadata.version: 14 → 29"
    assert any(x.startswith("broker 1: directories [] → [") for x in lines)
    assert any(x.startswith("controller 1: added") for x in lines)
    assert any(x.startswith("topic test-topic partition 0: directories [AAAAAAAAAAAAAAAAAAAAAA] → [") for x in lines)
    assert len(lines) == 4


def test_create_refuses_unaligned_offsets_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = ORACLE / "kafka-3.4_cooler-SAI"
    from kraftsim.storage import MetadataLog
    with MetadataLog.open(d / "__cluster_metadata-0", read_only=True) as log:
        batch = next(fb.batch for fb in log.batches(0) if fb.batch.records_count > 1)
    inside = batch.base_offset + 1
    code, _, err = run(capsys, "snapshot", "create", str(d), "--offset", str(inside), "-o", str(tmp_path))
    assert code == 2
    assert (f"Cannot create snapshot at offset ({inside}) because it is not batch aligned. The batch containing the "
            f"requested offset has a base offset of ({batch.base_offset})") in err
    code, _, err = run(capsys, "snapshot", "create", str(d / "__cluster_metadata-0" / "00000000000000000000.log"),
                       "--offset", str(inside), "-o", str(tmp_path))
    assert code == 2 and f"Cannot create snapshot at offset ({inside}) because it is not batch aligned" in err
    code, out, _ = run(capsys, "snapshot", "create", str(d), "--offset", str(inside), "--allow-unaligned",
                       "-o", str(tmp_path))
    assert code == 0
    assert read_snapshot(next(tmp_path.glob("*.checkpoint")), REGISTRY).snapshot_id.end_offset == inside


def test_create_from_a_segment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    segment = OTUS / "__cluster_metadata-0" / "00000000000000000000.log"
    code, out, err = run(capsys, "snapshot", "create", str(segment), "--offset", "8931", "-o", str(tmp_path))
    assert code == 0, err
    assert out.rstrip().endswith("from segment 00000000000000000000.log")
    assert record_multiset(read_snapshot(tmp_path / OTUS_SNAP.name, REGISTRY).payloads()) == \
           record_multiset(read_snapshot(OTUS_SNAP, REGISTRY).payloads())


def test_create_from_a_snapshot_rewrites_it_at_another_version(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    snap = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0" / "00000000000000007752-0000000001.checkpoint"
    code, out, err = run(capsys, "snapshot", "create", str(snap), "--offset", "7752", "--metadata-version", "3.5-IV2",
                         "-o", str(tmp_path))
    assert code == 0, err
    written = read_snapshot(tmp_path / snap.name, REGISTRY)
    assert written.payloads()[0].message.feature_level == 11
    assert run(capsys, "snapshot", "diff", str(snap), str(tmp_path / snap.name))[1].splitlines()[2:] == \
           ["feature metadata.version: 14 → 11"]


def test_diff_json_and_identical(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "snapshot", "diff", str(OTUS_SNAP), f"{OTUS}@8931")
    assert (code, out) == (0, "")
    rjm = ORACLE / "cp-kafka-3.6_rjmfernandes"
    code, out, _ = run(capsys, "snapshot", "diff", f"{rjm}@7752", str(rjm), "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["identical"] is False and (doc["a_offset"], doc["b_offset"]) == (7752, 17027)
    first = doc["changes"][0]
    assert first == {"component": "cluster", "entity": "broker 1", "field": "fenced", "kind": "changed",
                     "old": False, "new": True, "text": "broker 1: fenced false → true"}


@pytest.mark.parametrize("argv,expected", [
    (["snapshot", "create", "/no/such", "--offset", "3", "-o", "/tmp"], "/no/such: no such file or directory"),
    (["snapshot", "create", str(OTUS), "--offset", "99999", "-o", "/tmp"], "greater than the end of the log (9074)"),
    (["snapshot", "create", str(OTUS), "--offset", "0", "-o", "/tmp"], "offset 0: a snapshot's end offset"),
    (["snapshot", "create", str(OTUS), "--offset", "8931", "--metadata-version", "9.9-IV9", "-o", "/tmp"],
     "Unknown metadata.version '9.9-IV9'"),
    (["snapshot", "create", str(OTUS), "--offset", "8931", "--release", "3.5", "-o", "/tmp"],
     "the snapshot writer of Kafka 3.5 cannot write metadata.version 20"),
    (["snapshot", "create", str(OTUS / "bootstrap.checkpoint"), "--offset", "1", "-o", "/tmp"],
     "a bootstrap file holds the state before the log begins"),
    (["snapshot", "create", str(OTUS), "--offset", "8931", "-o", "/no/such/dir/x.checkpoint"],
     "/no/such/dir: no such directory"),
    (["snapshot", "diff", str(OTUS_SNAP), "/no/such"], "/no/such: no such file or directory"),
    (["snapshot", "diff", str(OTUS_SNAP), f"{OTUS}@99999"], "offset 99999 is beyond the end of the log"),
    (["snapshot", "diff", f"{OTUS_SNAP}@3", str(OTUS)], "a snapshot holds the state at offset 8931 only, not 3"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err, err


@pytest.mark.parametrize("source", [OTUS, OTUS_SNAP], ids=["directory", "file"])
def test_create_to_a_missing_directory_with_a_trailing_separator_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: Path) -> None:
    # `-o newdir/` names a directory: it used to be written as a file named newdir
    out_dir = f"{tmp_path / 'newdir'}{os.sep}"
    code, out, err = run(capsys, "snapshot", "create", str(source), "--offset", "8931", "-o", out_dir)
    assert (code, out) == (2, "")
    assert err == f"kraftsim: error: {out_dir}: no such directory\n"
    assert list(tmp_path.iterdir()) == []
    # an existing directory so named still takes the snapshot under Kafka's name
    (tmp_path / "newdir").mkdir()
    code, out, err = run(capsys, "snapshot", "create", str(source), "--offset", "8931", "-o", out_dir)
    assert code == 0, err
    assert [p.name for p in (tmp_path / "newdir").iterdir()] == [OTUS_SNAP.name]


@pytest.mark.parametrize("output, says", [("newdir/", "no such directory"), ("nodir/x.checkpoint", "no such directory"),
                                          ("taken.checkpoint", "already exists; not overwriting it")])
def test_an_output_it_cannot_write_is_refused_before_a_directory_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, output: str,
        says: str) -> None:
    """A log directory as input was read whole (minutes for a large log) before the output was
    found unwritable; a file input was checked first. Both are now."""
    from kraftsim.cli import snapshot_cmd

    def read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the log was read")

    monkeypatch.setattr(snapshot_cmd, "snapshot_contents", read)
    (tmp_path / "taken.checkpoint").write_bytes(b"")
    out = f"{tmp_path}{os.sep}{output}"  # (as typed: a Path would drop the trailing separator)
    code, printed, err = run(capsys, "snapshot", "create", str(OTUS), "--offset", "8931", "-o", out)
    assert (code, printed) == (2, "") and says in err, err


def test_create_into_the_log_directory_itself_then_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    shutil.copyfile(OTUS / "__cluster_metadata-0" / "00000000000000000000.log", d / "00000000000000000000.log")
    for offset in ("500", "8931", "9074"):
        assert run(capsys, "snapshot", "create", str(d), "--offset", offset, "-o", str(d))[0] == 0
    code, out, _ = run(capsys, "replay", str(d), "--json", "--roundtrip", "none")
    assert code == 0
    v = json.loads(out)["results"][0]["verification"]["directory"]
    assert [s["snapshot"][:20] for s in v["snapshots"]] == ["00000000000000000500", "00000000000000008931",
                                                            "00000000000000009074"]
    assert all(s["ok"] for s in v["snapshots"])
