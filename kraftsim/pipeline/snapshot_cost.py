"""The snapshot-cost job's work for one cluster shape: how big and how slow is its snapshot?

For each grid point the synthetic image of that shape is built, written as a Kafka
snapshot into a temporary directory by the snapshot emitter (SnapshotEmitter: the image's
records streamed into write_snapshot, with fsync as Kafka does) and loaded back
(load_path: read_snapshot + replay). Timings come from a first pass; peak memory from a
second pass under tracemalloc — Python allocations only, attributable to this one run
even when a worker process runs many, which the process's peak RSS (resource.getrusage)
is not — so tracing never slows the timed pass. With a Kafka release (`--with-kafka`), Kafka's own
load and write of the same snapshot are timed too, warm and cold (kraftsim.conformance.snapshot_peer);
`measure_shape` is that for one shape, as `kraftsim snapshot-cost` prints it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable, cache_root, cached_jars, find_java, resolve_release
from kraftsim.conformance.snapshot_peer import DEFAULT_HEAP, OPS, measure, warm
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.image import image_digest
from kraftsim.image import SnapshotEmitter
from kraftsim.image import load_path
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.pipeline.defaults import catalog_of, job_defaults
from kraftsim.versions import Catalog, MVLike

SNAPSHOT_COST = "snapshot_cost"
AXES = ("topics", "partitions", "rf", "brokers", "mv")
SNAPSHOT_TIME_MS = 0  # the batches' clock (the synthetic image's own log time is 0 too): reproducible bytes


def default_grid() -> dict[str, list[object]]:
    return {k: list(v) for k, v in job_defaults()["snapshot_cost"]["grid"].items()}


def parse_grid(specs: Sequence[str], base: Mapping[str, list[Any]] | None = None) -> dict[str, list[Any]]:
    """`AXIS=V1,V2` settings (topics, partitions, rf, brokers: integers; mv: version strings
    or levels) over the default grid."""
    grid = {k: list(v) for k, v in (base or default_grid()).items()}
    for spec in specs:
        axis, sep, values = spec.partition("=")
        axis = axis.strip()
        if not sep or axis not in AXES or not values.strip():
            raise UsageError(f"--grid {spec!r}: expected AXIS=V1,V2,... with AXIS one of {', '.join(AXES)}")
        parts = [v.strip() for v in values.split(",") if v.strip()]
        if axis == "mv":
            grid[axis] = parts
            continue
        try:
            numbers = [int(v) for v in parts]
        except ValueError:
            raise UsageError(f"--grid {spec!r}: {axis} takes whole numbers") from None
        if any(n < (0 if axis == "topics" else 1) for n in numbers):
            raise UsageError(f"--grid {spec!r}: {axis} must be at least {0 if axis == 'topics' else 1}")
        grid[axis] = numbers
    return grid


def grid_points(grid: Mapping[str, Sequence[object]]) -> list[dict[str, object]]:
    """Every combination of the grid's axes, as input rows, in a fixed order."""
    return [dict(zip(AXES, combo)) for combo in itertools.product(*(grid[a] for a in AXES))]


def _measure(shape: ClusterShape, mv: MVLike, cat: Catalog, seed: int, fsync: bool) -> dict[str, Any]:
    image = cluster_image(shape, cat, mv, seed=seed)
    with tempfile.TemporaryDirectory(prefix="kraftsim-snapshot-cost-") as d:
        t0 = time.perf_counter()
        written = SnapshotEmitter(d, catalog=cat, clock_ms=SNAPSHOT_TIME_MS, fsync=fsync).maybe_emit(image)
        if written is None:  # a fresh directory holds no snapshot that would stop the write
            raise AssertionError("the snapshot was not written")
        t1 = time.perf_counter()
        loaded = load_path(written.path, catalog=cat)
        t2 = time.perf_counter()
    return {"image": image, "loaded": loaded.image, "records": written.records, "batches": loaded.batches,
            "bytes": written.size_in_bytes, "write_s": t1 - t0, "load_s": t2 - t1}


