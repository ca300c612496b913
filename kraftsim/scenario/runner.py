"""Running a checked scenario on the simulator (its public API only: kraftsim.sim).

The cluster is built in a temporary directory (or the `keep` directory, left behind for
`kraftsim log dump`, `replay`, `downgrade-report`, `cluster status`), the steps run in
order, each step's outcome is held against its `expect_error`, the simulator's
invariants are collected after every step, and `[expect]` is checked at the end. A step
that fails unexpectedly ends the run: the later steps are reported as not run.

Determinism: the result holds only what the seed and the file decide (simulated times
relative to the cluster's creation, Kafka's texts, node states), never paths or wall time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


from kraftsim.errors import KraftsimError
from kraftsim.gcpause import fewer_collections
from kraftsim.image import image_digests
from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.expectations import check_expect
from kraftsim.scenario.apply import acts_on, carry_out, starting
from kraftsim.scenario.ops import FeaturesChange, Step
from kraftsim.scenario.losses import loss_report_before, mv_changes_of, mv_name
from kraftsim.scenario.results import (
    ExpectResult,
    FencedOut,
    FinalState,
    InvariantOut,
    MvName,
    NodeOut,
    ScenarioResult,
    StepResult,
    final_digest,
)
from kraftsim.scenario.timeline import StepSpan, Timeline
from kraftsim.scenario.validate import Scenario, parse_scenario
from kraftsim.sim import SimConfig, SimError, SimEvent, Simulation
from kraftsim.storage.scratch import Scratch

@dataclass
class RunOutcome:
    """A run's result (contract 5) and what reports draw from it."""

    scenario: Scenario
    result: ScenarioResult
    timeline: Timeline


def run_scenario(scenario: Scenario, *, seed: int | None = None, keep: Path | None = None,
                 on_step: Callable[[StepResult], None] | None = None,
                 on_event: Callable[[SimEvent], None] | None = None,
                 on_progress: Callable[[int, int], None] | None = None) -> RunOutcome:
    """Run one scenario; `seed` overrides the file's. `on_step` hears each step as it ends;
    `on_event` hears every simulator event (kraftsim.sim.SimEvent) once the cluster is stable
    (sweeps count elections and events with it); `on_progress` hears (the running step's
    index, simulated ms since the first step) at each of those events (a status line)."""
    seed = scenario.seed if seed is None else seed
    if keep is not None:
        keep = Path(keep)
        if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
            raise KraftsimError(f"{keep}: already exists and is not an empty directory (a kept cluster needs a new "
                                "or empty one)")
        with fewer_collections():  # (the whole run, steps and checks between operations too: kraftsim.gcpause)
            return _run_in(scenario, seed, keep, on_step, on_event, on_progress, durable=True)
    # A cluster in a temporary directory is never opened again: it is not durable (cluster.json
    # is not rewritten and fsynced after every operation; what is simulated is the same). Its
    # removal starts as soon as its files are closed (Scratch).
    with Scratch("kraftsim-scenario-") as scratch, fewer_collections():
        return _run_in(scenario, seed, scratch.path / "cluster", on_step, on_event, on_progress, durable=False,
                       released=scratch.remove_soon)


def _create(scenario: Scenario, seed: int, directory: Path, durable: bool, start: bool = True) -> Simulation:
    """The scenario's cluster in `directory`; `durable`: see Simulation (a kept cluster is);
    `start=False`: formatted only (see Simulation.create)."""
    c = scenario.cluster
    # keys and value types checked against SimConfig by validate
    config = SimConfig(**scenario.config) if scenario.config else None  # type: ignore[arg-type]
    if c.from_ is not None:
        return _import(scenario, seed, directory, config, durable)
    try:
        return Simulation.create(directory, controllers=c.controller_count, brokers=c.brokers, combined=c.combined,
                                 release=c.release or "", release_version=c.release_version,
                                 features=dict(c.features) or None, seed=seed, policy=scenario.policy,
                                 catalog=str(scenario.catalog_path) if scenario.catalog_path else None,
                                 config=config, dynamic_quorum=c.dynamic_quorum, configs=c.configs,
                                 durable=durable, start=start)
    except KraftsimError as e:
        raise ScenarioInvalid(str(scenario.path), "cluster", f"the cluster cannot be created: {e}") from None


