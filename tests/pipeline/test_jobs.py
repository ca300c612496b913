"""The three jobs on the embedded Spark session against the same work done in one process,
and each job's rows against facts computed here without the pipeline.

- corpus over the whole oracle: Spark's Parquet == the single-process rows; each file's
  counts are `log verify`'s, its feature levels are its FeatureLevelRecords', and each set
  has the metadata.version the oracle README gives.
- downgrade-matrix over the whole oracle: Spark == single process; every state meets every
  lower level the catalog knows; the catalog's judgement is is_lossy; losses of controller
  registrations appear exactly where the target cannot register controllers.
- snapshot-cost on a small grid: Spark == single process (timings and memory aside); bytes
  and records are those of the snapshot written directly.
- Output folders: a folder holding something else is never replaced without --overwrite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.image import image_digest, write_image
from kraftsim.image import load_path
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.pipeline.jobs import job_inputs, read_output, run_local, run_spark
from kraftsim.pipeline.snapshot_cost import parse_grid
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import verify_bytes
from kraftsim.storage import SnapshotId, iter_file_entries, write_snapshot
from kraftsim.versions import default_catalog
from tests.conftest import ORACLE
from tests.image.test_oracle import MV_OF_SET

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")
CATALOG = default_catalog()
TIMING = {"elapsed_s", "write_s", "load_s", "peak_memory_bytes"}
SMALL_GRID = ["topics=0,12", "partitions=1,4", "rf=2", "brokers=2,3", "mv=3.6-IV2,4.0-IV3"]


def _stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.fixture(scope="module")
def corpus(spark, tmp_path_factory):
    items = job_inputs("corpus", [ORACLE])
    out = tmp_path_factory.mktemp("corpus") / "out"
    run = run_spark(spark, "corpus", items, str(out), show_progress=False)
    return items, run, read_output(out, "corpus")


@pytest.fixture(scope="module")
def matrix(spark, tmp_path_factory):
    items = job_inputs("downgrade-matrix", [ORACLE])
    out = tmp_path_factory.mktemp("matrix") / "out"
    run = run_spark(spark, "downgrade-matrix", items, str(out), show_progress=False)
    return items, run, read_output(out, "downgrade-matrix")


@needs_oracle
def test_corpus_on_spark_equals_one_process(corpus) -> None:
    items, run, table = corpus
    _, local = run_local("corpus", items)
    assert table.to_pylist() == local.to_pylist()
    assert run.rows == len(items) == table.num_rows
    assert 1 < run.partitions <= len(items)
    sets = sorted(p.name for p in ORACLE.iterdir() if p.is_dir())
    assert [row["set"] for row in run.summary[:-1]] == sets and run.summary[-1]["set"] == "(all)"
    assert all(s in run.summary_text for s in sets)


@needs_oracle
def test_corpus_rows_say_what_the_files_hold(corpus) -> None:
    _, _, table = corpus
    registry = default_registry()
    mv_of_set: dict[str, set] = {}
    for row in table.to_pylist():
        path = ORACLE / row["path"]
        report = verify_bytes(path.read_bytes(), registry)
        if "/trimmed-two-batches-" in row["path"]:  # batches cut by hand out of a Kafka log: offsets 5..33 missing
            assert row["verdict"] == "problems" and not report.ok
            assert [p.cause for p in report.problems] == ["base offset 34 leaves a gap after the previous batch "
                                                           "(expected 5): offsets 5..33 are missing"]
        else:
            assert (row["verdict"], row["problems"]) == ("ok", []) and report.ok
        assert (row["records"], row["batches"], row["control_batches"], row["bytes"]) == \
               (report.records, report.batches, report.control_batches, path.stat().st_size)
        assert {t["type"]: t["records"] for t in row["record_types"]} == dict(report.by_type)
        assert sum(t["bytes"] for t in row["record_types"]) < row["bytes"]
        entries = list(iter_file_entries(path, registry))
        levels = {e.message.name: e.message.feature_level for e in entries
                  if not e.control and e.record_type.name == "FeatureLevelRecord"}
        assert {f["name"]: f["level"] for f in row["features"]} == levels
        partitions = sum(1 for e in entries if not e.control and e.record_type.name == "PartitionRecord")
        assert row["partitions"] == partitions
        if row["kind"] == "snapshot" and partitions:
            assert row["bytes_per_partition"] == pytest.approx(row["bytes"] / partitions)
        if row["kind"] == "segment":
            assert row["bytes_per_partition"] is None
        if row["metadata_version"] is not None:
            assert row["metadata_version_name"] == CATALOG.metadata_version(row["metadata_version"]).version
            mv_of_set.setdefault(row["set"], set()).add(row["metadata_version"])
    for name, levels in mv_of_set.items():
        assert levels == {MV_OF_SET[name]}, name


TRIMMED = "trimmed-two-batches-"


@needs_oracle
def test_downgrade_matrix_on_spark_equals_one_process(matrix) -> None:
    items, run, table = matrix
    _, local = run_local("downgrade-matrix", items)
    assert _stable(table.to_pylist()) == _stable(local.to_pylist())
    rows = table.to_pylist()
    assert {r["verdict"] for r in rows if TRIMMED not in r["state"]} == {"lossless", "lossy"}
    # batches cut by hand out of a Kafka log: a damaged log is not loaded, it is an error row
    assert [(r["verdict"], "offsets 0..0 are missing" in r["error"]) for r in rows if TRIMMED in r["state"]] == \
        [("error", True)]
    assert len(run.summary) == len({r["state"] for r in table.to_pylist()})


@needs_oracle
def test_downgrade_matrix_rows_follow_the_catalog(matrix) -> None:
    items, _, table = matrix
    rows = table.to_pylist()
    by_state: dict[str, list[dict]] = {}
    for r in rows:
        by_state.setdefault(r["state"], []).append(r)
    assert set(by_state) == {it["rel"] for it in items}  # every oracle state has a known MV >= 8
    by_state = {state: rs for state, rs in by_state.items() if TRIMMED not in state}  # an error row (above)
    known = [mv.level for mv in CATALOG.metadata_versions]
    for state, rs in by_state.items():
        source = rs[0]["source_mv"]
        assert sorted(r["target_mv"] for r in rs) == [lv for lv in known if lv < source], state
        assert source == MV_OF_SET[state.split("/")[0]]
        image = load_path(ORACLE / state).image
        digest = image_digest(image)
        for r in rs:
            assert r["digest"] == digest and json.loads(r["inputs"]) == {"state": state, "target": r["target_mv_name"]}
            assert r["metadata_changed"] == CATALOG.is_lossy(source, r["target_mv"])
            assert r["lossless"] == (r["loss_items"] == 0) == (r["verdict"] == "lossless")
            assert r["loss_items"] == len(r["losses"])
            kinds = {x["kind"] for x in r["losses"]}
            loses_controllers = bool(image.cluster.controllers) and \
                not CATALOG.supports("controller_registration", r["target_mv"])
            assert ("controller registration" in kinds) == loses_controllers, (state, r["target_mv_name"])
            if not r["metadata_changed"]:
                assert r["catalog_losses"] == []
    otus = {r["target_mv_name"]: r for r in by_state["cp-kafka-3.8_otus/__cluster_metadata-0"]}
    assert otus["3.3-IV3"]["verdict"] == "lossy" and otus["3.7-IV4"]["verdict"] == "lossless"


@pytest.mark.parametrize("grid", [SMALL_GRID])
def test_snapshot_cost_on_spark_equals_one_process(spark, tmp_path: Path, grid: list[str]) -> None:
    items = job_inputs("snapshot-cost", grid=parse_grid(grid))
    assert len(items) == 16
    run = run_spark(spark, "snapshot-cost", items, str(tmp_path / "out"), show_progress=False)
    table = read_output(tmp_path / "out", "snapshot-cost")
    _, local = run_local("snapshot-cost", items)
    assert _stable(table.to_pylist()) == _stable(local.to_pylist())
    assert run.rows == 16 and len(run.summary) == 16
    for r in table.to_pylist():
        assert r["verdict"] == "ok" and r["write_s"] > 0 and r["load_s"] > 0 and r["peak_memory_bytes"] > 0
    # the bytes and records of a grid point are those of its snapshot written here
    point = next(r for r in table.to_pylist() if (r["topics"], r["partitions_per_topic"], r["brokers"],
                                                  r["metadata_version_name"]) == (12, 4, 3, "4.0-IV3"))
    image = cluster_image(ClusterShape(brokers=3, topics=12, partitions=4, replication_factor=2), CATALOG, "4.0-IV3")
    records = write_image(image, "4.0-IV3", CATALOG)
    path = write_snapshot(tmp_path, SnapshotId(*image.provenance.snapshot_id()), records,
                          last_contained_log_timestamp=0, time_ms=0, fsync=False)
    assert (point["bytes"], point["records"], point["partitions"]) == (path.stat().st_size, len(records), 48)
    assert point["bytes_per_partition"] == pytest.approx(path.stat().st_size / 48)
    assert point["digest"] == image_digest(image)
    empty = next(r for r in table.to_pylist() if r["topics"] == 0)
    assert empty["partitions"] == 0 and empty["bytes_per_partition"] is None


def test_snapshot_cost_reports_impossible_shapes_as_errors() -> None:
    run, table = run_local("snapshot-cost", job_inputs("snapshot-cost", grid=parse_grid(
        ["topics=1", "partitions=1", "rf=3", "brokers=2", "mv=4.0-IV3"])))
    (row,) = table.to_pylist()
    assert row["verdict"] == "error" and "replication factor 3 must be between 1 and the number of brokers (2)" in row["error"]
    assert "error: replication factor 3" in run.summary_text


def test_grid_settings_are_checked() -> None:
    with pytest.raises(KraftsimError, match="AXIS one of topics, partitions, rf, brokers, mv"):
        parse_grid(["shards=3"])
    with pytest.raises(KraftsimError, match="brokers must be at least 1"):
        parse_grid(["brokers=0"])
    assert parse_grid(["topics=5", "mv=25"])["mv"] == ["25"]


def test_output_folders_are_replaced_only_when_they_hold_an_earlier_run(tmp_path: Path) -> None:
    items = job_inputs("snapshot-cost", grid=parse_grid(["topics=1", "partitions=1", "brokers=3", "mv=4.0-IV3"]))
    mine = tmp_path / "mine"
    run_local("snapshot-cost", items, output=str(mine), params={"trace_memory": False})
    run_local("snapshot-cost", items, output=str(mine), params={"trace_memory": False})  # an earlier run: replaced
    assert read_output(mine, "snapshot-cost").num_rows == 1
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    with pytest.raises(KraftsimError, match="not an earlier output of the snapshot-cost job"):
        run_local("snapshot-cost", items, output=str(theirs))
    assert (theirs / "notes.txt").read_text() == "keep me"
    with pytest.raises(KraftsimError, match="holds schema snapshot_cost version 2, not corpus_files"):
        read_output(mine, "corpus")
