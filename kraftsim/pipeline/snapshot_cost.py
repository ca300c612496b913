"""The snapshot-cost job's work for one cluster shape: how big and how slow is its snapshot?

For each grid point the synthetic image of that shape is built, written as a Kafka
snapshot into a temporary directory by the snapshot emitter (SnapshotEmitter: the image's
records streamed into write_snapshot, with fsync as Kafka does) and loaded back
(load_path: read_snapshot + replay). Timings come from a first pass; peak memory from a
second pass under tracemalloc — Python allocations only, attributable to this one run
even when a worker process runs many, which the process's peak RSS (resource.getrusage)
is not — so tracing never slows the timed pass.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
import tracemalloc
from typing import Any, Mapping, Sequence

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.image import image_digest
from kraftsim.image import SnapshotEmitter
from kraftsim.image import load_path
from kraftsim.image.synthetic import ClusterShape, cluster_image
from kraftsim.pipeline.defaults import catalog_of, job_defaults

SNAPSHOT_COST = "snapshot_cost"
AXES = ("topics", "partitions", "rf", "brokers", "mv")
SNAPSHOT_TIME_MS = 0  # the batches' clock (the synthetic image's own log time is 0 too): reproducible bytes


def default_grid() -> dict[str, list[Any]]:
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


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's axes, as input rows, in a fixed order."""
    return [dict(zip(AXES, combo)) for combo in itertools.product(*(grid[a] for a in AXES))]


def _measure(shape: ClusterShape, mv: Any, cat: Any, seed: int, fsync: bool) -> dict[str, Any]:
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


def _peak_memory(shape: ClusterShape, mv: Any, cat: Any, seed: int, fsync: bool) -> int:
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
                      seed: int = 0, fsync: bool = True, trace_memory: bool = True) -> list[dict[str, Any]]:
    """The row of one grid point (`item` as from grid_points); `trace_memory=False` skips the
    (slow) tracemalloc pass and leaves peak_memory_bytes null."""
    started = time.perf_counter()
    inputs = {a: item[a] for a in AXES}
    row: dict[str, Any] = {
        "run_id": f"t{item['topics']}-p{item['partitions']}-rf{item['rf']}-b{item['brokers']}-mv{item['mv']}",
        "inputs": json.dumps(inputs, sort_keys=True), "digest": None, "error": None,
        "topics": item["topics"], "partitions_per_topic": item["partitions"], "replication_factor": item["rf"],
        "brokers": item["brokers"], "metadata_version": None, "metadata_version_name": str(item["mv"]),
        "partitions": item["topics"] * item["partitions"], "records": None, "batches": None, "bytes": None,
        "bytes_per_partition": None, "write_s": None, "load_s": None, "peak_memory_bytes": None,
    }
    try:
        cat = catalog_of(catalog, release)
        mv = cat.metadata_version(int(item["mv"]) if str(item["mv"]).isdigit() else str(item["mv"]))
        shape = ClusterShape(brokers=item["brokers"], topics=item["topics"], partitions=item["partitions"],
                             replication_factor=item["rf"])
        m = _measure(shape, mv, cat, seed, fsync)
        peak = _peak_memory(shape, mv, cat, seed, fsync) if trace_memory else None
    except (KraftsimError, ValueError) as e:
        row.update(verdict="error", error=str(e), elapsed_s=time.perf_counter() - started)
        return [row]
    digest = image_digest(m["image"])
    row.update(metadata_version=mv.level, digest=digest, records=m["records"], batches=m["batches"],
               bytes=m["bytes"], bytes_per_partition=m["bytes"] / row["partitions"] if row["partitions"] else None,
               write_s=m["write_s"], load_s=m["load_s"], peak_memory_bytes=peak,
               verdict="ok" if image_digest(m["loaded"]) == digest else "mismatch",
               elapsed_s=time.perf_counter() - started)
    return [row]
