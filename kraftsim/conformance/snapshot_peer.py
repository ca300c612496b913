"""Kafka's own snapshot writer and loader, timed on a snapshot file, from a fetched release's jars.

`java/KafkaSnapshotPeer.java` is compiled against the release (cached beside its jars, by
source hash) and run as a bounded subprocess. It decodes the file, loads it into Kafka's
MetadataImage (MetadataDelta replay, finishSnapshot, apply: MetadataLoader's snapshot path),
writes the image back through RaftSnapshotWriter/RecordsSnapshotWriter (SnapshotEmitter's
path) and applies one-record deltas, each op `runs` times in one JVM.

Two bases, said beside every figure that uses them:
- cold: the first run in a fresh JVM, as someone running a tool once meets it (classes
  loaded, code interpreted); `measure` starts one JVM per op for it;
- warm: the best of the last runs in one JVM after JIT warm-up (runs 3-5 of 5), as Kafka's
  JMH benchmarks measure.
`smallest_heap` bisects the smallest -Xmx at which Kafka's load completes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from kraftsim.conformance.dist import KafkaDist, KafkaUnavailable
from kraftsim.conformance.tools import compiled, find_javac

PEER_MAIN = "KafkaSnapshotPeer"
PEER_SOURCE = Path(__file__).parent / "java" / f"{PEER_MAIN}.java"
OPS = ("decode", "load", "write", "delta")
PEER_TIMEOUT_S = 1800
DEFAULT_HEAP = "1g"  # the machine is shared: a small heap, recorded with the results
WARM_RUNS = 5
WARM_FROM = 2  # warm = best of runs WARM_FROM+1 .. WARM_RUNS (3-5 of 5), as JMH after its warm-up iterations


class HeapTooSmall(KafkaUnavailable):
    """Kafka's code ran out of heap at the given -Xmx."""


def warm(times: Sequence[float]) -> float:
    """The warm figure: the best of the runs after the warm-up ones (all of them when there are few)."""
    return min(times[WARM_FROM:] if len(times) > WARM_FROM else times)


#: Where the peer's Kafka API moved, by release line: (first line, last line, old text, new text).
_API_MOVES = (
    ((4, 1), (4, 1), ".setMaxBatchSizeBytes(", ".setMaxBatchSize("),
    ((4, 4), (99, 99), "org.apache.kafka.common.utils.BufferSupplier",
     "org.apache.kafka.common.utils.internals.BufferSupplier"),
    ((4, 4), (99, 99), "org.apache.kafka.common.utils.LogContext", "org.apache.kafka.common.utils.internals.LogContext"),
)
OLDEST_LINE = (4, 1)  # 4.0 and 3.x keep OffsetAndEpoch and the snapshot reader elsewhere


def peer_source(dist: KafkaDist) -> str:
    """KafkaSnapshotPeer.java as this release's API spells it."""
    line = dist.release.line_tuple
    if line < OLDEST_LINE:
        raise KafkaUnavailable(f"timing Kafka's snapshot code needs Kafka {'.'.join(map(str, OLDEST_LINE))} or "
                               f"newer (its snapshot classes), not {dist.release.version}")
    text = PEER_SOURCE.read_text(encoding="utf-8")
    for first, last, old, new in _API_MOVES:
        if first <= line <= last:
            text = text.replace(old, new)
    return text


def peer_classes(dist: KafkaDist) -> Path:
    """KafkaSnapshotPeer compiled against the release's jars (cached beside them, by source hash)."""
    return compiled(dist, PEER_SOURCE, peer_source(dist), "snapshot-peer", find_javac(dist), classpath=True)


