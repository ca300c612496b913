"""`kraftsim snapshot-cost`: how big is a cluster's snapshot, and how long do kraftsim and Kafka take
to write and load it?

One cluster shape (topics x partitions, replication factor, brokers) at one metadata.version:
the synthetic image is built, written as a Kafka snapshot (the exact bytes Kafka writes) and
loaded back, each several times. With `--with-kafka RELEASE` the same file goes through Kafka's
own code from the fetched jars (kraftsim.conformance.snapshot_peer), warm and cold, in the same
run. The work lives in kraftsim.pipeline.snapshot_cost; `kraftsim spark snapshot-cost` sweeps a
grid of shapes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any, Callable

from kraftsim.conformance.dist import KafkaUnavailable
from kraftsim.cli.common import add_catalog_options, bounded_int, catalog_from_args
from kraftsim.errors import UsageError
from kraftsim.image.synthetic import ClusterShape

HELP = ("the size of a cluster's snapshot and the time to write and load it, in kraftsim and (--with-kafka) "
        "in Kafka's own code, warm and cold")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("snapshot-cost", help=HELP, description=HELP)
    p.add_argument("--topics", type=bounded_int(0, 10_000_000, "a number of topics"), default=1000,
                   help="topics (default: %(default)s)")
    p.add_argument("--partitions", type=bounded_int(1, 100_000, "a number of partitions"), default=10,
                   help="partitions of each topic (default: %(default)s)")
    p.add_argument("--rf", type=bounded_int(1, 100, "a replication factor"), default=3,
                   help="replicas of each partition (default: %(default)s)")
    p.add_argument("--brokers", type=bounded_int(1, 100_000, "a number of brokers"), default=12,
                   help="registered brokers (default: %(default)s)")
    p.add_argument("--mv", default="4.0-IV3", metavar="VERSION",
                   help="the metadata.version the snapshot is written at (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic cluster (default: %(default)s)")
    p.add_argument("--runs", type=bounded_int(1, 50, "a number of runs"), default=5,
                   help="runs of each step; warm = the best of runs 3 on (default: %(default)s)")
    p.add_argument("--with-kafka", metavar="RELEASE",
                   help="also time Kafka's own snapshot decode, load, write and one-record delta (a fetched "
                        "release: `kraftsim kafka fetch RELEASE`; needs a JDK 17+)")
    p.add_argument("--kafka-heap", default=None, metavar="SIZE",
                   help="the heap of Kafka's JVM, fixed as a broker's (-Xmx and -Xms; default: 1g)")
    p.add_argument("--no-fsync", action="store_true", help="write without fsync (Kafka fsyncs)")
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="do not report progress on stderr")
    add_catalog_options(p)
    p.set_defaults(run=run)


def _progress(args: argparse.Namespace) -> Callable[[str], None]:
    if args.no_progress:
        return lambda s: None
    started = time.perf_counter()

    def say(line: str) -> None:
        print(f"[snapshot-cost {time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr,
              flush=True)

    return say


def _s(x: float) -> str:
    return f"{x * 1e6:.0f} µs" if x < 0.01 else f"{x:.3f} s"


def _warm_basis(runs: int) -> str:
    return f"best of runs 3-{runs}" if runs >= 3 else f"best of the {runs} run{'s' if runs > 1 else ''}"


def _lines(m: dict[str, Any]) -> list[str]:
    out = [f"snapshot of {m['topics']:,} topics x {m['partitions_per_topic']} partitions ({m['partitions']:,} "
           f"partitions, replication factor {m['replication_factor']}, {m['brokers']} brokers) at metadata.version "
           f"{m['metadata_version']}",
           f"  size: {m['bytes']:,} bytes, {m['records']:,} records"
           + (f", {m['bytes_per_partition']:.1f} bytes per partition" if m["bytes_per_partition"] else ""),
           f"  kraftsim (cold = run 1 in this process; warm = {_warm_basis(m['runs'])}, same process):"]
    for op, label in (("write", "write (SnapshotEmitter, Kafka's bytes)"), ("load", "load (MetadataLoader)")):
        t = m["kraftsim"][op]
        out.append(f"    {label:<40} cold {_s(t['cold_s']):>10}   warm {_s(t['warm_s']):>10}")
    k = m.get("kafka")
    if k:
        out.append(f"  Kafka {k['release']} on Java {k['java']}, -Xmx{k['heap']} -Xms{k['heap']} (cold = a fresh JVM per step; warm = "
                   f"{_warm_basis(k['warm_runs'])} in one JVM, as JMH):")
        for op, label in (("decode", "decode (RecordsSnapshotReader)"), ("load", "load (MetadataDelta, apply)"),
                          ("write", "write (RaftSnapshotWriter)"), ("delta", "one-record delta (median of 50)")):
            if op in k:
                t = k[op]
                out.append(f"    {label:<40} cold {_s(t['cold_s']):>10}   warm {_s(t['warm_s']):>10}")
        for op in ("load", "write"):
            if op in k:
                out.append(f"  ratio kraftsim/Kafka, {op} (same work): warm {m['kraftsim'][op]['warm_s'] / k[op]['warm_s']:.2f}, "
                           f"cold {m['kraftsim'][op]['cold_s'] / k[op]['cold_s']:.2f}")
        if k["same_bytes"]:
            out.append("  Kafka's writer wrote the same bytes as kraftsim")
        else:
            out.append("  Kafka's writer wrote " + ("the same image as kraftsim in another record order (Kafka's hash "
                                                    "map order; for config resources it changes with every JVM)"
                                                    if k["same_image"] else "A DIFFERENT IMAGE from kraftsim's"))
    return out


def _check_size(args: argparse.Namespace) -> None:
    """The partitions in all, bounded as `topics create` bounds them: each flag alone is
    within its limit, but their product sized an image that took hours to build."""
    from kraftsim.scenario.language import MAX_PARTITIONS

    total = args.topics * args.partitions
    if total > MAX_PARTITIONS:
        raise UsageError(f"--topics x --partitions: expected at most {MAX_PARTITIONS:,} partitions in all, "
                         f"got {total:,}")


def run(args: argparse.Namespace) -> int:
    from kraftsim.pipeline.snapshot_cost import kafka_dist, measure_shape

    _check_size(args)  # before the catalog is read or anything is built
    cat = catalog_from_args(args)
    try:
        mv = cat.metadata_version(int(args.mv) if args.mv.isdigit() else args.mv)
    except (KeyError, ValueError) as e:
        raise UsageError(f"--mv {args.mv}: {e}") from None
    try:
        shape = ClusterShape(brokers=args.brokers, topics=args.topics, partitions=args.partitions,
                             replication_factor=args.rf)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.kafka_heap is not None and not args.with_kafka:
        raise UsageError("--kafka-heap applies with --with-kafka only")
    if args.kafka_heap is not None and not re.fullmatch(r"[1-9][0-9]{0,6}[kKmMgG]?", args.kafka_heap):
        raise UsageError(f"--kafka-heap {args.kafka_heap!r}: a size as java's -Xmx takes it, such as 512m or 2g")
    try:
        kafka = kafka_dist(args.with_kafka) if args.with_kafka else None  # missing Java or jars: said before any work
        m = measure_shape(shape, mv, cat, seed=args.seed, runs=args.runs, kafka=kafka, heap=args.kafka_heap,
                          fsync=not args.no_fsync, progress=_progress(args))
    except KafkaUnavailable as e:  # as `kraftsim kafka fetch`: the machine lacks something, nothing was measured
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(m, indent=2))
    else:
        print("\n".join(_lines(m)))
    return 0
