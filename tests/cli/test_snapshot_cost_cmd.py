"""`kraftsim snapshot-cost` without Kafka: the exact snapshot size, kraftsim's times, and the
refusals that come before any work (missing Java or jars say how to get them; exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftsim.image import SnapshotEmitter
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.pipeline import snapshot_cost
from kraftsim.scenario.language import MAX_PARTITIONS
from kraftsim.versions import default_catalog
from tests.cli_support import run


def test_json_gives_the_emitters_exact_size_and_cold_and_warm_times(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "snapshot-cost", "--topics", "30", "--partitions", "4", "--brokers", "5",
                         "--mv", "3.9-IV0", "--runs", "3", "--json")
    assert code == 0, err
    m = json.loads(out)
    cat = default_catalog()
    image = cluster_image(ClusterShape(brokers=5, topics=30, partitions=4), cat, cat.metadata_version("3.9-IV0"))
    written = SnapshotEmitter(tmp_path, catalog=cat, clock_ms=0).maybe_emit(image)
    assert written is not None
    assert (m["bytes"], m["records"], m["partitions"]) == (written.size_in_bytes, written.records, 120)
    for op in ("write", "load"):
        t = m["kraftsim"][op]
        assert len(t["runs_s"]) == 3 and t["cold_s"] == t["runs_s"][0] and t["warm_s"] == t["runs_s"][2]
    assert "kafka" not in m
    assert "building the image" in err  # progress on stderr


@pytest.mark.parametrize("argv, says", [
    (["--mv", "9.9-IV9"], "--mv 9.9-IV9"),
    (["--kafka-heap", "256m"], "--kafka-heap applies with --with-kafka only"),
    (["--runs", "0"], "--runs"),
    (["--with-kafka", "4.2.0", "--kafka-heap", "lots"], "--kafka-heap 'lots'"),
    (["--partitions", "0"], "--partitions"),
])
def test_bad_input_exits_2_in_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    code, out, err = run(capsys, "snapshot-cost", "--topics", "1", "--no-progress", *argv)
    assert code == 2 and says in err and out == ""


@pytest.mark.parametrize("topics, partitions", [(100_000, 100_000), (10_000_000, 2)])
def test_more_partitions_than_topics_create_allows_are_refused_before_any_work(
        topics: int, partitions: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each flag within its limit, the product past `topics create`'s (10^10 partitions
    once started building): refused with the same limit before the image is built."""
    def built(*args: object, **kwargs: object) -> None:
        raise AssertionError("the image was built")

    monkeypatch.setattr(snapshot_cost, "measure_shape", built)
    code, out, err = run(capsys, "snapshot-cost", "--topics", str(topics), "--partitions", str(partitions),
                         "--no-progress")
    assert (code, out) == (2, "")
    assert (f"--topics x --partitions: expected at most {MAX_PARTITIONS:,} partitions in all, "
            f"got {topics * partitions:,}") in err


def test_unfetched_release_says_how_to_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KRAFTSIM_KAFKA_CACHE", str(tmp_path))  # an empty cache: nothing is fetched
    code, out, err = run(capsys, "snapshot-cost", "--topics", "1", "--with-kafka", "4.2.0", "--no-progress")
    assert code == 2 and out == ""
    assert "Kafka 4.2.0's jars are not fetched: run `kraftsim kafka fetch 4.2.0`" in err
    assert list(tmp_path.iterdir()) == []  # and nothing was downloaded


def test_no_java_is_said_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    code, out, err = run(capsys, "snapshot-cost", "--topics", "1", "--with-kafka", "4.2.0", "--no-progress")
    assert code == 2 and out == ""
    assert "real Kafka needs Java 17 or newer" in err


def test_the_spark_job_refuses_an_unfetched_release_before_starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KRAFTSIM_KAFKA_CACHE", str(tmp_path / "cache"))
    code, out, err = run(capsys, "spark", "snapshot-cost", "--local", "--with-kafka", "4.2.0",
                         "-o", str(tmp_path / "out"))
    assert code == 2 and "run `kraftsim kafka fetch 4.2.0`" in err
    assert not (tmp_path / "out").exists()
