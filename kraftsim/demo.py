"""The main job on its default settings: one pass through the whole chain kraftsim has.

It creates a simulated KRaft cluster (three controllers, three brokers, Kafka 3.7) in a
directory, creates topics, rolls every node to Kafka 4.1, finalizes 4.1's features with
kafka-features, downgrades metadata.version losslessly, asks what a lossy downgrade would
drop and what Kafka answers, performs it under the named `kip-778` policy, and then
replays and verifies every node's log. Last, it runs the `downgrade-matrix` and
`snapshot-cost` jobs on an embedded Spark and points at their Parquet output.

Everything the cluster writes is determined by the seed: two runs give the same files.
The Parquet outputs hold measured times, which vary from run to run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kraftsim.controller.downgrade_report import DowngradeReport, downgrade_report
from kraftsim.controller import CreatableTopic, CreateTopicsRequest, create_topics
from kraftsim.errors import KraftsimError
from kraftsim.image import MvChangeHandling
from kraftsim.image import verify_directory, verify_replicas
from kraftsim.sim import features_tool
from kraftsim.sim.cluster import SimCluster
from kraftsim.versions import ToolFailure

FROM_RELEASE = "3.7"
TO_RELEASE = "4.1"
LOSSLESS_TARGET = "4.0-IV3"  # 27 -> 25: no format change in between
LOSSY_TARGET = "3.6-IV2"  # below controller registration and directory assignment
#: The demo's snapshot-cost grid: small enough for a laptop, wide enough to show the trend.
DEMO_GRID = {"topics": [10, 100, 1000], "partitions": [10], "rf": [3], "brokers": [3], "mv": ["3.9-IV0", "4.1-IV1"]}

Say = Callable[[str], None]


@dataclass
class DemoResult:
    cluster_dir: Path
    verified: bool = False
    downgrades: dict[str, DowngradeReport] = field(default_factory=dict)  # by target metadata.version
    parquet: dict[str, str] = field(default_factory=dict)  # job -> output folder
    summaries: dict[str, str] = field(default_factory=dict)  # job -> summary table


SHOWN_LOSS_LINES = 6  # the tool lists every dropped item; the demo shows the first few


def _features(cluster: SimCluster, say: Say, op: str, **kwargs: Any) -> bool:
    """kafka-features against the cluster, as the 4.1 tool; True when every update went through."""
    tool = cluster.catalog.at_release(TO_RELEASE)
    lines: list[str] = []
    try:
        features_tool.update(cluster, tool, op, out=lines.append, **kwargs)
        ok = True
    except ToolFailure as e:
        lines.append(str(e))
        ok = False
    items = [line for line in lines if line.startswith("[kip-778]   ")]
    for line in lines:
        if line not in items[SHOWN_LOSS_LINES:]:
            say("   " + line)
    if len(items) > SHOWN_LOSS_LINES:
        say(f"   [kip-778]   ... and {len(items) - SHOWN_LOSS_LINES} more")
    return ok


def operate_cluster(directory: Path, *, seed: int, topics: int, partitions: int, say: Say) -> DemoResult:
    """Steps 1-6: create, fill, roll, finalize, and downgrade a simulated cluster."""
    result = DemoResult(directory)
    indent: Say = lambda line: say("   " + line)  # noqa: E731
    say(f"1. Creating a cluster of 3 controllers and 3 brokers on Kafka {FROM_RELEASE} in {directory} "
        "(policy kip-778: KIP-778's lossy downgrades are allowed; Kafka's own behaviour stays the default)")
    cluster = SimCluster.create(directory, controllers=3, brokers=3, release=FROM_RELEASE, seed=seed,
                                policies=["kip-778"], emit=indent)
    try:
        say(f"2. Creating {topics} topics of {partitions} partitions, replication factor 3")
        request = CreateTopicsRequest(tuple(CreatableTopic(f"orders-{i}", partitions, 3) for i in range(topics)),
                                      seed=seed)
        created = cluster.execute(lambda ctx: create_topics(ctx, request))
        if created is None or not created.ok:
            raise KraftsimError(f"creating the demo's topics failed: {created and created.error}")
        say(f"   {len(created.records)} records committed and replicated to every node")

        say(f"3. Rolling every node to Kafka {TO_RELEASE}, one at a time")
        problems = cluster.roll(TO_RELEASE)
        if problems:
            raise KraftsimError("rolling the demo cluster failed: " + "; ".join(problems))

        say(f"4. kafka-features upgrade --release-version {TO_RELEASE}")
        _features(cluster, say, "upgrade", release_version=TO_RELEASE)

        lossless_level = cluster.catalog.metadata_version(LOSSLESS_TARGET).level
        say(f"5. A lossless downgrade: kafka-features downgrade --feature metadata.version={lossless_level}")
        _features(cluster, say, "downgrade", features=[f"metadata.version={lossless_level}"])

        lossy = cluster.catalog.metadata_version(LOSSY_TARGET)
        say(f"6. A lossy downgrade to {lossy.version}: first, what would be lost and what Kafka says")
        image = cluster.image()
        report = downgrade_report(image, lossy, cluster.catalog.at_release(TO_RELEASE))
        result.downgrades[lossy.version] = report
        for kind, count in sorted(Counter(item.kind for item in report.lost).items()):
            indent(f"would drop {count} x {kind}")
        for verdict in report.verdicts:
            indent(f"Kafka {TO_RELEASE}, {verdict.upgrade_type}: {verdict.tool_line}")
        say(f"   kafka-features downgrade --feature metadata.version={lossy.level} --unsafe (under kip-778)")
        _features(cluster, say, "downgrade", features=[f"metadata.version={lossy.level}"], unsafe=True)
    finally:
        cluster.close()
    return result


def verify_cluster(result: DemoResult, say: Say) -> None:
    """Step 7: every node's snapshots against its log, and the replicas against each other."""
    nodes = sorted(p for p in result.cluster_dir.iterdir() if p.is_dir() and p.name.startswith("node-"))
    say(f"7. Replaying and verifying the logs of {len(nodes)} nodes, as KIP-778 loads them")
    ok = True
    for node in nodes:
        v = verify_directory(node, mv_change=MvChangeHandling.KIP_778)
        ok &= v.ok
        say(f"   {node.name}: {'OK' if v.ok else 'FAILED'}: {len(v.snapshots)} snapshot(s) checked against the log")
    replicas = verify_replicas(nodes, mv_change=MvChangeHandling.KIP_778)
    ok &= replicas.ok
    say(f"   replicas agree at every common offset: {'yes' if replicas.ok else 'NO'}")
    result.verified = ok


