"""`kraftsim log verify` and `log dump` on real Kafka files and on damaged copies of them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_support import run
from kraftsim.protocol.batch import BatchSlice, split_batches
from tests.conftest import ORACLE, oracle_files

LOGS_AND_SNAPSHOTS = oracle_files("*.log", "*.checkpoint")
SMALL_LOG = ORACLE / "kafka-3.5.1_bitnami_pmatuan" / "__cluster_metadata-0" / "00000000000000000000.log"




@pytest.mark.skipif(not LOGS_AND_SNAPSHOTS, reason="../shared/oracle is not present")
def test_every_oracle_file_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    # Every file Kafka wrote verifies; the one file cut by hand out of a Kafka log (two batches,
    # base offset 1, in a segment named 0) is exactly what the log layer's checks refuse.
    code, out, _ = run(capsys, "log", "verify", str(ORACLE))
    assert code == 1, out[-2000:]
    n = len(LOGS_AND_SNAPSHOTS)
    assert f"verified {n} file(s): {n - 1} ok, 1 with problems" in out
    bad = [line for line in out.splitlines() if "PROBLEM(S)" in line]
    assert len(bad) == 1 and "/trimmed-two-batches-018f9bc/" in bad[0]
    assert "the segment's name says it starts at offset 0, but its first batch starts at 1" in out
    assert "offsets 5..33 are missing" in out


def test_dump_json_follows_the_contract(oracle_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = oracle_dir / "kafka-4.1_dkoh12" / "__cluster_metadata-0" / "00000000000000007209-0000000001.checkpoint"
    code, out, _ = run(capsys, "log", "dump", "--json", str(snapshot))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["offset"] for r in rows] == list(range(len(rows)))
    assert all(set(r) == {"offset", "epoch", "control", "type", "version", "data"} for r in rows)
    assert rows[0]["type"] == "SNAPSHOT_HEADER" and rows[0]["control"] is True
    assert rows[-1]["type"] == "SNAPSHOT_FOOTER"
    assert rows[1] == {"offset": 1, "epoch": 1, "control": False, "type": "FEATURE_LEVEL_RECORD", "version": 0,
                       "data": {"name": "metadata.version", "featureLevel": 27}}
    broker = next(r for r in rows if r["type"] == "REGISTER_BROKER_RECORD")
    assert broker["version"] == 3
    assert len(broker["data"]["incarnationId"]) == 22
    assert broker["data"]["rack"] is None  # nullable, untagged: present as null


def test_dump_json_of_a_directory_names_the_file_of_each_row(oracle_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    directory = oracle_dir / "kafka-4.1_dkoh12" / "__cluster_metadata-0"
    code, out, _ = run(capsys, "log", "dump", "--json", str(directory))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    files = [r["file"] for r in rows]
    assert all(set(r) == {"offset", "epoch", "control", "type", "version", "data", "file"} for r in rows)
    names = sorted({Path(f).name for f in files})
    assert "00000000000000000000.log" in names and "00000000000000007209-0000000001.checkpoint" in names
    assert all(Path(f).parent == directory for f in files)
    snapshot_rows = [r for r in rows if r["file"].endswith(".checkpoint")]
    assert snapshot_rows[0]["type"] == "SNAPSHOT_HEADER" and snapshot_rows[-1]["type"] == "SNAPSHOT_FOOTER"
    # Each file's rows come together, in the order the files are dumped.
    assert files == sorted(files, key=lambda f: files.index(f))


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def _slices(data: bytes) -> list[BatchSlice]:
    return [s for s in split_batches(data) if isinstance(s, BatchSlice)]


def test_verify_reports_every_bad_batch_not_only_the_first(oracle_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(SMALL_LOG, tmp_path)
    data = bytearray(path.read_bytes())
    slices = _slices(bytes(data))
    for s in (slices[1], slices[-2]):
        data[s.position + len(s.data) - 1] ^= 0xFF  # last byte of the batch: covered by the CRC
    path.write_bytes(bytes(data))
    code, out, _ = run(capsys, "log", "verify", str(path))
    assert code == 1
    assert out.count("PROBLEM: ") == 2
    assert f"batch at offset {slices[1].base_offset} (position {slices[1].position}): Record is corrupt (stored crc = " in out
    assert f"batch at offset {slices[-2].base_offset}" in out


def test_dump_of_a_torn_file_prints_the_valid_prefix_and_fails(oracle_dir: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(SMALL_LOG, tmp_path)
    data = path.read_bytes()
    last = _slices(data)[-1]
    path.write_bytes(data[: last.position + 20])
    code, out, err = run(capsys, "log", "dump", "--json", str(path))
    assert code == 1
    assert json.loads(out.splitlines()[-1])["offset"] == last.base_offset - 1
    assert f"batch at offset {last.base_offset} (position {last.position}): torn batch" in err
    assert "Traceback" not in err


def test_unknown_api_key_is_named(oracle_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kraftsim.protocol.batch import build_batch

    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch(0, [(None, b"\x01\x63\x00\x00")], epoch=1, timestamp=0))
    code, out, _ = run(capsys, "log", "verify", str(path))
    assert code == 1
    assert "record at offset 0: Unknown metadata id 99" in out


def test_missing_path_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "log", "verify", str(tmp_path / "nope.log"))
    assert code == 2  # invalid input
    assert "nope.log" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["dump", "verify"])
def test_a_file_that_is_no_metadata_file_is_invalid_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          command: str) -> None:
    """As `replay` says of it: exit 2, not 1 (which the log tools keep for damage in the files read)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    code, out, err = run(capsys, "log", command, str(notes))
    assert code == 2 and out == ""
    assert err.strip() == f"kraftsim: error: {notes}: not a metadata file (expected a .log segment, a .checkpoint " \
                          "snapshot or bootstrap.checkpoint)"


