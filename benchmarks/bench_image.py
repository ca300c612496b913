"""Benchmark of kraftsim.image at Kafka's benchmark shape.

Shape (as Kafka's TopicsImage JMH benchmarks): N topics x 10 partitions x 3 replicas,
10,000 replicas per broker (so 12,500 topics -> 37 brokers, 100,000 -> 300), replicas
placed round-robin. For each N it measures:

- build: replaying the TopicRecords and PartitionRecords into one delta and applying it;
- one-record delta: one PartitionChangeRecord (ISR shrink) replayed and applied;
- zonal outage: broker 0 leaves every ISR it is in (one PartitionChangeRecord per such
  partition, a new leader where it led): replay time and apply time, reported apart;
- write_image at 4.0-IV3 (the records of a snapshot, not encoded);
- digest of the whole image;
- memory: bytes per partition retained by the image (tracemalloc, in a separate build so
  the timings are not slowed down), and peak RSS of the process.

A second section compares map structures for the topic map at 100,000 keys (why pmap.py is
a trie). Results go to benchmarks/results/image.md.

    python benchmarks/bench_image.py            # 12,500 / 25,000 / 50,000 / 100,000 topics
    python benchmarks/bench_image.py --quick    # 12,500 only
    python benchmarks/bench_image.py --topics 12500 100000
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kraftsim.image import (  # noqa: E402
    MetadataDelta, MetadataImage, MetadataProvenance, image_digest, iter_image_records, write_image)
from kraftsim.image.pmap import PMap, hash_uuid  # noqa: E402
from kraftsim.protocol.entries import Payload  # noqa: E402
from kraftsim.protocol.primitives import Uuid  # noqa: E402
from kraftsim.protocol.registry import default_registry  # noqa: E402
from kraftsim.versions import default_catalog  # noqa: E402

REG = default_registry()
CAT = default_catalog()
MV = CAT.metadata_version("4.0-IV3")
PARTITIONS = 10
RF = 3
REPLICAS_PER_BROKER = 10_000

TR, PR, PCR, RB, FL = (REG[n] for n in ("TopicRecord", "PartitionRecord", "PartitionChangeRecord",
                                         "RegisterBrokerRecord", "FeatureLevelRecord"))
PRV = CAT.record_version("PartitionRecord", MV)
PCRV = CAT.record_version("PartitionChangeRecord", MV)


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


def build(topics: int) -> MetadataImage:
    d = MetadataDelta(MetadataImage())
    for r in records(topics):
        d.replay(r)
    return d.apply(MetadataProvenance(topics * 11, 1, 0, True))


def zonal_outage_records(img: MetadataImage, broker: int = 0) -> list[Payload]:
    out = []
    for t in img.topics.by_id.values():
        for pid, p in t.partitions.items():
            if broker in p.isr:
                isr = [b for b in p.isr if b != broker]
                leader = (isr[0] if isr else -1) if p.leader == broker else -2
                out.append(Payload(PCR, PCRV, PCR.cls(partition_id=pid, topic_id=t.id, isr=isr, leader=leader)))
    return out


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t0, result


def rss_mb() -> float:
    """Peak resident set size of the process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """Current resident set size (MB); Linux only, else the peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return rss_mb()


def bench_size(topics: int) -> dict[str, Any]:
    gc.collect()
    row: dict[str, Any] = {"topics": topics, "partitions": topics * PARTITIONS, "brokers": brokers_for(topics)}
    row["build_s"], img = timed(build, topics)
    tid = topic_id(topics // 2)

    def one_record() -> MetadataImage:
        d = MetadataDelta(img)
        d.replay(Payload(PCR, PCRV, PCR.cls(partition_id=3, topic_id=tid, isr=[img.topics.get_topic(tid).partitions[3].isr[0]])))
        return d.apply()

    runs = [timed(one_record)[0] for _ in range(50)]
    row["one_record_us"] = sorted(runs)[len(runs) // 2] * 1e6

    outage = zonal_outage_records(img)
    row["outage_records"] = len(outage)
    d = MetadataDelta(img)
    t0 = time.perf_counter()
    for r in outage:
        d.replay(r)
    t1 = time.perf_counter()
    after = d.apply()
    t2 = time.perf_counter()
    row["outage_replay_s"], row["outage_apply_s"] = t1 - t0, t2 - t1
    assert all(0 not in p.isr for t in after.topics.by_id.values() for p in t.partitions.values())

    gc.collect()
    row["rss_with_image_mb"] = current_rss_mb()
    row["write_s"], out = timed(write_image, img, MV, CAT)
    row["write_records"] = len(out)
    del out
    row["write_stream_s"], _ = timed(lambda: sum(1 for _ in iter_image_records(img, MV, CAT)))
    row["digest_s"], _ = timed(image_digest, img)
    del img, after, d, outage
    gc.collect()

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    img = build(topics)
    gc.collect()
    row["bytes_per_partition"] = (tracemalloc.get_traced_memory()[0] - base) / (topics * PARTITIONS)
    tracemalloc.stop()
    del img
    gc.collect()
    row["peak_rss_mb"] = rss_mb()
    return row


def bench_maps(n: int, rounds: int = 100) -> list[tuple[int, str, float, float]]:
    """Cost of one update and one lookup in an n-key topic map, three ways."""
    keys = [topic_id(i) for i in range(n)]
    flat = {k: i for i, k in enumerate(keys)}
    chunks = 256
    chunked = [dict() for _ in range(chunks)]
    for k, v in flat.items():
        chunked[hash_uuid(k) % chunks][k] = v
    pm = PMap(hash_uuid).update(flat)
    probe = keys[n // 3]

    def per_op(fn: Any) -> float:
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

    def lookup_ns(get: Any) -> float:
        t0 = time.perf_counter()
        for _ in range(10):
            for k in lookups:
                get(k)
        return (time.perf_counter() - t0) / (10 * len(lookups)) * 1e9

    def chunked_get(k: Any) -> Any:
        return chunked[hash_uuid(k) % chunks].get(k)

    def flat_get(k: Any) -> Any:
        return flat.get(k)

    return [(n, "copy-on-write dict", per_op(flat_update), lookup_ns(flat_get)),
            (n, f"two-level chunked dict ({chunks} chunks)", per_op(chunked_update), lookup_ns(chunked_get)),
            (n, f"pmap trie (depth {pm.depth()})", per_op(pmap_update), lookup_ns(pm.get))]


def write_markdown(rows: list[dict[str, Any]], maps: list[tuple[int, str, float, float]], path: Path) -> None:
    lines = [
        "# kraftsim.image benchmark",
        "",
        f"`python benchmarks/bench_image.py` on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {platform.system()}. Shape: topics x {PARTITIONS} partitions x {RF} replicas, "
        f"{REPLICAS_PER_BROKER:,} replicas per broker, metadata.version {MV}. Times are wall clock, one run "
        "(the one-record delta: median of 50).",
        "",
        "| topics | partitions | brokers | build from records | one-record delta | zonal outage: records | replay | apply "
        "| write_image (list) | write (streamed) | digest | bytes/partition | RSS with image | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['topics']:,} | {r['partitions']:,} | {r['brokers']} | {r['build_s']:.2f} s | "
            f"{r['one_record_us']:.0f} us | {r['outage_records']:,} | {r['outage_replay_s']:.3f} s | "
            f"{r['outage_apply_s']:.3f} s | {r['write_s']:.2f} s | {r['write_stream_s']:.2f} s | {r['digest_s']:.2f} s | "
            f"{r['bytes_per_partition']:.0f} | {r['rss_with_image_mb']:.0f} MB | {r['peak_rss_mb']:.0f} MB |")
    lines += [
        "",
        "bytes/partition: memory the image retains (tracemalloc), divided by partitions; it includes topics, "
        "brokers and the maps. RSS with image: the process's resident size with the image (and the base image of "
        "the deltas) loaded, before writing. Peak RSS: the process's high-water mark so far (sizes run in "
        "increasing order); it includes the list `write_image` returns (1.1 records per partition). write "
        "(streamed) consumes `iter_image_records` without keeping the records; the list version is slower "
        "mostly because of the garbage collector walking the million new list objects.",
        "",
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
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "image.md")
    args = ap.parse_args(argv)
    sizes = args.topics or ([12_500] if args.quick else [12_500, 25_000, 50_000, 100_000])
    rows = []
    for n in sizes:
        row = bench_size(n)
        rows.append(row)
        print(", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    maps = bench_maps(100_000) + ([] if args.quick else bench_maps(1_000_000, rounds=20))
    for n, name, upd, get in maps:
        print(f"{n} keys, {name}: update {upd:.1f} us, lookup {get:.0f} ns")
    write_markdown(rows, maps, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
