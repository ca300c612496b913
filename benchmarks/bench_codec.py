"""Codec throughput: kraftsim (C fast path and pure Python) against kafka-python 3.0.12.

Run from the repository root:

    python -m benchmarks.bench_codec            # full run, writes benchmarks/results/codec.{md,json}
    python benchmarks/bench_codec.py --quick    # 100,000 partitions, fewer repeats, codec.quick.{md,json}

Two inputs, each measured in one run on the same bytes:

1. the largest oracle log, ../shared/oracle/kafka-4.2_induswargods/__cluster_metadata-0/
   00000000000000000000.log (3.7 MB, 51,244 batches, almost all holding one NoOpRecord);
2. a synthetic snapshot built with kraftsim: 1,000,000 PartitionRecords (v2: 3 replicas,
   ISR of 3, leader = first replica, 3 directory ids, uuid topic ids, 10 partitions per
   topic) with the 100,000 TopicRecords they need, a FeatureLevelRecord, and the snapshot
   header/footer control batches; data batches of 1024 records as Kafka's snapshot emitter
   writes them.

What each measurement includes (single thread, Python's default GC settings, best of N):

- decode, kraftsim fast: `batch_io.read_log_entries(data, registry)`: split into batches,
  size/magic/count checks, CRC-32C of every batch, v2 record parsing, metadata framing,
  full message decode into msgspec Structs, one LogEntry per record, all kept in a list.
  (Control batches, 2-4 per input, go through the pure-Python code inside this call.)
- decode, kraftsim fast streaming: the same decode through `batch_io.iter_log_entries`,
  which yields the entries a list of whole batches (at least 1,024 records) at a time;
  each list is counted and dropped, as kafka-python's iteration drops each record, so the
  memory is reused instead of being requested fresh from the kernel for every entry.
- decode, kraftsim pure: the same result with the pure-Python code:
  `split_batches` + `parse_batch` (CRC via google-crc32c) + `entries.decode_batch`.
- decode, kraftsim fast records only: `split_batches` + `parse_batch` + `batch.records()`
  through the C record parser: the same work kafka-python does (no message decode).
- decode, kafka-python: `MemoryRecords(data)` batch iteration, `validate_crc()` on every
  batch (asserted), every record iterated and its key and value read. kafka-python has no
  KRaft message schemas, so this column does NOT decode the metadata messages: compare it
  with "fast records only"; the "fast" column does strictly more work.
- encode, kraftsim fast / pure: `entries.encode_data_batch` for every data batch (the
  message objects are the input: message encode + framing + v2 records + batch header +
  CRC-32C) and `encode_control_batch` for control batches. The result is checked (outside
  the timing) to be byte-identical between fast and pure, and, for the oracle log, to the
  original file.
- encode, kafka-python: `DefaultRecordBatchBuilder(magic=2, ...)` per batch, `append` of
  every record and `build()` (v2 records + header + CRC-32C via the `crc32c` package).
  Its input is the already-framed record values (made by kraftsim outside the timing),
  because kafka-python cannot encode KRaft messages: it does less work than kraftsim's
  encode columns. (It also writes base offset 0 and epoch 0: not Kafka's bytes.)

records/s = records in the input / seconds; MB/s = bytes of the input (decode) or output
(encode) / seconds / 10**6. The rates are computed from process CPU time (the machine may
be shared); wall-clock seconds are recorded too, with the load average before and after,
and each figure is the best of N repetitions.

Issue 2's target, checked for every kraftsim row: at least 1,000,000 records/s on one
core and at least 10 times kafka-python's rate in the same direction, in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python benchmarks/bench_codec.py` from anywhere
    sys.path.insert(0, str(REPO))

from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.protocol import batch_io, fastpath  # noqa: E402
from kraftsim.protocol.batch import parse_batch, split_batches  # noqa: E402
from kraftsim.protocol.entries import Payload, decode_batch, encode_control_batch, encode_data_batch  # noqa: E402
from kraftsim.protocol.primitives import Uuid  # noqa: E402
from kraftsim.protocol.registry import default_registry  # noqa: E402

ORACLE_LOG = REPO.parent / "shared" / "oracle" / "kafka-4.2_induswargods" / "__cluster_metadata-0" / "00000000000000000000.log"
RESULTS = REPO / "benchmarks" / "results"
REGISTRY = default_registry()


# ------------------------------------------------------------------------------ inputs


class BatchSpec:
    """What is needed to write one batch again: header fields and the messages."""

    __slots__ = ("base_offset", "epoch", "timestamp", "control", "payloads", "values", "keys")

    def __init__(self, base_offset: int, epoch: int, timestamp: int, control: bool, payloads: list[Payload]):
        self.base_offset = base_offset
        self.epoch = epoch
        self.timestamp = timestamp
        self.control = control
        self.payloads = payloads
        self.values: list[bytes] = []
        self.keys: list[bytes | None] = []


def specs_from_bytes(data: bytes) -> list[BatchSpec]:
    """Decode a file (pure path) into batch specs, with record keys/values for kafka-python."""
    specs = []
    with fastpath.pure_python():
        for piece in split_batches(data):
            batch = parse_batch(piece.data)
            entries = decode_batch(batch, REGISTRY)
            spec = BatchSpec(batch.base_offset, batch.partition_leader_epoch, batch.base_timestamp, batch.is_control,
                             [Payload(e.record_type, e.version, e.message) for e in entries])
            for rec in batch.records():
                spec.keys.append(rec.key)
                spec.values.append(rec.value)
            specs.append(spec)
    return specs


def synthetic_snapshot(partitions: int, *, per_topic: int = 10, brokers: int = 12, batch_records: int = 1024,
                       epoch: int = 7, timestamp: int = 1_760_000_000_000, seed: int = 42) -> bytes:
    """A snapshot of `partitions` PartitionRecords, built with kraftsim."""
    rnd = random.Random(seed)
    header = REGISTRY["SnapshotHeaderRecord"]
    footer = REGISTRY["SnapshotFooterRecord"]
    feature = REGISTRY["FeatureLevelRecord"]
    topic = REGISTRY["TopicRecord"]
    part = REGISTRY["PartitionRecord"]
    dirs = [Uuid(rnd.randbytes(16)) for _ in range(brokers)]
    payloads = [Payload(feature, 0, feature.new(name="metadata.version", feature_level=29))]
    for t in range((partitions + per_topic - 1) // per_topic):
        topic_id = Uuid(rnd.randbytes(16))
        payloads.append(Payload(topic, 0, topic.new(name=f"topic-{t:07d}", topic_id=topic_id)))
        for p in range(min(per_topic, partitions - t * per_topic)):
            replicas = rnd.sample(range(1, brokers + 1), 3)
            payloads.append(Payload(part, 2, part.new(
                partition_id=p, topic_id=topic_id, replicas=replicas, isr=list(replicas), leader=replicas[0],
                leader_epoch=rnd.randrange(20), partition_epoch=rnd.randrange(40),
                directories=[dirs[b - 1] for b in replicas],
            )))
    out = [encode_control_batch(0, [Payload(header, 0, header.new(version=0, last_contained_log_timestamp=timestamp))],
                                epoch=epoch, timestamp=timestamp)]
    offset = 1
    for i in range(0, len(payloads), batch_records):
        chunk = payloads[i : i + batch_records]
        out.append(encode_data_batch(offset, chunk, epoch=epoch, timestamp=timestamp))
        offset += len(chunk)
    out.append(encode_control_batch(offset, [Payload(footer, 0, footer.new(version=0))], epoch=epoch, timestamp=timestamp))
    return b"".join(out)


# ------------------------------------------------------------------------------ the measured functions


def decode_fast(data: bytes) -> int:
    entries, tail = batch_io.read_log_entries(data, REGISTRY)
    assert tail is None
    return len(entries)


def decode_pure(data: bytes) -> int:
    with fastpath.pure_python():
        entries: list = []
        for piece in split_batches(data):
            entries += decode_batch(parse_batch(piece.data), REGISTRY)
    return len(entries)


def decode_fast_per_batch(data: bytes) -> int:
    entries: list = []
    for piece in split_batches(data):
        entries += decode_batch(parse_batch(piece.data), REGISTRY)
    return len(entries)


def decode_fast_streaming(data: bytes) -> int:
    n = 0
    for chunk in batch_io.iter_log_entries(data, REGISTRY):
        n += len(chunk)
    return n


def records_fast(data: bytes) -> int:
    n = 0
    for piece in split_batches(data):
        n += len(parse_batch(piece.data).records())
    return n


def decode_kafka_python(data: bytes) -> int:
    from kafka.record.memory_records import MemoryRecords

    n = 0
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise AssertionError("kafka-python: CRC mismatch")
        for rec in batch:
            rec.key
            rec.value
            n += 1
    return n


def encode_kraftsim(specs: list[BatchSpec]) -> list[bytes]:
    out = []
    for s in specs:
        encode = encode_control_batch if s.control else encode_data_batch
        out.append(encode(s.base_offset, s.payloads, epoch=s.epoch, timestamp=s.timestamp))
    return out


def to_write(specs: list[BatchSpec]) -> list[batch_io.BatchToWrite]:
    return [batch_io.BatchToWrite(s.base_offset, s.epoch, s.timestamp, s.control, s.payloads) for s in specs]


def encode_fast(batches: list[batch_io.BatchToWrite]) -> int:
    return sum(map(len, batch_io.encode_batches(batches)))


def encode_fast_per_batch(specs: list[BatchSpec]) -> int:
    return sum(map(len, encode_kraftsim(specs)))


def encode_pure(specs: list[BatchSpec]) -> int:
    with fastpath.pure_python():
        return sum(map(len, encode_kraftsim(specs)))


def encode_kafka_python(specs: list[BatchSpec]) -> int:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    out = []  # every implementation keeps all the batches it produced, as encode_batches returns them
    for s in specs:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
        ts = s.timestamp
        for i, (key, value) in enumerate(zip(s.keys, s.values)):
            builder.append(i, ts, key, value, [])
        out.append(builder.build())
    return sum(map(len, out))


# ------------------------------------------------------------------------------ timing


def measure(fn: Callable[[Any], int], arg: Any, repeat: int) -> dict[str, Any]:
    """Best-of-`repeat` wall and CPU seconds of fn(arg).

    Before each run the harness's own live objects (the input messages of the encode
    cells, for instance) are moved out of the collector's sight with gc.freeze(), so that
    every implementation pays only for the collections its own allocations cause.
    """
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        gc.freeze()
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn(arg)
        c1, w1 = time.process_time(), time.perf_counter()
        gc.unfreeze()
        walls.append(w1 - w0)
        cpus.append(c1 - c0)
    gc.collect()
    return {"best_s": min(walls), "median_s": statistics.median(walls), "cpu_best_s": min(cpus), "runs_s": walls,
            "result": result}


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        commit += " (+ uncommitted changes)" if dirty else ""
    except OSError:
        commit = "unknown"
    import kafka
    import msgspec

    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "date_utc": utc_now(),
        "kraftsim_commit": commit,
        "msgspec": msgspec.__version__,
        "kafka_python": kafka.__version__,
        "kafka_python_crc": "crc32c package" if _kafka_python_has_c_crc() else "pure-Python crc32c",
        "fastpath": fastpath.info(),
        "gc_thresholds": gc.get_threshold(),
    }


def _kafka_python_has_c_crc() -> bool:
    try:
        from kafka.record import util

        return util.crc32c_c is not None
    except Exception:
        return False


# ------------------------------------------------------------------------------ the run


def bench_input(name: str, data: bytes, repeat: int, *, check_original: bool, log: Callable[[str], None]) -> dict[str, Any]:
    log(f"[{name}] {len(data):,} bytes")
    n_batches = sum(1 for _ in split_batches(data))
    with fastpath.pure_python():
        n_records = sum(parse_batch(p.data).records_count for p in split_batches(data))
    log(f"[{name}] {n_batches:,} batches, {n_records:,} records")

    # Correctness first (not timed): the same entries both ways.
    fast_entries, _ = batch_io.read_log_entries(data, REGISTRY)
    with fastpath.pure_python():
        pure_entries = [e for p in split_batches(data) for e in decode_batch(parse_batch(p.data), REGISTRY)]
    assert fast_entries == pure_entries, "fast and pure decodes differ"
    del fast_entries, pure_entries
    gc.collect()

    rows: dict[str, Any] = {"records": n_records, "batches": n_batches, "input_bytes": len(data),
                            "reencode_identical_to_input": bool(check_original), "decode": {}, "encode": {}}
    # Decode cells run before the encode inputs exist: only the input bytes are alive.
    for label, fn in DECODERS:
        m = measure(fn, data, repeat)
        assert m["result"] == n_records, (label, m["result"], n_records)
        m.pop("result")
        rates(m, n_records, len(data))
        rows["decode"][label] = m
        log(f"[{name}] decode {label:30s} cpu {m['cpu_best_s']:7.3f} s  {m['records_per_s']:>11,.0f} rec/s "
            f"{m['mb_per_s']:7.1f} MB/s   (wall {m['best_s']:7.3f} s)")

    log(f"[{name}] preparing the encode inputs (messages, and framed values for kafka-python)")
    specs = specs_from_bytes(data)
    batches = to_write(specs)
    fast_bytes = batch_io.encode_batches(batches)
    assert encode_kraftsim(specs) == fast_bytes, "encode_batches and the per-batch API differ"
    with fastpath.pure_python():
        pure_bytes = encode_kraftsim(specs)
    assert fast_bytes == pure_bytes, "fast and pure encodes differ"
    if check_original:
        assert b"".join(fast_bytes) == data, "re-encoding does not reproduce the file"
    rows["encoded_bytes"] = sum(map(len, fast_bytes))
    del fast_bytes, pure_bytes
    gc.collect()
    for label, fn in ENCODERS:
        m = measure(fn, batches if fn is encode_fast else specs, repeat)
        produced = m.pop("result")
        m["output_bytes"] = produced
        rates(m, n_records, produced)
        rows["encode"][label] = m
        log(f"[{name}] encode {label:30s} cpu {m['cpu_best_s']:7.3f} s  {m['records_per_s']:>11,.0f} rec/s "
            f"{m['mb_per_s']:7.1f} MB/s   (wall {m['best_s']:7.3f} s)")
    judge(rows)
    return rows


DECODERS = (
    ("kraftsim fast", decode_fast),
    ("kraftsim fast, streaming", decode_fast_streaming),
    ("kraftsim fast, per-batch API", decode_fast_per_batch),
    ("kraftsim pure", decode_pure),
    ("kraftsim fast, records only", records_fast),
    ("kafka-python", decode_kafka_python),
)
ENCODERS = (
    ("kraftsim fast", encode_fast),
    ("kraftsim fast, per-batch API", encode_fast_per_batch),
    ("kraftsim pure", encode_pure),
    ("kafka-python", encode_kafka_python),
)
WHAT = {
    ("decode", "kraftsim fast"): "`batch_io.read_log_entries`: split + CRC + records + framing + message decode, LogEntry list",
    ("decode", "kraftsim fast, streaming"): "same decode via `batch_io.iter_log_entries`; each list of >= 1,024 entries dropped after counting",
    ("decode", "kraftsim fast, per-batch API"): "same result via `split_batches` + `parse_batch` + `entries.decode_batch` (C hook)",
    ("decode", "kraftsim pure"): "same result, pure Python (`KRAFTSIM_PURE_PYTHON`)",
    ("decode", "kraftsim fast, records only"): "`split_batches` + `parse_batch` (CRC) + `batch.records()`: no message decode",
    ("decode", "kafka-python"): "`MemoryRecords` batches + `validate_crc()` + record key/value: no message decode",
    ("encode", "kraftsim fast"): "`batch_io.encode_batches`: messages -> framed values -> records -> batches + CRC",
    ("encode", "kraftsim fast, per-batch API"): "same bytes via `entries.encode_data_batch` per batch (C hook)",
    ("encode", "kraftsim pure"): "same bytes, pure Python",
    ("encode", "kafka-python"): "`DefaultRecordBatchBuilder`: framed values -> records -> batch + CRC: no message encode",
}


TARGET_RECORDS_PER_S = 1_000_000
TARGET_VS_KAFKA_PYTHON = 10.0


def judge(rows: dict[str, Any]) -> None:
    """Mark every kraftsim row of each direction against issue 2's target (in place)."""
    for direction in ("decode", "encode"):
        cells = rows[direction]
        peer = cells.get("kafka-python")
        for label, m in cells.items():
            if label == "kafka-python" or peer is None:
                continue
            m["vs_kafka_python"] = peer["cpu_best_s"] / m["cpu_best_s"]
            m["meets_target"] = m["records_per_s"] >= TARGET_RECORDS_PER_S and m["vs_kafka_python"] >= TARGET_VS_KAFKA_PYTHON


