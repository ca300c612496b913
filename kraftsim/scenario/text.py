"""The human-readable account of a scenario run: one line per step with its outcome and
the simulated time, then the expectations, the invariants and PASS or FAIL."""

from __future__ import annotations

from collections.abc import Mapping

from kraftsim.scenario.language import NodeSel
from kraftsim.scenario.ops import (
    AddNode, CreatePartitions, CreateTopics, DeleteTopics, DiskFault, FeaturesChange, FeaturesDisable, NodesStep, Partition, Roll, Run,
    Snapshot, Start, Step, Wait,
)
from kraftsim.scenario.results import ExpectResult, ScenarioResult, StepResult


#: Lines of an operation's output shown per step (creating 1,000 topics prints 1,000 lines).
MAX_OUTPUT_LINES = 8


def nodes_text(sel: NodeSel | None) -> str:
    if sel is None:
        return "running nodes"
    if isinstance(sel, list):
        return "node" + ("s " if len(sel) > 1 else " ") + ",".join(str(i) for i in sel)
    return sel


def describe_step(step: Step) -> str:
    """What a step does, in a few words ("roll to 3.8 (controllers)")."""
    if isinstance(step, CreateTopics):
        rf = f", replication factor {step.replication_factor}" if step.replication_factor else ""
        return f"create {step.topic_count} topic(s) of {step.partitions} partition(s){rf}"
    if isinstance(step, DeleteTopics):
        return "delete " + ", ".join(step.names)
    if isinstance(step, CreatePartitions):
        given = " as assigned" if step.assignments is not None else ""
        return f"grow {', '.join(step.names)} to {step.count} partition(s){given}"
    if isinstance(step, Roll):
        return f"roll {nodes_text(step.nodes)} to Kafka {step.release}"
    if isinstance(step, AddNode):
        return f"add a {step.role} on Kafka {step.release}" + (f" as node {step.id}" if step.id is not None else "")
    if isinstance(step, FeaturesChange):
        what = []
        if step.metadata is not None:
            what.append(f"--metadata {step.metadata}")
        if step.release_version is not None:
            what.append(f"--release-version {step.release_version}")
        what += [f"--feature {k}={v}" for k, v in sorted((step.features or {}).items())]
        what += ["--unsafe"] * step.unsafe + ["--dry-run"] * step.dry_run
        return f"kafka-features {step.op.split('-')[1]} " + " ".join(what)
    if isinstance(step, FeaturesDisable):
        return "kafka-features disable " + " ".join(f"--feature {f}" for f in step.features) + \
            " --dry-run" * step.dry_run
    if isinstance(step, (NodesStep, Start)):
        rel = f" on Kafka {step.release}" if isinstance(step, Start) and step.release else ""
        return f"{step.op} {nodes_text(step.nodes)}{rel}"
    if isinstance(step, Partition):
        return "partition " + " | ".join(",".join(str(i) for i in g) for g in step.groups)
    if isinstance(step, DiskFault):
        return f"{step.kind} on {nodes_text(step.nodes)}"
    if isinstance(step, Snapshot):
        return f"snapshot {nodes_text(step.nodes)}"
    if isinstance(step, Run):
        return f"run {step.ms} ms"
    if isinstance(step, Wait):
        return f"wait until stable (at most {step.timeout_ms} ms)"
    return step.op


def seconds(ms: int) -> str:
    from kraftsim.sim import elapsed_text  # loaded by then: steps have run

    return elapsed_text(ms)


def outcome(res: StepResult) -> str:
    if res.skipped:
        return res.error or "not run"
    if res.expected_error is None:
        return "ok" if res.ok else "FAILED"
    if res.ok:
        return "failed as expected"
    return "FAILED (succeeded, but an error was expected)" if res.error is None else "FAILED (another error)"


def step_lines(step: Step, res: StepResult) -> list[str]:
    head = f"  step {res.index:<3} {seconds(res.time_ms):>10}  {describe_step(step):<56} {outcome(res)}"
    out = [head.rstrip()]
    shown = res.output[:MAX_OUTPUT_LINES]
    out += [f"             {line}" for line in shown]
    if len(res.output) > len(shown):
        out.append(f"             ... {len(res.output) - len(shown)} more line(s)")
    if res.error and not res.skipped:
        first, *rest = res.error.splitlines() or [""]
        out.append(f"             {first}")
        out += [f"             {line}" for line in rest]
    if res.expected_error is not None and not res.ok and not res.skipped:
        out.append(f"             expected an error containing: {res.expected_error}")
    if res.loss_report is not None:
        lr = res.loss_report
        if lr.lossless:
            out.append(f"             loss report {lr.current} -> {lr.target}: nothing would be lost")
        else:
            out.append(f"             loss report {lr.current} -> {lr.target}: {len(lr.items)} item(s) would be lost")
            out += [f"               {item}" for item in lr.items]
    return out


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return "none" if v is None else str(v)


def expect_line(e: ExpectResult) -> str:
    when = "" if e.step is None else f" (after step {e.step})"
    if e.ok:
        return f"  expect {e.key} = {_value(e.expected)}{when}: ok"
    return f"  expect {e.key}{when}: FAILED, expected {_value(e.expected)}, actual {_value(e.actual)}"


def fenced_line(fenced: Mapping[int, int]) -> str | None:
    """How long brokers were fenced during the steps (`Timeline.fenced_ms`): how many, the
    longest and the sum, in simulated time; None for a cluster without brokers."""
    if not fenced:
        return None
    hit = {b: ms for b, ms in fenced.items() if ms > 0}
    if not hit:
        return "  brokers fenced: none"
    longest = min(hit, key=lambda b: (-hit[b], b))
    return (f"  brokers fenced: {len(hit)} of {len(fenced)}, longest {hit[longest] / 1000:.3f} s (broker {longest}), "
            f"{sum(hit.values()) / 1000:.3f} s in all")


def summary_lines(result: ScenarioResult) -> list[str]:
    """The expectations, invariants, metadata.version changes, how long brokers were fenced
    and the verdict."""
    out = [] if result.setup_error is None else [f"  setup FAILED: {result.setup_error}"]
    out += [expect_line(e) for e in result.expect]
    for ch in result.mv_changes:
        kind = "lossless" if ch.lossless else f"lossy, {len(ch.losses)} item(s) dropped"
        out.append(f"  metadata.version {ch.old} -> {ch.new} on nodes {','.join(map(str, ch.nodes))}: {kind}")
        out += [f"    {x}" for x in ch.losses]
    broken = [i for i in result.invariants if not i.ok]
    if broken:
        out += [f"  invariant {i.name} BROKEN: {i.detail}" for i in broken]
    else:
        out.append(f"  invariants: all {len(result.invariants)} held")
    line = fenced_line({f.broker: f.ms for f in result.fenced})
    if line is not None:
        out.append(line)
    fin = result.final
    mv = fin.metadata_version
    out.append(f"  final: metadata.version {mv.name or 'none'} ({mv.level}), leader "
               f"{fin.leader if fin.leader is not None else 'none'}, running "
               f"{','.join(str(n.id) for n in fin.nodes if n.state == 'running') or 'none'}")
    out.append(f"{'PASS' if result.passed else 'FAIL'} {result.name}")
    return out
