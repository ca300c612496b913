"""Benchmark of kraftsim.image at Kafka's benchmark shape: snapshot write and load, deltas, memory.

Shape (as Kafka's TopicsImage JMH benchmarks): N topics x 10 partitions x 3 replicas,
10,000 replicas per broker (12,500 topics -> 37 brokers, 100,000 -> 300), replicas placed
round-robin, metadata.version 4.0-IV3. For each N:

- write: the image as a `.checkpoint` file on disk, three ways:
  * records only: `iter_image_records` consumed (the image side of a write, no bytes);
  * fast write: the records (`iter_image_records(..., read_only=True)`: lists shared,
    since they are only encoded) encoded by the codec's C fast path
    (`batch_io.encode_values` for the batch layout, `batch_io.encode_batches` for the
    bytes) into Kafka's batch layout (appends of 1024 records merged into batches of at
    most 8 MiB, header and footer control batches), written to a `.part` file, fsynced
    and renamed: what `storage.write_snapshot` costs once it encodes on the fast path;
  * storage write: `storage.snapshot.write_snapshot(iter_image_records(..., read_only=True))`,
    as the snapshot emitter calls it (Kafka's append and batch rules in storage.batchfile).
  Both files are compared byte for byte.
- load: the `.checkpoint` file to an image, in a fresh interpreter (so peak memory is the
  load's own): `read_snapshot` (header, footer, every batch's CRC), each data batch decoded
  (`decode_file_batch`, the C decoder) and replayed with `MetadataDelta.replay_all` on the
  empty image, `finish_snapshot()`, `apply(provenance)`: what the loader does on a
  snapshot load. The loaded image must equal the written one (digest). Also timed: the
  decode alone, the full collection after the load, and `loading.load_path` on the file.
- deltas: one PartitionChangeRecord (median of 50); a zonal outage (broker 0 leaves every
  ISR, a new leader where it led): replay and apply apart;
- memory: bytes per partition the image retains (tracemalloc, separate build), peak RSS
  of the load (fresh process) and of the fast write (above the resident image);
- metadata.version change (largest N, or --mv-topics): the snapshot written at another MV
  against the number of records whose bytes change, and KIP-778's image rewrite
  (`mv_change.rewrite_at_metadata_version`).

Times: process CPU time and wall clock (time.perf_counter); the load, its decode and the
fast write are the best of REPEAT (3) runs, the rest one run. The machine may be shared:
the load average is recorded. Results: benchmarks/results/image.{md,json}.

    python benchmarks/bench_image.py            # 12,500 / 25,000 / 50,000 / 100,000 topics
    python benchmarks/bench_image.py --quick    # 12,500 only
    python benchmarks/bench_image.py --topics 12500 25000 --no-storage-write
"""

from __future__ import annotations

import argparse
import collections
import gc
import hashlib
import json
import os
import platform
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.image import (  # noqa: E402
    MetadataDelta, MetadataImage, MetadataProvenance, image_digest, iter_image_records)
from kraftsim.gcpause import collector_paused  # noqa: E402
from kraftsim.image.writer.image_writer import iter_image_values  # noqa: E402
from kraftsim.image.writer.mv_change import affected_components, rewrite_at_metadata_version  # noqa: E402
from kraftsim.image.pmap import PMap, hash_uuid  # noqa: E402
from kraftsim.protocol import batch_io, fastpath  # noqa: E402
from kraftsim.protocol.batch import RECORD_BATCH_OVERHEAD  # noqa: E402
from kraftsim.protocol.entries import Payload  # noqa: E402
from kraftsim.protocol.primitives import Uuid  # noqa: E402
from kraftsim.protocol.registry import default_registry  # noqa: E402
from kraftsim.storage.batchfile import MAX_BATCH_SIZE_BYTES, decode_file_batch, records_size  # noqa: E402
from kraftsim.storage.fileio import fsync_dir  # noqa: E402
from kraftsim.storage.names import SnapshotId, snapshot_file_name, snapshot_part_prefix  # noqa: E402
from kraftsim.storage.snapshot import (  # noqa: E402
    SNAPSHOT_APPEND_RECORDS, control_payload, read_snapshot, write_snapshot, write_snapshot_values)
from kraftsim.versions import default_catalog  # noqa: E402