def test_a_bad_release_or_schemas_folder_is_invalid_input_not_damage(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 is kept for damage in the files read; these were exit 1 and are now 2, as the
    same flags' mistakes are in `replay`."""
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    for argv, says in ((["log", "dump", str(segment), "--release", "9.9.9"], "Unknown release 9.9.9"),
                       (["log", "dump", "--schemas", str(tmp_path / "none"), str(segment)], "does not exist"),
                       (["log", "verify", "--schemas", str(tmp_path / "none"), str(segment)], "does not exist")):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), (argv, err)
        assert says in err and "Traceback" not in err


# A --schemas file: its head, then what one case adds. Each bad value used to be a traceback
# (exit 70) or, for the last ones, taken as it was.
_HEAD = 'name = "Y"\nkind = "metadata"\napi_key = 200\nversions = "0"\n'
_FIELD = '[[fields]]\nname = "A"\ntype = "int32"\nversions = "0+"\n'
BAD_SCHEMAS = [
    (_HEAD + '[[fields]]\nname = "A"\ntype = 5\nversions = "0+"\n', "field A: type: expected a string, got integer 5"),
    (_HEAD + 'fields = "x"\n', "fields: expected an array of tables ([[fields]]), got string 'x'"),
    (_HEAD.replace('"Y"', "5"), "name: expected a name: a letter, then letters and digits, got integer 5"),
    (_HEAD + _FIELD.replace('"A"', "7"), "field #1: name: expected a name: a letter, then letters and digits, got integer 7"),
    (_HEAD + _FIELD.replace('"A"', '"A; x"'), "field #1: name: expected a name"),
    (_HEAD + _FIELD.replace('"A"', '"Class"'), "field Class: name: 'class' is a Python keyword"),
    (_HEAD + _FIELD + _FIELD.replace('"A"', '"a"'), "record: duplicate field names A and a"),
    (_HEAD + "structs = 5\n", "structs: expected a table of struct tables ([structs.Name]), got integer 5"),
    (_HEAD + '[structs.S]\nversions = "0+"\ndoc = "x"\n', "struct S: unknown key(s) ['doc']"),
    (_HEAD.replace('"0"', "5"), "versions: expected a version range string ('N', 'N-M', 'N+' or 'none'), got integer 5"),
    (_HEAD.replace('"0"', '"0-99999"'), "versions: bad version range '0-99999': a version is at most 32767"),
    (_HEAD + 'flexible_versions = "0.5"\n', "flexible_versions: bad version range '0.5': expected 'N', 'N-M', 'N+'"),
    (_HEAD + _FIELD + 'tag = "x"\ntagged_versions = "0+"\n', "field A: tag: expected an integer from 0 to 2147483647"),
    (_HEAD + _FIELD + 'tag = -1\ntagged_versions = "0+"\n', "field A: tag: expected an integer from 0 to 2147483647"),
    (_HEAD + _FIELD + "tag = 0\ntagged_versions = '0+'\n" + _FIELD.replace('"A"', '"B"') + "tag = 0\ntagged_versions = '0+'\n",
     "field B: tag 0 is already the tag of A"),
    (_HEAD.replace("200", "99999999999999999999"), "api_key: expected an integer from 0 to 32767 (an int16 apiKey), "
                                                   "got integer 99999999999999999999"),
    (_HEAD.replace("200", "-1"), "api_key: expected an integer from 0 to 32767"),
    (_HEAD.replace("200", "9" * 5000), "not valid TOML: an integer of more than 4,300 digits: more than kraftsim reads"),
    ('name = "Y"\nkind = "control"\ncontrol_type = -5\nversions = "0"\n', "control_type: expected an integer from 0 to 32767"),
    ('name = "Y"\nkind = "control"\ncontrol_type = 9\nversions = "5-1"\n', "versions: bad version range '5-1': 5 > 1"),
    (_HEAD + _FIELD + 'default = "abc"\n', "field A: default: expected an int32, an integer from -2147483648 to "
                                             "2147483647, got string 'abc'"),
    (_HEAD + _FIELD + "default = true\n", "field A: default: expected an int32"),
    (_HEAD + _FIELD.replace("int32", "int8") + "default = 128\n", "field A: default: expected an int8, an integer from -128"),
    (_HEAD + _FIELD.replace("int32", "[]int32") + 'default = [1, "x"]\n', "field A: default[1]: expected an int32"),
    (_HEAD + _FIELD.replace("int32", "bool") + "default = 1\n", "field A: default: expected true or false, got integer 1"),
    (_HEAD + _FIELD.replace("int32", "uuid") + 'default = "x"\n', "field A: default: a uuid field takes no default"),
    (_HEAD + _FIELD + 'null_default = "false"\n', "field A: null_default: expected true or false, got string 'false'"),
    (_HEAD + _FIELD + "doc = 1\n", "field A: doc: expected a string, got integer 1"),
    (_HEAD + _FIELD.replace('"0+"', "0"), "field A: versions: expected a version range string"),
    (_HEAD + _FIELD.replace("int32", "S") + '[structs.S]\nversions = "2-1"\n', "struct S: versions: bad version range"),
]


