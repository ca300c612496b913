"""`kraftsim replay`, run in-process on oracle sets and on damaged temp copies."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from tests.cli_support import run
from kraftsim.protocol.batch import split_batches
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE

pytestmark = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")

RJM = ORACLE / "cp-kafka-3.6_rjmfernandes"
GREEN = ORACLE / "cp-kafka-7.5.1_3voters_greenlemonT"




def test_text_summary_and_verification(capsys: pytest.CaptureFixture[str]) -> None:
    # as the release that wrote the set: it keeps every config (4.3 on drops removed ones)
    code, out, err = run(capsys, "replay", str(RJM), "--roundtrip", "all", "--release", "3.6")
    assert code == 0, err
    assert "loaded: snapshot 00000000000000014926-0000000001.checkpoint + log offsets 14926..17026" in out
    assert "  metadata.version: 14 (3.6-IV2)" in out
    assert ("  1: controlled shutdown, epoch 6, rack -, listeners PLAINTEXT_HOST://localhost:29092, "
            "PLAINTEXT://broker:9092, metadata.version 1-14 (3.0-IV1 to 3.6-IV2)") in out
    assert "topics (63, 151 partitions; 151 leaderless, 0 under-replicated)" in out
    assert "configs (55 resources, 375 keys)" in out
    assert "producer ids: next 1000" in out
    assert "    OK   snapshot + log after it = whole log (digest 612f0bbc1fb7147e)" in out
    assert "    OK   log up to 7752 = snapshot" in out
    assert "identical after a round trip through: 3.3-IV3" in out
    assert "FAIL" not in out
    assert err == ""  # no progress unless asked for (stderr is not a terminal here)


def test_json_at_an_offset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", str(RJM), "--at", "7752", "--json", "--roundtrip", "none")
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] is True and doc["replicas"] is None
    (r,) = doc["results"]
    assert r["load"]["snapshot"] == "00000000000000007752-0000000001.checkpoint"
    assert r["load"]["end_offset"] == 7752 and r["load"]["disk_end_offset"] == 17027
    assert r["summary"]["provenance"]["last_contained_offset"] == 7751
    assert r["summary"]["features"] == {"metadata.version": {"level": 14, "version": "3.6-IV2"}}
    assert r["summary"]["brokers"][0]["state"] == "unfenced"
    assert "roundtrip" not in r["verification"]
    assert r["verification"]["directory"]["ok"] is True
    assert len(r["verification"]["directory"]["snapshots"]) == 2


def test_snapshot_choice_none_and_by_id(capsys: pytest.CaptureFixture[str]) -> None:
    codes = []
    for choice in ("none", "7752-1", "00000000000000014926-0000000001.checkpoint"):
        code, out, _ = run(capsys, "replay", str(RJM), "--snapshot", choice, "--json", "--no-verify")
        codes.append(code)
        doc = json.loads(out)["results"][0]
        assert doc["summary"]["topics"]["partitions"] == 151
        assert "verification" not in doc
    assert codes == [0, 0, 0]


def test_replicas_through_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    replicas = [str(GREEN / f"kafka{i}") for i in (1, 2, 3)]
    code, out, _ = run(capsys, "replay", *replicas, "--json", "--roundtrip", "none")
    assert code == 0
    rep = json.loads(out)["replicas"]
    assert rep["ok"] is True and rep["common_end_offset"] == 30637
    assert rep["tails"] == [{"path": str(GREEN / "kafka1"), "start_offset": 30637, "end_offset": 30638,
                             "records": 1, "bytes": 106, "record_types": {"LEADER_CHANGE": 1}, "epochs": [190]}]
    code, out, _ = run(capsys, "replay", *(str(GREEN / f"kafka{i}") for i in (1, 2)), "--roundtrip", "none")
    assert (f"tail {GREEN / 'kafka1'}: offsets 30637..30637, 1 record(s), 106 bytes, epoch(s) 190: "
            "1 LEADER_CHANGE") in out


def test_default_round_trips_are_kafkas_lossless_downgrades(capsys: pytest.CaptureFixture[str]) -> None:
    snap = ORACLE / "kafka-4.2_induswargods" / "__cluster_metadata-0" / "00000000000000046533-0000000004.checkpoint"
    code, out, _ = run(capsys, "replay", str(snap), "--json")
    assert code == 0
    trips = json.loads(out)["results"][0]["verification"]["roundtrip"]["trips"]
    assert [t["target_level"] for t in trips] == [23, 24, 25, 26, 27, 28]
    assert all(t["outcome"] == "identical" and not t["catalog_lossy"] for t in trips)
    code, out, _ = run(capsys, "replay", str(RJM / "__cluster_metadata-0" / "00000000000000007752-0000000001.checkpoint"))
    assert "--   downgrade round trip: skipped, the catalog knows no lossless downgrade below 3.6-IV2" in out


def test_a_failed_verification_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = ORACLE / "cp-kafka-3.8_otus" / "__cluster_metadata-0"
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    shutil.copyfile(src / "00000000000000000000.log", d / "00000000000000000000.log")
    # A snapshot consistent in itself (name and batches say epoch 22; the epoch is outside the
    # CRC) that disagrees with the log: the load takes it, the verification fails.
    data = bytearray((src / "00000000000000008931-0000000023.checkpoint").read_bytes())
    for piece in split_batches(bytes(data)):
        struct.pack_into(">i", data, piece.position + 12, 22)
    (d / "00000000000000008931-0000000022.checkpoint").write_bytes(bytes(data))
    code, out, _ = run(capsys, "replay", str(d), "--roundtrip", "none")
    assert code == 1
    assert "FAIL snapshot epoch = epoch of the record at end offset - 1: 22 (log says 23)" in out


def test_snapshot_and_bootstrap_files(capsys: pytest.CaptureFixture[str]) -> None:
    snap = ORACLE / "kafka-4.1_dkoh12" / "__cluster_metadata-0" / "00000000000000007209-0000000001.checkpoint"
    code, out, _ = run(capsys, "replay", str(snap), "--json")
    assert code == 0
    r = json.loads(out)["results"][0]
    assert r["load"]["kind"] == "snapshot" and r["summary"]["features"]["eligible.leader.replicas.version"] == 1
    assert r["verification"]["roundtrip"]["ok"] is True and "directory" not in r["verification"]
    code, out, _ = run(capsys, "replay", str(ORACLE / "kafka-4.0_kurizma" / "bootstrap.checkpoint"), "--no-verify")
    assert code == 0
    assert "  metadata.version: 25 (4.0-IV3)" in out and "  group.version: 1" in out


@pytest.mark.parametrize("argv,expected", [
    (["replay", "/no/such/dir"], "kraftsim: error: /no/such/dir: no such file or directory"),
    (["replay", str(RJM), "--at", "999999"], "offset 999999 is beyond the end of the log (17027)"),
    (["replay", str(RJM), "--snapshot", "7752"], "--snapshot 7752: expected start, latest, none or OFFSET-EPOCH"),
    (["replay", str(RJM), "--snapshot", "7752-9"], "no snapshot 00000000000000007752-0000000009.checkpoint"),
    (["replay", str(RJM / "meta.properties")], "not a metadata file"),
    (["replay", str(ORACLE / "kafka-4.0_kurizma" / "bootstrap.checkpoint"), "--at", "5"],
     "a bootstrap file holds the state before the log begins (offset 0), not at 5"),
    (["replay", str(RJM), "--release", "9.9"], "Unknown release 9.9"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err and "Traceback" not in err


def test_a_negative_offset_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", str(RJM), "--at", "-3")
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("argument --at: expected an offset from 0 to 9223372036854775807, "
                                                 "got '-3'")


def test_an_unreadable_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "00000000000000000005-0000000001.checkpoint"
    bad.write_bytes(b"\x00" * 40)
    code, _, err = run(capsys, "replay", str(bad))
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


def test_a_replay_says_which_configs_it_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    """Replayed as the default (newest) release, a 3.6 set loses the topic configs Kafka
    removed, and says so: one line in the text, the counts by config in --json; as the
    release that wrote it, nothing is dropped and nothing is said."""
    code, out, _ = run(capsys, "replay", str(RJM), "--json", "--no-verify")
    assert code == 0
    dropped = json.loads(out)["results"][0]["load"]["configs_dropped"]
    assert dropped["release"] == default_catalog().release.name
    assert dropped["records"] == sum(dropped["configs"].values()) > 0
    assert "TOPIC message.timestamp.difference.max.ms" in dropped["configs"]
    code, out, _ = run(capsys, "replay", str(RJM), "--no-verify")
    (line,) = [x for x in out.splitlines() if "dropped" in x]
    assert line == (f"  replay as Kafka {dropped['release']} dropped {dropped['records']} ConfigRecords of "
                    f"{len(dropped['configs'])} config{'s' if len(dropped['configs']) > 1 else ''} its code does "
                    f"not define: {', '.join(dropped['configs'])}")
    code, out, _ = run(capsys, "replay", str(RJM), "--json", "--no-verify", "--release", "3.6")
    assert json.loads(out)["results"][0]["load"]["configs_dropped"] is None


def test_an_empty_segment_says_there_is_nothing_to_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An image with no metadata.version has no round trip to make: said in words, never 'from None'."""
    empty = tmp_path / "00000000000000000000.log"
    empty.touch()
    code, out, _ = run(capsys, "replay", str(empty))
    assert code == 0
    assert "None" not in out
    assert "--   downgrade round trip: skipped, the image has no finalized metadata.version" in out


def test_a_renamed_segment_with_a_corrupt_first_length_names_the_file(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A file renamed by hand (no offset in its name) whose first length field is below the minimum:
    the error names the file and position, like any other damage (before: the bare codec text)."""
    junk = tmp_path / "renamed.log"
    junk.write_bytes(struct.pack(">qi", 5, 3) + bytes(100))
    code, _, err = run(capsys, "replay", str(junk))
    assert code == 2
    assert err.startswith(f"kraftsim: error: {junk} position 0: Record batch is corrupt (the size 15 is smaller")
