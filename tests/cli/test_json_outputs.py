"""`--json` on the commands that report and had none (export, kafka fetch/releases, the Spark
jobs, sweep): one JSON object on stdout that says what the text says, nothing else on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import run
from tests.paths import REPO
from tests.reliability import damage


def _one_object(out: str) -> dict[str, object]:
    lines = out.splitlines()
    assert len(lines) == 1, out
    value = json.loads(lines[0])
    assert isinstance(value, dict)
    return value


def test_export_json_says_what_the_text_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = damage.build_log_dir(tmp_path / "in")
    code, text, _ = run(capsys, "export", str(directory), "-o", str(tmp_path / "a.parquet"))
    assert code == 0
    code, out, _ = run(capsys, "export", str(directory), "-o", str(tmp_path / "b.parquet"), "--json")
    assert code == 0
    report = _one_object(out)
    assert report["table"] == "records" and report["partial"] == [] and Path(str(report["output"])).exists()
    assert f"wrote {report['rows']} records from {report['files']} files" in text


def test_kafka_releases_json_lists_the_text_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = run(capsys, "kafka", "releases")
    assert code == 0
    code, out, _ = run(capsys, "kafka", "releases", "--json")
    assert code == 0
    report = _one_object(out)
    releases = report["releases"]
    assert isinstance(releases, list) and len(releases) == len(text.splitlines()) - 1  # less the cache line
    for row in releases:
        line = next(t for t in text.splitlines() if t.startswith(f"{row['version']} "))
        assert ("not fetched" not in line) == row["cached"]


def test_spark_job_json_locally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "cost"
    code, out, _ = run(capsys, "spark", "snapshot-cost", "--local", "--grid", "topics=2", "--grid", "partitions=1",
                       "--grid", "brokers=3", "--grid", "mv=3.9-IV0,4.0-IV3", "--no-memory", "--no-progress",
                       "-o", str(out_dir), "--json")
    assert code == 0
    report = _one_object(out)
    assert report["job"] == "snapshot-cost" and report["rows"] == 2 and report["engine"] == "local"
    assert Path(str(report["output"])).resolve() == out_dir.resolve()
    assert isinstance(report["summary"], list) and report["summary"]


def test_sweep_json_counts_the_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "spark", "sweep", str(REPO / "scenarios" / "torn-tail.toml"), "--seeds", "1:2",
                       "--local", "--no-plots", "--no-progress", "-o", str(tmp_path / "sweep"), "--json")
    report = _one_object(out)
    assert report["runs"] == 2 and report["passed"] == 2 and code == 0
    assert report["failed"] == report["errors"] == 0 and report["plots"] is None
    assert Path(str(report["parquet"])).is_dir() and Path(str(report["summary"])).is_file()