@pytest.mark.parametrize("text, says", BAD_SCHEMAS)
def test_a_bad_schema_file_is_refused_naming_the_file_and_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   text: str, says: str) -> None:
    schemas = tmp_path / "hx"
    schemas.mkdir()
    (schemas / "a.toml").write_text(text)
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    code, out, err = run(capsys, "log", "dump", "--schemas", str(schemas), str(segment))
    assert (code, out) == (2, ""), err
    assert f"kraftsim: error: {schemas / 'a.toml'}: {says}" in err, err
    assert "Traceback" not in err and "internal error" not in err


def test_kafkas_version_ranges_and_typed_defaults_still_load(tmp_path: Path) -> None:
    from kraftsim.protocol.schema import MAX_VERSION, VersionRange, load_schema_file

    assert [VersionRange.parse(t) for t in ("0+", "1-3", "none", "2", " 4 ", "0-32767")] == [
        VersionRange(0, MAX_VERSION), VersionRange(1, 3), VersionRange.NONE, VersionRange(2, 2), VersionRange(4, 4),
        VersionRange(0, MAX_VERSION)]
    f = tmp_path / "a.toml"
    f.write_text(_HEAD + 'flexible_versions = "0+"\n' + _FIELD + "default = -2147483648\ntag = 0\ntagged_versions = '0+'\n"
                 + _FIELD.replace('"A"', '"timeoutMs"').replace("int32", "float64") + "default = 1.5\n"
                 + _FIELD.replace('"A"', '"B"').replace("int32", "[]string") + 'default = ["x"]\n'
                 + _FIELD.replace('"A"', '"C"').replace("int32", "[]S") + '[structs.S]\nversions = "0+"\n'
                 + '[[structs.S.fields]]\nname = "D"\ntype = "uint16"\nversions = "0+"\ndefault = 65535\n')
    schema = load_schema_file(f)
    assert [x.default_value() for x in schema.body.fields[:3]] == [-2147483648, 1.5, ["x"]]
    assert schema.body.fields[3].struct is not None and schema.body.fields[3].struct.fields[0].default == 65535


def test_a_schemas_path_that_is_not_a_folder_is_called_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (segment, fifo):
        code, _, err = run(capsys, "log", "dump", "--schemas", str(path), str(segment))
        assert code == 2 and f"schema directory {path} is not a directory" in err, err
        assert "does not exist" not in err


def test_a_schema_file_that_is_a_fifo_is_refused_before_it_is_opened(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Opening a FIFO waits for a writer: the dump used to hang there."""
    schemas = tmp_path / "hx"
    schemas.mkdir()
    os.mkfifo(schemas / "a.toml")
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    code, _, err = run(capsys, "log", "dump", "--schemas", str(schemas), str(segment))
    assert code == 2 and f"{schemas / 'a.toml'}: cannot read: not a regular file" in err, err
