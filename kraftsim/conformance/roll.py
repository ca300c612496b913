"""A rolling software upgrade on the same directories, real Kafka against kraftsim's roll.

Kafka: one combined node formatted by the first release, restarted on each later release
in turn (same data directory, same ports); after each start its tool describes the
features and finalizes the release's latest production metadata.version. kraftsim: a
simulated cluster (one controller, one broker) created on the first release and rolled
with `kraftsim cluster roll`, the same kafka-features commands run on it. Each step's
texts are compared as in the live-node cases. When the roll passes 3.7 → 3.8, the
rollback is tried too: after 3.8-IV0 is finalized, 3.7 is started on the directory; Kafka
3.7 must refuse to run, and the line kraftsim prints for that refusal must be in Kafka's
log. The cases are named `roll/...` with the release of the step.

A topic made at the first step with a config 4.0 no longer defines (message.format.version)
keeps its ConfigRecord through the roll; each step describes it on both sides
(DescribeConfigs against the live node and against `kraftsim serve` on the simulated
directory): 3.x shows its value, 4.0 to 4.2 hide it as a possible secret, 4.3 on drop it.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from kraftsim.conformance.cases import Outcome, Policy, ReleaseContext, judge, load_policies
from kraftsim.conformance.cases.base import catalog_release
from kraftsim.conformance.compare import compare_runs
from kraftsim.conformance.dist import KafkaDist, KafkaRelease, KafkaUnavailable, fetch
from kraftsim.conformance.node import LiveNode
from kraftsim.conformance.tools import ToolRun, run_tool
from kraftsim.conformance.wire_client import WireClient
from kraftsim.versions import Catalog

ROLLBACK_WAIT_S = 60
_EPOCH = re.compile(r"Epoch: \d+")
_SIM_NOTE = re.compile(r"^\[cluster\] ")
#: The topic (as `kraftsim topics create --prefix held-config-` names it) and the config it
#: holds from the first step: defined until 3.9, removed in 4.0.
HELD_TOPIC, HELD_CONFIG, HELD_VALUE = "held-config-0", "message.format.version", "3.0"
#: How long a node may take to learn the topic after it starts.
HELD_WAIT_S = 10


def _mask(run: ToolRun) -> ToolRun:
    return ToolRun(run.argv, run.code, _EPOCH.sub("Epoch: <n>", run.stdout),
                   "\n".join(ln for ln in run.stderr.splitlines() if not _SIM_NOTE.match(ln)))


def run_roll(releases: Sequence[KafkaRelease], *, log: Callable[[str], None] = lambda line: None) -> Iterator[Outcome]:
    """The roll through `releases` in the order given; one outcome per compared step."""
    dists = [fetch(r, log=log) for r in releases]
    policies = load_policies()
    with tempfile.TemporaryDirectory(prefix="kraftsim-conformance-roll-") as tmp:
        work = Path(tmp)
        (work / "kafka").mkdir()
        node = LiveNode(dists[0], work / "kafka")
        sim = work / "sim"
        ctx = ReleaseContext(dists[0], work / "scratch")
        try:
            yield from _roll(ctx, node, sim, dists, policies, log)
        finally:
            node.stop()


def _roll(ctx: ReleaseContext, node: LiveNode, sim: Path, dists: list[KafkaDist], policies: list[Policy],
          log: Callable[[str], None]) -> Iterator[Outcome]:
    # Each step runs kraftsim as that very release (a step given 4.2.0 is not the 4.2 line's 4.2.2).
    first = catalog_release(dists[0].release)
    created = ctx.kraftsim(["cluster", "create", str(sim), "--controllers", "1", "--brokers", "1",
                            "--release", first, "--seed", "0"])
    node.format()
    broken: str | None = None if created.code == 0 else \
        f"kraftsim cluster create --release {first}: exit {created.code}: {created.stderr.strip()[:300]}"
    previous: KafkaDist | None = None
    for dist in dists:
        release = dist.release
        ours_release = catalog_release(release)
        log(f"roll: Kafka {release.version}")
        step_problem = broken
        if previous is not None and broken is None:
            rolled = ctx.kraftsim(["cluster", "roll", str(sim), "--release", ours_release])
            if rolled.code != 0:
                step_problem = f"kraftsim cluster roll --release {ours_release}: exit {rolled.code}: " \
                               f"{(rolled.stdout + rolled.stderr).strip()[-300:]}"
        node.stop()
        node.dist = dist
        try:
            node.start()
        except KafkaUnavailable as e:
            kept = node.keep_logs(f"roll-{release.version}")
            yield Outcome("roll/start", release.version, "differ", f"{e} (logs kept in {kept})")
            return
        if step_problem:
            yield Outcome("roll/features describe", release.version, "differ", step_problem)
            previous = dist
            continue
        # The release's latest production level, from the catalog (3.x tools have no version-mapping).
        catalog = ctx.catalog()
        steps = [("features describe", ["describe"])]
        if catalog is not None:
            latest = catalog.at_release(ours_release).latest_production.level
            steps.append(("features upgrade metadata.version=LATEST", ["upgrade", "--feature", f"metadata.version={latest}"]))
            steps += _kraft_version_steps(catalog.at_release(ours_release))
        if previous is None and release.line_tuple < (4, 0):
            problem = _create_held_topic(ctx, node, sim)
            if problem is not None:
                yield Outcome("roll/describe a held topic config", release.version, "differ", problem)
        for label, args in steps:
            kafka = run_tool(dist, "features", ["--bootstrap-server", node.bootstrap, *args])
            ours = ctx.kraftsim(["features", "--cluster", str(sim), "--release", ours_release, *args])
            yield judge(f"roll/{label}", release.version, compare_runs(_mask(kafka), _mask(ours)), policies)
        yield judge("roll/describe a held topic config", release.version, _held_differences(node, sim), policies)
        if previous is not None and previous.release.line == "3.7" and release.line == "3.8":
            yield _rollback(ctx, node, sim, previous, dist, policies)
            node.dist = dist
            try:
                node.start()
            except KafkaUnavailable as e:
                yield Outcome("roll/start after rollback", release.version, "differ", str(e))
                return
            ctx.kraftsim(["cluster", "roll", str(sim), "--release", ours_release])
        previous = dist


def _create_held_topic(ctx: ReleaseContext, node: LiveNode, sim: Path) -> str | None:
    """HELD_TOPIC with HELD_CONFIG on both sides (the live node by CreateTopics, kraftsim by its
    commands); what went wrong, if anything."""
    topic = {"Name": HELD_TOPIC, "NumPartitions": 1, "ReplicationFactor": 1,
             "Configs": [{"Name": HELD_CONFIG, "Value": HELD_VALUE}]}
    with WireClient("127.0.0.1", node.broker_port) as c:
        made = c.request("CreateTopics", 5, {"Topics": [topic], "timeoutMs": 30000, "validateOnly": False})
    if made["Topics"][0]["ErrorCode"] != 0:
        return f"Kafka refused {HELD_TOPIC}: {made['Topics'][0]}"
    for argv in (["topics", "--cluster", str(sim), "create", "--prefix", "held-config-"],
                 ["configs", "--cluster", str(sim), "--alter", "--entity-type", "topics", "--entity-name", HELD_TOPIC,
                  "--add-config", f"{HELD_CONFIG}={HELD_VALUE}"]):
        run = ctx.kraftsim(argv)
        if run.code != 0:
            return f"kraftsim {' '.join(argv[:1])}: exit {run.code}: {(run.stdout + run.stderr).strip()[-300:]}"
    return None


def _held_described(host: str, port: int) -> list[dict[str, object]]:
    """HELD_CONFIG's entries of HELD_TOPIC's DescribeConfigs answer (none, or one), once the node
    knows the topic."""
    request = {"Resources": [{"ResourceType": 2, "ResourceName": HELD_TOPIC, "ConfigurationKeys": None}],
               "IncludeSynonyms": True, "IncludeDocumentation": True}
    deadline = time.monotonic() + HELD_WAIT_S
    with WireClient(host, port) as c:
        while True:
            result = c.request("DescribeConfigs", 4, request)["Results"][0]
            if result["ErrorCode"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    return [{"ErrorCode": result["ErrorCode"]}] if result["ErrorCode"] else \
        [entry for entry in result["Configs"] if entry["Name"] == HELD_CONFIG]


def _held_differences(node: LiveNode, sim: Path) -> list[str]:
    """HELD_CONFIG as the live node and `kraftsim serve` on the simulated directory describe it."""
    from kraftsim.wire import serve

    kafka = _held_described("127.0.0.1", node.broker_port)
    with serve(sim) as k:
        host, port = k.bootstrap_servers.rsplit(":", 1)
        ours = _held_described(host, int(port))
    return [] if kafka == ours else [f"{HELD_TOPIC}'s {HELD_CONFIG}: Kafka {kafka}, kraftsim {ours}"]


def _kraft_version_steps(line: Catalog) -> list[tuple[str, list[str]]]:
    """kraft.version through the roll: 3.9 finalizes it as a feature (a FeatureLevelRecord
    the next releases read back their own way: the describe of each later step shows it);
    4.0 answers a downgrade to 0 as done, whatever the earlier release wrote."""
    policy = line.policy("kraft_version_upgrade")
    if policy == "feature-level":
        return [("features upgrade kraft.version=1", ["upgrade", "--feature", "kraft.version=1"]),
                ("features describe after kraft.version", ["describe"])]
    if policy == "ignored" and "kraft.version" in line.supported_features():
        return [("features downgrade kraft.version=0", ["downgrade", "--feature", "kraft.version=0"])]
    return []


def _rollback(ctx: ReleaseContext, node: LiveNode, sim: Path, old: KafkaDist, new: KafkaDist,
              policies: list[Policy]) -> Outcome:
    """Start the older release on the directory after the newer one finalized its metadata.version."""
    name = f"roll/rollback to {old.release.line} after {new.release.line}'s metadata.version"
    node.stop()
    ours = ctx.kraftsim(["cluster", "roll", str(sim), "--release", catalog_release(old.release)])
    refusal = next((ln for ln in ours.stdout.splitlines() if ln.startswith("Tried to apply")), None)
    node.dist = old
    diffs = []
    try:
        node.start()
        started = True
    except KafkaUnavailable:
        started = False
    if started:  # it may answer briefly before the fatal replay; give it time to fail
        deadline = time.monotonic() + ROLLBACK_WAIT_S
        while time.monotonic() < deadline and node.proc is not None and node.proc.poll() is None:
            time.sleep(1)
    kafka_log = node.log_file.read_text(encoding="utf-8", errors="replace") if node.log_file.is_file() else ""
    if node.proc is not None and node.proc.poll() is None:
        diffs.append(f"Kafka {old.release.version} kept running on a directory finalized at "
                     f"{new.release.line}'s metadata.version")
    node.stop()
    if ours.code == 0 or refusal is None:
        diffs.append(f"kraftsim cluster roll --release {catalog_release(old.release)} did not refuse "
                     f"(exit {ours.code})")
    elif refusal not in kafka_log:
        diffs.append(f"kraftsim's refusal is not in Kafka {old.release.version}'s log: {refusal}")
    if diffs:
        kept = node.keep_logs("rollback")
        diffs.append(f"(Kafka's logs kept in {kept})")
    return judge(name, old.release.version, diffs, policies)
