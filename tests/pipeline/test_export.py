"""`kraftsim export`: Parquet whose record rows are `kraftsim log dump --json`, record for record.

- Every oracle set exported gives, row by row, exactly the objects `log dump --json` prints
  for the same path, with the key columns agreeing with the JSON; pyarrow reads it back
  with the versioned schema, and Spark reads the same values.
- Export streams: with small row groups its peak memory is a small fraction of holding
  all rows, and row groups stay bounded.
- A damaged file is refused, or with --up-to-damage exported up to the damage and labelled\n  partial; a torn last batch is left out as Kafka's recovery does, and said.
- image_entities: one row per entity of the image at the end of each state.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kraftsim.image import load_path
from kraftsim.pipeline.export import export_parquet
from kraftsim.pipeline.jobs import normalize
from kraftsim.pipeline.records import dump_object
from kraftsim.pipeline.schemas import check_schema, identify
from kraftsim.protocol.batch import BatchSlice, split_batches
from tests.conftest import ORACLE
from tests.pipeline.conftest import run_cli

SETS = sorted(p.name for p in ORACLE.iterdir() if p.is_dir()) if ORACLE.is_dir() else []
needs_oracle = pytest.mark.skipif(not SETS, reason="../shared/oracle is not present")


def dump_json(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, list[dict], str]:
    """`log dump --json` rows without the `file` field it adds on a directory (the export's
    rows carry the record, not where it was read from)."""
    code = run_cli(["log", "dump", "--json", str(path)])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    for row in rows:
        row.pop("file", None)
    return code, rows, err


def export(capsys: pytest.CaptureFixture[str], path: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    code = run_cli(["export", str(path), "-o", str(out), *extra])
    o, e = capsys.readouterr()
    return code, o, e


@needs_oracle
@pytest.mark.parametrize("name", SETS)
def test_export_rows_are_the_dump_json(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ORACLE / name
    out = tmp_path / "records.parquet"
    code, stdout, err = export(capsys, path, out)
    assert code == 0, err
    table = pq.read_table(out)
    check_schema(table.schema, "records", where=str(out))
    rows = table.to_pylist()
    code, dumped, _ = dump_json(capsys, path)
    assert code == 0
    assert f"wrote {len(dumped)} records" in stdout
    assert [dump_object(r) for r in rows] == dumped
    for row, obj in zip(rows, dumped):  # the flattened keys say what the JSON says
        data = obj["data"]
        if obj["type"] == "FEATURE_LEVEL_RECORD":
            assert (row["feature_name"], row["feature_level"]) == (data["name"], data["featureLevel"])
        elif obj["type"] == "TOPIC_RECORD":
            assert (row["topic_name"], row["topic_id"]) == (data["name"], data["topicId"])
        elif obj["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            assert (row["topic_id"], row["partition_id"]) == (data["topicId"], data["partitionId"])
        elif obj["type"] == "CONFIG_RECORD":
            assert (row["config_resource_type"], row["config_resource_name"]) == (data["resourceType"],
                                                                                 data["resourceName"])
        if "brokerId" in data and not obj["control"]:
            assert row["broker_id"] == data["brokerId"]
        if obj["control"]:
            assert row["feature_name"] is row["broker_id"] is row["topic_id"] is None
    sources = {r["source"] for r in rows}
    assert all(Path(s).is_relative_to(path) for s in sources)
    assert all(r["encoded_size"] > 0 for r in rows)


@needs_oracle
def test_spark_reads_the_export(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ORACLE / "kafka-4.1_dkoh12"
    out = tmp_path / "records.parquet"
    assert export(capsys, path, out)[0] == 0
    frame = spark.read.parquet(str(out))
    types = dict(frame.dtypes)
    assert (types["offset"], types["version"], types["config_resource_type"], types["control"]) == \
           ("bigint", "smallint", "tinyint", "boolean")
    from_spark = normalize(frame.orderBy("source", "offset").toArrow(), "records").to_pylist()
    from_arrow = pq.read_table(out).to_pylist()
    assert sorted(from_spark, key=lambda r: (r["source"], r["offset"])) == \
           sorted(from_arrow, key=lambda r: (r["source"], r["offset"]))
    assert frame.where("type = 'FEATURE_LEVEL_RECORD' and feature_name = 'metadata.version'") \
                .select("feature_level").distinct().collect()[0][0] == 27


@needs_oracle
def test_export_streams_in_bounded_memory(tmp_path: Path) -> None:
    log = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0" / "00000000000000000000.log"

    def peak(batch_rows: int) -> tuple[int, pq.ParquetFile]:
        out = tmp_path / f"r{batch_rows}.parquet"
        tracemalloc.start()
        try:
            export_parquet([log], out, batch_rows=batch_rows)
            return tracemalloc.get_traced_memory()[1], pq.ParquetFile(out)
        finally:
            tracemalloc.stop()

    small, f_small = peak(500)
    whole, f_whole = peak(10**9)
    assert f_small.metadata.num_rows == f_whole.metadata.num_rows > 10_000
    assert f_whole.metadata.num_row_groups == 1
    groups = [f_small.metadata.row_group(i).num_rows for i in range(f_small.metadata.num_row_groups)]
    assert max(groups) < 500 + 2000  # a batch's worth of rows beyond the limit at most
    assert small * 5 < whole, (small, whole)


def _damage_middle_batch(src: Path, dst: Path) -> int:
    data = bytearray(src.read_bytes())
    pieces = [p for p in split_batches(bytes(data)) if isinstance(p, BatchSlice)]
    victim = pieces[len(pieces) // 2]
    data[victim.position + 17] ^= 0xFF  # inside the CRC field (after offset 8, length 4, epoch 4, magic 1)
    dst.write_bytes(bytes(data))
    return victim.base_offset


@needs_oracle
def test_a_damaged_file_is_refused_or_exported_up_to_the_damage(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    src = ORACLE / "kafka-3.5.1_bitnami_pmatuan" / "__cluster_metadata-0" / "00000000000000000000.log"
    bad_dir = tmp_path / "__cluster_metadata-0"
    bad_dir.mkdir()
    bad = bad_dir / src.name
    base = _damage_middle_batch(src, bad)
    out = tmp_path / "records.parquet"
    code, _, err = export(capsys, bad, out)
    assert code == 1
    assert err.startswith(f"kraftsim: error: {bad} position ") and "--up-to-damage" in err
    assert f"(the log cannot be trusted from offset {base})" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "records.parquet.part").exists()

    code, stdout, err = export(capsys, bad, out, "--up-to-damage")
    assert code == 1
    assert f"kraftsim: PARTIAL: exported the records of {bad} below offset {base} only (--up-to-damage); damage from there on: " in err
    assert "(PARTIAL: see above)" in stdout
    _, dumped, _ = dump_json(capsys, bad)
    rows = pq.read_table(out).to_pylist()
    assert [dump_object(r) for r in rows] == [d for d in dumped if d["offset"] < base]


@needs_oracle
def test_a_torn_tail_is_left_out_as_recovery(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = ORACLE / "kafka-3.5.1_bitnami_pmatuan" / "__cluster_metadata-0" / "00000000000000000000.log"
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    data = src.read_bytes()
    last = [p for p in split_batches(data) if isinstance(p, BatchSlice)][-1]
    (d / src.name).write_bytes(data[:last.position + 30])
    out = tmp_path / "records.parquet"
    code, stdout, err = export(capsys, d, out)
    assert code == 0, err
    assert err.strip() == (f"kraftsim: recovery: {d / src.name}: the torn last batch at position {last.position} is "
                           "left out, as Kafka's recovery cuts it: torn batch: its length says "
                           f"{len(last.data)} bytes but only 30 remain")
    assert max(r["offset"] for r in pq.read_table(out).to_pylist()) == last.base_offset - 1


@needs_oracle
@pytest.mark.parametrize("field", ["magic", "base offset"])
def test_short_bytes_that_cannot_start_the_next_batch_are_damage_not_a_torn_tail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str) -> None:
    """Export judges a log's short last bytes as `replay` does: a torn write leaves the next
    batch's start (the next offset, magic 2); other bytes are damage, refused (exit 1)."""
    src = ORACLE / "kafka-3.5.1_bitnami_pmatuan" / "__cluster_metadata-0" / "00000000000000000000.log"
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    data = src.read_bytes()
    last = [p for p in split_batches(data) if isinstance(p, BatchSlice)][-1]
    tail = bytearray(data[last.position:last.position + 30])
    if field == "magic":
        tail[16] = 7
    else:
        tail[0:8] = (last.base_offset + 5).to_bytes(8, "big")
    (d / src.name).write_bytes(data[:last.position] + tail)
    out = tmp_path / "records.parquet"
    code, _, err = export(capsys, d, out)
    assert code == 1 and not out.exists()
    assert "not the start of a batch" in err and "--up-to-damage" in err and "recovery" not in err
    assert run_cli(["replay", str(d)]) == 2  # (replay calls it damage too)
    assert "not the start of a batch" in capsys.readouterr().err