def check_creatable(scenario: Scenario) -> None:
    """Raise ScenarioInvalid if the scenario's cluster cannot be created: every node is
    formatted in a scratch directory, as the run would, and nothing is started. A cluster
    imported `from` real metadata is read only when its scenario runs."""
    if scenario.cluster.from_ is not None:
        return
    with Scratch("kraftsim-check-") as scratch:
        _create(scenario, scenario.seed, scratch.path / "cluster", durable=False, start=False).close()


def _import(scenario: Scenario, seed: int, directory: Path, config: SimConfig | None, durable: bool) -> Simulation:
    """`from = "PATH"`: the cluster `kraftsim cluster import` makes of that metadata, opened."""
    from kraftsim.sim import import_cluster  # only scenarios that start from a real cluster need it

    c = scenario.cluster
    voters = c.controllers if isinstance(c.controllers, list) else None
    try:
        import_cluster([Path(c.from_)], directory, voters=voters, release=c.release, seed=seed,  # type: ignore[arg-type]
                       release_overrides={int(k): r for k, r in c.releases.items()},
                       policy=scenario.policy, catalog=scenario.catalog, config=config,
                       catalog_path=str(scenario.catalog_path) if scenario.catalog_path else None)
        return Simulation.open(directory, durable=durable)
    except KraftsimError as e:
        node = getattr(e, "node", None)
        if node is not None:
            raise ScenarioInvalid(str(scenario.path), f"cluster.releases.{node}",
                                  f"expected a node of the imported cluster: {e}") from None
        raise ScenarioInvalid(str(scenario.path), "cluster.from", f"the cluster cannot be imported: {e}") from None


def _roll_to_mixed_releases(sim: Simulation, scenario: Scenario) -> str | None:
    """`releases` of a created cluster: it is formatted and started on `release`, then each
    node named there is restarted on its own release, one at a time, controllers first (the
    cluster an operator has in the middle of a roll). None when every node came up."""
    c = scenario.cluster
    if c.from_ is not None or not c.releases:
        return None
    ids = sorted((int(k) for k in c.releases), key=lambda i: ("controller" not in scenario.nodes[i], i))
    for i in ids:
        try:
            sim.roll(c.releases[str(i)], [i])
        except SimError as e:
            return f"node {i} did not come up on Kafka {c.releases[str(i)]}: {e}"
    return None


def _run_in(scenario: Scenario, seed: int, directory: Path, on_step: Callable[[StepResult], None] | None,
            on_event: Callable[[SimEvent], None] | None = None,
            on_progress: Callable[[int, int], None] | None = None, *, durable: bool,
            released: Callable[[], None] | None = None) -> RunOutcome:
    """The run of `scenario` on a cluster created in `directory`; `released` is called once
    the cluster's files are closed and the directory given back, before the simulation's
    caches are freed."""
    sim = _create(scenario, seed, directory, durable)
    try:
        setup_error = _settle_new_cluster(sim) or _roll_to_mixed_releases(sim, scenario)
        timeline = Timeline(origin_ms=sim.now_ms)
        timeline.sample(sim)
        sim.subscribe(lambda event: timeline.on_event(sim, event))
        if on_event is not None:
            sim.subscribe(on_event)
        running = [0]  # the index of the step running (0: before the first)
        if on_progress is not None:
            origin, hear = timeline.origin_ms, on_progress
            sim.subscribe(lambda event: hear(running[0], event.time_ms - origin))
        broken: dict[str, str] = {}
        steps: list[StepResult] = []
        checkpoints: list[ExpectResult] = []
        failed_at: int | None = None
        for index, step in enumerate(scenario.steps, start=1):
            running[0] = index
            if setup_error is not None or failed_at is not None:
                why = "the new cluster did not become stable" if failed_at is None else f"step {failed_at} failed"
                res = StepResult(index, step.op, False, f"not run: {why}", step.expect_error, skipped=True)
            else:
                start = sim.now_ms - timeline.origin_ms
                res = _run_step(sim, scenario, index, step, timeline.origin_ms)
                timeline.sample(sim)
                timeline.steps.append(StepSpan(index, step.op, start, res.time_ms, res.ok, acts_on(sim, step)))
                _collect_invariants(sim, index, broken)
                if step.expect is not None:
                    checkpoints += check_expect(scenario, sim, _final(sim, scenario), step.expect, index)
                if not res.ok:
                    failed_at = index
            steps.append(res)
            if on_step is not None:
                on_step(res)
        _collect_invariants(sim, None, broken)
        names = [i.name for i in sim.invariants()]  # (the membership ones too for a dynamic quorum)
        invariants = [InvariantOut(name, name not in broken, broken.get(name)) for name in names]
        invariants += [InvariantOut(name, False, detail) for name, detail in sorted(broken.items())
                       if name not in names]
        final = _final(sim, scenario)
        expects = checkpoints + check_expect(scenario, sim, final)
        passed = (setup_error is None and all(s.ok for s in steps) and all(e.ok for e in expects)
                  and all(i.ok for i in invariants))
        ids = [n.id for n in sim.nodes()]  # (nodes sharing one image digest it once: image_digests)
        digests = dict(zip(ids, image_digests([sim.image(i) for i in ids])))
        result = ScenarioResult(name=scenario.name, seed=seed, passed=passed, steps=steps, expect=expects,
                                invariants=invariants, final=final, digest=final_digest(final, digests),
                                time_ms=sim.now_ms - timeline.origin_ms, mv_changes=mv_changes_of(sim, scenario),
                                fenced=[FencedOut(b, ms) for b, ms in timeline.fenced_ms().items()],
                                setup_error=setup_error)
        return RunOutcome(scenario, result, timeline)
    finally:
        try:
            sim.release()
            if released is not None:
                released()
        finally:
            sim.close()