def _peak_memory(shape: ClusterShape, mv: MVLike, cat: Catalog, seed: int, fsync: bool) -> int:
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        _measure(shape, mv, cat, seed, fsync)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()


def snapshot_cost_row(item: dict[str, Any], *, catalog: str | None = None, release: str | None = None,
                      seed: int = 0, fsync: bool = True, trace_memory: bool = True,
                      kafka_release: str | None = None, kafka_heap: str | None = None) -> list[dict[str, object]]:
    """The row of one grid point (`item` as from grid_points); `trace_memory=False` skips the
    (slow) tracemalloc pass and leaves peak_memory_bytes null; `kafka_release` also times Kafka's
    own load and write of the same snapshot (measure_shape; one JVM at a time per worker)."""
    started = time.perf_counter()
    inputs = {a: item[a] for a in AXES}
    row: dict[str, object] = {
        "run_id": f"t{item['topics']}-p{item['partitions']}-rf{item['rf']}-b{item['brokers']}-mv{item['mv']}",
        "inputs": json.dumps(inputs, sort_keys=True), "digest": None, "error": None,
        "topics": item["topics"], "partitions_per_topic": item["partitions"], "replication_factor": item["rf"],
        "brokers": item["brokers"], "metadata_version": None, "metadata_version_name": str(item["mv"]),
        "partitions": item["topics"] * item["partitions"], "records": None, "batches": None, "bytes": None,
        "bytes_per_partition": None, "write_s": None, "load_s": None, "peak_memory_bytes": None,
        "kafka_release": None, "kafka_load_warm_s": None, "kafka_load_cold_s": None, "kafka_write_warm_s": None,
        "kafka_write_cold_s": None, "kafka_same_image": None,
    }
    try:
        cat = catalog_of(catalog, release)
        mv = cat.metadata_version(int(item["mv"]) if str(item["mv"]).isdigit() else str(item["mv"]))
        shape = ClusterShape(brokers=item["brokers"], topics=item["topics"], partitions=item["partitions"],
                             replication_factor=item["rf"])
        m = _measure(shape, mv, cat, seed, fsync)
        peak = _peak_memory(shape, mv, cat, seed, fsync) if trace_memory else None
        if kafka_release is not None:
            k = measure_shape(shape, mv, cat, seed=seed, kafka=kafka_dist(kafka_release), heap=kafka_heap,
                              fsync=fsync)["kafka"]
            row.update(kafka_release=k["release"], kafka_load_warm_s=k["load"]["warm_s"],
                       kafka_load_cold_s=k["load"]["cold_s"], kafka_write_warm_s=k["write"]["warm_s"],
                       kafka_write_cold_s=k["write"]["cold_s"], kafka_same_image=k["same_image"])
    except (KraftsimError, ValueError) as e:
        row.update(verdict="error", error=str(e), elapsed_s=time.perf_counter() - started)
        return [row]
    digest = image_digest(m["image"])
    row.update(metadata_version=mv.level, digest=digest, records=m["records"], batches=m["batches"],
               bytes=m["bytes"], bytes_per_partition=m["bytes"] / row["partitions"] if row["partitions"] else None,
               write_s=m["write_s"], load_s=m["load_s"], peak_memory_bytes=peak,
               verdict="ok" if image_digest(m["loaded"]) == digest and row["kafka_same_image"] is not False
               else "mismatch",
               elapsed_s=time.perf_counter() - started)
    return [row]


# ----------------------------------------------------------------------------- one shape, against Kafka


def kafka_dist(release: str) -> KafkaDist:
    """A fetched Kafka release to time, or a KraftsimError saying how to fetch it (never a download here)."""
    rel = resolve_release(release)
    java = find_java()
    jars = cached_jars(rel)
    if jars is None:
        raise KafkaUnavailable(f"Kafka {rel.version}'s jars are not fetched: run `kraftsim kafka fetch {rel.version}` "
                               "first (it needs Maven; the jars are cached for later runs)")
    return KafkaDist(rel, cache_root() / rel.version, jars, java)


