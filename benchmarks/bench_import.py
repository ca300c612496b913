"""Benchmark of `kraftsim cluster import` against `kraftsim replay` on one snapshot.

The issue's target: importing a 1,000,000-partition snapshot takes no more than 1.5x
loading it with `replay`. The snapshot: 100,000 topics x 10 partitions x 3 replicas at
metadata.version 4.0-IV3, on three combined nodes (RegisterBrokerRecord and
RegisterControllerRecord advertising what Kafka 4.0 supports), written in Kafka's bytes by
the image writer (benchmarks/bench_image.py's fast write). Both commands run as the user
runs them, in a fresh interpreter each (`python -m kraftsim ...`), so the times include
start-up:

- replay (load only): `kraftsim replay --no-verify --roundtrip none SNAPSHOT` (read, check
  every CRC, decode, replay, print the summary);
- replay (default): `kraftsim replay SNAPSHOT` (the same plus its verification);
- import: `kraftsim cluster import SNAPSHOT DIR` (the load, the plan, three copies of the
  snapshot for the three nodes, their meta.properties, quorum-state and cluster.json).

Times are process CPU (children) and wall clock, best of REPEAT runs; the machine may be
shared (the load average is recorded). Results: benchmarks/results/import.{md,json}.

    python benchmarks/bench_import.py              # 100,000 topics (1,000,000 partitions)
    python benchmarks/bench_import.py --topics 10000
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_image  # noqa: E402
from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.image import MetadataDelta, MetadataImage, MetadataProvenance  # noqa: E402
from kraftsim.protocol.entries import Payload  # noqa: E402
from kraftsim.protocol.primitives import Uuid  # noqa: E402

NODES = 3
REPEAT = 3
TARGET = 1.5
CAT, REG, MV = bench_image.CAT, bench_image.REG, bench_image.MV
RC = REG["RegisterControllerRecord"]


def records(topics: int) -> Iterator[Payload]:
    """The benchmark cluster: the feature level, three combined nodes' registrations, the topics."""
    rb = bench_image.RB
    supported = CAT.at_release("4.0").supported_features()
    bf, cf = rb.nested["BrokerFeature"], RC.nested["ControllerFeature"]
    yield Payload(bench_image.FL, 0, bench_image.FL.cls(name="metadata.version", feature_level=MV.level))
    for n in range(1, NODES + 1):
        inc = Uuid.from_longs(7, n)
        yield Payload(rb, 3, rb.cls(broker_id=n, incarnation_id=inc, broker_epoch=n, fenced=False,
                                    features=[bf(name=k, min_supported_version=lo, max_supported_version=hi)
                                              for k, (lo, hi) in sorted(supported.items())]))
        yield Payload(RC, 0, RC.cls(controller_id=n, incarnation_id=inc,
                                    features=[cf(name=k, min_supported_version=lo, max_supported_version=hi)
                                              for k, (lo, hi) in sorted(supported.items())]))
    for t in range(topics):
        tid = bench_image.topic_id(t)
        yield Payload(bench_image.TR, 0, bench_image.TR.cls(name=f"topic-{t:06d}", topic_id=tid))
        for p in range(bench_image.PARTITIONS):
            r = [1 + (t * bench_image.PARTITIONS + p + i) % NODES for i in range(bench_image.RF)]
            yield Payload(bench_image.PR, bench_image.PRV, bench_image.PR.cls(
                partition_id=p, topic_id=tid, replicas=r, isr=r, leader=r[0], leader_epoch=0, partition_epoch=0))


def write_snapshot(topics: int, directory: Path) -> Path:
    d = MetadataDelta(MetadataImage(), CAT)
    count = 0

    def counted() -> Iterator[Payload]:
        nonlocal count
        for p in records(topics):
            count += 1
            yield p

    d.replay_all(counted())
    image = d.apply(MetadataProvenance(count - 1, bench_image.EPOCH, bench_image.TIME_MS, True))
    return bench_image.fast_write(image, directory)


def timed(argv: list[str], cleanup: Path | None = None) -> dict[str, Any]:
    """Best of REPEAT runs of `python -m kraftsim argv` (wall, children's CPU)."""
    best: dict[str, Any] | None = None
    for _ in range(REPEAT):
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], cwd=ROOT, capture_output=True, text=True, check=False,
                              timeout=3600)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"kraftsim {' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        run = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "first_line": proc.stdout.splitlines()[0][:160]}
        if best is None or wall < best["wall_s"]:
            best = run
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=100_000)
    args = ap.parse_args()
    load_before = load_average()
    scratch = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-import-", dir=scratch) as tmp:
        work = Path(tmp)
        (work / "src").mkdir()
        snap = write_snapshot(args.topics, work / "src")
        size = snap.stat().st_size
        replay_load = timed(["replay", "--no-verify", "--roundtrip", "none", str(snap)])
        replay_default = timed(["replay", str(snap)])
        imported = timed(["cluster", "import", str(snap), str(work / "c")], cleanup=work / "c")
    ratio = imported["wall_s"] / replay_load["wall_s"]
    ratio_cpu = imported["cpu_s"] / replay_load["cpu_s"]
    result = {
        "date": utc_now(), "python": platform.python_version(), "load_before": load_before,
        "load_after": load_average(), "scratch": str(scratch or tempfile.gettempdir()),
        "topics": args.topics, "partitions": args.topics * bench_image.PARTITIONS, "nodes": NODES,
        "snapshot_bytes": size, "replay_load_only": replay_load, "replay_default": replay_default,
        "import": imported, "ratio_wall": round(ratio, 3), "ratio_cpu": round(ratio_cpu, 3), "target": TARGET,
    }
    out = ROOT / "benchmarks" / "results"
    (out / "import.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    verdict = "met" if ratio <= TARGET else "not met"
    md = [
        "# `kraftsim cluster import` benchmark",
        "",
        (f"Generated by `python benchmarks/bench_import.py --topics {args.topics}` on {result['date']}. CPython "
        f"{result['python']}; load average before: {load_before}, after: {result['load_after']} (the machine is "
        f"shared: wall times include waiting for a CPU). Scratch files in {result['scratch']}."),
        "",
        (f"Snapshot: {args.topics:,} topics x {bench_image.PARTITIONS} partitions x {bench_image.RF} replicas "
        f"({result['partitions']:,} partitions) at {MV.version}, {NODES} combined nodes; {size:,} bytes."),
        "",
        "| command (fresh interpreter, best of 3) | wall | CPU |",
        "|---|---:|---:|",
        (f"| `kraftsim replay --no-verify --roundtrip none SNAPSHOT` | {replay_load['wall_s']:.3f} s | "
        f"{replay_load['cpu_s']:.3f} s |"),
        f"| `kraftsim replay SNAPSHOT` | {replay_default['wall_s']:.3f} s | {replay_default['cpu_s']:.3f} s |",
        f"| `kraftsim cluster import SNAPSHOT DIR` | {imported['wall_s']:.3f} s | {imported['cpu_s']:.3f} s |",
        "",
        f"Import / load-only replay: {ratio:.2f}x wall, {ratio_cpu:.2f}x CPU (target <= {TARGET}x): {verdict}.",
        "",
    ]
    (out / "import.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