def run_spark_jobs(result: DemoResult, out: Path, *, master: str | None, say: Say) -> None:
    """Step 8: downgrade-matrix over the cluster's nodes and snapshot-cost over a small grid."""
    from kraftsim.pipeline.jobs import job_inputs, run_spark
    from kraftsim.pipeline.session import spark_session

    from pyspark.sql import SparkSession

    say(f"8. Running the Spark jobs on {master or 'the embedded local[*] Spark'}")
    ours = SparkSession.getActiveSession() is None  # stop only a session this run started
    spark = spark_session(master, app_name="kraftsim demo")
    try:
        # Every replica holds the same states (step 7), so one node's files stand for all.
        node = [str(result.cluster_dir / "node-1")]
        for name, items in (("downgrade-matrix", job_inputs("downgrade-matrix", node)),
                            ("snapshot-cost", job_inputs("snapshot-cost", (), DEMO_GRID))):
            target = str(out / "parquet" / name)
            run = run_spark(spark, name, items, target, overwrite=True, show_progress=False)
            result.parquet[name] = target
            result.summaries[name] = run.summary_text
            say(f"   {name}: {run.rows} rows in {run.elapsed_s:.1f} s over {run.partitions} Spark partition(s)")
    finally:
        if ours:
            spark.stop()


def run_demo(out: Path, *, seed: int = 0, topics: int = 6, partitions: int = 6, spark: bool = True,
             master: str | None = None, say: Say = print) -> DemoResult:
    """Run the whole demonstration into `out` (which must not hold an earlier run)."""
    result = operate_cluster(out / "cluster", seed=seed, topics=topics, partitions=partitions, say=say)
    verify_cluster(result, say)
    if spark:
        run_spark_jobs(result, out, master=master, say=say)
    say("")
    say("Report")
    say(f"  cluster directory:   {result.cluster_dir}  (try: kraftsim cluster status {result.cluster_dir}, or")
    say(f"                       kraftsim replay --mv-change kip-778 {result.cluster_dir}/node-1)")
    say(f"  replay verification: {'passed' if result.verified else 'FAILED'}")
    for name, text in result.summaries.items():
        say(f"  {name}: {result.parquet[name]}")
        for line in text.splitlines():
            say("    " + line)
    if not result.verified:
        raise KraftsimError("replay verification of the demo cluster failed")
    return result