def measure_shape(shape: ClusterShape, mv: MVLike, cat: Catalog, *, seed: int = 0, runs: int = 5,
                  kafka: KafkaDist | None = None, heap: str | None = None, fsync: bool = True,
                  progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The snapshot of one cluster shape: its exact size, kraftsim's write (SnapshotEmitter) and load
    (load_path) times, cold (the first run in this process) and warm (best of runs 3-5 of 5); with
    `kafka` (a KafkaDist), Kafka's own decode, load, write and one-record delta on the same file,
    warm (one JVM) and cold (a fresh JVM per op), and whether Kafka's writer gives the same bytes."""
    if runs < 1:
        raise UsageError("--runs must be at least 1")
    progress(f"building the image: {shape.topics:,} topics x {shape.partitions} partitions")
    image = cluster_image(shape, cat, mv, seed=seed)
    digest = image_digest(image)
    out: dict[str, Any] = {"topics": shape.topics, "partitions_per_topic": shape.partitions,
                           "replication_factor": shape.replication_factor, "brokers": shape.brokers,
                           "partitions": shape.topics * shape.partitions, "metadata_version": str(mv),
                           "runs": runs}
    writes: list[float] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-snapshot-cost-") as d:
        results = []
        for i in range(runs):
            progress(f"kraftsim write, run {i + 1} of {runs}")
            target = Path(d) / f"run-{i}" / "__cluster_metadata-0"
            t0 = time.perf_counter()
            written = SnapshotEmitter(target, catalog=cat, clock_ms=SNAPSHOT_TIME_MS, fsync=fsync).maybe_emit(image)
            writes.append(time.perf_counter() - t0)
            if written is None:  # a fresh directory holds no snapshot yet
                raise KraftsimError(f"{target}: the snapshot was not written")
            results.append(written)
        result, kept = results[0], results[0].path
        del image
        for i in range(runs):
            progress(f"kraftsim load, run {i + 1} of {runs}")
            t0 = time.perf_counter()
            loaded = load_path(kept, catalog=cat)
            loads.append(time.perf_counter() - t0)
            if image_digest(loaded.image) != digest:
                raise KraftsimError(f"{kept.name}: the loaded image differs from the written one")
            topic = next(iter(loaded.image.topics.by_id.values()), None)
            del loaded
        out.update(bytes=result.size_in_bytes, records=result.records,
                   bytes_per_partition=result.size_in_bytes / out["partitions"] if out["partitions"] else None,
                   kraftsim={"write": {"cold_s": writes[0], "warm_s": warm(writes), "runs_s": writes},
                             "load": {"cold_s": loads[0], "warm_s": warm(loads), "runs_s": loads}})
        if kafka is not None:
            sid = result.snapshot_id
            ops = OPS if topic is not None else tuple(op for op in OPS if op != "delta")
            kafka_file = Path(d) / "kafka" / kept.name
            kafka_file.parent.mkdir()
            theirs = measure(kafka, kept, end_offset=sid.end_offset, epoch=sid.epoch, time_ms=SNAPSHOT_TIME_MS,
                             ops=ops, heap=heap or DEFAULT_HEAP, topic_id=str(topic.id) if topic else None,
                             partition=min(topic.partitions) if topic else 0, warm_runs=runs, keep=kafka_file,
                             progress=progress)
            theirs["same_bytes"] = theirs.get("write_sha256") == hashlib.sha256(kept.read_bytes()).hexdigest()
            # Kafka orders config resources by hash codes that include an enum's identity hash (new in
            # every JVM), so its bytes may differ in order only: the same image is what must hold.
            theirs["same_image"] = image_digest(load_path(kafka_file, catalog=cat).image) == digest
            if theirs["partitions"] != out["partitions"]:
                raise KraftsimError(f"Kafka's image holds {theirs['partitions']} partitions, not {out['partitions']}")
            out["kafka"] = theirs
    return out