def rates(m: dict[str, Any], records: int, nbytes: int) -> None:
    """Rates from the best process CPU time (the machine may be shared), and from wall-clock."""
    m["records_per_s"] = records / m["cpu_best_s"]
    m["mb_per_s"] = nbytes / m["cpu_best_s"] / 1e6
    m["records_per_s_wall"] = records / m["best_s"]
    m["mb_per_s_wall"] = nbytes / m["best_s"] / 1e6


def _verdict(m: dict[str, Any]) -> str:
    if "meets_target" not in m:
        return "—"
    return "**yes**" if m["meets_target"] else "no"


def _basis(label: str, direction: str) -> str:
    """What the ratio against kafka-python compares: the same work, or more on kraftsim's side."""
    if label.endswith("records only"):
        return "same work: framing + CRC + records, no message decode"
    return f"more work on kraftsim's side (it also {direction}s every message; kafka-python cannot)"


def _headline(report: dict[str, Any]) -> list[str]:
    """The ratio against kafka-python said both ways, with its basis, for the oracle log."""
    for name, rows in report["inputs"].items():
        dec = rows["decode"]
        fast, same = dec.get("kraftsim fast", {}), dec.get("kraftsim fast, records only", {})
        if name.startswith("Largest oracle log") and "vs_kafka_python" in fast and "vs_kafka_python" in same:
            return [f"Headline against kafka-python, decode of the largest oracle log ({rows['batches']:,} batches, "
                    f"almost all of one record): **{fast['vs_kafka_python']:.1f}x** with kraftsim decoding every "
                    "message as well (kafka-python's per-batch Python overhead dominates this input); "
                    f"**{same['vs_kafka_python']:.1f}x on the same work** (framing, CRC, records). Quote both.", ""]
    return []


