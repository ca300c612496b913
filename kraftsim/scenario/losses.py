"""Loss reports of a scenario: what a metadata.version downgrade would drop, computed before
the step under either policy (Kafka refuses what kip-778 drops), and the changes the nodes'
loaders carried out under kip-778 (the simulator's `mv_changes`)."""

from __future__ import annotations

from kraftsim.controller import report_downgrade as downgrade_report
from kraftsim.errors import KraftsimError
from kraftsim.scenario.ops import FeaturesChange
from kraftsim.scenario.results import LossReportOut, MvChangeOut
from kraftsim.scenario.validate import Scenario
from kraftsim.sim import Simulation
from kraftsim.versions import FEATURE_NAME as MV_NAME


def loss_report_before(sim: Simulation, scenario: Scenario, step: FeaturesChange) -> LossReportOut | None:
    """For a metadata.version downgrade: what the active controller's image would lose at the
    target, computed before the step, whichever the policy (Kafka refuses what kip-778 drops)."""
    if step.op != "features-downgrade":
        return None
    catalog = scenario.catalog
    try:
        if step.metadata is not None:
            target = catalog.mv_from_string(step.metadata, unstable=True)
        elif step.release_version is not None:
            target = catalog.mv_from_string(step.release_version, unstable=True)
        elif step.features and MV_NAME in step.features:
            target = catalog.mv_from_level(step.features[MV_NAME])
        else:
            return None
    except KraftsimError:
        return None  # the tool says why, as the step's error
    leader = sim.leader()
    image = sim.image(leader) if leader is not None else None
    if image is None or image.metadata_version is None:
        return None
    report = downgrade_report(image, target, catalog, node_id=leader)
    return LossReportOut(report.current, report.target, report.lossless, [f"{x.kind}: {x.entity}" for x in report.lost])


def mv_name(scenario: Scenario, level: int) -> str | None:
    """The version string of a level, also for levels newer lines dropped (1-6 on 4.x)."""
    return next((mv.version for mv in scenario.catalog.all_metadata_versions if mv.level == level), None)


def mv_changes_of(sim: Simulation, scenario: Scenario) -> list[MvChangeOut]:
    """The simulator's metadata.version changes (one per node and change), merged per change."""
    merged: dict[tuple[int, int, int], MvChangeOut] = {}
    for r in sim.mv_changes():
        ch = r.change
        key = (r.offset, ch.old_level, ch.new_level)
        out = merged.get(key)
        if out is None:
            out = MvChangeOut(mv_name(scenario, ch.old_level) if ch.old_level else None,
                              mv_name(scenario, ch.new_level) or str(ch.new_level), bool(ch.lossless), [],
                              list(ch.losses.lines()), [])
            merged[key] = out
        out.nodes.append(r.node_id)
        out.snapshots += [f"node {r.node_id}: {s}" for s in r.snapshots]
    return [merged[k] for k in sorted(merged)]
