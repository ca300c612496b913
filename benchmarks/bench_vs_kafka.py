"""kraftsim against Kafka's own code on the same snapshot: decode, and load into an image.

The snapshot is bench_image.py's shape (N topics x 10 partitions x 3 replicas,
metadata.version 4.0-IV3; default N = 100,000: one million partitions), written once by
kraftsim. Both sides read that file:

- kraftsim, in a fresh interpreter (bench_image.run_child_load): `read_snapshot` and every
  data batch decoded (decode), then decode + `MetadataDelta.replay_all` on the empty image,
  `finish_snapshot()`, `apply()` (load); the image must equal the written one (digest).
- Kafka (benchmarks/java/KafkaSnapshotPeer.java, compiled now against a fetched release's
  jars, see kraftsim.conformance): RecordsSnapshotReader over the file with CRC checks,
  every record deserialized (decode), and each replayed into Kafka's MetadataDelta, then
  finishSnapshot() and apply() (load); its image must hold every partition.

Each time is the best of REPEAT runs in one process (the JVM's first runs warm its JIT).
The ratio is kraftsim's wall time over Kafka's: at most 1.0 means kraftsim is no slower.
The machine may be shared: the load average is recorded. Results:
benchmarks/results/vs_kafka.{md,json}.

    python benchmarks/bench_vs_kafka.py                 # 100,000 topics (1M partitions)
    python benchmarks/bench_vs_kafka.py --topics 12500  # quicker
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import load_average, utc_now  # noqa: E402
from benchmarks.bench_image import PARTITIONS, REPEAT, build, fast_write, image_digest, run_child_load  # noqa: E402
from kraftsim.conformance.dist import KafkaDist, fetch, resolve_release  # noqa: E402
from kraftsim.storage.names import METADATA_DIR_NAME, parse_snapshot_name  # noqa: E402

PEER = Path(__file__).resolve().parent / "java" / "KafkaSnapshotPeer.java"
RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_RELEASE = "4.2.0"
PEER_TIMEOUT_S = 1800
JAVA_HEAP = "8g"


def compile_peer(dist: KafkaDist) -> Path:
    """KafkaSnapshotPeer compiled against the release's jars (cached beside them, by source hash)."""
    tag = hashlib.sha256(PEER.read_bytes()).hexdigest()[:12]
    out = dist.home / f"snapshot-peer-{tag}"
    if (out / "KafkaSnapshotPeer.class").is_file():
        return out
    javac = dist.java.path.resolve().parent / "javac"
    javac_cmd = str(javac) if javac.is_file() else shutil.which("javac")
    if javac_cmd is None:
        raise SystemExit("bench_vs_kafka: needs javac (a JDK 17+) to compile the Kafka peer")
    staging = Path(tempfile.mkdtemp(prefix=".peer.", dir=dist.home))
    done = subprocess.run([javac_cmd, "-nowarn", "-d", str(staging), "-cp", dist.classpath, str(PEER)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise SystemExit(f"bench_vs_kafka: compiling the Kafka peer failed:\n{done.stderr}")
    staging.rename(out)
    return out


def run_peer(dist: KafkaDist, snapshot: Path, repeats: int) -> dict[str, Any]:
    name = parse_snapshot_name(snapshot.name)
    classes = compile_peer(dist)
    cmd = [str(dist.java.path), f"-Xmx{JAVA_HEAP}", "-cp", f"{classes}:{dist.classpath}", "KafkaSnapshotPeer",
           str(snapshot.parent), str(name.snapshot_id.end_offset), str(name.snapshot_id.epoch), str(repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=PEER_TIMEOUT_S)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"bench_vs_kafka: the Kafka peer failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def bench(topics: int, release: str, work: Path) -> dict[str, Any]:
    img = build(topics)
    expect = image_digest(img)
    directory = work / METADATA_DIR_NAME
    directory.mkdir()
    snapshot = fast_write(img, directory)
    del img
    ours = run_child_load(snapshot, expect, False)
    dist = fetch(resolve_release(release))
    theirs = run_peer(dist, snapshot, REPEAT)
    partitions = topics * PARTITIONS
    if not ours.get("digest_ok") or theirs["partitions"] != partitions:
        raise SystemExit(f"bench_vs_kafka: the images disagree (kraftsim digest ok: {ours.get('digest_ok')}, "
                         f"Kafka partitions {theirs['partitions']} of {partitions})")
    return {
        "topics": topics, "partitions": partitions, "records": theirs["records"],
        "snapshot_bytes": snapshot.stat().st_size, "kafka_release": dist.release.version,
        "java": dist.java.version, "repeats": REPEAT,
        "kraftsim": {"decode_wall_s": ours["decode_wall"], "decode_cpu_s": ours["decode_cpu"],
                     "load_wall_s": ours["load_wall"], "load_cpu_s": ours["load_cpu"]},
        "kafka": {"decode_wall_s": theirs["decode_wall_ms"] / 1000, "decode_cpu_s": theirs["decode_cpu_ms"] / 1000,
                  "load_wall_s": theirs["load_wall_ms"] / 1000, "load_cpu_s": theirs["load_cpu_ms"] / 1000},
        "ratio_decode": ours["decode_wall"] / (theirs["decode_wall_ms"] / 1000),
        "ratio_load": ours["load_wall"] / (theirs["load_wall_ms"] / 1000),
    }


def write_results(row: dict[str, Any], meta: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "vs_kafka.json").write_text(json.dumps({"meta": meta, "result": row}, indent=2) + "\n",
                                           encoding="utf-8")
    k, s = row["kafka"], row["kraftsim"]
    verdict = lambda r: "no slower" if r <= 1.0 else "slower"  # noqa: E731
    md = [
        "# kraftsim vs Kafka's own code: snapshot decode and image load",
        "",
        f"Run {meta['date']} on {meta['machine']}, Python {meta['python']}, Kafka {row['kafka_release']} on "
        f"Java {row['java']}; load average {meta['load_average']} (the machine may be shared).",
        f"Snapshot: {row['topics']:,} topics x 10 partitions ({row['partitions']:,} partitions, "
        f"{row['records']:,} records, {row['snapshot_bytes'] / 1e6:.0f} MB), metadata.version 4.0-IV3, "
        "written by kraftsim, read by both. Best of "
        f"{row['repeats']} runs each (`python benchmarks/bench_vs_kafka.py`).",
        "",
        "| step | kraftsim wall (cpu) | Kafka wall (cpu) | ratio kraftsim/Kafka | goal ≤ 1.0 |",
        "|---|---|---|---|---|",
        f"| decode (read, CRC, every record) | {s['decode_wall_s']:.2f} s ({s['decode_cpu_s']:.2f} s) | "
        f"{k['decode_wall_s']:.2f} s ({k['decode_cpu_s']:.2f} s) | {row['ratio_decode']:.2f} | "
        f"{verdict(row['ratio_decode'])} |",
        f"| load into an image (decode + replay + apply) | {s['load_wall_s']:.2f} s ({s['load_cpu_s']:.2f} s) | "
        f"{k['load_wall_s']:.2f} s ({k['load_cpu_s']:.2f} s) | {row['ratio_load']:.2f} | "
        f"{verdict(row['ratio_load'])} |",
        "",
        "Both cpu columns are process CPU time (kraftsim in a fresh interpreter; Kafka's JVM with its JIT",
        "and GC threads, which can run in parallel with the benchmark's thread). On a shared machine the",
        "wall times carry the other processes' load; compare runs by their load average.",
        "",
    ]
    (RESULTS / "vs_kafka.md").write_text("\n".join(md), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=100_000, help="topics of 10 partitions (default 100,000)")
    ap.add_argument("--release", default=DEFAULT_RELEASE, help=f"the Kafka release to time (default {DEFAULT_RELEASE})")
    ap.add_argument("--no-save", action="store_true", help="print the result, do not write benchmarks/results")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-vs-kafka-") as tmp:
        row = bench(args.topics, args.release, Path(tmp))
    meta = {"date": utc_now(), "machine": f"{platform.machine()} {platform.system()}",
            "python": platform.python_version(), "load_average": load_average()}
    print(json.dumps(row, indent=2))
    if not args.no_save:
        write_results(row, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