def test_existing_output_is_kept_without_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "records.parquet"
    out.write_text("precious")
    (tmp_path / "in").mkdir()
    code = run_cli(["export", str(tmp_path / "in"), "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 1 and "already exists" in err
    assert out.read_text() == "precious"
    assert not (tmp_path / "records.parquet.part").exists()


def test_a_fifo_named_as_output_is_not_replaced_even_with_overwrite(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import stat

    from kraftsim.protocol.entries import encode_data_batch
    from kraftsim.storage import MetadataLog
    from kraftsim.storage.names import METADATA_DIR_NAME
    from tests.storage.conftest import config_payload

    with MetadataLog.open(tmp_path / "in" / METADATA_DIR_NAME, fsync=False) as log:
        log.append(encode_data_batch(0, [config_payload(10, name="k")], epoch=1, timestamp=0))
    out = tmp_path / "pipe"
    os.mkfifo(out)
    code = run_cli(["export", str(tmp_path / "in"), "-o", str(out), "--overwrite"])
    _, err = capsys.readouterr()
    assert code == 2 and "not a regular file" in err
    assert stat.S_ISFIFO(os.lstat(out).st_mode)


def test_a_folder_without_metadata_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code = run_cli(["export", str(tmp_path / "empty"), "-o", str(tmp_path / "x.parquet")])
    _, err = capsys.readouterr()
    assert code == 1 and "no metadata log directory, snapshot or bootstrap file below this folder" in err
    assert not (tmp_path / "x.parquet").exists()


@needs_oracle
def test_image_entities_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ORACLE / "kafka-4.1_dkoh12"
    out = tmp_path / "entities.parquet"
    code, stdout, err = export(capsys, path, out, "--table", "image_entities")
    assert code == 0, err
    table = pq.read_table(out)
    assert identify(table.schema) == ("image_entities", 1)
    rows = table.to_pylist()
    by_source: dict[str, list[dict]] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(r)
    log_dir = str(path / "__cluster_metadata-0")
    assert set(by_source) == {str(path / "bootstrap.checkpoint"), log_dir,
                              str(path / "__cluster_metadata-0" / "00000000000000007209-0000000001.checkpoint")}
    image = load_path(log_dir).image
    summary = image.summary()
    kinds: dict[str, int] = {}
    for r in by_source[log_dir]:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        assert json.loads(r["attributes"]) is not None
    assert kinds["topic"] == summary["topics"] and kinds["partition"] == summary["partitions"]
    assert kinds["broker"] == len(summary["brokers"]) and kinds["controller"] == len(summary["controllers"])
    assert kinds["config"] == summary["config resources"]
    assert kinds["feature"] == 1 + len(summary["features"])
    mv = [r for r in by_source[log_dir] if r["entity"] == "feature metadata.version"]
    assert mv[0]["feature_level"] == 27 and all(r["metadata_version"] == 27 for r in by_source[log_dir])
    part = next(r for r in by_source[log_dir] if r["kind"] == "partition")
    topic = image.topics.get_topic_by_name(part["topic_name"])
    assert str(topic.id) == part["topic_id"]
    assert json.loads(part["attributes"])["replicas"] == list(topic.partitions[part["partition_id"]].replicas)
    boot = by_source[str(path / "bootstrap.checkpoint")]
    assert {r["kind"] for r in boot} == {"feature"}