def run_peer(dist: KafkaDist, snapshot: Path, *, end_offset: int, epoch: int, time_ms: int, runs: int,
             ops: Sequence[str], heap: str = DEFAULT_HEAP, topic_id: str | None = None,
             partition: int = 0, keep: Path | None = None) -> dict[str, Any]:
    """One JVM running `ops` `runs` times each on the snapshot: its JSON (times per run, in ms),
    plus `process_wall_s` (the JVM's whole life, start-up included). `keep`: where to copy the
    first snapshot Kafka writes (a path that does not exist yet)."""
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise ValueError(f"unknown ops {unknown}: choose from {', '.join(OPS)}")
    keeping = [f"-Dkafka.snapshot.peer.keep={keep}"] if keep is not None else []
    # A fixed heap, as kafka-server-start.sh gives a broker (-Xmx1G -Xms1G): a heap that grows and
    # shrinks between runs made Kafka's warm load 1.8-2.2 s against 1.0-1.3 s fixed, and its warm
    # decode 0.39-0.50 s against 0.20-0.22 s (benchmarks/results/vs_kafka.md).
    cmd = [str(dist.java.path), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+ExitOnOutOfMemoryError", *keeping, "-cp",
           f"{peer_classes(dist)}{os.pathsep}{dist.classpath}", PEER_MAIN, str(snapshot.parent), str(end_offset),
           str(epoch), str(time_ms), str(runs), ",".join(ops)]
    if topic_id is not None:
        cmd += [topic_id, str(partition)]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PEER_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise KafkaUnavailable(f"Kafka's snapshot code did not finish within {PEER_TIMEOUT_S} s") from None
    wall = time.perf_counter() - t0
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if "OutOfMemoryError" in done.stderr + done.stdout:
        raise HeapTooSmall(f"Kafka {dist.release.version} ran out of heap at -Xmx{heap}")
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise KafkaUnavailable(f"Kafka {dist.release.version}'s snapshot code failed (exit {done.returncode}): {tail}")
    out: dict[str, object] = json.loads(lines[-1])
    out["process_wall_s"] = wall
    out["heap"] = heap
    return out


def measure(dist: KafkaDist, snapshot: Path, *, end_offset: int, epoch: int, time_ms: int,
            ops: Sequence[str] = OPS, heap: str = DEFAULT_HEAP, topic_id: str | None = None, partition: int = 0,
            warm_runs: int = WARM_RUNS, keep: Path | None = None,
            progress: Callable[[str], None] = lambda s: None) -> dict[str, object]:
    """Kafka's cold and warm seconds for each op: one warm JVM (`warm_runs` runs of each op), then
    one fresh JVM per op for the cold figure. JVMs run one at a time. `keep`: see run_peer."""
    common = dict(end_offset=end_offset, epoch=epoch, time_ms=time_ms, heap=heap, topic_id=topic_id,
                  partition=partition)
    progress(f"Kafka {dist.release.version}: warm JVM, {warm_runs} runs of {', '.join(ops)}")
    hot = run_peer(dist, snapshot, runs=warm_runs, ops=ops, keep=keep, **common)  # type: ignore[arg-type]
    result: dict[str, Any] = {"release": dist.release.version, "java": dist.java.version, "heap": heap,
                              "records": hot["records"], "partitions": hot["partitions"], "warm_runs": warm_runs,
                              "write_bytes": hot.get("write_bytes"), "write_sha256": hot.get("write_sha256")}
    for op in ops:
        walls = [t / 1000 for t in hot[f"{op}_wall_ms"]]
        result[op] = {"warm_s": warm(walls), "runs_s": walls}
    for op in ops:
        progress(f"Kafka {dist.release.version}: cold JVM for {op}")
        cold = run_peer(dist, snapshot, runs=1, ops=[op], **common)  # type: ignore[arg-type]
        result[op]["cold_s"] = cold[f"{op}_wall_ms"][0] / 1000
        result[op]["cold_process_s"] = cold["process_wall_s"]
    return result


def smallest_heap(dist: KafkaDist, snapshot: Path, *, end_offset: int, epoch: int, time_ms: int,
                  low_mb: int = 32, high_mb: int = 4096, step_mb: int = 8,
                  progress: Callable[[str], None] = lambda s: None) -> int:
    """The smallest -Xmx (MB, to within `step_mb`) at which Kafka's load of the snapshot completes."""
    def fits(mb: int) -> bool:
        progress(f"Kafka {dist.release.version}: load at -Xmx{mb}m")
        try:
            run_peer(dist, snapshot, end_offset=end_offset, epoch=epoch, time_ms=time_ms, runs=1, ops=["load"],
                     heap=f"{mb}m")
            return True
        except HeapTooSmall:
            return False

    if not fits(high_mb):
        raise KafkaUnavailable(f"Kafka's load does not complete even at -Xmx{high_mb}m")
    lo, hi = low_mb, high_mb  # lo: not known to fit; hi: fits
    while hi - lo > step_mb:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi
