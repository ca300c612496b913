"""ClusterStateMachine: hypothesis explores sequences of scenario ops on a simulated cluster.

Contract 6 of DESIGN.md. Every rule is one scenario op (contract 4) carried out on
`kraftsim.sim.Simulation`; every op, refused or not, is recorded as a `Step`. After every
step the simulator's invariants and the model-level properties (properties.py) are
checked. When one fails in hypothesis's final (shrunk) run, the recorded steps are
written as a scenario file into the repro directory, with the final state as its
`[expect]` and a `[recorded_failure]` table naming the invariant (or rule) and the
assertion's text, and the file's path is added to the failure. `kraftsim scenario run
FILE` replays it to the same state; `MyMachine.replay(FILE)` (or `pytest
--kraftsim-replay FILE`) runs the machine's own checks over the steps again, so the same
assertion fails again. Shrinking stops after a time budget (shrink_budget.py).

Ops Kafka refuses are generated too. For the refusals whose reason kraftsim can tell in
advance from the public state (a node that does not support the level, a lossy
metadata.version downgrade under the kafka policy), the property is that kraftsim
refuses with Kafka's text; for every refused kafka-features or topic op, that nothing
changed. Ops the simulator does not carry out yet (readiness.py) are switched off by
precondition, never pretended.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import msgspec
from hypothesis import settings as Settings, strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import HypothesisException, InvalidArgument
from hypothesis.stateful import (
    Bundle, Invariant, MultipleResults, Rule, RuleBasedStateMachine, consumes, initialize, invariant, multiple,
    precondition, rule, run_state_machine_as_test,
)

from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.scenario import SETUP_TIMEOUT_MS, RecordedFailure, check_name, plain
from kraftsim.sim import SimError, Simulation
from kraftsim.storage import safe_file_name
from kraftsim.testing import config, properties, shrink_budget, step_shrink
from kraftsim.testing.disks import VoterDisks
from kraftsim.testing.handle import ClusterHandle
from kraftsim.testing.readiness import is_simulated
from kraftsim.testing.refusals import support_refusal, unregistered_voters
from kraftsim.testing.reproducer import Recording, machine_name, read_recording, same_machine, table_text
from kraftsim.testing.steps import ClusterShape, Step, run_step, scenario_text, write_scenario
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, default_catalog, load_catalog

#: Features the machine leaves alone: kraft.version changes the quorum's own protocol.
UNTOUCHED_FEATURES = ("kraft.version",)
FEATURE_OPS = ("features-upgrade", "features-downgrade", "features-disable")
SIMULATOR_INVARIANT = "SimulatorInvariant"
SIMULATOR_ERROR = "SimulatorRaised"


class PropertyFailed(AssertionError):
    """A property of the cluster does not hold; `name` says which."""

    def __init__(self, name: str, detail: str):
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


@functools.cache
def _catalog(path: str | None) -> Catalog:
    return default_catalog() if path is None else load_catalog(path)


def _release_name(catalog: Catalog, name: str) -> str:
    """The catalog's name for a release given as Kafka names it ("3.7.2") or as its line ("3.7")."""
    try:
        return catalog.find_release(name).name
    except KraftsimError:
        return catalog.find_release(".".join(name.split(".")[:2])).name


class ClusterStateMachine(RuleBasedStateMachine):
    """Rolls, feature changes, faults and topic changes on a simulated KRaft cluster.

    Subclass it and set the class attributes; add `@rule`s and `@invariant`s that read
    `self.cluster` (a ClusterHandle). Run it with `TestMyMachine = MyMachine.TestCase`.
    """

    #: Releases the cluster starts on and rolls between (catalog names or Kafka's: "3.7.2").
    releases: Sequence[str] = ("3.7", "3.8", "3.9")
    #: The release the cluster starts on; None: drawn from `releases`.
    initial_release: str | None = None
    #: "kafka" (Kafka's rules) or "kip-778" (lossy downgrades carried out, as KIP-778 describes).
    policy: str = "kafka"
    controllers: int = 3
    brokers: int = 2
    #: Combined nodes (broker and controller in one process, ids 1..combined before the
    #: controllers and brokers, as `cluster create` numbers them); they are voters too.
    combined: int = 0
    #: A hypothetical catalog file (TOML, see kraftsim.versions.load_catalog); None: the shipped one.
    catalog: str | Path | None = None
    #: The simulator's seed; None: `--kraftsim-seed`, KRAFTSIM_SEED, else 0.
    seed: int | None = None
    #: Where counterexamples go; None: `--kraftsim-repro-dir`, KRAFTSIM_REPRO_DIR, else .kraftsim/repro.
    repro_dir: str | Path | None = None
    #: Whether "wipe" disk faults may hit controllers. With a static quorum a voter that lost
    #: its disk may vote again and lose committed records, in Kafka as in kraftsim (KIP-853
    #: is Kafka's answer), so by default only brokers' disks are wiped. Torn tails hit voters
    #: only while a majority of the other voters hold what the voter holds and the damaged
    #: voters stay a minority (disks.py): a committed batch no majority holds any more can
    #: be lost for good, which is no bug of the software.
    wipe_voters: bool = False
    #: A KIP-853 dynamic quorum (kraft.version 1): then add-controller and remove-controller
    #: change the voters, one at a time, while disks.VoterDisks finds the change safe.
    dynamic_quorum: bool = False
    #: The scenario ops the machine generates (None: every op the simulator carries out).
    ops: frozenset[str] | None = None
    #: Bounds that keep generated runs small and fast.
    max_topics: int = 6
    max_run_ms: int = 10_000
    #: How many nodes `add-node` may add to the cluster, and the longest `wait`.
    max_added_nodes: int = 2
    max_wait_ms: int = 30_000
    #: Seconds shrinking may take from the first failing example; then the smallest
    #: counterexample so far is written, marked cut short. None: `--kraftsim-shrink-budget`,
    #: KRAFTSIM_SHRINK_BUDGET, else 60.
    shrink_budget_s: float | None = None
    #: Whether a failing invariant's run is shrunk by its steps (step_shrink.py: replays of
    #: fewer steps through this machine, within the budget) instead of by hypothesis's
    #: shrinker, which re-runs whole examples for every choice it lowers. None: when the
    #: budget is finite (a rule's own assertion always goes to hypothesis's shrinker).
    shrink_steps: bool | None = None

    node_ids = Bundle("node_ids")
    topic_names = Bundle("topic_names")

    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulation | None = None
        self.cluster: ClusterHandle | None = None
        self.steps: list[Step] = []
        self.shape: ClusterShape | None = None
        self._tmp: str | None = None
        self._seed = config.seed(self.seed)
        self._catalog_path = None if self.catalog is None else str(Path(self.catalog).resolve())
        self.catalog_view = _catalog(self._catalog_path)
        self._releases = tuple(_release_name(self.catalog_view, r) for r in self.releases)
        if not self._releases:
            raise InvalidArgument(f"{type(self).__name__}.releases is empty")
        self._voters: tuple[int, ...] = ()
        self._disks = VoterDisks(())
        self._initial_nodes = 0
        self._committed = 0
        self._written: Path | None = None
        self._replaying = False
        #: The failure this run met, as `[recorded_failure]` names it (None until one).
        self.failure: RecordedFailure | None = None

    # ------------------------------------------------------------------ what may be drawn

    def _line(self, release: str) -> Catalog:
        return self.catalog_view.at_release(release)

    def metadata_levels(self) -> list[int]:
        """Levels worth trying: around each release's newest production level, plus one
        none of them knows (a refusal to generate)."""
        tops = [self._line(r).latest_production.level for r in self._releases]
        known = {mv.level for mv in self.catalog_view.all_metadata_versions}
        lo = max(1, min(tops) - 3)
        return [lvl for lvl in range(lo, max(tops) + 2) if lvl in known or lvl == max(tops) + 1]

    def feature_levels(self) -> dict[str, int]:
        """Other features the releases know, with the highest level any of them supports."""
        out: dict[str, int] = {}
        for r in self._releases:
            for name, (_, hi) in self._line(r).supported_features(unstable=True).items():
                if name != MV_NAME and name not in UNTOUCHED_FEATURES:
                    out[name] = max(out.get(name, 0), hi)
        return dict(sorted(out.items()))

    # ------------------------------------------------------------------ set-up and tear-down

    @initialize(target=node_ids, data=st.data())
    def create_cluster(self, data: st.DataObject) -> object:
        if self.initial_release is not None:
            release = _release_name(self.catalog_view, self.initial_release)
        else:
            release = data.draw(st.sampled_from(self._releases), label="release")
        return multiple(*self._start(release))

    def _start(self, release: str) -> list[int]:
        """Create the cluster on `release` and wait until it is stable; the node ids. Not
        durable: the machine never reopens its cluster, so cluster.json is not rewritten and
        fsynced after every op (the simulated outcome is the same, each step cheaper)."""
        self._tmp = tempfile.mkdtemp(prefix="kraftsim-machine-")
        self.shape = ClusterShape(self.controllers, self.brokers, release, combined=self.combined,
                                  dynamic_quorum=self.dynamic_quorum)
        try:
            self.sim = Simulation.create(Path(self._tmp) / "cluster", controllers=self.controllers,
                                         brokers=self.brokers, combined=self.combined, release=release,
                                         seed=self._seed, policy=self.policy, catalog=self._catalog_path,
                                         dynamic_quorum=self.dynamic_quorum, durable=False)
        except SimError as e:
            raise InvalidArgument(f"{type(self).__name__}: the cluster cannot be created: {e}") from None
        try:  # steps start from a stable cluster, as in the scenario runner
            self.sim.wait(SETUP_TIMEOUT_MS)
        except SimError as e:
            raise InvalidArgument(f"{type(self).__name__}: the new cluster did not become stable: {e}") from None
        self.cluster = ClusterHandle(self.sim, self.catalog_view, self.policy)
        self._voters = tuple(n.id for n in self.sim.nodes() if "controller" in n.roles)
        self._disks = VoterDisks(self._voters)
        self._disks.observe(self.sim, self._voters)
        self._initial_nodes = len(self.sim.nodes())
        return [n.id for n in self.sim.nodes()]

    def teardown(self) -> None:
        final = _is_final()
        if final:
            shrink_budget.final_run_ended(type(self))
        if self.sim is not None:
            self.sim.close()
            self.sim = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if not final:
            self._check_budget()

    def _check_budget(self) -> None:
        """A spent shrink budget writes the smallest failure so far and ends hypothesis's run
        (between steps too: one example of long rolls can last minutes on a loaded machine)."""
        if not self._replaying and not _is_final():
            shrink_budget.check(type(self), config.shrink_budget(self.shrink_budget_s))

    # ------------------------------------------------------------------ carrying out a step

    def do(self, op: str, **args: object) -> Step:
        """Run one scenario op, record it, and check what must hold of its outcome."""
        assert self.sim is not None
        self._check_budget()
        step = Step(op, {k: v for k, v in args.items() if v is not None})
        before = properties.observe(self.sim)
        expected = self._kafka_refusal(step)
        leader = self.sim.leader()
        image_before = self.sim.image(leader) if leader is not None else None
        try:
            step.output = run_step(self.sim, step)
        except (SimError, KraftsimError) as e:  # a refusal, as the scenario runner counts it
            step.error = str(e)
        except Exception as e:  # a bug in the simulator: recorded as the runner reports it
            step.error = f"internal error: {type(e).__name__}: {e}"
            self.steps.append(step)
            self.fail(SIMULATOR_ERROR, f"{step.describe()} raised {type(e).__name__}: {e}")
        self.steps.append(step)
        nodes = self.sim.nodes()
        if self.dynamic_quorum:  # the committed voter set (add-controller, remove-controller)
            self._voters = self._disks.voters = tuple(self.sim.voters())
        elif step.op == "add-node":  # a controller that joined is a voter of the static quorum
            self._voters = self._disks.voters = tuple(n.id for n in nodes if "controller" in n.roles)
        self._disks.observe(self.sim, (n.id for n in nodes if n.state == "running"))
        if step.error is not None:
            self._check_refusal(step, before, expected)
        else:
            if expected is not None:
                self.fail(properties.REFUSAL_AS_KAFKA,
                          f"Kafka refuses {step.describe()} with \"{expected}\", but kraftsim carried it out")
            self._check_downgrade(step, image_before)
        return step

    def _check_refusal(self, step: Step, before: properties.Observed, expected: str | None) -> None:
        assert self.sim is not None and step.error is not None
        if step.op in FEATURE_OPS or step.op in ("create-topics", "delete-topics", "create-partitions"):
            changed = properties.refusal_changed(before, properties.observe(self.sim))
            if changed:
                self.fail(properties.REFUSAL_AS_KAFKA, f"{step.describe()} was refused, yet {changed}")
        if expected is not None and expected not in step.error:
            self.fail(properties.REFUSAL_AS_KAFKA,
                      f"Kafka refuses {step.describe()} with \"{expected}\"; kraftsim said \"{step.error}\"")

    def _check_downgrade(self, step: Step, image_before: MetadataImage | None) -> None:
        assert self.sim is not None
        target = (step.args.get("features") or {}).get(MV_NAME) if step.op == "features-downgrade" else None
        if target is None or step.args.get("dry_run") or image_before is None:
            return
        leader = self.sim.leader()
        after = self.sim.image(leader) if leader is not None else None
        if after is None or after.metadata_version != target:
            return
        loss = properties.lossless_downgrade_loss(image_before, after, target, self.catalog_view)
        if loss:
            self.fail(properties.LOSSLESS_DOWNGRADE, loss)

    def _kafka_refusal(self, step: Step) -> str | None:
        """Kafka's reason for refusing a kafka-features step, when the public state tells it."""
        assert self.sim is not None
        if step.op not in ("features-upgrade", "features-downgrade") or step.args.get("dry_run"):
            return None
        levels = step.args.get("features") or {}
        if len(levels) != 1:
            return None
        (name, level), = levels.items()
        leader = self.sim.leader()
        image = self.sim.image(leader) if leader is not None else None
        if leader is None or image is None or level <= 0:
            return None
        current = self.sim.finalized().get(name, 0)
        if (step.op == "features-upgrade") != (level > current) and level != current:
            return None  # "Can't upgrade to a lower version" and its mirror: not predicted here
        line = self._line(self.cluster.node(leader).release)  # type: ignore[union-attr]
        reason = support_refusal(line, leader, image, name, level)
        if reason is not None:
            return reason
        if unregistered_voters(line, image, self._voters):
            return None  # Kafka may name one of them first, or not: refusals.py
        if (name == MV_NAME and self.policy == "kafka" and level < current
                and line.is_lossy(current, level)):
            return line.mv_downgrade_error(current, level, bool(step.args.get("unsafe")))
        return None

    # ------------------------------------------------------------------ failing

    def fail(self, name: str, detail: str) -> None:
        error = PropertyFailed(name, detail)
        path = self.write_repro(name, detail, error=error)
        if path is not None:
            error.add_note(f"kraftsim: the counterexample is written as a scenario: {path}")
        raise error

    def write_repro(self, name: str, detail: str, *, rule: bool = False,
                    error: BaseException | None = None) -> Path | None:
        """Note the failure (invariant or property `name`, or the rule `name` that raised) and,
        in hypothesis's final run only, write the recorded steps as a scenario file (earlier
        runs leave the shrink budget a way to write theirs)."""
        cls = type(self)
        self.failure = RecordedFailure(invariant=None if rule else name, rule=name if rule else None,
                                       message=plain(detail), machine=machine_name(cls), seed=self._seed)
        if self.sim is None or self.shape is None or self._replaying:
            return None
        write = functools.partial(self._write, self.failure, self.shape, list(self.steps), self.final_expect())
        if not _is_final():
            shrink_budget.failed(cls, (self.failure.invariant, self.failure.rule), len(self.steps),
                                 functools.partial(write, cut_short=True),
                                 error or PropertyFailed(name, detail))
            budget = config.shrink_budget(self.shrink_budget_s)
            by_steps = self.shrink_steps if self.shrink_steps is not None else budget != float("inf")
            if by_steps and not rule:
                self._shrink_steps_and_stop(error or PropertyFailed(name, detail), budget)
            return None
        self._written = write()
        return self._written

    def _shrink_steps_and_stop(self, error: BaseException, budget_s: float) -> None:
        """Shrink this failing run by its steps within the budget, write it, and end
        hypothesis's run with its failure (shrink_budget.BudgetSpent)."""
        assert self.failure is not None and self.shape is not None
        cls, key, release = type(self), (self.failure.invariant, self.failure.rule), self.shape.release
        started = time.monotonic()
        best: list[Any] = [self.failure, self.final_expect(), error]

        def fails(candidate: list[Step]) -> list[Step] | None:
            machine = cls()
            machine._replaying = True
            machine._seed = self._seed
            try:
                machine._start(release)
                machine._check_every_invariant()
                for step in candidate:
                    machine.do(step.op, **step.args)
                    machine._check_every_invariant()
            except Exception as e:
                met = machine.failure
                if met is None or (met.invariant, met.rule) != key or machine.sim is None:
                    return None
                best[:] = [met, machine.final_expect(), e]
                return list(machine.steps)
            finally:
                machine.teardown()
            return None

        steps, complete = step_shrink.shrink(self.steps, fails, shrink_budget.deadline(cls, budget_s))
        shrink_budget.ended(cls)
        failure, expect, last_error = best
        path = self._write(failure, self.shape, steps, expect, cut_short=not complete)
        how = (f"the run was shrunk from {len(self.steps)} to {len(steps)} steps in "
               f"{time.monotonic() - started:.0f} s" if complete else
               f"shrinking was cut short after {budget_s:g} s (the shrink budget): {len(self.steps)} steps "
               f"shrunk to {len(steps)} so far")
        raise shrink_budget.BudgetSpent(last_error, path, how)

    def _write(self, failure: RecordedFailure, shape: ClusterShape, steps: list[Step], expect: dict[str, Any],
               cut_short: bool = False) -> Path:
        cls = type(self)
        failure = msgspec.structs.replace(failure, cut_short=cut_short) if cut_short else failure
        what = check_name(failure) if failure.rule is not None else str(failure.invariant)
        title = f"{cls.__module__}.{cls.__qualname__}"
        path = config.repro_dir(self.repro_dir).resolve() / f"{safe_file_name(title)}.toml"
        first = failure.message.splitlines()[0] if failure.message else ""
        cut = " Shrinking was cut short by the time budget." if cut_short else ""
        text = scenario_text(
            name=f"{cls.__qualname__}: {what}", shape=shape, steps=steps, seed=self._seed,
            policy=self.policy, catalog=self._catalog_path, expect=expect,
            header={"Question": f"Does {what} hold for every sequence of ops {title} generates?",
                    "Source": f"the counterexample found for {title}, shrunk.{cut}",
                    "Answer": f"No. After step {len(steps)}, {what} fails: {first}"},
            description=f"Counterexample to {what} (kraftsim.testing.ClusterStateMachine)")
        return write_scenario(path, f"{text}\n{table_text(failure)}")

    def final_expect(self) -> dict[str, object]:
        """The state reached, as `[expect]` keys the scenario runner checks."""
        assert self.sim is not None
        nodes = self.sim.nodes()
        leader = self.sim.majority_leader()  # (the runner's final leader)
        image = self.sim.image(leader) if leader is not None else None
        fin = self.sim.finalized()
        return {
            "metadata_version": self.sim.metadata_version(),
            "finalized": {k: fin[k] for k in sorted(fin)},
            "running": [n.id for n in nodes if n.state == "running"],
            "has_leader": leader is not None,
            "leader": leader,
            "releases": {str(n.id): n.release for n in nodes},
            "topics": len(image.topics) if image is not None else None,
        }

    def _note_repro(self, name: str, error: Exception, *, rule: bool = False) -> None:
        """Write the scenario file for a failure that is not a PropertyFailed and name it in the error."""
        path = self.write_repro(name, f"{type(error).__name__}: {error}" if str(error) else repr(error), rule=rule,
                                error=error)
        if path is not None:
            error.add_note(f"kraftsim: the counterexample is written as a scenario: {path}")

    @classmethod
    def setup_state(cls) -> Any:
        """Hypothesis's rules and invariants of the class, each wrapped so that one that raises
        (a user's assertion in a subclass) gets its scenario file, naming it."""
        cached = _RECORDING_STATES.get(cls)
        if cached is None:
            state = super().setup_state()
            cached = dataclasses.replace(state, rules=[_recording(r) for r in state.rules],
                                         invariants=[_recording(i) for i in state.invariants])
            _RECORDING_STATES[cls] = cached
        return cached

    # ------------------------------------------------------------------ replaying a written file

    @classmethod
    def replay(cls, path: str | Path) -> None:
        """Run the steps of a scenario file this machine wrote through this machine again:
        the cluster as the file creates it, each step through `do` (the machine's own
        checks), every invariant after the set-up and after each step. Raises what fails,
        as the exploring run did (the same assertion, with a note comparing it with the
        file's `[recorded_failure]`); returns when every check holds (the bug is fixed)."""
        recording = read_recording(path)
        machine = cls()
        machine._replaying = True
        machine._seed = recording.seed
        mine = {"controllers": cls.controllers, "brokers": cls.brokers, "combined": cls.combined,
                "dynamic_quorum": cls.dynamic_quorum}
        if recording.shape != mine or recording.policy != cls.policy:
            raise InvalidArgument(f"{recording.describe()}: written for a cluster of {recording.shape} under "
                                  f"policy {recording.policy}; {cls.__qualname__} makes {mine} under {cls.policy}")
        try:
            machine._start(_release_name(machine.catalog_view, recording.release))
            machine._check_every_invariant()
            for step in recording.steps:
                machine.do(step.op, **step.args)
                machine._check_every_invariant()
            if recording.recorded is not None and recording.recorded.rule is not None:
                raise InvalidArgument(f"{recording.describe()}: the steps ran and every invariant held, but a "
                                      "rule's own assertion is not re-run by a replay (its drawn arguments are not "
                                      "recorded); run the machine's test to re-check it")
        except Exception as error:
            error.add_note(_replay_note(recording, machine.failure))
            raise
        finally:
            machine.teardown()

    def _check_every_invariant(self) -> None:
        for inv in self.invariants:  # hypothesis's (wrapped) invariants of the class
            if all(precondition(self) for precondition in inv.preconditions):
                inv.function(self)

    @classmethod
    def _to_test_case(cls) -> Any:  # type: ignore[override, unused-ignore]  # (its type differs between hypothesis releases)
        """Hypothesis's TestCase, which replays the `--kraftsim-replay FILE` file instead of
        exploring when the file names this machine (and is skipped when it names another)."""
        base = super()._to_test_case()
        # one bug, shrunk within the budget, rather than time spent looking for more
        base.settings = Settings(base.settings, report_multiple_bugs=False)

        def run_test(self: Any) -> None:
            path = config.option_replay
            if path is None:
                return run_as_test(cls, self.settings)
            recorded = read_recording(path).recorded
            if recorded is None or not same_machine(recorded.machine, cls):
                self.skipTest(f"--kraftsim-replay {path}: written by "
                              f"{recorded.machine if recorded else 'no machine'}, not {machine_name(cls)}")
            return cls.replay(path)

        run_test.__dict__.update(base.runTest.__dict__)  # hypothesis's marks of its test
        base.runTest = run_test  # type: ignore[method-assign]
        return base

    # ------------------------------------------------------------------ invariants

    @invariant()
    def simulator_invariants(self) -> None:
        if self.sim is None:
            return
        broken = [i for i in self.sim.invariants() if not i.ok]
        if broken:
            self.fail(SIMULATOR_INVARIANT, f"{broken[0].name}: {broken[0].detail or 'broken'}")

    @invariant()
    def finalized_levels_are_supported(self) -> None:
        if self.sim is None:
            return
        problem = properties.unsupported_finalized(self.sim, self.catalog_view)
        if problem:
            self.fail(properties.FINALIZED_SUPPORTED, problem)

    @invariant()
    def nodes_apply_only_committed(self) -> None:
        if self.sim is None:
            return
        problem, self._committed = properties.applied_uncommitted(self.sim, self._voters, self._committed)
        if problem:
            self.fail(properties.APPLIED_COMMITTED, problem)

    # ------------------------------------------------------------------ rules: software

    @precondition(lambda self: self.allows("roll"))
    @rule(node=node_ids, data=st.data())
    def roll_node(self, node: int, data: st.DataObject) -> None:
        self.do("roll", release=data.draw(st.sampled_from(self._releases), label="release"), nodes=[node])

    @precondition(lambda self: self.allows("roll"))
    @rule(nodes=st.sampled_from(["all", "controllers", "brokers"]), data=st.data())
    def roll_group(self, nodes: str, data: st.DataObject) -> None:
        self.do("roll", release=data.draw(st.sampled_from(self._releases), label="release"), nodes=nodes)

    # ------------------------------------------------------------------ rules: features

    def _draw_level(self, data: st.DataObject, direction: int) -> int:
        """Mostly a level in the op's direction from the finalized one (each release's newest
        production level among them), sometimes any nearby level (refusals to generate)."""
        assert self.sim is not None
        current = self.sim.metadata_version()
        levels = self.metadata_levels()
        tops = sorted({self._line(r).latest_production.level for r in self._releases})
        onward = [lvl for lvl in levels if (lvl - current) * direction > 0]
        onward_tops = [lvl for lvl in tops if (lvl - current) * direction > 0]
        choices = [st.sampled_from(levels)]
        if onward:
            choices = [st.sampled_from(onward), st.sampled_from(onward_tops or onward)] + choices
        return data.draw(st.one_of(choices), label="metadata.version")

    @precondition(lambda self: self.allows("features-upgrade"))
    @rule(data=st.data(), dry_run=st.sampled_from([False, False, False, True]))
    def upgrade_metadata_version(self, data: st.DataObject, dry_run: bool) -> None:
        level = self._draw_level(data, +1)
        self.do("features-upgrade", features={MV_NAME: level}, dry_run=dry_run or None)

    @precondition(lambda self: self.allows("features-downgrade"))
    @rule(data=st.data(), unsafe=st.booleans())
    def downgrade_metadata_version(self, data: st.DataObject, unsafe: bool) -> None:
        level = self._draw_level(data, -1)
        self.do("features-downgrade", features={MV_NAME: level}, unsafe=unsafe or None)

    def allows(self, op: str) -> bool:
        """Whether rules for `op` run: the simulator carries it out and `ops` includes it."""
        return (self.ops is None or op in self.ops) and is_simulated(op)

    def _has_features(self) -> bool:
        return bool(self.feature_levels())

    @precondition(lambda self: self.allows("features-upgrade"))
    @precondition(_has_features)
    @rule(data=st.data(), upgrade=st.booleans())
    def change_feature(self, data: st.DataObject, upgrade: bool) -> None:
        tops = self.feature_levels()
        name = data.draw(st.sampled_from(list(tops)), label="feature")
        level = data.draw(st.integers(0, tops[name] + 1), label="level")
        self.do("features-upgrade" if upgrade else "features-downgrade", features={name: level})

    @precondition(lambda self: self.allows("features-disable"))
    @precondition(_has_features)
    @rule(data=st.data())
    def disable_feature(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(list(self.feature_levels())), label="feature")
        self.do("features-disable", features=[name])

    # ------------------------------------------------------------------ rules: processes and faults

    @precondition(lambda self: self.allows("stop"))
    @rule(node=node_ids)
    def stop(self, node: int) -> None:
        self.do("stop", nodes=[node])

    @precondition(lambda self: self.allows("start"))
    @rule(node=node_ids, data=st.data())
    def start(self, node: int, data: st.DataObject) -> None:
        release = data.draw(st.one_of(st.none(), st.sampled_from(self._releases)), label="release")
        self.do("start", nodes=[node], release=release)

    @precondition(lambda self: self.allows("crash"))
    @rule(node=node_ids)
    def crash(self, node: int) -> None:
        self.do("crash", nodes=[node])

    @precondition(lambda self: self.allows("partition"))
    @rule(data=st.data())
    def partition(self, data: st.DataObject) -> None:
        assert self.sim is not None
        ids = [n.id for n in self.sim.nodes()]
        side = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=max(1, len(ids) - 1), unique=True),
                         label="isolated")
        self.do("partition", groups=[sorted(side)])

    @precondition(lambda self: self.allows("heal"))
    @rule()
    def heal(self) -> None:
        self.do("heal")

    def _disk_fault_targets(self) -> list[int]:
        """Nodes whose disk may lose data now: brokers, and the voters disks.VoterDisks allows."""
        if self.sim is None:
            return []
        return [n.id for n in self.sim.nodes() if self._disks.may_lose(n.id)]

    @precondition(lambda self: self.allows("disk-fault"))
    @precondition(lambda self: bool(self._disk_fault_targets()))
    @rule(data=st.data(), kind=st.sampled_from(["torn-tail", "wipe"]))
    def disk_fault(self, data: st.DataObject, kind: str) -> None:
        assert self.cluster is not None and self.sim is not None
        node = data.draw(st.sampled_from(self._disk_fault_targets()), label="node")
        if kind == "wipe" and node in self._voters and not self.wipe_voters:
            kind = "torn-tail"
        if self.cluster.node(node).state == "running":
            self.do("stop", nodes=[node])  # the fault needs the node down, as an operator would have it
        if not self._disks.may_lose(node):  # what the stop changed: the fault is left out
            return
        end_before = properties.log_end_on_disk(self.sim, node)
        if self.do("disk-fault", nodes=[node], kind=kind).error is None:
            self._disks.lost(node, end_before)

    @precondition(lambda self: self.allows("snapshot"))
    @rule()
    def snapshot(self) -> None:
        self.do("snapshot")

    @precondition(lambda self: self.allows("run"))
    @rule(ms=st.sampled_from([100, 500, 2_000, 10_000]))
    def run_time(self, ms: int) -> None:
        self.do("run", ms=min(ms, self.max_run_ms))

    @precondition(lambda self: self.allows("wait"))
    @rule(timeout_ms=st.sampled_from([2_000, 10_000, 30_000]))
    def wait(self, timeout_ms: int) -> None:
        """Until the cluster is stable; "not stable after ..." (a node down, a partition) is recorded."""
        self.do("wait", timeout_ms=min(timeout_ms, self.max_wait_ms))

    def _room_for_nodes(self) -> bool:
        return self.sim is not None and len(self.sim.nodes()) < self._initial_nodes + self.max_added_nodes

    @precondition(lambda self: self.allows("add-node"))
    @precondition(_room_for_nodes)
    @rule(target=node_ids, role=st.sampled_from(["broker", "controller"]), data=st.data())
    def add_node(self, role: str, data: st.DataObject) -> MultipleResults[int]:
        """A new broker, or a new controller (a new voter of the static quorum, while that
        is safe: disks.py), on a chosen release; its id is the next one, or one further on
        (a gap, as operators leave)."""
        assert self.sim is not None
        if role == "controller" and not self._disks.may_add_voter():
            role = "broker"  # a new voter now could make a majority without the committed data (disks.py)
        release = data.draw(st.sampled_from(self._releases), label="release")
        before = {n.id for n in self.sim.nodes()}
        gap = data.draw(st.sampled_from([0, 0, 3]), label="id gap")
        self.do("add-node", role=role, release=release, id=max(before) + 1 + gap if gap else None)
        return multiple(*sorted({n.id for n in self.sim.nodes()} - before))

    # ------------------------------------------------------------------ rules: quorum membership (KIP-853)

    def _dynamic_releases(self) -> list[str]:
        return [r for r in self._releases if self._line(r).supported_features().get("kraft.version", (0, 0))[1] >= 1]

    def _removable(self) -> list[int]:
        return [v for v in self._voters if self._disks.may_remove_voter(v)]

    @precondition(lambda self: self.dynamic_quorum and self.allows("add-controller"))
    @precondition(lambda self: self._disks.may_add_voter() and bool(self._dynamic_releases()))
    @rule(target=node_ids, data=st.data())
    def add_controller(self, data: st.DataObject) -> MultipleResults[int]:
        """A controller joins the voters: a new one (formatted --no-initial-controllers, added
        once it caught up), or a controller that runs as an observer (one removed before)."""
        assert self.sim is not None
        observers = [n.id for n in self.sim.nodes() if "controller" in n.roles and n.id not in self._voters
                     and n.state == "running"]
        room = len(self.sim.nodes()) < self._initial_nodes + self.max_added_nodes
        choices = observers + ([None] if room else [])
        if not choices:
            return multiple()
        node = data.draw(st.sampled_from(choices), label="controller")
        before = {n.id for n in self.sim.nodes()}
        release = None if node is not None else data.draw(st.sampled_from(self._dynamic_releases()), label="release")
        self.do("add-controller", id=node, release=release)
        return multiple(*sorted({n.id for n in self.sim.nodes()} - before))

    @precondition(lambda self: self.dynamic_quorum and self.allows("remove-controller"))
    @precondition(lambda self: bool(self._removable()))
    @rule(data=st.data())
    def remove_controller(self, data: st.DataObject) -> None:
        """A voter leaves (the active controller too), while the voters left keep a majority
        that holds everything committed (disks.py)."""
        self.do("remove-controller", id=data.draw(st.sampled_from(self._removable()), label="voter"))

    # ------------------------------------------------------------------ rules: topics

    def _room_for_topics(self) -> bool:
        leader = self.sim.leader() if self.sim is not None else None
        image = self.sim.image(leader) if leader is not None and self.sim is not None else None
        return image is None or len(image.topics) < self.max_topics

    @precondition(lambda self: self.allows("create-topics"))
    @precondition(_room_for_topics)
    @rule(target=topic_names, count=st.integers(1, 2), partitions=st.integers(1, 3))
    def create_topics(self, count: int, partitions: int) -> MultipleResults[str]:
        step = self.do("create-topics", count=count, partitions=partitions)
        if step.error is not None:
            return multiple()
        return multiple(*(line.split(" ", 2)[2].rstrip(".") for line in step.output))

    @precondition(lambda self: self.allows("delete-topics"))
    @rule(name=consumes(topic_names))
    def delete_topic(self, name: str) -> None:
        self.do("delete-topics", names=[name])


