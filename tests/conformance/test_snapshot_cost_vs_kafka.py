"""Kafka's own snapshot code timed on kraftsim's file (kraftsim.conformance.snapshot_peer): Kafka
loads every partition, its writer gives kraftsim's bytes (or, with config resources, the same
image in its hash order), cold and warm times are reported, and the heap bisection finds a
heap the load fits in while a much smaller one fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.conformance import snapshot_peer
from kraftsim.image import SnapshotEmitter
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.pipeline.snapshot_cost import SNAPSHOT_TIME_MS, measure_shape
from kraftsim.versions import default_catalog
from tests.conformance.conftest import kafka_dist

pytestmark = pytest.mark.kafka
RELEASE = "4.2.0"  # the release bench_vs_kafka times; the peer compiles for 4.1 and later


def test_topics_and_brokers_only_kafka_writes_kraftsims_bytes() -> None:
    cat = default_catalog()
    shape = ClusterShape(brokers=4, topics=40, partitions=3, scram_users=0, delegation_tokens=0, configs_per_topic=0)
    m = measure_shape(shape, cat.metadata_version("4.0-IV3"), cat, runs=3, kafka=kafka_dist(RELEASE))
    k = m["kafka"]
    assert k["partitions"] == 120 and k["records"] == m["records"]
    assert k["same_bytes"] and k["write_bytes"] == m["bytes"]
    for op in snapshot_peer.OPS:
        assert len(k[op]["runs_s"]) == 3 and k[op]["warm_s"] == min(k[op]["runs_s"][2:])
        assert k[op]["cold_s"] > 0 and k[op]["cold_process_s"] >= k[op]["cold_s"]


def test_with_configs_and_scram_kafka_writes_the_same_image() -> None:
    cat = default_catalog()
    m = measure_shape(ClusterShape(brokers=3, topics=6, partitions=2), cat.metadata_version("4.0-IV3"), cat, runs=1,
                      kafka=kafka_dist(RELEASE))
    assert m["kafka"]["same_image"] and m["kafka"]["partitions"] == 12


def test_smallest_heap_fits_and_half_of_it_does_not(tmp_path: Path) -> None:
    cat = default_catalog()
    image = cluster_image(ClusterShape(brokers=3, topics=2000, partitions=10), cat, cat.metadata_version("4.0-IV3"))
    written = SnapshotEmitter(tmp_path, catalog=cat, clock_ms=SNAPSHOT_TIME_MS).maybe_emit(image)
    assert written is not None
    dist = kafka_dist(RELEASE)
    where = dict(end_offset=written.snapshot_id.end_offset, epoch=written.snapshot_id.epoch, time_ms=SNAPSHOT_TIME_MS)
    heap = snapshot_peer.smallest_heap(dist, written.path, low_mb=8, high_mb=512, step_mb=16, **where)
    assert 8 < heap <= 512
    done = snapshot_peer.run_peer(dist, written.path, runs=1, ops=["load"], heap=f"{heap}m", **where)
    assert done["partitions"] == 20_000
    with pytest.raises(snapshot_peer.HeapTooSmall):
        snapshot_peer.run_peer(dist, written.path, runs=1, ops=["load"], heap=f"{max(4, heap // 3)}m", **where)


def test_the_job_puts_kafkas_times_beside_kraftsims(tmp_path: Path) -> None:
    from kraftsim.pipeline.jobs import job_inputs, read_output, run_local
    from kraftsim.pipeline.snapshot_cost import parse_grid

    kafka_dist(RELEASE)  # skips when Kafka cannot run here
    grid = parse_grid(["topics=20", "partitions=2", "brokers=3", "mv=4.0-IV3"])
    run_local("snapshot-cost", job_inputs("snapshot-cost", grid=grid),
              params={"trace_memory": False, "kafka_release": RELEASE}, output=str(tmp_path / "out"))
    (row,) = read_output(tmp_path / "out", "snapshot-cost").to_pylist()
    assert row["verdict"] == "ok" and row["kafka_release"] == RELEASE and row["kafka_same_image"]
    assert 0 < row["kafka_load_warm_s"] and 0 < row["kafka_load_cold_s"] and 0 < row["kafka_write_warm_s"]
