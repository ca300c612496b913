"""The main job on its default settings: the product's story told by shipped scenarios, then
the Spark jobs on what they produced.

Five what-ifs from `scenarios/` run on the simulator, each leaving its cluster directory and
an HTML report: a rolling upgrade finalized with kafka-features, a failed software rollback
after finalizing, a lossy metadata.version downgrade under the `kip-778` policy (with its loss
report), the active controller crashing in the middle of a roll, and an upgrade from 4.2 to
4.4 finalized with --release-version, after which the way back to 4.2 is refused. Their answers are
printed; every node's log of every kept cluster is then replayed and verified (snapshots
against the log, replicas against each other), and last the `downgrade-matrix` job runs over
the clusters' metadata and `snapshot-cost` over a small grid, on an embedded Spark.

Everything the scenarios write is determined by their seeds: two runs give the same files.
The Parquet outputs hold measured times, which vary from run to run.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from kraftsim.errors import KraftsimError
from kraftsim.image import MvChangeHandling, verify_directory, verify_replicas
from kraftsim.scenario import load_scenario
from kraftsim.scenario.html_report import write_report
from kraftsim.scenario.results import ScenarioResult
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.suite import SUITE_DIR
from kraftsim.scenario.text import seconds

#: The shipped scenarios that tell the story, in the order they are told.
DEMO_SCENARIOS = ("upgrade-3.7-to-3.8-metadata-flag", "rollback-controller-after-finalizing",
                  "downgrade-lossy-kip778", "leader-crash-mid-roll", "upgrade-4.2-to-4.4-release-version")
#: The scenario whose cluster stands for "the cluster" (the lossy downgrade, with KIP-778 snapshots).
MAIN_SCENARIO = "downgrade-lossy-kip778"
#: What a run writes in its output folder (all of it: `demo --force` replaces these, and only these).
CLUSTERS, REPORTS, PARQUET = "clusters", "reports", "parquet"
OUTPUT_ENTRIES = (CLUSTERS, REPORTS, PARQUET)
#: The demo's snapshot-cost grid: small enough for a laptop, wide enough to show the trend.
DEMO_GRID: dict[str, list[object]] = {"topics": [10, 100, 1000], "partitions": [10], "rf": [3], "brokers": [3], "mv": ["3.9-IV0", "4.1-IV1"]}

Say = Callable[[str], None]
#: Hears (scenario, running step, simulated ms since its first step) while a scenario runs.
Progress = Callable[[str, int, int], None]


@dataclass
class DemoResult:
    out: Path
    results: dict[str, ScenarioResult] = field(default_factory=dict)  # by scenario name
    clusters: dict[str, Path] = field(default_factory=dict)  # kept cluster directory by scenario
    reports: dict[str, Path] = field(default_factory=dict)  # HTML report by scenario
    policies: dict[str, str] = field(default_factory=dict)
    verified: bool = False
    parquet: dict[str, str] = field(default_factory=dict)  # job -> output folder
    summaries: dict[str, str] = field(default_factory=dict)  # job -> summary table

    @property
    def cluster_dir(self) -> Path:
        return self.clusters[MAIN_SCENARIO]

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results.values())


def _wrapped(label: str, text: str, say: Say) -> None:
    for line in textwrap.wrap(text, 96, initial_indent=f"   {label}: ", subsequent_indent="     "):
        say(line)


def run_scenarios(out: Path, *, seed: int | None, say: Say, progress: Progress | None = None) -> DemoResult:
    """The first steps: each story scenario, with its cluster kept and its report written."""
    result = DemoResult(out)
    if not SUITE_DIR.is_dir():
        raise KraftsimError(f"{SUITE_DIR}: the shipped scenarios are not there (is kraftsim installed whole?)")
    for number, name in enumerate(DEMO_SCENARIOS, start=1):
        scenario = load_scenario(SUITE_DIR / f"{name}.toml")
        say(f"{number}. {name}: {scenario.description}")
        _wrapped("question", scenario.header.question, say)
        hear = None if progress is None else partial(progress, name)
        run = run_scenario(scenario, seed=seed, keep=out / CLUSTERS / name, on_progress=hear)
        report = out / REPORTS / f"{name}.html"
        write_report(run, report)
        r = run.result
        result.results[name], result.clusters[name], result.reports[name] = r, out / CLUSTERS / name, report
        result.policies[name] = scenario.policy
        failed = [s for s in r.steps if not s.ok] + [e for e in r.expect if not e.ok]
        _wrapped("answer", scenario.header.answer, say)
        verdict = "PASS" if r.passed else f"FAIL ({len(failed)} step(s) or expectation(s) not met)"
        say(f"   {verdict}: {len(r.steps)} steps, {seconds(r.time_ms)} simulated; report {report}")
        for change in r.mv_changes:
            kind = "lossless" if change.lossless else f"lossy: {len(change.losses)} item(s) dropped"
            say(f"   metadata.version {change.old} -> {change.new} carried out on nodes "
                f"{','.join(map(str, change.nodes))} ({kind})")
    return result


def verify_clusters(result: DemoResult, say: Say) -> None:
    """The step after the scenarios: every node's snapshots against its log, and the replicas
    against each other."""
    say(f"{len(DEMO_SCENARIOS) + 1}. Replaying and verifying the logs of the {len(result.clusters)} kept clusters")
    ok = True
    for name, directory in result.clusters.items():
        mode = MvChangeHandling.KIP_778 if result.policies[name] == "kip-778" else MvChangeHandling.KAFKA
        nodes = sorted(p for p in directory.iterdir() if p.is_dir() and p.name.startswith("node-"))
        checks = [verify_directory(node, mv_change=mode) for node in nodes]
        replicas = verify_replicas(nodes, mv_change=mode)
        good = all(v.ok for v in checks) and replicas.ok
        ok &= good
        snapshots = sum(len(v.snapshots) for v in checks)
        say(f"   {name}: {'OK' if good else 'FAILED'}: {len(nodes)} nodes, {snapshots} snapshot(s) checked "
            f"against the log, replicas {'agree' if replicas.ok else 'DISAGREE'}")
    result.verified = ok


def matrix_inputs(clusters: dict[str, Path]) -> list[dict[str, object]]:
    """The downgrade-matrix inputs: node 1's states of each cluster (the replicas agree, as the
    verification step showed), named after the cluster. Every cluster has a `node-1`, so
    without the cluster's name the states of five clusters would share their names (and run
    ids) and the job's table would merge them."""
    from kraftsim.pipeline.jobs import job_inputs

    items = []
    for name, directory in clusters.items():
        for item in job_inputs("downgrade-matrix", [str(directory / "node-1")]):
            items.append({**item, "rel": f"{name}/{item['rel']}", "set": name})
    return items