#: Per machine class: hypothesis's set-up state with its rules wrapped by `_recording`.
_RECORDING_STATES: dict[type, object] = {}

_RuleOrInvariant = TypeVar("_RuleOrInvariant", Rule, Invariant)


@functools.cache
def _recording_function(function: Callable[..., object], is_rule: bool) -> Callable[..., object]:
    @functools.wraps(function)
    def run_checked(machine: ClusterStateMachine, *args: object, **kwargs: object) -> object:
        try:
            return function(machine, *args, **kwargs)
        except (PropertyFailed, HypothesisException):  # written already / hypothesis's own control flow
            raise
        except Exception as e:
            machine._note_repro(function.__name__, e, rule=is_rule)
            raise
    return run_checked


def _recording(rule_or_invariant: _RuleOrInvariant) -> _RuleOrInvariant:
    """A rule or invariant of hypothesis's set-up state whose function records its failure."""
    is_rule = hasattr(rule_or_invariant, "targets")
    return dataclasses.replace(rule_or_invariant, function=_recording_function(rule_or_invariant.function, is_rule))


def _replay_note(recording: Recording, met: RecordedFailure | None) -> str:
    """How a replay's failure compares with the one the file recorded."""
    recorded = recording.recorded
    if recorded is None:
        return f"kraftsim: replayed {recording.path} (it records no failure)"
    if met is not None and (met.invariant, met.rule, met.message) == (recorded.invariant, recorded.rule, recorded.message):
        return f"kraftsim: replayed {recording.describe()}: the recorded failure fails again"
    return (f"kraftsim: replayed {recording.describe()}: it recorded \"{recorded.message}\"; this replay "
            f"failed otherwise")


def run_as_test(cls: type[ClusterStateMachine], settings: Settings | None = None) -> None:
    """hypothesis's run_state_machine_as_test, with a spent shrink budget turned back into the
    failure it cut short (shrink_budget.BudgetSpent), its file named in a note. Hypothesis
    may report the stop as flaky data generation (an example that stopped drawing earlier
    than before); the BudgetSpent is then the context of its error."""
    try:
        run_state_machine_as_test(cls, settings=settings)
    except BaseException as error:
        spent = shrink_budget.spent_in(error)
        if spent is None:
            raise
        raise spent.recorded_failure() from None


def _is_final() -> bool:
    """Whether this is hypothesis's final run (the one it reports); outside hypothesis, yes."""
    try:
        return bool(current_build_context().is_final)
    except InvalidArgument:  # not inside a hypothesis test
        return True