#: How long (simulated) a new cluster may take to become stable before the first step.
SETUP_TIMEOUT_MS = 60_000


def _settle_new_cluster(sim: Simulation) -> str | None:
    """Steps start from a stable cluster, as after `kraftsim cluster create`; None when it is."""
    try:
        sim.wait(SETUP_TIMEOUT_MS)
    except SimError as e:
        return f"the new cluster did not become stable: {e}"
    return None


def _collect_invariants(sim: Simulation, index: int | None, broken: dict[str, str]) -> None:
    """Keep the first failure of each invariant, with the step it was seen after."""
    for inv in sim.invariants():
        if not inv.ok and inv.name not in broken:
            where = f"after step {index}" if index is not None else "at the end"
            broken[inv.name] = f"{where}: {inv.detail}" if inv.detail else where


def _run_step(sim: Simulation, scenario: Scenario, index: int, step: Step, origin_ms: int) -> StepResult:
    output: list[str] = []
    error: str | None = None
    loss = loss_report_before(sim, scenario, step) if isinstance(step, FeaturesChange) else None
    said: list[str] = []
    try:
        started, said = starting(sim, step)
        output = said + carry_out(sim, started)
    except (SimError, KraftsimError) as e:
        output = said + list(e.output) if isinstance(e, SimError) else said
        error = str(e)
    except Exception as e:  # a bug in the simulator: reported as the step's failure, clearly labelled
        error = f"internal error: {type(e).__name__}: {e}"
    expected = step.expect_error
    if expected is None:
        ok = error is None
    else:
        ok = error is not None and expected in error
    return StepResult(index, step.op, ok, error, expected, sim.now_ms - origin_ms, output, loss_report=loss)


def _final(sim: Simulation, scenario: Scenario) -> FinalState:
    level = sim.metadata_version()
    fin = sim.finalized()
    nodes = [NodeOut(n.id, list(n.roles), n.release, n.state, n.fenced, n.detail) for n in sim.nodes()]
    return FinalState(MvName(level, mv_name(scenario, level) if level else None),
                      {k: fin[k] for k in sorted(fin)}, sim.majority_leader(), nodes)


def run_text(text: str, *, seed: int | None = None, file: str = "<scenario>", base_dir: Path | None = None,
             **kwargs: Any) -> RunOutcome:
    """Check and run a scenario given as TOML text (tests, notebooks)."""
    return run_scenario(parse_scenario(text, file, base_dir), seed=seed, **kwargs)