def render_markdown(report: dict[str, Any]) -> str:
    info = report["machine"]
    for rows in report["inputs"].values():
        judge(rows)
    lines = [
        "# Codec throughput: kraftsim vs kafka-python",
        "",
        f"Generated by `python -m benchmarks.bench_codec{' --quick' if report['quick'] else ''}` on {info['date_utc']}.",
        "Single thread, default GC settings (harness objects frozen with gc.freeze() during each run), best of "
        f"{report['repeat']} runs per cell. Load average (1/5/15 min) before: {report['load_before']}, after: {report['load_after']}.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {info['cpu']} ({info['logical_cpus']} logical CPUs) |",
        f"| Python | {info['implementation']} {info['python']} on {info['platform']} |",
        f"| kraftsim | {info['kraftsim_commit']}; C fast path: {'yes' if info['fastpath'].get('have_speedups') else 'NO'}, CRC-32C: {info['fastpath'].get('crc32c', 'n/a')} |",
        f"| msgspec / kafka-python | {info['msgspec']} / {info['kafka_python']} (kafka-python CRC: {info['kafka_python_crc']}) |",
        "",
        "## Target (issue 2)",
        "",
        f"At least {TARGET_RECORDS_PER_S:,} records/s on one core and at least {TARGET_VS_KAFKA_PYTHON:.0f}x kafka-python's "
        "rate, in each direction, in this run. Every kraftsim row below is marked; the main rows:",
        "",
        "| input | direction | row | records/s | vs kafka-python | basis of the ratio | target met |",
        "|---|---|---|---:|---:|---|---|",
    ]
    for name, rows in report["inputs"].items():
        short = name.split(":")[0]
        for direction in ("decode", "encode"):
            for label, m in rows[direction].items():
                if label in ("kraftsim fast", "kraftsim fast, streaming", "kraftsim fast, records only") and "vs_kafka_python" in m:
                    lines.append(f"| {short} | {direction} | {label} | {m['records_per_s']:,.0f} | "
                                 f"{m['vs_kafka_python']:.1f}x | {_basis(label, direction)} | {_verdict(m)} |")
    lines += [""] + _headline(report)
    for name, rows in report["inputs"].items():
        lines += [
            f"## {name}",
            "",
            f"{rows['records']:,} records in {rows['batches']:,} batches; {rows['input_bytes']:,} bytes"
            + (" (re-encoding reproduces the file byte for byte)" if rows["reencode_identical_to_input"] else
               f"; fast and pure encodes byte-identical ({rows['encoded_bytes']:,} bytes)"),
            "",
            "| direction | implementation | what is timed | CPU s | records/s | MB/s | wall s | records/s (wall) | time vs fast | vs kafka-python | target met |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for direction in ("decode", "encode"):
            fast = rows[direction]["kraftsim fast"]["cpu_best_s"]
            for label, m in rows[direction].items():
                ratio = "1.0x" if label == "kraftsim fast" else f"{m['cpu_best_s'] / fast:.1f}x"
                vs = f"{m['vs_kafka_python']:.1f}x" if "vs_kafka_python" in m else "—"
                lines.append(f"| {direction} | {label} | {WHAT[(direction, label)]} | {m['cpu_best_s']:.3f} | "
                             f"{m['records_per_s']:,.0f} | {m['mb_per_s']:.1f} | {m['best_s']:.3f} | "
                             f"{m['records_per_s_wall']:,.0f} | {ratio} | {vs} | {_verdict(m)} |")
        lines.append("")
    lines += [
        "Notes",
        "",
        "- records/s and MB/s are computed from the best process CPU time (time.process_time: user + system, so page",
        "  faults count) because the machine is shared (see the load average above): wall-clock includes time the",
        "  process was not running. Wall-clock seconds and rates are shown too. MB/s = input bytes (decode) or output",
        "  bytes (encode) / seconds / 10^6. Every run's wall time and the medians are in codec"
        + (".quick" if report["quick"] else "") + ".json.",
        "- \"vs kafka-python\": kafka-python's CPU time / this row's CPU time, same input and direction, same run.",
        "- Every cell creates and frees its objects inside the timing (a cell returns a count, so what it built",
        "  is released before the clock stops). Every encode cell holds all the batches it produced until the end of",
        "  the call (so all pay for fresh output memory). kafka-python's decode drops each record as it iterates,",
        "  while the \"kraftsim fast\", \"per-batch API\" and \"pure\" decode cells hold every LogEntry until the end,",
        "  as a loader holding the records would. Holding them means the kernel must provide fresh, zeroed memory",
        "  for every entry (about 600 bytes of Python objects per PartitionRecord: the LogEntry tuple, its offset,",
        "  the message Struct and its five lists), and that kernel time is part of the process CPU time. The",
        "  \"streaming\" row does the same decode but drops each list of entries after counting it, as kafka-python",
        "  does, so its memory is reused: compare the two to see that cost.",
        "- The C decoder pauses the cycle collector during its own call (it creates no cyclic garbage) and untracks",
        "  the containers it builds; the pure path's objects are tracked, so part of its time is the collector's.",
        "  For a large decode it asks the kernel for each new allocator arena's pages in one call, and the encoder",
        "  does the same for each output batch (Linux MADV_POPULATE_WRITE): same memory, fewer page faults.",
        "- kafka-python has no KRaft message schemas: its decode does not decode messages and its encode starts from",
        "  framed values. Its like-for-like decode is \"kraftsim fast, records only\"; kraftsim's other rows do more work.",
        "- \"time vs fast\": CPU time of this row / CPU time of the \"kraftsim fast\" row of the same direction.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="100,000 partitions and fewer repeats")
    ap.add_argument("--partitions", type=int, help="partitions in the synthetic snapshot (default 1,000,000; quick 100,000)")
    ap.add_argument("--repeat", type=int, help="runs per cell, best kept (default 5; quick 2)")
    ap.add_argument("--out", type=Path, help="output path without suffix (default benchmarks/results/codec[.quick])")
    ap.add_argument("--render", type=Path, metavar="JSON", help="only rewrite the .md next to an existing results .json")
    args = ap.parse_args(argv)
    if args.render:
        report = json.loads(args.render.read_text())
        args.render.with_suffix(".md").write_text(render_markdown(report))
        print(f"wrote {args.render.with_suffix('.md')}")
        return 0
    if not fastpath.HAVE_SPEEDUPS:
        print("warning: the C extension is not built; the 'fast' columns run pure Python", file=sys.stderr)
    partitions = args.partitions or (100_000 if args.quick else 1_000_000)
    repeat = args.repeat or (2 if args.quick else 5)
    out = args.out or RESULTS / ("codec.quick" if args.quick else "codec")

    def log(msg: str) -> None:
        print(msg, flush=True)

    report: dict[str, Any] = {"quick": args.quick, "repeat": repeat, "machine": machine_info(),
                              "load_before": load_average(), "inputs": {}}
    if ORACLE_LOG.is_file():
        report["inputs"]["Largest oracle log: kafka-4.2_induswargods/__cluster_metadata-0/00000000000000000000.log"] = \
            bench_input("oracle log", ORACLE_LOG.read_bytes(), repeat, check_original=True, log=log)
    else:
        log(f"oracle log not found at {ORACLE_LOG}: skipped")
    log(f"building the synthetic snapshot ({partitions:,} partitions)")
    snapshot = synthetic_snapshot(partitions)
    report["inputs"][f"Synthetic snapshot: {partitions:,} PartitionRecords (+{(partitions + 9) // 10:,} TopicRecords)"] = \
        bench_input("synthetic snapshot", snapshot, repeat, check_original=True, log=log)
    report["load_after"] = load_average()

    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    Path(f"{out}.md").write_text(render_markdown(report))
    log(f"wrote {out}.md and {out}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