REG = default_registry()
CAT = default_catalog()
MV = CAT.metadata_version("4.0-IV3")
PARTITIONS = 10
RF = 3
REPLICAS_PER_BROKER = 10_000
SIZES = [12_500, 25_000, 50_000, 100_000]
#: metadata.version changes measured from the 4.0-IV3 image: none, an upgrade, a downgrade that
#: changes only the features, one that changes every PartitionRecord (v2 -> v1), and one that also
#: changes every broker registration (RegisterBrokerRecord v3 -> v2, PartitionRecord v0).
MV_TARGETS = ["4.0-IV3", "4.1-IV0", "4.0-IV1", "3.9-IV0", "3.6-IV2"]

TR, PR, PCR, RB, FL = (REG[n] for n in ("TopicRecord", "PartitionRecord", "PartitionChangeRecord",
                                         "RegisterBrokerRecord", "FeatureLevelRecord"))
PRV = CAT.record_version("PartitionRecord", MV)
PCRV = CAT.record_version("PartitionChangeRecord", MV)
EPOCH = 1
REPEAT = 3  # the load, its decode and the fast write: best of this many runs
TIME_MS = 1_700_000_000_000  # every batch's timestamp (fixed: the files are deterministic)


# ----------------------------------------------------------------------------- the shape


