"""kraftsim against Kafka's own code on the same snapshot: decode, load, write, one-record delta.

The snapshot is bench_image.py's shape (N topics x 10 partitions x 3 replicas,
metadata.version 4.0-IV3; default N = 100,000: one million partitions), written once by
kraftsim. Both sides work on that file:

- decode: the file read, every batch's CRC checked, every record deserialized (kraftsim:
  storage.snapshot.SnapshotStream, one batch in memory at a time, as Kafka's reader);
- load: decode + replay into a delta on the empty image, finish the snapshot, apply
  (kraftsim: loading.load_path on the file, the product's snapshot load through
  MetadataLoader.handle_load_snapshot, streamed batch by batch, the image's digest
  checked; Kafka: MetadataDelta on MetadataImage.EMPTY, MetadataLoader's snapshot path,
  every partition counted);
- write: the loaded image written back as a snapshot by the emitter's path (kraftsim: the
  simulator's SnapshotEmitter path on an image's first write, every record encoded, none kept
  from an earlier write: bench_image.emitter_write; Kafka: RaftSnapshotWriter over
  RecordsSnapshotWriter, SnapshotEmitter's path); both files must equal the input byte
  for byte (sha256);
- delta: one PartitionChangeRecord on the loaded image, replayed and applied (median of 50).

Two bases, each stated beside its figures:
- cold: the op's first run in a fresh process (a fresh JVM for Kafka, via
  kraftsim.conformance.snapshot_peer; a fresh interpreter for kraftsim), as a tool user
  meets it; the whole process's wall time is kept too;
- warm: the best of runs 3-5 of 5 in one process (Kafka: after the JIT's warm-up, as JMH).
Memory: kraftsim's peak RSS over a cold load (the whole process) against the smallest -Xmx at
which Kafka's load completes (bisected to 8 MB; the JVM's own memory outside the heap not
counted, which favours Kafka).

The machine may be shared: kraftsim and the JVM run alternately (never at once), one JVM at a
time, and the load average is recorded. Results: benchmarks/results/vs_kafka.{md,json}.

    python benchmarks/bench_vs_kafka.py                 # 100,000 topics (1M partitions)
    python benchmarks/bench_vs_kafka.py --topics 12500  # quicker
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import load_average, utc_now, write_results  # noqa: E402
from benchmarks.bench_image import (  # noqa: E402
    CAT, PARTITIONS, PCR, PCRV, REG, TIME_MS, Clock, build, fast_write, image_digest, peak_rss_mb, sha256,
    emitter_write, topic_id)
from kraftsim.conformance import snapshot_peer  # noqa: E402
from kraftsim.conformance.dist import fetch, resolve_release  # noqa: E402
from kraftsim.image import MetadataDelta, MetadataImage  # noqa: E402
from kraftsim.image.loader.loading import load_path  # noqa: E402
from kraftsim.protocol.entries import Payload  # noqa: E402
from kraftsim.storage.names import METADATA_DIR_NAME, parse_snapshot_name  # noqa: E402
from kraftsim.storage.snapshot import SnapshotStream  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_RELEASE = "4.2.0"
OPS = snapshot_peer.OPS
RUNS = snapshot_peer.WARM_RUNS
DELTA_PARTITION = 3
DELTA_REPEATS = 50


# ----------------------------------------------------------------------------- kraftsim's side, in a child


def _decode(path: Path) -> int:
    with SnapshotStream(path, REG) as snap:
        return sum(map(len, snap.data_batches()))


def load_checkpoint(path: Path) -> MetadataImage:
    """The product's snapshot load (streamed; MetadataLoader's snapshot path)."""
    return load_path(path, catalog=CAT, registry=REG).image


def _one_record_delta(img: MetadataImage, tid: Any) -> None:
    d = MetadataDelta(img, CAT)
    d.replay(Payload(PCR, PCRV, PCR.cls(partition_id=DELTA_PARTITION, topic_id=tid,
                                        isr=[img.topics.get_topic(tid).partitions[DELTA_PARTITION].isr[0]])))
    d.apply()


def child(path: Path, ops: list[str], runs: int, expect: str, topics: int) -> dict[str, Any]:
    """Run in a fresh interpreter: each op `runs` times, in order (write and delta on an image loaded first)."""
    out: dict[str, Any] = {}
    img: MetadataImage | None = None
    tid = topic_id(topics // 2)
    for op in ops:
        walls, cpus = [], []
        for i in range(runs):
            if op == "load":
                img = None  # (the last run's image goes before the clock and the collection, on both sides)
            if i > 0:
                gc.collect()
            if op in ("write", "delta") and img is None:
                img = load_checkpoint(path)
            if op == "delta":
                assert img is not None
                each = []
                for _ in range(DELTA_REPEATS):
                    t0 = time.perf_counter()
                    _one_record_delta(img, tid)
                    each.append(time.perf_counter() - t0)
                walls.append(sorted(each)[DELTA_REPEATS // 2])
                continue
            with tempfile.TemporaryDirectory(prefix="kraftsim-vs-kafka-write-") as tmp, Clock() as c:
                if op == "decode":
                    out["records"] = _decode(path)
                elif op == "load":
                    img = load_checkpoint(path)
                else:
                    assert img is not None
                    written = emitter_write(img, Path(tmp))
                    c.__exit__()  # the write's time, not the checksum's
                    out.setdefault("write_sha256", sha256(written))
            walls.append(c.wall)
            cpus.append(c.cpu)
        out[f"{op}_wall_s"], out[f"{op}_cpu_s"] = walls, cpus
        if op == "load":
            assert img is not None
            out["digest_ok"] = image_digest(img) == expect
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def run_child(path: Path, ops: list[str], runs: int, expect: str, topics: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(path), "--ops", ",".join(ops),
           "--runs", str(runs), "--expect", expect, "--topics", str(topics)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"bench_vs_kafka: the kraftsim child failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------- both, alternating


def bench(topics: int, release: str, work: Path, bisect: tuple[int, int] | None,
          say: Callable[[str], None]) -> dict[str, Any]:
    say(f"building the {topics * PARTITIONS:,}-partition image and its snapshot")
    img = build(topics)
    expect = image_digest(img)
    directory = work / METADATA_DIR_NAME
    directory.mkdir()
    snapshot = fast_write(img, directory)
    del img
    gc.collect()
    input_sha = sha256(snapshot)
    name = parse_snapshot_name(snapshot.name)
    dist = fetch(resolve_release(release))
    peer = dict(end_offset=name.snapshot_id.end_offset, epoch=name.snapshot_id.epoch, time_ms=TIME_MS,
                topic_id=str(topic_id(topics // 2)), partition=DELTA_PARTITION)
    loads: list[list[float]] = []

    def loadavg() -> None:
        import os
        loads.append(list(os.getloadavg()))

    row: dict[str, Any] = {"kraftsim": {}, "kafka": {}}
    # warm: one process each, alternating
    loadavg()
    say("kraftsim warm: one interpreter, 5 runs of each op")
    ours = run_child(snapshot, list(OPS), RUNS, expect, topics)
    say("Kafka warm: one JVM, 5 runs of each op")
    kafka_file = work / "kafka-written" / snapshot.name
    kafka_file.parent.mkdir()
    theirs = snapshot_peer.run_peer(dist, snapshot, runs=RUNS, ops=OPS, keep=kafka_file, **peer)  # type: ignore[arg-type]
    if not ours.get("digest_ok") or theirs["partitions"] != topics * PARTITIONS:
        raise SystemExit(f"bench_vs_kafka: the images disagree (kraftsim digest ok: {ours.get('digest_ok')}, "
                         f"Kafka partitions {theirs['partitions']} of {topics * PARTITIONS})")
    for op in OPS:
        mine = ours[f"{op}_wall_s"]
        kafkas = [t / 1000 for t in theirs[f"{op}_wall_ms"]]
        row["kraftsim"][op] = {"runs_s": mine, "warm_s": snapshot_peer.warm(mine)}
        row["kafka"][op] = {"runs_s": kafkas, "warm_s": snapshot_peer.warm(kafkas)}
        if op != "delta":  # process CPU: what a loaded machine's waiting does not inflate
            cpu_mine, cpu_kafka = ours[f"{op}_cpu_s"], [t / 1000 for t in theirs[f"{op}_cpu_ms"]]
            row["kraftsim"][op].update(cpu_runs_s=cpu_mine, warm_cpu_s=snapshot_peer.warm(cpu_mine))
            row["kafka"][op].update(cpu_runs_s=cpu_kafka, warm_cpu_s=snapshot_peer.warm(cpu_kafka))
    row["same_bytes"] = {"kraftsim_write": ours["write_sha256"] == input_sha,
                         "kafka_write": theirs["write_sha256"] == input_sha}
    row["kafka_write_bytes"] = theirs.get("write_bytes")
    if not row["same_bytes"]["kafka_write"]:  # then the same image at least (Kafka's hash order may differ)
        row["kafka_write_same_image"] = image_digest(load_checkpoint(kafka_file)) == expect
        gc.collect()
    # cold: a fresh process per op, alternating
    for op in OPS:
        loadavg()
        say(f"kraftsim cold: {op}")
        c = run_child(snapshot, [op], 1, expect, topics)
        row["kraftsim"][op].update(cold_s=c[f"{op}_wall_s"][0], cold_process_s=c["process_wall_s"])
        if op != "delta":
            row["kraftsim"][op]["cold_cpu_s"] = c[f"{op}_cpu_s"][0]
        if op == "load":
            row["kraftsim"]["load_peak_rss_mb"] = c["peak_rss_mb"]
        say(f"Kafka cold: {op}")
        k = snapshot_peer.run_peer(dist, snapshot, runs=1, ops=[op], **peer)  # type: ignore[arg-type]
        row["kafka"][op].update(cold_s=k[f"{op}_wall_ms"][0] / 1000, cold_process_s=k["process_wall_s"])
        if op != "delta":
            row["kafka"][op]["cold_cpu_s"] = k[f"{op}_cpu_ms"][0] / 1000
    if bisect:
        say("Kafka: bisecting the smallest heap its load completes in")
        row["kafka"]["smallest_heap_mb"] = snapshot_peer.smallest_heap(
            dist, snapshot, end_offset=peer["end_offset"], epoch=peer["epoch"], time_ms=TIME_MS,  # type: ignore[arg-type]
            low_mb=bisect[0], high_mb=bisect[1], progress=say)
        row["kafka"]["heap_bracket_mb"] = list(bisect)
    loadavg()
    for op in OPS:
        for basis in ("warm", "cold"):
            row[f"ratio_{op}_{basis}"] = row["kraftsim"][op][f"{basis}_s"] / row["kafka"][op][f"{basis}_s"]
    row.update(topics=topics, partitions=topics * PARTITIONS, records=theirs["records"],
               snapshot_bytes=snapshot.stat().st_size, kafka_release=dist.release.version, java=dist.java.version,
               java_heap=snapshot_peer.DEFAULT_HEAP, runs=RUNS, load_averages=loads)
    return row


# ----------------------------------------------------------------------------- report

LABELS = {
    "decode": "decode (read, CRC, every record)",
    "load": "load into an image (decode + replay + apply)",
    "write": "write the image as a snapshot (emitter's path)",
    "delta": "one-record delta (replay + apply, median of 50)",
}


def _yes(flag: bool) -> str:
    return "yes" if flag else "no (see below)"


def _t(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 0.01 else f"{s:.2f} s"


def markdown(row: dict[str, Any], meta: dict[str, Any]) -> str:
    s, k = row["kraftsim"], row["kafka"]
    verdict = lambda r: "≤ 1.0: no slower" if r <= 1.0 else "> 1.0: slower"  # noqa: E731
    loads = "; ".join(" / ".join(f"{x:.2f}" for x in la) for la in row["load_averages"])
    md = [
        "# kraftsim vs Kafka's own code: snapshot decode, load, write, one-record delta",
        "",
        f"Run {meta['date']} on {meta['machine']}, Python {meta['python']}, Kafka {row['kafka_release']} on "
        f"Java {row['java']} (-Xmx{row['java_heap']} -Xms{row['java_heap']} for the timed runs, a fixed heap as "
        "kafka-server-start.sh gives a broker).",
        f"Load average (1 / 5 / 15 min) before each pair and at the end: {loads} — the machine is shared; "
        "kraftsim and the JVM ran alternately, never at once.",
        f"Snapshot: {row['topics']:,} topics x 10 partitions ({row['partitions']:,} partitions, "
        f"{row['records']:,} records, {row['snapshot_bytes'] / 1e6:.0f} MB), metadata.version 4.0-IV3, "
        "written by kraftsim, read by both (`python benchmarks/bench_vs_kafka.py`). Each side's rewrite of "
        f"the image equals it byte for byte: kraftsim's {_yes(row['same_bytes']['kraftsim_write'])}, "
        f"Kafka's {_yes(row['same_bytes']['kafka_write'])}.",
        "",
        "Basis of every line: **same work** on the same file. **Warm** = best of runs 3–5 of 5 in one process "
        "(Kafka after JIT warm-up, as JMH measures). **Cold** = the op's first run in a fresh process (a fresh "
        "JVM; a fresh interpreter with kraftsim imported), as a tool user meets it; the process column is the "
        "whole process's wall time, start-up and the file's preparation (for write and delta, a load) included.",
        "kraftsim's decode reads the file one batch at a time (`storage.snapshot.SnapshotStream`); its load is "
        "the product's (`loading.load_path`: MetadataLoader's snapshot path over the same stream). Before each "
        "load, on both sides, the last run's image is let go and a collection runs, outside the clock: the "
        "time is the load's alone (Python frees an image at once, the JVM at a later collection).",
        "",
        "| op | basis | kraftsim | Kafka | ratio kraftsim/Kafka | goal |",
        "|---|---|---|---|---|---|",
    ]
    for op in OPS:
        for basis in ("warm", "cold"):
            r = row[f"ratio_{op}_{basis}"]
            goal = verdict(r) if op in ("decode", "load") and basis == "warm" else ""
            md.append(f"| {LABELS[op]} | {basis}, same work | {_t(s[op][f'{basis}_s'])} | {_t(k[op][f'{basis}_s'])} "
                      f"| {r:.2f} | {goal} |")
    md += ["", "Process CPU time of the same runs (what waiting for a CPU on a loaded machine does not inflate; "
           "Kafka's includes its JIT and GC threads, kraftsim's its collector):", "",
           "| op | basis | kraftsim CPU | Kafka CPU | ratio |", "|---|---|---|---|---|"]
    for op in OPS:
        for basis in ("warm", "cold"):
            key = f"{basis}_cpu_s"
            if key in s[op] and key in k[op]:
                md.append(f"| {op} | {basis}, same work | {_t(s[op][key])} | {_t(k[op][key])} | "
                          f"{s[op][key] / k[op][key]:.2f} |")
    if not row["same_bytes"]["kafka_write"] and "kafka_write_same_image" in row:
        md += ["", f"Kafka's rewrite ({row['kafka_write_bytes']:,} bytes) differs from the input's bytes; loaded by "
               f"kraftsim it gives {'the same' if row['kafka_write_same_image'] else 'A DIFFERENT'} image."]
    md += ["", "| op | kraftsim cold process | Kafka cold process (fresh JVM) |", "|---|---|---|"]
    md += [f"| {op} | {s[op]['cold_process_s']:.2f} s | {k[op]['cold_process_s']:.2f} s |" for op in OPS]
    md += ["", "Every run (seconds):", ""]
    md += [f"- {op}: kraftsim {', '.join(_t(x) for x in s[op]['runs_s'])}; "
           f"Kafka {', '.join(_t(x) for x in k[op]['runs_s'])}" for op in OPS]
    if "smallest_heap_mb" in k:
        rss, heap = s["load_peak_rss_mb"], k["smallest_heap_mb"]
        md += ["", "## Memory", "",
               f"- kraftsim: peak RSS of the whole process over a cold load: **{rss:.0f} MB** (interpreter and "
               "imports included).",
               f"- Kafka: the smallest -Xmx at which its load completes: **{heap} MB** (bisected to 8 MB from "
               f"{' to '.join(map(str, k.get('heap_bracket_mb', [32, 4096])))} MB; heap only, the JVM's own memory "
               "outside the heap not counted).",
               f"- Basis: same load of the same file. Goal kraftsim's peak below Kafka's smallest heap: "
               f"{'met' if rss < heap else 'not met'} ({rss / heap:.2f}×)."]
    md.append("")
    return "\n".join(md)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=100_000, help="topics of 10 partitions (default 100,000)")
    ap.add_argument("--release", default=DEFAULT_RELEASE, help=f"the Kafka release to time (default {DEFAULT_RELEASE})")
    ap.add_argument("--no-bisect", action="store_true", help="skip the bisection of Kafka's smallest heap")
    ap.add_argument("--heap-bracket", default="32:4096", metavar="LOW:HIGH",
                    help="MB the bisection starts between (HIGH must fit; default 32:4096)")
    ap.add_argument("--no-save", action="store_true", help="print the result, do not write benchmarks/results")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--ops", default=",".join(OPS), help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=RUNS, help=argparse.SUPPRESS)
    ap.add_argument("--expect", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.ops.split(","), args.runs, args.expect, args.topics)))
        return 0
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-vs-kafka-") as tmp:
        low, _, high = args.heap_bracket.partition(":")
        row = bench(args.topics, args.release, Path(tmp), None if args.no_bisect else (int(low), int(high)),
                    lambda s: print(f"[{time.strftime('%H:%M:%S')}] {s}", file=sys.stderr, flush=True))
    meta = {"date": utc_now(), "machine": f"{platform.machine()} {platform.system()}",
            "python": platform.python_version(), "load_average": load_average()}
    print(json.dumps(row, indent=2))
    if not args.no_save:
        write_results(RESULTS, "vs_kafka", {"meta": meta, "result": row}, markdown(row, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