def run_spark_jobs(result: DemoResult, out: Path, *, master: str | None, say: Say) -> None:
    """The last step: downgrade-matrix over the kept clusters and snapshot-cost over a small grid."""
    from kraftsim.pipeline.jobs import job_inputs, run_spark
    from kraftsim.pipeline.session import start_spark

    say(f"{len(DEMO_SCENARIOS) + 2}. Running the Spark jobs on {master or 'the embedded local[*] Spark'}")
    spark, ours = start_spark(master, app_name="kraftsim demo", say=lambda text: say("   " + text), label="spark")
    try:
        for name, items in (("downgrade-matrix", matrix_inputs(result.clusters)),
                            ("snapshot-cost", job_inputs("snapshot-cost", (), DEMO_GRID))):
            target = str(out / PARQUET / name)
            run = run_spark(spark, name, items, target, overwrite=True)
            result.parquet[name] = target
            result.summaries[name] = run.summary_text
            say(f"   {name}: {run.rows} rows in {run.elapsed_s:.1f} s over {run.partitions} Spark partition(s)")
    finally:
        if ours:
            spark.stop()


def run_demo(out: Path, *, seed: int | None = None, spark: bool = True, master: str | None = None,
             say: Say = print, progress: Progress | None = None) -> DemoResult:
    """Run the whole demonstration into `out` (which must not hold an earlier run); `seed`
    overrides the scenarios' own seeds."""
    result = run_scenarios(out, seed=seed, say=say, progress=progress)
    verify_clusters(result, say)
    if spark:
        run_spark_jobs(result, out, master=master, say=say)
    say("")
    say("Report")
    for name in DEMO_SCENARIOS:
        say(f"  {name}: {'PASS' if result.results[name].passed else 'FAIL'}, report {result.reports[name]}")
    say(f"  clusters:            {out / 'clusters'}  (try: kraftsim cluster status {result.cluster_dir}, or")
    say(f"                       kraftsim replay --mv-change kip-778 {result.cluster_dir}/node-1)")
    say(f"  replay verification: {'passed' if result.verified else 'FAILED'}")
    for name, text in result.summaries.items():
        say(f"  {name}: {result.parquet[name]}")
        for line in text.splitlines():
            say("    " + line)
    if not result.verified:
        raise KraftsimError("replay verification of the demo's clusters failed")
    if not result.passed:
        raise KraftsimError("a demo scenario did not pass: see its report")
    return result