def topic_id(t: int) -> Uuid:
    return Uuid.from_longs(0x5EED0000_00000000 | t, (t * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF)


def brokers_for(topics: int) -> int:
    return max(RF, topics * PARTITIONS * RF // REPLICAS_PER_BROKER)


def replicas_of(t: int, p: int, brokers: int) -> list[int]:
    k = t * PARTITIONS + p
    return [(k + i) % brokers for i in range(RF)]


def records(topics: int) -> Iterator[Payload]:
    """The records of a cluster of the benchmark shape, generated lazily."""
    brokers = brokers_for(topics)
    yield Payload(FL, 0, FL.cls(name="metadata.version", feature_level=MV.level))
    for b in range(brokers):
        yield Payload(RB, 3, RB.cls(broker_id=b, incarnation_id=Uuid.from_longs(7, b + 1), broker_epoch=b,
                                    fenced=False))
    for t in range(topics):
        tid = topic_id(t)
        yield Payload(TR, 0, TR.cls(name=f"topic-{t:06d}", topic_id=tid))
        for p in range(PARTITIONS):
            r = replicas_of(t, p, brokers)
            yield Payload(PR, PRV, PR.cls(partition_id=p, topic_id=tid, replicas=r, isr=r, leader=r[0],
                                          leader_epoch=0, partition_epoch=0))


def record_count(topics: int) -> int:
    return 1 + brokers_for(topics) + topics * (1 + PARTITIONS)


def build(topics: int) -> MetadataImage:
    d = MetadataDelta(MetadataImage(), CAT)
    d.replay_all(records(topics))
    return d.apply(MetadataProvenance(record_count(topics) - 1, EPOCH, TIME_MS, True))


def zonal_outage_records(img: MetadataImage, broker: int = 0) -> list[Payload]:
    out = []
    for t in img.topics.by_id.values():
        for pid, p in t.partitions.items():
            if broker in p.isr:
                isr = [b for b in p.isr if b != broker]
                leader = (isr[0] if isr else -1) if p.leader == broker else -2
                out.append(Payload(PCR, PCRV, PCR.cls(partition_id=pid, topic_id=t.id, isr=isr, leader=leader)))
    return out


# ----------------------------------------------------------------------------- measuring


class Clock:
    """Process CPU time and wall time of a block."""

    def __enter__(self) -> "Clock":
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu = time.process_time() - self.cpu0
        self.wall = time.perf_counter() - self.wall0


def rss_mb() -> float:
    """Current resident set size (MB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def reset_peak_rss() -> bool:
    """Restart the kernel's high-water mark of this process's RSS (Linux); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """The RSS high-water mark since the last reset (or since start) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ----------------------------------------------------------------------------- snapshot files


def kafka_batches(payloads: Iterable[Payload], *, header: list[Payload], footer: list[Payload],
                  max_batch_bytes: int = MAX_BATCH_SIZE_BYTES) -> Iterator[batch_io.BatchToWrite]:
    """The batches Kafka's snapshot writer forms: a header control batch, appends of 1024
    records merged into one data batch while it stays within `max_batch_bytes` (an append that
    does not fit completes it, and the drain that follows closes that append's batch too), a
    footer control batch. Mirrors storage.batchfile.BatchAccumulator (the files are compared)."""
    yield batch_io.BatchToWrite(0, EPOCH, TIME_MS, True, header)
    next_offset = len(header)
    open_payloads: list[Payload] = []
    open_size = 0
    base = next_offset
    it = iter(payloads)
    while True:
        group = [p for _, p in zip(range(SNAPSHOT_APPEND_RECORDS), it)]
        if not group:
            break
        lengths = [len(v) for v in batch_io.encode_values(group)]
        drained = False
        if open_payloads and max_batch_bytes - open_size < records_size(lengths, len(open_payloads)):
            yield batch_io.BatchToWrite(base, EPOCH, TIME_MS, False, open_payloads)
            open_payloads = []
            drained = True  # the writer drains now, closing the batch this append opens as well
        if not open_payloads:
            if RECORD_BATCH_OVERHEAD + records_size(lengths, 0) > max_batch_bytes:
                raise ValueError("one append does not fit in a batch")
            base, open_size = next_offset, RECORD_BATCH_OVERHEAD
        open_size += records_size(lengths, len(open_payloads))
        open_payloads.extend(group)
        next_offset += len(group)
        if drained:
            yield batch_io.BatchToWrite(base, EPOCH, TIME_MS, False, open_payloads)
            open_payloads = []
    if open_payloads:
        yield batch_io.BatchToWrite(base, EPOCH, TIME_MS, False, open_payloads)
    yield batch_io.BatchToWrite(next_offset, EPOCH, TIME_MS, True, footer)


def fast_write(img: MetadataImage, directory: Path, mv: Any = MV) -> Path:
    """The image as a `.checkpoint` via the codec's fast path, with write_snapshot's bytes and
    its .part -> fsync -> read-only -> rename -> fsync(dir) sequence."""
    sid = SnapshotId(*img.provenance.snapshot_id())
    header = [control_payload(REG, "SnapshotHeaderRecord", version=0, last_contained_log_timestamp=TIME_MS)]
    footer = [control_payload(REG, "SnapshotFooterRecord", version=0)]
    fd, tmp = tempfile.mkstemp(prefix=snapshot_part_prefix(sid), suffix=".part", dir=directory)
    with os.fdopen(fd, "wb") as f, collector_paused():  # an 8 MiB batch keeps ~75,000 messages alive
        records = iter_image_records(img, mv, CAT, read_only=True)  # encoded at once: lists may be shared
        for batch in kafka_batches(records, header=header, footer=footer):
            f.writelines(batch_io.encode_batches([batch]))  # each batch as soon as it is formed
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    path = directory / snapshot_file_name(sid)
    os.replace(tmp, path)
    fsync_dir(directory)
    return path


def storage_write(img: MetadataImage, directory: Path, mv: Any = MV) -> Path:
    """The emitter's records path (SnapshotEmitter without SnapshotCopies): the image's
    records as payloads, encoded by `storage.write_snapshot`."""
    return write_snapshot(directory, SnapshotId(*img.provenance.snapshot_id()),
                          iter_image_records(img, mv, CAT, read_only=True),
                          last_contained_log_timestamp=TIME_MS, time_ms=TIME_MS, registry=REG)


def emitter_write(img: MetadataImage, directory: Path, mv: Any = MV) -> Path:
    """The simulator's emitter path (SnapshotEmitter with SnapshotCopies, the first write
    of an image: no topic's values kept from an earlier one): the image's records encoded
    straight to their values (`iter_image_values`), framed by `storage.write_snapshot_values`.
    The same bytes as `storage_write`."""
    return write_snapshot_values(directory, SnapshotId(*img.provenance.snapshot_id()),
                                 iter_image_values(img, mv, CAT, registry=REG),
                                 last_contained_log_timestamp=TIME_MS, time_ms=TIME_MS, registry=REG)[0]


def load_checkpoint(path: Path) -> MetadataImage:
    """A snapshot load: read and check the file, replay its records on the empty image, finish, apply."""
    snap = read_snapshot(path, REG)
    delta = MetadataDelta(MetadataImage(), CAT)
    for fb in snap.batches:
        if not fb.batch.is_control:
            delta.replay_all(decode_file_batch(fb, REG))
    delta.finish_snapshot()
    sid = snap.snapshot_id
    return delta.apply(MetadataProvenance(sid.end_offset - 1, sid.epoch, snap.last_contained_log_timestamp, True))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- the load, in a child


def child_load(path: Path, expect: str, with_loader: bool) -> dict[str, Any]:
    """Run in a fresh interpreter: decode alone, then the load (peak RSS: the first load's own),
    each the best of REPEAT runs, then load_path once."""
    out: dict[str, Any] = {}
    for _ in range(REPEAT):
        gc.collect()
        with Clock() as c:
            snap = read_snapshot(path, REG)
            n = sum(len(decode_file_batch(fb, REG)) for fb in snap.batches if not fb.batch.is_control)
        del snap
        if c.cpu < out.get("decode_cpu", float("inf")):
            out["decode_cpu"], out["decode_wall"], out["decoded_records"] = c.cpu, c.wall, n
    for i in range(REPEAT):
        gc.collect()
        if i == 0:
            out["rss_before_mb"] = rss_mb()
            out["peak_reset"] = reset_peak_rss()
        with Clock() as c:
            img = load_checkpoint(path)
        if i == 0:
            out["load_peak_rss_mb"] = peak_rss_mb()
            with Clock() as g:
                gc.collect()
            out["gc_after_load_cpu"] = g.cpu
            out["rss_with_image_mb"] = rss_mb()
            out["digest_ok"] = image_digest(img) == expect
            out["partitions"] = img.topics.partition_count()
        if c.cpu < out.get("load_cpu", float("inf")):
            out["load_cpu"], out["load_wall"] = c.cpu, c.wall
        del img
    gc.collect()
    if with_loader:
        from kraftsim.image.loader.loading import load_path
        with Clock() as c:
            result = load_path(path, catalog=CAT, registry=REG)
        out["load_path_cpu"], out["load_path_wall"] = c.cpu, c.wall
        out["load_path_digest_ok"] = image_digest(result.image) == expect
    return out


def run_child_load(path: Path, expect: str, with_loader: bool) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-load", str(path), "--expect", expect]
    if with_loader:
        cmd.append("--with-loader")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"load child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- one size


def bench_size(topics: int, work: Path, *, storage: bool, loader: bool, mv: bool) -> dict[str, Any]:
    gc.collect()
    row: dict[str, Any] = {"topics": topics, "partitions": topics * PARTITIONS, "brokers": brokers_for(topics),
                           "records": record_count(topics)}
    with Clock() as c:
        img = build(topics)
    row["build_cpu"] = c.cpu
    digest = image_digest(img)
    tid = topic_id(topics // 2)

    # deltas
    def one_record(img: MetadataImage = img) -> MetadataImage:
        d = MetadataDelta(img, CAT)
        d.replay(Payload(PCR, PCRV, PCR.cls(partition_id=3, topic_id=tid,
                                            isr=[img.topics.get_topic(tid).partitions[3].isr[0]])))
        return d.apply()

    runs = []
    for _ in range(50):
        t0 = time.perf_counter()
        one_record()
        runs.append(time.perf_counter() - t0)
    row["one_record_us"] = sorted(runs)[len(runs) // 2] * 1e6
    outage = zonal_outage_records(img)
    row["outage_records"] = len(outage)
    d = MetadataDelta(img, CAT)
    with Clock() as c:
        d.replay_all(outage)
    row["outage_replay_cpu"], row["outage_replay_wall"] = c.cpu, c.wall
    with Clock() as c:
        after = d.apply()
    row["outage_apply_cpu"], row["outage_apply_wall"] = c.cpu, c.wall
    assert all(0 not in p.isr for t in after.topics.by_id.values() for p in t.partitions.values())
    del after, d, outage
    gc.collect()

    # write
    with Clock() as c:
        n = sum(1 for _ in iter_image_records(img, MV, CAT))
    row["records_cpu"], row["records_wall"] = c.cpu, c.wall
    assert n == row["records"]
    fast_dir = work / f"fast-{topics}"
    fast_dir.mkdir()
    gc.collect()
    row["rss_with_image_mb"] = rss_mb()
    fast_path: Path | None = None
    for i in range(REPEAT):
        if fast_path is not None:
            fast_path.unlink()  # the file is read-only, the directory is ours
        gc.collect()
        reset_peak_rss()
        with Clock() as c:
            fast_path = fast_write(img, fast_dir)
        if i == 0:
            row["fast_write_peak_above_image_mb"] = peak_rss_mb() - row["rss_with_image_mb"]
        if c.cpu < row.get("fast_write_cpu", float("inf")):
            row["fast_write_cpu"], row["fast_write_wall"] = c.cpu, c.wall
    row["snapshot_bytes"] = fast_path.stat().st_size
    if storage:
        storage_dir = work / f"storage-{topics}"
        storage_dir.mkdir()
        with Clock() as c:
            storage_path = storage_write(img, storage_dir)
        row["storage_write_cpu"], row["storage_write_wall"] = c.cpu, c.wall
        row["same_bytes"] = sha256(storage_path) == sha256(fast_path)
        shutil.rmtree(storage_dir)

    # metadata.version changes
    if mv:
        row["mv_changes"] = bench_mv_changes(img, work)
    del img
    gc.collect()

    # load (fresh interpreter)
    row.update(run_child_load(fast_path, digest, loader))
    shutil.rmtree(fast_dir)

    # memory the image retains
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    img = build(topics)
    gc.collect()
    row["bytes_per_partition"] = (tracemalloc.get_traced_memory()[0] - base) / (topics * PARTITIONS)
    tracemalloc.stop()
    del img
    gc.collect()
    return row


def value_hashes(img: MetadataImage, mv: Any) -> collections.Counter:
    """A multiset of (hashes of) the encoded record values of the image written at `mv`."""
    out: collections.Counter = collections.Counter()
    group: list[Payload] = []
    for p in iter_image_records(img, mv, CAT, read_only=True):
        group.append(p)
        if len(group) == 4096:
            out.update(map(hash, batch_io.encode_values(group)))
            group = []
    out.update(map(hash, batch_io.encode_values(group)))
    return out


def bench_mv_changes(img: MetadataImage, work: Path) -> list[dict[str, Any]]:
    """For each target MV: how many records change, what writing the snapshot costs, what KIP-778's rewrite costs."""
    base = value_hashes(img, MV)
    rows = []
    for target in MV_TARGETS:
        row: dict[str, Any] = {"target": target}
        row["components"] = list(affected_components(CAT, MV, target, img))
        new = value_hashes(img, target)
        row["records"] = sum(new.values())
        row["changed_records"] = sum((new - base).values())
        gc.collect()
        with Clock() as c:
            n = sum(1 for _ in iter_image_records(img, target, CAT))
        row["records_cpu"] = c.cpu
        d = work / f"mv-{target}"
        d.mkdir()
        with Clock() as c:
            fast_write(img, d, target)
        row["fast_write_cpu"], row["fast_write_wall"] = c.cpu, c.wall
        shutil.rmtree(d)
        gc.collect()
        with Clock() as c:
            rewritten, comps = rewrite_at_metadata_version(img, target, CAT)
        row["rewrite_cpu"], row["rewrite_wall"] = c.cpu, c.wall
        row["rewrite_components"] = list(comps)
        assert n == row["records"]
        del rewritten
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- topic map structures


def bench_maps(n: int, rounds: int = 100) -> list[tuple[int, str, float, float]]:
    """Cost of one update and one lookup in an n-key topic map, three ways."""
    keys = [topic_id(i) for i in range(n)]
    flat = {k: i for i, k in enumerate(keys)}
    chunks = 256
    chunked: list[dict] = [dict() for _ in range(chunks)]
    for k, v in flat.items():
        chunked[hash_uuid(k) % chunks][k] = v
    pm = PMap(hash_uuid).update(flat)
    probe = keys[n // 3]

    def per_op(fn: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        for _ in range(rounds):
            fn()
        return (time.perf_counter() - t0) / rounds * 1e6

    def flat_update() -> None:
        c = dict(flat)
        c[probe] = -1

    def chunked_update() -> None:
        outer = list(chunked)
        i = hash_uuid(probe) % chunks
        c = dict(outer[i])
        c[probe] = -1
        outer[i] = c

    def pmap_update() -> None:
        pm.set(probe, -1)

    lookups = keys[:: max(1, n // 2000)]

    def lookup_ns(get: Callable[[Any], Any]) -> float:
        t0 = time.perf_counter()
        for _ in range(10):
            for k in lookups:
                get(k)
        return (time.perf_counter() - t0) / (10 * len(lookups)) * 1e9

    def chunked_get(k: Any) -> Any:
        return chunked[hash_uuid(k) % chunks].get(k)

    return [(n, "copy-on-write dict", per_op(flat_update), lookup_ns(flat.get)),
            (n, f"two-level chunked dict ({chunks} chunks)", per_op(chunked_update), lookup_ns(chunked_get)),
            (n, f"pmap trie (depth {pm.depth()})", per_op(pmap_update), lookup_ns(pm.get))]


# ----------------------------------------------------------------------------- report


def _s(x: float) -> str:
    return f"{x:.2f} s"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def where_the_time_goes(r: dict[str, Any]) -> list[str]:
    """Notes on the largest size: the split of load and write between the codec, storage and the image."""
    load, decode = r["load_cpu"], r["decode_cpu"]
    out = [
        "Where the time goes at this size (CPU):",
        "",
        f"- load {_s(load)} = reading and decoding the file {_s(decode)} ({decode / load:.0%}; the C decoder, "
        f"kraftsim.protocol and storage.read_snapshot) + building the image {_s(load - decode)} (replay_all, "
        "finish_snapshot, apply: kraftsim.image).",
        f"- fast write {_s(r['fast_write_cpu'])}: the image's records take {_s(r['records_cpu'])} on their own "
        "(iter_image_records, fresh lists); the rest is encoding twice (sizes for the batch layout, then the "
        "batches), holding each 8 MiB batch's records until it is encoded, writing and fsync.",
    ]
    if "storage_write_cpu" in r:
        out.append(f"- `storage.write_snapshot` takes {_s(r['storage_write_cpu'])} for the same bytes: the "
                   "emitter's records path (storage.batchfile's accumulator: value sizes per append of 1024 "
                   "records, then one C encoder call per batch).")
    if "load_path_cpu" in r:
        out.append(f"- `loading.load_path` on the same file takes {_s(r['load_path_cpu'])}: the MetadataLoader's "
                   "path (opening the directory's files, the loader's bookkeeping, publishing).")
    return out + [""]


def write_markdown(rows: list[dict[str, Any]], maps: list[tuple[int, str, float, float]], meta: dict[str, Any],
                   path: Path) -> None:
    lines = [
        "# kraftsim.image benchmark",
        "",
        f"Generated by `python benchmarks/bench_image.py` on {meta['date']}. {meta['python']}, {meta['machine']}, "
        f"{meta['cpus']} logical CPUs; C fast path: {meta['fastpath']}. Load average (1/5/15 min) before: "
        f"{meta['load_before']}, after: {meta['load_after']} (the machine is shared: wall times include waiting "
        "for a CPU, CPU times do not).",
        "",
        f"Shape: topics x {PARTITIONS} partitions x {RF} replicas, {REPLICAS_PER_BROKER:,} replicas per broker, "
        f"metadata.version {MV}. Load, decode and fast write: best of {REPEAT} runs (the wall time of that run); "
        "everything else one run. CPU = process CPU time, wall = time.perf_counter.",
        "",
    ]
    big = rows[-1]
    if big["partitions"] >= 1_000_000:
        load_cpu = big["load_cpu"]
        write_cpu = big["fast_write_cpu"]
        lines += [
            "## Targets (issue 5) at 1,000,000 partitions",
            "",
            "| target | measured (CPU) | wall | verdict |",
            "|---|---:|---:|---|",
            f"| load a 1,000,000-partition snapshot file < 2 s | {_s(load_cpu)} | {_s(big['load_wall'])} | "
            f"{_verdict(load_cpu < 2)} |",
            f"| write it < 2 s (image -> .checkpoint on disk, fast path) | {_s(write_cpu)} | "
            f"{_s(big['fast_write_wall'])} | {_verdict(write_cpu < 2)} |",
        ]
        if "storage_write_cpu" in big:
            lines.append(f"| the same write through `storage.write_snapshot` (the emitter's records path) | {_s(big['storage_write_cpu'])} | "
                         f"{_s(big['storage_write_wall'])} | {_verdict(big['storage_write_cpu'] < 2)} |")
        outage = big["outage_replay_cpu"] + big["outage_apply_cpu"]
        lines += [
            f"| one-record delta < 1 ms | {big['one_record_us']:.0f} us (wall, median of 50) | | "
            f"{_verdict(big['one_record_us'] < 1000)} |",
            f"| zonal outage at 1,000,000 partitions < 1 s | {_s(outage)} | "
            f"{_s(big['outage_replay_wall'] + big['outage_apply_wall'])} | {_verdict(outage < 1)} |",
            f"| < 600 bytes of memory per partition | {big['bytes_per_partition']:.0f} B | | "
            f"{_verdict(big['bytes_per_partition'] < 600)} |",
            "",
        ]
        lines += where_the_time_goes(big)
    lines += [
        "## Snapshot load (.checkpoint -> image, fresh process)",
        "",
        "| topics | partitions | snapshot bytes | decode only | load (CPU) | load (wall) | of which decode | "
        "full GC after | peak RSS | RSS before | `load_path` (CPU) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = r["decode_cpu"] / r["load_cpu"] if r["load_cpu"] else 0
        loader = _s(r["load_path_cpu"]) if "load_path_cpu" in r else "-"
        lines.append(
            f"| {r['topics']:,} | {r['partitions']:,} | {r['snapshot_bytes'] / 1e6:.1f} MB | {_s(r['decode_cpu'])} | "
            f"{_s(r['load_cpu'])} | {_s(r['load_wall'])} | {share:.0%} | {_s(r['gc_after_load_cpu'])} | "
            f"{r['load_peak_rss_mb']:.0f} MB | {r['rss_before_mb']:.0f} MB | {loader} |")
    lines += [
        "",
        "load: `read_snapshot` (framing, CRC-32C of every batch, header and footer), each data batch "
        "decoded by the C decoder and replayed with `MetadataDelta.replay_all` on the empty image, "
        "`finish_snapshot()`, `apply(provenance)`; the loaded image's digest equals the written one's "
        "in every row. decode only: the same reading and decoding without the replay. full GC after: the "
        "collection right after the load (replay_all pauses the collector while it allocates; this is "
        "the deferred part). peak RSS: the load process's high-water mark during the load (RSS before: "
        "the interpreter with kraftsim imported). `load_path`: `kraftsim.image.loader.loading.load_path` on the "
        "same file (the MetadataLoader path).",
        "",
        "## Snapshot write (image -> .checkpoint on disk)",
        "",
        "| topics | records only (CPU) | fast write (CPU) | fast write (wall) | peak RSS above image | "
        "storage write (CPU) | storage write (wall) | same bytes | bytes/partition on disk |",
        "|---:|---:|---:|---:|---:|---:|---:|:---:|---:|",
    ]
    for r in rows:
        sw = (_s(r["storage_write_cpu"]), _s(r["storage_write_wall"]), "yes" if r["same_bytes"] else "**NO**") \
            if "storage_write_cpu" in r else ("-", "-", "-")
        lines.append(
            f"| {r['topics']:,} | {_s(r['records_cpu'])} | {_s(r['fast_write_cpu'])} | {_s(r['fast_write_wall'])} | "
            f"{r['fast_write_peak_above_image_mb']:.0f} MB | {sw[0]} | {sw[1]} | {sw[2]} | "
            f"{r['snapshot_bytes'] / r['partitions']:.0f} |")
    lines += [
        "",
        "records only: `iter_image_records` consumed, no bytes. fast write: the records "
        "(`iter_image_records(..., read_only=True)`, whose messages share their replica/ISR/directory lists) "
        "encoded by `batch_io.encode_values` (value sizes, for Kafka's batch layout: appends of 1024 records "
        "merged into batches of at most 8 MiB) and `batch_io.encode_batches` (the bytes, one call per batch), "
        "written to a `.part` file, fsynced, made read-only, renamed, directory fsynced, with the collector "
        "paused. storage write: `storage.snapshot.write_snapshot(iter_image_records(...))` as the emitter "
        "calls it without SnapshotCopies (`read_only=True`; the C encoder; the collector paused). same bytes: the two "
        "files are identical. peak RSS above image: the write's high-water mark minus the RSS before it.",
        "",
        "## Deltas and memory",
        "",
        "| topics | partitions | brokers | one-record delta | zonal outage: records | replay (CPU) | apply (CPU) | "
        "bytes/partition | RSS with image |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['topics']:,} | {r['partitions']:,} | {r['brokers']} | {r['one_record_us']:.0f} us | "
            f"{r['outage_records']:,} | {r['outage_replay_cpu']:.3f} s | {r['outage_apply_cpu']:.3f} s | "
            f"{r['bytes_per_partition']:.0f} | {r['rss_with_image_mb']:.0f} MB |")
    lines += [
        "",
        "one-record delta: one PartitionChangeRecord replayed and applied (wall, median of 50). zonal "
        "outage: broker 0 leaves every ISR it is in (one PartitionChangeRecord per such partition, a new "
        "leader where it led). bytes/partition: memory the image retains (tracemalloc), divided by "
        "partitions; it includes topics, brokers and the maps. RSS with image: the benchmark process "
        "holding the image (before writing).",
        "",
    ]
    mv_rows = [(r, m) for r in rows for m in r.get("mv_changes", [])]
    if mv_rows:
        lines += [
            "## metadata.version change: the snapshot at the new version against the size of the change",
            "",
            "| partitions | from -> to | components that can change | records changed / written | "
            "snapshot records (CPU) | snapshot file (CPU) | KIP-778 image rewrite (CPU) |",
            "|---:|---|---|---:|---:|---:|---:|",
        ]
        for r, m in mv_rows:
            lines.append(
                f"| {r['partitions']:,} | {MV} -> {m['target']} | {', '.join(m['components'])} | "
                f"{m['changed_records']:,} / {m['records']:,} | {_s(m['records_cpu'])} | {_s(m['fast_write_cpu'])} | "
                f"{m['rewrite_cpu']:.3f} s |")
        lines += [
            "",
            "records changed: records of the snapshot at the new version whose encoded bytes appear in no "
            "record of the snapshot at the old one (a multiset difference). Writing the snapshot costs the "
            "same whatever the change: the writer re-serializes every record (there is no reuse of unchanged "
            "serialized parts). KIP-778's rewrite of the image itself (`rewrite_at_metadata_version`: the "
            "components a change can alter, written and replayed, equal entities kept as the old objects) "
            "follows the change: features only for an upgrade or a features-only downgrade, every partition "
            "when PartitionRecord's version changes.",
            "",
        ]
    lines += [
        "## Topic map structures",
        "",
        "| keys | structure | one update (copy + set) | one lookup |",
        "|---:|---|---:|---:|",
    ]
    for n, name, upd, get in maps:
        lines.append(f"| {n:,} | {name} | {upd:.1f} us | {get:.0f} ns |")
    lines += ["", "The trie's update cost does not grow with the map; the chunked dict's grows as n/chunks, the "
              "flat dict's as n.", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only 12,500 topics")
    ap.add_argument("--topics", type=int, nargs="*", help="topic counts to run")
    ap.add_argument("--mv-topics", type=int, nargs="*", help="sizes that get the metadata.version section "
                    "(default: the largest)")
    ap.add_argument("--no-storage-write", action="store_true", help="skip storage.write_snapshot (slow)")
    ap.add_argument("--no-loader", action="store_true", help="skip loading.load_path")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "image.md")
    ap.add_argument("--child-load", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--expect", help=argparse.SUPPRESS)
    ap.add_argument("--with-loader", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_load:
        print(json.dumps(child_load(args.child_load, args.expect, args.with_loader)))
        return 0
    sizes = args.topics or ([12_500] if args.quick else SIZES)
    mv_sizes = set(args.mv_topics if args.mv_topics is not None else [max(sizes)])
    meta = {
        "date": utc_now(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": f"{platform.machine()} {platform.system()}", "cpus": os.cpu_count(),
        "fastpath": "yes" if fastpath.ENABLED else "no", "load_before": load_average(),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-image-") as tmp:
        for n in sizes:
            row = bench_size(n, Path(tmp), storage=not args.no_storage_write, loader=not args.no_loader,
                             mv=n in mv_sizes)
            rows.append(row)
            print(", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                            if k != "mv_changes"), flush=True)
            for m in row.get("mv_changes", []):
                print("  mv", m, flush=True)
    maps = bench_maps(100_000) + ([] if args.quick else bench_maps(1_000_000, rounds=20))
    for n, name, upd, get in maps:
        print(f"{n} keys, {name}: update {upd:.1f} us, lookup {get:.0f} ns")
    meta["load_after"] = load_average()
    write_markdown(rows, maps, meta, args.out)
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "maps": maps}, indent=1) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
